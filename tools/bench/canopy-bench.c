/* canopy-bench: OSU-style timing of MPI_Reduce, MPI_Bcast and MPI_Allreduce over message sizes. An
 * ordinary MPI program that knows nothing of Canopy: tools/bench/canopy-bench-run runs
 * the same binary natively and with libcanopy.so preloaded, interleaved, and compares.
 *
 * For each collective and size: untimed warm-up calls (connections, buffers, and the
 * trials of Canopy's `auto`; at most --seconds of them, run as the timed ones), then batches of back-to-back calls separated by
 * barriers. A batch's time per call is the slowest rank's batch time divided by its
 * calls (a collective is over when its last rank is); the result is the median over
 * the batches. Batches are sized from the warm-up so that each lasts about
 * --batch-ms, and they go on until --min-calls calls or --seconds have passed (at
 * least 5 batches). After the timed calls one more call is checked against values
 * each rank computes itself.
 *
 * Only barriers and nonblocking MPI_Iallreduce steer the benchmark (identical decisions
 * on every rank), so the collectives under test are never used for the harness itself. The
 * harness waits politely (nonblocking calls, tested, then sched_yield): with more
 * ranks than cores, a rank that finished its batch and spun in a busy-polling
 * MPI_Allreduce would take a core from the ranks still working, and time the
 * harness instead of the collective. */
#include <getopt.h>
#include <math.h>
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_harness.h"

static void usage(FILE* out) {
  fprintf(out,
          "usage: mpiexec -n N canopy-bench [options]\n"
          "\n"
          "Times MPI_Reduce and MPI_Allreduce (MPI_SUM of doubles) and MPI_Bcast for each\n"
          "message size and checks a result of each. Rank 0 prints one line per measurement:\n"
          "  RESULT <MPI_Reduce|MPI_Bcast|MPI_Allreduce> <bytes> <median us per call> <timed calls> <fastest batch us per call>\n"
          "  REFERENCE <bytes> <us>   one memcpy plus one MPI_Reduce_local of that size on rank 0\n"
          "                           (the floor of a 2-rank reduce; with --reference)\n"
          "and finally CHECK OK (or CHECK FAILED and exit status 1).\n"
          "\n"
          "  --collectives L  a comma-separated list of reduce, bcast and allreduce (default\n"
          "                   reduce,bcast)\n"
          "  --sizes B,...    message sizes in bytes, multiples of 8 (default 8 and the powers\n"
          "                   of 4 from 16 B to 16 MiB)\n"
          "  --warmup N       untimed calls per collective, size and root first, for at most\n"
          "                   --seconds (default 20); back to back in groups of up to 64\n"
          "                   (one at a time with --batch-ms 0), as the timed calls run\n"
          "  --min-calls N    timed calls per size (default 300) ...\n"
          "  --seconds S      ... unless the timed calls reach S seconds first (default 1)\n"
          "  --batch-ms M     length of a batch of back-to-back calls (default 5; 0: one call\n"
          "                   per batch, a barrier before each call as OSU does)\n"
          "  --root R         root rank (default 0)\n"
          "  --rotate-root    root of call i is i mod N instead\n"
          "  --reference      also print REFERENCE lines\n"
          "  --varying N      instead of one size at a time: N calls of each collective, call i\n"
          "                   of a count drawn from 1 to the largest --sizes / 8 doubles (all\n"
          "                   ranks draw alike; nearly all counts distinct), timed from the\n"
          "                   very first call, no warm-up (a program whose counts vary, as a\n"
          "                   plan cache per count would see it). Its RESULT line's bytes are\n"
          "                   the largest size and its times the mean per call.\n"
          "  --from-first N   for each size: N back-to-back calls timed from the very first\n"
          "                   call of that size, no warm-up (what a short job sees: planning\n"
          "                   and auto's trials included); the times are the mean per call\n"
          "  --osu            for each size: the calls OSU's osu_reduce and osu_bcast make and\n"
          "                   how they time them (OMB's defaults): 200 untimed calls, then 1000\n"
          "                   timed up to 8 KiB; 10 and 100 above; each call timed alone, a\n"
          "                   barrier after it. The time is the mean per timed call averaged\n"
          "                   over the ranks (OSU's Avg Latency); the last field the smallest\n"
          "                   rank's mean (its Min Latency). osu_reduce times every size in one\n"
          "                   process, and osu_bcast is a process of its own: run --collectives\n"
          "                   reduce and --collectives bcast apart to match. With --warmup N,\n"
          "                   every size gets N untimed calls instead, as OSU's -x N gives\n"
          "  --osu-calls N    with --osu: also print CALLS lines, the mean of each run of N of a\n"
          "                   size's calls (untimed ones first; the ranks' average), and a SLOW\n"
          "                   line for each call over 10 times the median run's mean: where a\n"
          "                   row's time goes, call by call\n"
          "  --paired N       with --osu: after each size's row, N more untimed calls, then 21\n"
          "                   pairs of blocks of OSU's calls (200 calls, or about 2 ms), one\n"
          "                   block through MPI_ (what a preloaded library intercepts) and one\n"
          "                   through PMPI_ (the MPI's own), in this process, alternating which\n"
          "                   goes first; prints PAIRED <collective> <bytes> <MPI_ ns> <PMPI_ ns>\n"
          "                   <ratio>: the medians of the blocks' means per call and of each\n"
          "                   pair's PMPI_/MPI_ ratio (below 1: what interception costs; about\n"
          "                   1 with nothing preloaded). A pair shares the machine's slow and\n"
          "                   quick periods, which separate processes do not\n"
          "  --fresh-comm     every call on a communicator of its own: split from\n"
          "                   MPI_COMM_WORLD (same ranks, same order) right before the call\n"
          "                   and freed right after, both timed with it (a program that makes\n"
          "                   communicators for a few calls; with --from-first: from the first)\n"
          "  --help           this text\n"
          "\n"
          "example:\n"
          "  mpiexec.mpich -n 2 canopy-bench --sizes 8,1048576 --reference\n"
          "  LD_PRELOAD=build/shim/libcanopy.so mpiexec.mpich -n 2 canopy-bench --sizes 8,1048576\n");
}

