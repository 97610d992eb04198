/* native_shortcut: the same small MPI_Reduce and MPI_Bcast over and over, which auto
 * keeps native and then runs through its shortcut past Canopy's lookups, on
 * MPI_COMM_WORLD and on side communicators freed and re-created every few calls (MPI
 * hands their handles out again), interleaved with calls of other sizes and
 * datatypes that make plans of their own. Every result is checked. With Canopy
 * preloaded, the calls must have been counted under auto-below-threshold on every
 * rank (canopy_fallback_count), and then a last run of them exactly once each (and once as a
 * plan cache hit, canopy_plan_cache_hits), on MPI_COMM_WORLD and on a communicator freed
 * after them. Options: --seed=N, --iterations=N (default 2000).
 *
 * --rotate: the repeated calls alternate roots (root = iteration mod ranks), and each
 * iteration also calls on one of 20 long-lived duplicates in turn, more communicators
 * and roots than the shortcuts hold (shim/collectives.cpp, NativeShortcuts), and rank 0
 * alone calls on 16 communicators of its own (split by rank) every iteration, so its
 * shortcuts lose the entries the other ranks keep. Halfway (once each root's small
 * calls have run natively 256 times, so that the ring makes them trialled:
 * shim/comm_state.h, kWarmNativeCalls), a 1 MiB reduce on
 * MPI_COMM_WORLD makes its staging ring (between two refreshes of the side communicator,
 * whose freeing would drop every shortcut), after which its small reduces are planned
 * again at every root on every rank, with a shortcut or without (a rank that kept
 * one to the old plan while another planned again would hang or sum wrongly).
 */
#include "canopy_check.h"

static int value(int rank, long it, int i) { return (int)((rank * 131 + it * 7 + i) % 1000); }

/* One reduce of n ints at root, and with `bcast` one bcast, checked. */
static void calls(MPI_Comm comm, long it, int n, int root, int bcast) {
  int rank, size;
  int *send = malloc(sizeof(int) * (size_t)n), *recv = malloc(sizeof(int) * (size_t)n);
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  for (int i = 0; i < n; i++) send[i] = value(rank, it, i), recv[i] = -1;
  MPI_Reduce(send, recv, n, MPI_INT, MPI_SUM, root, comm);
  if (rank == root)
    for (int i = 0; i < n; i++) {
      int want = 0;
      for (int r = 0; r < size; r++) want += value(r, it, i);
      if (!ct_check(recv[i] == want, "iteration %ld: reduce of %d ints at root %d wrong at %d", it, n, root, i)) break;
    }
  for (int i = 0; i < n; i++) recv[i] = rank == root ? value(root, it, i) : -1;
  if (bcast) MPI_Bcast(recv, n, MPI_INT, root, comm);
  for (int i = 0; i < n && bcast; i++)
    if (!ct_check(recv[i] == value(root, it, i), "iteration %ld: bcast of %d ints from root %d wrong at %d", it, n, root,
                  i))
      break;
  free(send);
  free(recv);
}

