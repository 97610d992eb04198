/* Shared helpers for Canopy's MPI integration test programs.
 *
 * The programs are ordinary MPI programs: they pass when run natively and again
 * with LD_PRELOAD=libcanopy.so. This header gives them
 *   - a check counter and failure reporter (ct_check, ct_fail, ct_context),
 *   - ct_native_wait(): waits for a native nonblocking call (PMPI_I...) by testing and
 *     yielding, so references stay quick with more ranks than cores,
 *   - a deterministic hash for test inputs (ct_hash) and the seed (ct_seed_from:
 *     --seed=N, else CANOPYTEST_SEED, else a fixed default),
 *   - ct_finish(): the optional "was Canopy really there?" check
 *     (CANOPYTEST_EXPECT_INTERCEPT=1 requires the symbol canopy_intercepted_calls,
 *     found with dlsym(RTLD_DEFAULT, ...), to exist and return > 0 on every rank),
 *     agreement on the outcome across MPI_COMM_WORLD, and the final line
 *     "<program>: N checks passed" (N summed over all ranks).
 * CANOPYTEST_TRACE=1 prints every case (ct_context) to stderr as it starts.
 * CANOPYTEST_BIG_INPLACE=0/1 skips / runs the in-place reductions at a non-zero root
 * that crash native MPICH 4.0.2 (default: run them only when canopy_intercepted_calls
 * exists, i.e. Canopy is preloaded; see ct_native_inplace_unsafe).
 * ct_finish() returns the exit status every rank should return after MPI_Finalize.
 *
 * Include this header before any system header (it needs _GNU_SOURCE for
 * RTLD_DEFAULT); the CMake build also defines _GNU_SOURCE. Link with -ldl on
 * systems whose libc does not provide dlsym.
 */
#ifndef CANOPY_TESTS_SHIM_CANOPY_CHECK_H
#define CANOPY_TESTS_SHIM_CANOPY_CHECK_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <dlfcn.h>
#include <sched.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CT_MAX_REPORTS
#define CT_MAX_REPORTS 20 /* failure messages printed per rank; the rest are only counted */
#endif

typedef struct {
  const char *prog;
  int rank, size;
  long checks;   /* assertions evaluated on this rank */
  long failures; /* assertions that failed on this rank */
  unsigned long long seed;
  char context[256]; /* what is being tested right now; printed with failures */
  int trace;         /* CANOPYTEST_TRACE=1: print every context as it is entered */
} ct_state_t;

static ct_state_t ct;

/* Call right after MPI_Init. The seed is printed with every failure. */
static inline void ct_init(const char *prog, unsigned long long seed) {
  ct.prog = prog;
  MPI_Comm_rank(MPI_COMM_WORLD, &ct.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ct.size);
  ct.checks = 0;
  ct.failures = 0;
  ct.seed = seed;
  ct.context[0] = '\0';
  const char *trace = getenv("CANOPYTEST_TRACE");
  ct.trace = trace && strcmp(trace, "1") == 0;
}

/* Describe the case under test (printf format); shown in failure messages. */
static inline void ct_context(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ct.context, sizeof ct.context, fmt, ap);
  va_end(ap);
  if (ct.trace) {
    fprintf(stderr, "%s: rank %d: %s\n", ct.prog, ct.rank, ct.context);
    fflush(stderr);
  }
}

static inline void ct_vfail(const char *fmt, va_list ap) {
  ct.failures++;
  if (ct.failures > CT_MAX_REPORTS) return;
  char msg[512];
  vsnprintf(msg, sizeof msg, fmt, ap);
  fprintf(stderr, "%s: FAIL rank %d/%d seed %llu [%s]: %s\n", ct.prog, ct.rank, ct.size, ct.seed, ct.context, msg);
  if (ct.failures == CT_MAX_REPORTS)
    fprintf(stderr, "%s: rank %d: further failures are counted, not printed\n", ct.prog, ct.rank);
  fflush(stderr);
}

static inline void ct_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ct_vfail(fmt, ap);
  va_end(ap);
}

/* Count one assertion; report it (printf format) if it failed. Returns cond. */
static inline int ct_check(int cond, const char *fmt, ...) {
  ct.checks++;
  if (!cond) {
    va_list ap;
    va_start(ap, fmt);
    ct_vfail(fmt, ap);
    va_end(ap);
  }
  return cond;
}

/* splitmix64 finaliser over the mixed inputs: a deterministic "random" value. */
static inline uint64_t ct_hash(uint64_t seed, uint64_t a, uint64_t b, uint64_t c) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull ^ a * 0xBF58476D1CE4E5B9ull ^ b * 0x94D049BB133111EBull ^
               c * 0xD6E8FEB86659FD93ull;
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/* Seed from "--seed=N" in argv, else CANOPYTEST_SEED, else the default. Every
 * rank sees the same argv and environment under mpiexec, so no broadcast is needed. */
