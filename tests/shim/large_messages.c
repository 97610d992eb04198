/* large_messages: collectives whose byte counts do not fit an int.
 *
 *  (a) MPI_Bcast of BCAST_MIB x MPI_Type_contiguous(1 MiB, MPI_BYTE) (default 2049 MiB,
 *      just over 2^31 bytes): the type is derived, so Canopy packs it (MPI_Pack sizes
 *      are ints) and plans the message in bytes (segments of at most INT_MAX bytes);
 *  (b) MPI_Reduce of INT_MAX elements of MPI_BYTE with MPI_BOR: the largest count MPI
 *      allows, every bit of the result from exactly one rank (rank r owns the bits b
 *      with b % size == r), so the result is the pattern itself.
 * The root fills the data with a position-dependent pattern; every receiving rank
 * checks every byte. With Canopy preloaded (canopy_intercepted_calls exists) each call
 * must have run with Canopy's own schedule, not fallen back to native MPI.
 *
 * Memory: about 2 x BCAST_MIB MiB per rank for (a) (user buffer + Canopy's packing
 * buffer) and 2 GiB + 2 GiB at the root for (b). Before starting, the ranks compare
 * MemAvailable (/proc/meminfo) with what they need together; if it is short, the
 * program prints "large_messages: SKIPPED: ..." and exits with 77 (CTest's
 * SKIP_RETURN_CODE).
 *
 * Options: --bcast-mib=N (default 2049), --no-reduce, --no-bcast.
 */
#include "canopy_check.h"

#include <limits.h>

#define SKIP_CODE 77

static unsigned char pattern(int64_t i) { return (unsigned char)(i ^ (i >> 8) ^ (i >> 19) ^ (i >> 29) ^ 0x5A); }

static long intercepted(void) {
  typedef long (*count_fn)(void);
  void *sym = dlsym(RTLD_DEFAULT, "canopy_intercepted_calls");
  count_fn fn;
  memcpy(&fn, &sym, sizeof fn);
  return fn ? fn() : -1;
}

/* kB of MemAvailable, or -1. */
static long long mem_available_kb(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  if (!f) return -1;
  char line[256];
  long long kb = -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1) break;
  fclose(f);
  return kb;
}

/* Whether Canopy ran the call that moved the counter from `before`. */
static void check_canopy_ran(long before, const char *what) {
  if (before < 0) return; /* no interposer: native MPI ran it */
  ct_check(intercepted() == before + 1, "%s was not run by Canopy's own schedule (canopy_intercepted_calls %ld -> %ld)",
           what, before, intercepted());
}

static void big_bcast(int mib) {
  const int64_t bytes = (int64_t)mib << 20;
  ct_context("MPI_Bcast of %d x contiguous(1 MiB) = %lld bytes, root %d", mib, (long long)bytes, ct.size - 1);
  const int root = ct.size - 1;
  MPI_Datatype mib_type;
  MPI_Type_contiguous(1 << 20, MPI_BYTE, &mib_type);
  MPI_Type_commit(&mib_type);
  unsigned char *buf = malloc((size_t)bytes);
  if (!ct_check(buf != NULL, "malloc(%lld) failed", (long long)bytes)) MPI_Abort(MPI_COMM_WORLD, 2);
  if (ct.rank == root)
    for (int64_t i = 0; i < bytes; i++) buf[i] = pattern(i);
  else
    memset(buf, 0, (size_t)bytes);
  const long before = intercepted();
  const double t0 = MPI_Wtime();
  const int err = MPI_Bcast(buf, mib, mib_type, root, MPI_COMM_WORLD);
  const double t1 = MPI_Wtime();
  ct_check(err == MPI_SUCCESS, "MPI_Bcast returned %d", err);
  check_canopy_ran(before, "the broadcast");
  int64_t bad = -1;
  for (int64_t i = 0; i < bytes && bad < 0; i++)
    if (buf[i] != pattern(i)) bad = i;
  ct_check(bad < 0, "byte %lld is 0x%02x, expected 0x%02x", (long long)bad, bad < 0 ? 0 : buf[bad],
           bad < 0 ? 0 : pattern(bad));
  if (ct.rank == 0) printf("large_messages: bcast of %lld bytes took %.2f s\n", (long long)bytes, t1 - t0);
  free(buf);
  MPI_Type_free(&mib_type);
}