enum { kMaxSizes = 64, kMaxBatches = 4096, kMinBatches = 5 };

typedef struct {
  int reduce, bcast, allreduce;
  long sizes[kMaxSizes];
  int nsizes;
  int warmup, min_calls;
  int warmup_given; /* --warmup was on the command line (--osu then takes it, as OSU's -x) */
  double seconds, batch_ms;
  int root, rotate_root, reference;
  long varying;    /* > 0: calls of varying counts (--varying) */
  long from_first; /* > 0: calls per size timed from the first one (--from-first) */
  int fresh_comm;  /* every call on a new communicator (--fresh-comm) */
  int osu;         /* OSU's calls and timing per size (--osu) */
  long osu_calls;  /* with --osu: also print the mean of each run of this many calls (--osu-calls) */
  long paired;     /* with --osu: this many untimed calls, then blocks through MPI_ and PMPI_ (--paired) */
  int paired_given;
} Options;

typedef struct {
  int rank, size;
  double *send, *recv; /* the collective's buffers (bcast uses send) */
  long calls;          /* calls so far at this size: the rotating root's clock */
} Bench;

static int root_of(const Options* o, const Bench* b) {
  return o->rotate_root ? (int)(b->calls % b->size) : o->root;
}

/* The collective a measurement times. */
enum { K_REDUCE, K_BCAST, K_ALLREDUCE, K_KINDS };
static const char* const kind_names[K_KINDS] = {"MPI_Reduce", "MPI_Bcast", "MPI_Allreduce"};

static void call(const Options* o, Bench* b, int kind, int count) {
  const int root = root_of(o, b);
  MPI_Comm comm = MPI_COMM_WORLD;
  if (o->fresh_comm) MPI_Comm_split(MPI_COMM_WORLD, 0, b->rank, &comm);
  if (kind == K_REDUCE) MPI_Reduce(b->send, b->recv, count, MPI_DOUBLE, MPI_SUM, root, comm);
  else if (kind == K_ALLREDUCE) MPI_Allreduce(b->send, b->recv, count, MPI_DOUBLE, MPI_SUM, comm);
  else MPI_Bcast(b->send, count, MPI_DOUBLE, root, comm);
  if (o->fresh_comm) MPI_Comm_free(&comm);
  ++b->calls;
}