static inline unsigned long long ct_seed_from(int argc, char **argv, unsigned long long dflt) {
  for (int i = 1; i < argc; i++)
    if (strncmp(argv[i], "--seed=", 7) == 0) return strtoull(argv[i] + 7, NULL, 0);
  const char *env = getenv("CANOPYTEST_SEED");
  if (env && *env) return strtoull(env, NULL, 0);
  return dflt;
}

/* Waits for req, started by a native nonblocking call that returned err: PMPI_Test, then
 * sched_yield, so that ranks sharing a core let each other run (MPICH's blocking waits
 * busy-poll). Returns the first error. */
static inline int ct_native_wait(int err, MPI_Request *req) {
  int done = 0;
  while (err == MPI_SUCCESS && !done) {
    err = PMPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (!done) sched_yield();
  }
  return err;
}

/* Whether an interposer that reports its calls (Canopy) is loaded in this process. */
static inline int ct_interposer_present(void) { return dlsym(RTLD_DEFAULT, "canopy_intercepted_calls") != NULL; }

/* pmodels/mpich#6540: native MPICH 4.0.2 (ch4) segfaults in MPI_Reduce with MPI_IN_PLACE
 * at a non-zero root, commutative op, above 2048 bytes. Such cases run only when an
 * interposer owns MPI_Reduce; natively they are skipped from CT_NATIVE_INPLACE_LIMIT
 * bytes (well below the crash, as other builds may switch algorithms elsewhere). */
#define CT_NATIVE_INPLACE_LIMIT 256
/* Whether to run them: CANOPYTEST_BIG_INPLACE=1/0 decides, else whether an interposer is loaded. */
static inline int ct_big_inplace_allowed(void) {
  const char *env = getenv("CANOPYTEST_BIG_INPLACE");
  if (env && *env) return strcmp(env, "0") != 0;
  return ct_interposer_present();
}
static inline int ct_native_inplace_unsafe(size_t bytes) {
  return bytes >= CT_NATIVE_INPLACE_LIMIT && !ct_big_inplace_allowed();
}

/* With CANOPYTEST_EXPECT_INTERCEPT=1: the preload library must be present and must have
 * executed at least one MPI_Reduce/MPI_Bcast with its own schedule on this rank. */
static inline void ct_check_intercept(void) {
  const char *want = getenv("CANOPYTEST_EXPECT_INTERCEPT");
  if (!want || strcmp(want, "1") != 0) return;
  ct_context("CANOPYTEST_EXPECT_INTERCEPT=1");
  typedef long (*count_fn)(void);
  count_fn fn;
  void *sym = dlsym(RTLD_DEFAULT, "canopy_intercepted_calls");
  memcpy(&fn, &sym, sizeof fn); /* object pointer to function pointer without a pedantic warning */
  long n = -1;                  /* -1: the symbol is missing */
  if (ct_check(fn != NULL, "symbol canopy_intercepted_calls not found: is libcanopy.so preloaded?")) {
    n = fn();
    ct_check(n > 0, "canopy_intercepted_calls() returned %ld: Canopy ran no collective with its own schedule", n);
  }
  /* (every rank takes part, whatever it found) */
  long nmin = n, nmax = n;
  MPI_Allreduce(MPI_IN_PLACE, &nmin, 1, MPI_LONG, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &nmax, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
  if (ct.rank == 0)
    printf("%s: canopy_intercepted_calls per rank: min %ld, max %ld%s\n", ct.prog, nmin, nmax,
           nmin < 0 ? " (-1: symbol missing)" : "");
}

/* Collective over MPI_COMM_WORLD; call before MPI_Finalize. Returns the exit status. */
static inline int ct_finish(void) {
  ct_check_intercept();
  long local[2] = {ct.checks, ct.failures}, total[2] = {0, 0};
  long failing_rank = ct.failures ? 1 : 0, failing_ranks = 0;
  MPI_Allreduce(local, total, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&failing_rank, &failing_ranks, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (ct.rank == 0) {
    if (total[1] == 0)
      printf("%s: %ld checks passed\n", ct.prog, total[0]);
    else
      printf("%s: FAILED: %ld of %ld checks failed on %ld of %d ranks (seed %llu)\n", ct.prog, total[1], total[0],
             failing_ranks, ct.size, ct.seed);
    fflush(stdout);
  }
  return total[1] == 0 ? 0 : 1;
}

#endif /* CANOPY_TESTS_SHIM_CANOPY_CHECK_H */