static void big_reduce(void) {
  const int count = INT_MAX;
  const int root = 0;
  ct_context("MPI_Reduce of INT_MAX MPI_BYTE with MPI_BOR, root %d", root);
  unsigned char mine = 0; /* the bits this rank owns */
  for (int b = 0; b < 8; b++)
    if (b % ct.size == ct.rank) mine |= (unsigned char)(1u << b);
  unsigned char *send = malloc((size_t)count), *recv = ct.rank == root ? malloc((size_t)count) : NULL;
  if (!ct_check(send != NULL && (ct.rank != root || recv != NULL), "malloc of 2 GiB failed"))
    MPI_Abort(MPI_COMM_WORLD, 2);
  for (int64_t i = 0; i < count; i++) send[i] = pattern(i) & mine;
  if (recv) memset(recv, 0, (size_t)count);
  const long before = intercepted();
  const double t0 = MPI_Wtime();
  const int err = MPI_Reduce(send, recv, count, MPI_BYTE, MPI_BOR, root, MPI_COMM_WORLD);
  const double t1 = MPI_Wtime();
  ct_check(err == MPI_SUCCESS, "MPI_Reduce returned %d", err);
  check_canopy_ran(before, "the reduce");
  if (ct.rank == root) {
    int64_t bad = -1;
    for (int64_t i = 0; i < count && bad < 0; i++)
      if (recv[i] != pattern(i)) bad = i;
    ct_check(bad < 0, "byte %lld is 0x%02x, expected 0x%02x", (long long)bad, bad < 0 ? 0 : recv[bad],
             bad < 0 ? 0 : pattern(bad));
    printf("large_messages: reduce of %d bytes took %.2f s\n", count, t1 - t0);
  }
  free(send);
  free(recv);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  ct_init("large_messages", 0);
  int mib = 2049, do_reduce = 1, do_bcast = 1;
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], "--bcast-mib=", 12) == 0) mib = atoi(argv[i] + 12);
    else if (strcmp(argv[i], "--no-reduce") == 0) do_reduce = 0;
    else if (strcmp(argv[i], "--no-bcast") == 0) do_bcast = 0;
  }
  /* What all ranks need together (they share one node here), plus 1 GiB of margin:
   * the broadcast holds the buffer and Canopy's packing buffer on every rank; Canopy
   * keeps that scratch memory for the communicator, and the reduce adds its send
   * buffers and the root's receive buffer (its scratch fits in what is kept). */
  const long long ws_mib = (long long)(mib > 2048 ? mib : 2048) * ct.size;
  const long long need_bcast = do_bcast ? 2LL * mib * ct.size : 0;
  const long long need_reduce = do_reduce ? 2048LL * ct.size + 2048 + ws_mib : 0;
  const long long need_mib = (need_bcast > need_reduce ? need_bcast : need_reduce) + 1024;
  long long avail_kb = ct.rank == 0 ? mem_available_kb() : 0;
  MPI_Allreduce(MPI_IN_PLACE, &avail_kb, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  if (avail_kb < need_mib * 1024) {
    if (ct.rank == 0) {
      printf("large_messages: SKIPPED: needs about %lld MiB of memory for %d ranks, MemAvailable is %lld MiB\n",
             need_mib, ct.size, avail_kb < 0 ? -1 : avail_kb / 1024);
      fflush(stdout);
    }
    MPI_Finalize();
    return SKIP_CODE;
  }
  if (do_bcast) big_bcast(mib);
  if (do_reduce) big_reduce();
  const int status = ct_finish();
  MPI_Finalize();
  return status;
}