/* One call of MPI's own collective (PMPI_), past any library preloaded to intercept MPI_:
 * --paired's yardstick in the same process. */
static void native_call(const Options* o, Bench* b, int kind, int count) {
  const int root = root_of(o, b);
  if (kind == K_REDUCE) PMPI_Reduce(b->send, b->recv, count, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD);
  else if (kind == K_ALLREDUCE) PMPI_Allreduce(b->send, b->recv, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  else PMPI_Bcast(b->send, count, MPI_DOUBLE, root, MPI_COMM_WORLD);
  ++b->calls;
}

/* The value rank r contributes at index i: small integers, so every sum is exact in
 * any order of reduction. */
static double contribution(int r, long i) { return (double)(r + 1 + i % 7); }

/* One more call with the receiving side overwritten first; returns the number of
 * wrong elements this rank sees. */
static long checked_call(const Options* o, Bench* b, int kind, int count) {
  const int root = root_of(o, b);
  long wrong = 0;
  if (kind != K_BCAST) {
    for (long i = 0; i < count; ++i) b->send[i] = contribution(b->rank, i), b->recv[i] = -1;
    call(o, b, kind, count);
    if (b->rank == root || kind == K_ALLREDUCE) {
      const double ranks = b->size, rank_sum = ranks * (ranks + 1) / 2;
      for (long i = 0; i < count; ++i) wrong += b->recv[i] != rank_sum + ranks * (double)(i % 7);
    }
  } else {
    for (long i = 0; i < count; ++i) b->send[i] = b->rank == root ? contribution(root, i) : -1;
    call(o, b, K_BCAST, count);
    for (long i = 0; i < count; ++i) wrong += b->send[i] != contribution(root, i);
  }
  return wrong;
}

/* Times one collective at one size; fills *median_us, *fastest_us and *calls. */
static void measure(const Options* o, Bench* b, int kind, int count, double* median_us, double* fastest_us,
                    long* calls) {
  static double per_call[kMaxBatches];
  b->calls = 0;
  const int warmup = o->warmup * (o->rotate_root ? b->size : 1);
  double estimate = 0;
  polite_barrier();
  {
    /* At least one call (the estimate); at most --seconds of them, so that a native
     * collective taking a second per call does not spend a minute warming up. Every
     * rank stops after the same call: the decision uses the slowest rank's time.
     * The calls go in groups as the timed ones do: back to back, in groups that double
     * from 1 to kMaxWarmupGroup with the time checked after each; one at a time,
     * synchronised, with --batch-ms 0. Decision: the warm-up holds Canopy's trials, and
     * a trial of synchronised calls measures another pattern than the back-to-back
     * batches timed after it. With a check after every warm-up call, a 2-rank 64 KiB
     * reduce through the ring measured 8.3 us a call in its trials (the root waits for
     * the other rank's half) and 4.4 back to back, and Canopy built on Open MPI kept
     * Open MPI's own reduce (5.7) in a table of back-to-back calls (docs/performance-history.md,
     * section 7, "A second machine"). */
    enum { kMaxWarmupGroup = 64 };
    int n = 0, group = 1;
    double spent = 0;
    do {
      if (group > warmup - n) group = warmup - n;
      if (n > 0 && spent > 0) { /* a group fits in what is left of --seconds */
        const double fit = (o->seconds - spent) / (spent / n);
        if (group > fit) group = (int)fit;
      }
      if (group < 1) group = 1;
      const double t0 = MPI_Wtime();
      for (int i = 0; i < group; ++i) call(o, b, kind, count);
      spent += polite_max(MPI_Wtime() - t0);
      n += group;
      if (o->batch_ms > 0 && group < kMaxWarmupGroup) group *= 2;
    } while (n < warmup && spent < o->seconds);
    estimate = spent / n;
  }
  /* The warm-up's mean includes its first, slowest calls: batches come out shorter
   * than aimed at, never longer. */
  long batch = 1;
  if (o->batch_ms > 0 && estimate > 0) batch = lround(o->batch_ms / 1e3 / estimate);
  if (batch < 1) batch = 1;
  if (batch > 100000) batch = 100000;
  int batches = 0;
  long timed = 0;
  double elapsed = 0;
  while (batches < kMaxBatches &&
         (batches < kMinBatches || (timed < o->min_calls && elapsed < o->seconds))) {
    polite_barrier();
    const double t0 = MPI_Wtime();
    for (long i = 0; i < batch; ++i) call(o, b, kind, count);
    const double slowest = polite_max(MPI_Wtime() - t0);
    per_call[batches++] = slowest / (double)batch;
    timed += batch;
    elapsed += slowest;
  }
  double fastest = per_call[0];
  for (int i = 1; i < batches; ++i) fastest = fmin(fastest, per_call[i]);
  *median_us = median(per_call, batches) * 1e6;
  *fastest_us = fastest * 1e6;
  *calls = timed;
}

/* The count of call i of --varying: 1..max_count, the same on every rank. */
static int varying_count(long i, int max_count) {
  unsigned long long h = 0x9E3779B97F4A7C15ull * (unsigned long long)(i + 1);
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 29;
  return 1 + (int)(h % (unsigned long long)max_count);
}

/* --varying: `calls` calls of varying counts, timed from the first one (no warm-up);
 * returns the slowest rank's mean time per call in microseconds. */
static double measure_varying(const Options* o, Bench* b, int kind, int max_count, long calls) {
  b->calls = 0;
  polite_barrier();
  const double t0 = MPI_Wtime();
  for (long i = 0; i < calls; ++i) call(o, b, kind, varying_count(i, max_count));
  const double slowest = polite_max(MPI_Wtime() - t0);
  return slowest / (double)calls * 1e6;
}

/* --from-first: `calls` back-to-back calls of one size, timed from the first one (no
 * warm-up); the slowest rank's mean time per call in microseconds. */
static double measure_from_first(const Options* o, Bench* b, int kind, int count, long calls) {
  b->calls = 0;
  polite_barrier();
  const double t0 = MPI_Wtime();
  for (long i = 0; i < calls; ++i) call(o, b, kind, count);
  return polite_max(MPI_Wtime() - t0) / (double)calls * 1e6;
}

/* --osu: one size as OSU's osu_reduce and osu_bcast time it. OMB's defaults (osu_util.h,
 * OMB 5-7): messages larger than 8192 bytes get 10 untimed and 100 timed calls, others
 * 200 and 1000 (an explicit --warmup sets the untimed calls of every size, as OMB's -x
 * option does); each call is timed alone (MPI_Wtime around it) and followed by a barrier;
 * the result is each rank's mean per timed call, averaged over the ranks ("Avg
 * Latency"), and the smallest rank's mean ("Min Latency") in *fastest_us. Short jobs
 * are what this measures: the first calls of a size, not a steady state.
 * The barrier is OSU's MPI_Barrier, not the harness's polite one (an MPI_Ibarrier tested
 * and yielded on): measured, 2 ranks, OSU's loop with MPI_Barrier gave Open MPI 4.1.4's
 * 8 B reduce 0.39-0.42 us a call where the polite barrier gave 0.78-0.93, and MPICH
 * 4.0.2's 8 B broadcast 0.24 where it gave 1.1: rows that a user's OSU does not show,
 * in which Canopy's interception (about 0.1 us a call) weighed half or less of what it
 * weighs in OSU's. Where ranks outnumber cores, OSU's barrier busy-polls, as this one
 * now does. */
/* --osu-calls N: rank 0 prints, for a size's calls (untimed ones first), the mean of each
 * run of N calls, averaged over the ranks as OSU averages, in microseconds:
 *   CALLS <collective> <bytes> <N> <calls 0..N-1> <calls N..2N-1> ...
 * and each call that took over 10 times the median of those means (a plan made, a round
 * of trials agreed, a pause of the machine):
 *   SLOW <collective> <bytes> <call> <us>
 * What a row's time is made of, call by call (the calls Canopy's auto spends deciding). */
static void print_osu_calls(const Options* o, const Bench* b, int kind, int count, const double* each, long n) {
  double* total = b->rank == 0 ? malloc((size_t)n * sizeof(double)) : NULL;
  MPI_Request request;
  MPI_Ireduce(each, total, (int)n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD, &request);
  polite_wait(&request);
  if (b->rank != 0) return;
  const long runs = (n + o->osu_calls - 1) / o->osu_calls;
  double* means = malloc((size_t)runs * sizeof(double));
  printf("CALLS %s %ld %ld", kind_names[kind], (long)count * 8, o->osu_calls);
  for (long r = 0; r < runs; ++r) {
    double s = 0;
    long k = 0;
    for (long i = r * o->osu_calls; i < n && i < (r + 1) * o->osu_calls; ++i, ++k) s += total[i] / b->size;
    means[r] = s / (double)k * 1e6;
    printf(" %.3f", means[r]);
  }
  printf("\n");
  const double typical = median(means, (int)runs);  /* (sorts them) */
  for (long i = 0; i < n; ++i)
    if (total[i] / b->size * 1e6 > 10 * typical)
      printf("SLOW %s %ld %ld %.1f\n", kind_names[kind], (long)count * 8, i, total[i] / b->size * 1e6);
  free(means);
  free(total);
}

enum { kOsuLargeMessage = 8192, kOsuSmallSkip = 200, kOsuLargeSkip = 10, kOsuSmallIterations = 1000, kOsuLargeIterations = 100 };
static double measure_osu(const Options* o, Bench* b, int kind, int count, long* calls, double* fastest_us) {
  const int large = (long)count * 8 > kOsuLargeMessage;
  const long skip = o->warmup_given ? o->warmup : large ? kOsuLargeSkip : kOsuSmallSkip;
  const long iterations = large ? kOsuLargeIterations : kOsuSmallIterations;
  b->calls = 0;
  /* --osu-calls: each call's time, untimed ones too, for the runs of calls printed after. */
  double* each = o->osu_calls > 0 ? calloc((size_t)(skip + iterations), sizeof(double)) : NULL;
  polite_barrier();
  double sum = 0;
  for (long i = 0; i < skip + iterations; ++i) {
    const double t0 = MPI_Wtime();
    call(o, b, kind, count);
    const double t = MPI_Wtime() - t0;
    if (i >= skip) sum += t;
    if (each) each[i] = t;
    MPI_Barrier(MPI_COMM_WORLD);
  }
  if (each) print_osu_calls(o, b, kind, count, each, skip + iterations);
  free(each);
  const double mine = sum / (double)iterations;
  *calls = iterations;
  *fastest_us = polite_allreduce(mine, MPI_MIN) * 1e6;
  return polite_allreduce(mine, MPI_SUM) / b->size * 1e6;
}

/* --paired N: after a size's OSU row, N more untimed calls through MPI_ (so that a
 * preloaded library has decided how to run them), then kPairs pairs of blocks of OSU's
 * calls (each timed alone, an MPI_Barrier after it), one block through MPI_ and one
 * through PMPI_, which comes first alternating. Both run in this process, in the same
 * minute, on the same buffers: a machine that slows down for a while slows both blocks of
 * a pair, which separate runs of native and preloaded processes cannot ensure (on the
 * 2-core VM native MPI's own 8 B rows moved 30-60% from one process to the next). Rank 0
 * prints
 *   PAIRED <collective> <bytes> <MPI_ ns> <PMPI_ ns> <ratio>
 * the medians over the pairs of each block's mean per call (averaged over the ranks, as
 * OSU's Avg Latency), and the median of each pair's PMPI_/MPI_ ratio: above 1 the
 * intercepted call is the faster, below 1 the interception costs that share of MPI's own
 * call. Without a library preloaded the ratio measures the method: about 1. */
enum { kPairs = 21, kPairedBlockSmall = 200 };
static double paired_block(const Options* o, Bench* b, int kind, int count, int native, long calls) {
  double sum = 0;
  for (long i = 0; i < calls; ++i) {
    const double t0 = MPI_Wtime();
    if (native) native_call(o, b, kind, count);
    else call(o, b, kind, count);
    sum += MPI_Wtime() - t0;
    MPI_Barrier(MPI_COMM_WORLD);
  }
  return polite_allreduce(sum, MPI_SUM) / b->size / (double)calls;
}

static void measure_paired(const Options* o, Bench* b, int kind, int count) {
  double t0 = MPI_Wtime();
  for (long i = 0; i < o->paired; ++i) {
    call(o, b, kind, count);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  /* Blocks of 200 calls, or of about 2 ms where calls are long (at least 5 calls). */
  const double each = o->paired > 0 ? polite_allreduce(MPI_Wtime() - t0, MPI_MAX) / (double)o->paired : 0;
  long block = kPairedBlockSmall;
  if (each > 0 && each * block > 2e-3) block = lround(2e-3 / each);
  if (block < 5) block = 5;
  double mine[kPairs], theirs[kPairs], ratio[kPairs];
  for (int p = 0; p < kPairs; ++p) {
    const int native_first = p % 2;
    const double first = paired_block(o, b, kind, count, native_first, block);
    const double second = paired_block(o, b, kind, count, !native_first, block);
    mine[p] = native_first ? second : first;
    theirs[p] = native_first ? first : second;
    ratio[p] = theirs[p] / mine[p];
  }
  if (b->rank != 0) return;
  printf("PAIRED %s %ld %.1f %.1f %.4f\n", kind_names[kind], (long)count * 8, median(mine, kPairs) * 1e9,
         median(theirs, kPairs) * 1e9, median(ratio, kPairs));
  fflush(stdout);
}

/* Rank 0 alone: the median of `reps` times of one memcpy plus one MPI_Reduce_local. */
static double reference_us(int count) {
  enum { kReps = 21 };
  double t[kReps];
  double* src = malloc((size_t)count * sizeof(double) + 8);
  double* add = malloc((size_t)count * sizeof(double) + 8);
  double* dst = malloc((size_t)count * sizeof(double) + 8);
  for (long i = 0; i < count; ++i) src[i] = (double)(i % 7), add[i] = 1, dst[i] = 0;
  for (int k = 0; k < kReps; ++k) {
    const double t0 = MPI_Wtime();
    memcpy(dst, src, (size_t)count * sizeof(double));
    MPI_Reduce_local(add, dst, count, MPI_DOUBLE, MPI_SUM);
    t[k] = MPI_Wtime() - t0;
  }
  free(src);
  free(add);
  free(dst);
  return median(t, kReps) * 1e6;
}

/* Parses argv into *o; returns 0, or the exit status after printing why. */
/* --collectives: a comma-separated list of reduce, bcast and allreduce, none twice. */
static int parse_collectives(const char* text, Options* o) {
  o->reduce = o->bcast = o->allreduce = 0;
  char list[128];
  if (!*text || strlen(text) >= sizeof list) return 0;
  strcpy(list, text);
  for (char *save = NULL, *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
    int* flag = strcmp(name, "reduce") == 0 ? &o->reduce
                : strcmp(name, "bcast") == 0 ? &o->bcast
                : strcmp(name, "allreduce") == 0 ? &o->allreduce
                : NULL;
    if (!flag || *flag) return 0;
    *flag = 1;
  }
  return o->reduce || o->bcast || o->allreduce;
}

static int parse_options(int argc, char** argv, Options* o, int rank) {
  static struct option options[] = {{"collectives", required_argument, 0, 'c'},
                                    {"sizes", required_argument, 0, 's'},
                                    {"warmup", required_argument, 0, 'w'},
                                    {"min-calls", required_argument, 0, 'n'},
                                    {"seconds", required_argument, 0, 't'},
                                    {"batch-ms", required_argument, 0, 'b'},
                                    {"root", required_argument, 0, 'r'},
                                    {"rotate-root", no_argument, 0, 'R'},
                                    {"reference", no_argument, 0, 'f'},
                                    {"varying", required_argument, 0, 'v'},
                                    {"from-first", required_argument, 0, 'F'},
                                    {"fresh-comm", no_argument, 0, 'C'},
                                    {"osu", no_argument, 0, 'O'},
                                    {"osu-calls", required_argument, 0, 'B'},
                                    {"paired", required_argument, 0, 'P'},
                                    {"help", no_argument, 0, 'h'},
                                    {0, 0, 0, 0}};
  *o = (Options){.reduce = 1, .bcast = 1, .allreduce = 0, .warmup = 20, .min_calls = 300, .seconds = 1, .batch_ms = 5};
  o->sizes[o->nsizes++] = 8;
  for (long s = 16; s <= 16L << 20; s *= 4) o->sizes[o->nsizes++] = s;
  opterr = 0;
  for (int c; (c = getopt_long(argc, argv, "", options, NULL)) != -1;) {
    char* end = NULL;
    switch (c) {
      case 'h':
        if (rank == 0) usage(stdout);
        return -1;
      case 'C':
        o->fresh_comm = 1;
        break;
      case 'O':
        o->osu = 1;
        break;
      case 'c':
        if (!parse_collectives(optarg, o)) {
          if (rank == 0)
            fprintf(stderr, "canopy-bench: --collectives '%s': allowed: a comma-separated list of reduce, bcast, allreduce\n",
                    optarg);
          return 2;
        }
        break;
      case 's':
        o->nsizes = parse_sizes(optarg, 8, o->sizes, kMaxSizes);
        if (o->nsizes < 0) {
          if (rank == 0)
            fprintf(stderr, "canopy-bench: --sizes '%s': allowed: up to %d byte counts, multiples of 8 in [8, 2^30], separated by commas\n",
                    optarg, kMaxSizes);
          return 2;
        }
        break;
      case 'w': case 'n': case 'r': case 'v': case 'F': case 'B': case 'P': {
        long v = 0;
        const int integer = parse_integer(optarg, &v);
        const char* name = c == 'w'   ? "--warmup"
                           : c == 'n' ? "--min-calls"
                           : c == 'r' ? "--root"
                           : c == 'v' ? "--varying"
                           : c == 'B' ? "--osu-calls"
                           : c == 'P' ? "--paired"
                                      : "--from-first";
        if (!integer || v < 0 || v > 1000000) {
          if (rank == 0) fprintf(stderr, "canopy-bench: %s '%s': allowed: an integer in [0, 1000000]\n", name, optarg);
          return 2;
        }
        if (c == 'w') o->warmup = (int)v, o->warmup_given = 1;
        else if (c == 'n') o->min_calls = (int)v;
        else if (c == 'v') o->varying = v;
        else if (c == 'F') o->from_first = v;
        else if (c == 'B') o->osu_calls = v;
        else if (c == 'P') o->paired = v, o->paired_given = 1;
        else o->root = (int)v;
        break;
      }
      case 't': case 'b': {
        const double v = strtod(optarg, &end);
        const char* name = c == 't' ? "--seconds" : "--batch-ms";
        if (*end || end == optarg || !(v >= 0) || v > 3600) {
          if (rank == 0) fprintf(stderr, "canopy-bench: %s '%s': allowed: a number in [0, 3600]\n", name, optarg);
          return 2;
        }
        if (c == 't') o->seconds = v;
        else o->batch_ms = v;
        break;
      }
      case 'R': o->rotate_root = 1; break;
      case 'f': o->reference = 1; break;
      default:
        if (rank == 0) fprintf(stderr, "canopy-bench: unknown option '%s' (see --help)\n", argv[optind - 1]);
        return 2;
    }
  }
  if (optind < argc) {
    if (rank == 0) fprintf(stderr, "canopy-bench: unexpected argument '%s' (see --help)\n", argv[optind]);
    return 2;
  }
  if (o->osu_calls > 0 && !o->osu) {
    if (rank == 0) fprintf(stderr, "canopy-bench: --osu-calls: allowed with --osu only\n");
    return 2;
  }
  if (o->paired_given && (!o->osu || o->fresh_comm)) {
    if (rank == 0) fprintf(stderr, "canopy-bench: --paired: allowed with --osu and without --fresh-comm only\n");
    return 2;
  }
  if (o->osu && (o->from_first > 0 || o->varying > 0)) {
    if (rank == 0) fprintf(stderr, "canopy-bench: --osu: allowed without --from-first and --varying only\n");
    return 2;
  }
  return 0;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  Bench b = {0};
  MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &b.size);
  Options o;
  int status = parse_options(argc, argv, &o, b.rank);
  if (status == 0 && o.root >= b.size) {
    if (b.rank == 0) fprintf(stderr, "canopy-bench: --root %d: allowed: 0 to %d (the ranks)\n", o.root, b.size - 1);
    status = 2;
  }
  if (status != 0) {
    MPI_Finalize();
    return status < 0 ? 0 : status;
  }

  long largest = 0;
  for (int i = 0; i < o.nsizes; ++i) largest = o.sizes[i] > largest ? o.sizes[i] : largest;
  b.send = malloc((size_t)largest);
  b.recv = malloc((size_t)largest);
  if (!b.send || !b.recv) {
    fprintf(stderr, "canopy-bench: rank %d: cannot allocate 2 x %ld bytes\n", b.rank, largest);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (long i = 0; i < largest / 8; ++i) b.send[i] = contribution(b.rank, i), b.recv[i] = 0;

  if (b.rank == 0) {
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int length = 0;
    MPI_Get_library_version(version, &length);
    version[strcspn(version, "\n")] = '\0';
    printf("# canopy-bench: %d ranks, root %s%s, MPI: %s\n", b.size, o.rotate_root ? "rotating" : "fixed",
           o.fresh_comm ? ", a new communicator per call" : "", version);
    if (o.osu) {
      if (o.warmup_given) printf("# --osu: %d untimed calls of every size (--warmup)\n", o.warmup);
      else
        printf("# --osu: OMB's untimed calls, %d up to %d bytes and %d above\n", (int)kOsuSmallSkip,
               (int)kOsuLargeMessage, (int)kOsuLargeSkip);
    }
    fflush(stdout);
  }
  long wrong = 0;
  for (int kind = 0; kind < K_KINDS; ++kind) {
    if (!(kind == K_REDUCE ? o.reduce : kind == K_BCAST ? o.bcast : o.allreduce)) continue;
    if (o.varying > 0) {
      const double mean_us = measure_varying(&o, &b, kind, (int)(largest / 8), o.varying);
      wrong += checked_call(&o, &b, kind, varying_count(o.varying, (int)(largest / 8)));
      if (b.rank == 0) {
        printf("RESULT %s %ld %.4f %ld %.4f\n", kind_names[kind], largest, mean_us, o.varying,
               mean_us);
        fflush(stdout);
      }
      continue;
    }
    for (int i = 0; i < o.nsizes; ++i) {
      const int count = (int)(o.sizes[i] / 8);
      double median_us = 0, fastest_us = 0;
      long calls = 0;
      if (o.osu) {
        median_us = measure_osu(&o, &b, kind, count, &calls, &fastest_us);
        if (o.paired_given) measure_paired(&o, &b, kind, count);
      } else if (o.from_first > 0) {
        median_us = fastest_us = measure_from_first(&o, &b, kind, count, o.from_first);
        calls = o.from_first;
      } else {
        measure(&o, &b, kind, count, &median_us, &fastest_us, &calls);
      }
      wrong += checked_call(&o, &b, kind, count);
      if (b.rank == 0) {
        printf("RESULT %s %ld %.4f %ld %.4f\n", kind_names[kind], o.sizes[i], median_us, calls,
               fastest_us);
        fflush(stdout);
      }
    }
  }
  if (o.reference) {
    for (int i = 0; i < o.nsizes; ++i) {
      if (b.rank == 0) printf("REFERENCE %ld %.2f\n", o.sizes[i], reference_us((int)(o.sizes[i] / 8)));
    }
    polite_barrier();
  }
  long wrong_total = 0;
  wrong_total = (long)polite_allreduce((double)wrong, MPI_SUM);  /* not the collective under test */
  if (b.rank == 0) {
    if (wrong_total == 0) printf("CHECK OK\n");
    else printf("CHECK FAILED: %ld wrong elements\n", wrong_total);
    fflush(stdout);
  }
  free(b.send);
  free(b.recv);
  MPI_Finalize();
  return wrong_total == 0 ? 0 : 1;
}