static void pair(MPI_Comm comm, long it, int n, int root) { calls(comm, it, n, root, 1); }

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  ct_init("native_shortcut", ct_seed_from(argc, argv, 11));
  long iterations = 2000;
  int rotate = 0;
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], "--iterations=", 13) == 0) iterations = atol(argv[i] + 13);
    if (strcmp(argv[i], "--rotate") == 0) rotate = 1;
  }
  enum { kDuplicates = 20, kAlone = 16 };
  MPI_Comm dups[kDuplicates], alone[kAlone];
  if (rotate) {
    for (int d = 0; d < kDuplicates; d++) MPI_Comm_dup(MPI_COMM_WORLD, &dups[d]);
    for (int a = 0; a < kAlone; a++) MPI_Comm_split(MPI_COMM_WORLD, ct.rank, 0, &alone[a]);
  }
  MPI_Comm side = MPI_COMM_NULL;
  for (long it = 0; it < iterations; it++) {
    if (it % 50 == 0) {
      if (side != MPI_COMM_NULL) MPI_Comm_free(&side);
      if ((it / 50) % 2 == 0) MPI_Comm_dup(MPI_COMM_WORLD, &side);
      else MPI_Comm_split(MPI_COMM_WORLD, 0, -ct.rank, &side);
    }
    ct_context("iteration %ld", it);
    const int root = rotate ? (int)(it % ct.size) : 0;
    pair(MPI_COMM_WORLD, it, 4, root);               /* the repeated call */
    pair(side, it, 4, root);                         /* repeated on a communicator that comes and goes */
    if (rotate) {
      if (it == iterations / 2 + 25) {
        /* A small reduce at the other root (a shortcut to it on every rank), rank 0's own
         * calls (its shortcuts gone), a 1 MiB reduce that makes the ring, and the small
         * reduce again: a shortcut on rank 1, a lookup on rank 0. */
        const int other = (root + 1) % ct.size;
        calls(MPI_COMM_WORLD, it, 4, other, 0);
        if (ct.rank == 0)
          for (int a = 0; a < kAlone; a++) pair(alone[a], it, 4, 0);
        calls(MPI_COMM_WORLD, it, 1 << 18, root, 0);
        calls(MPI_COMM_WORLD, it, 4, other, 0);
      }
      pair(dups[it % kDuplicates], it, 4, root);     /* more communicators than shortcuts */
      if (ct.rank == 0)
        for (int a = 0; a < kAlone; a++) pair(alone[a], it, 4, 0);  /* rank 0's own */
    }
    if (it % 7 == 0) pair(MPI_COMM_WORLD, it, 1 + (int)(it % 64), (int)(it % ct.size));  /* other plans */
    if (it % 11 == 0) {                              /* a user datatype: no shortcut for it */
      MPI_Datatype two;
      MPI_Type_contiguous(2, MPI_INT, &two);
      MPI_Type_commit(&two);
      int buf[8];
      for (int i = 0; i < 8; i++) buf[i] = ct.rank == 0 ? value(0, it, i) : -1;
      MPI_Bcast(buf, 4, two, 0, MPI_COMM_WORLD);
      for (int i = 0; i < 8; i++)
        ct_check(buf[i] == value(0, it, i), "iteration %ld: bcast of a contiguous type wrong at %d", it, i);
      MPI_Type_free(&two);
    }
  }
  MPI_Comm_free(&side);
  if (rotate) {
    for (int d = 0; d < kDuplicates; d++) MPI_Comm_free(&dups[d]);
    for (int a = 0; a < kAlone; a++) MPI_Comm_free(&alone[a]);
  }
  long (*counted)(const char *, const char *) =
      (long (*)(const char *, const char *))dlsym(RTLD_DEFAULT, "canopy_fallback_count");
  long (*hits)(void) = (long (*)(void))dlsym(RTLD_DEFAULT, "canopy_plan_cache_hits");
  if (counted && hits) {
    /* Exact counts: the repeated calls, decided native, run quietly through their
     * shortcuts (their counts wait in the shortcut: shim/collectives.cpp), yet every call
     * is counted once, as a fallback and as a cache hit, when the API asks; and a
     * communicator's quiet calls are counted when it is freed. */
    ct_context("exact counts");
    enum { kRepeats = 500, kSide = 300 };
    const long reduce0 = counted("reduce", "auto-below-threshold"), bcast0 = counted("bcast", "auto-below-threshold");
    const long hits0 = hits();
    for (long it = 0; it < kRepeats; it++) pair(MPI_COMM_WORLD, iterations + it, 4, 0);
    const long reduce1 = counted("reduce", "auto-below-threshold"), bcast1 = counted("bcast", "auto-below-threshold");
    const long hits1 = hits();
    ct_check(reduce1 - reduce0 == kRepeats && bcast1 - bcast0 == kRepeats,
             "%d repeated calls counted as %ld reduces and %ld bcasts kept native", kRepeats, reduce1 - reduce0,
             bcast1 - bcast0);
    ct_check(hits1 - hits0 == 2 * kRepeats, "%d repeated reduces and bcasts counted as %ld cache hits", kRepeats,
             hits1 - hits0);
    MPI_Comm once;
    MPI_Comm_dup(MPI_COMM_WORLD, &once);
    for (long it = 0; it < kSide; it++) pair(once, it, 4, 0);
    MPI_Comm_free(&once);
    const long reduce2 = counted("reduce", "auto-below-threshold"), bcast2 = counted("bcast", "auto-below-threshold");
    ct_check(reduce2 - reduce1 == kSide && bcast2 - bcast1 == kSide,
             "%d calls on a freed communicator counted as %ld reduces and %ld bcasts kept native", kSide,
             reduce2 - reduce1, bcast2 - bcast1);
  }
  if (counted) {
    ct_context("counts");
    const long reduce = counted("reduce", "auto-below-threshold"), bcast = counted("bcast", "auto-below-threshold");
    ct_check(reduce >= iterations && bcast >= iterations,
             "calls kept native below the threshold: %ld reduces, %ld bcasts, want at least %ld each", reduce, bcast,
             iterations);
    if (ct.rank == 0)
      printf("native_shortcut: %ld reduces and %ld bcasts kept native below the threshold on rank 0\n", reduce, bcast);
  }
  const int status = ct_finish();
  MPI_Finalize();
  return status;
}
