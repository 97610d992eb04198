/* cheap_after_ring: allreduces that auto keeps native for being cheap (priced under
 * CANOPY_AUTO_NATIVE_BELOW) are trialled again once the communicator has a staging ring
 * and native MPI has run them 256 times (shim/plan_cache.cpp, make_cached_plan); cheap
 * bcasts, and on 2 ranks cheap reduces, stay native for good
 * (planner::cheap_calls_through_ring says why):
 * --calls trios of a reduce, a bcast and an allreduce of 4 ints on a duplicate of
 * MPI_COMM_WORLD, then one trio of 1 MiB (whose staged schedules make the ring), then
 * --calls more trios of 4 ints. Every result is checked; with Canopy preloaded the last
 * line says how many of the small calls were counted under auto-below-threshold before
 * and after the ring (canopy_fallback_count, this rank). Options: --calls=N (default 200).
 *
 * --alone=made|off: no 1 MiB call; only the small trios, 2 x --calls of them. With
 * Canopy preloaded the cheap allreduces alone make the ring (CANOPY_RING_AFTER, set low
 * by the test) or never do (CANOPY_RING_AFTER=off), and the program checks which: made
 * (with --calls over 128), some but not all of the allreduces counted below the
 * threshold (the rest trialled or decided after the ring); off, all of them; the
 * reduces and bcasts all of them, either way.
 *
 * --world: 2 x --calls trios on MPI_COMM_WORLD itself, whose ring Canopy makes at
 * MPI_Init: the cheap allreduces are planned with the ring's schedules at their first
 * call and native MPI runs at least their first 256 calls (auto-native-first) before the
 * trials, with no plan kept native for being cheap (none below the threshold); the
 * program checks both counts. --first=N: N calls instead of 256 (a class the model
 * prices from 2 us: planner::warm_native_first_calls). Then the trials begin at the
 * first agreement where native's calls have paid for them (for classes priced under
 * 2 us, kCheapNativeFirstFactor times over), which may be past the program's calls.
 */
#include "canopy_check.h"

static int value(int rank, long call, int i) { return (int)((rank * 131 + call * 7 + i) % 1000); }

static void pair(MPI_Comm comm, long call, int n, int root) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int *send = malloc(sizeof(int) * (size_t)n), *recv = malloc(sizeof(int) * (size_t)n);
  for (int i = 0; i < n; i++) send[i] = value(rank, call, i), recv[i] = -1;
  MPI_Reduce(send, recv, n, MPI_INT, MPI_SUM, root, comm);
  if (rank == root)
    for (int i = 0; i < n; i++) {
      int want = 0;
      for (int r = 0; r < size; r++) want += value(r, call, i);
      if (!ct_check(recv[i] == want, "call %ld: reduce of %d ints wrong at %d", call, n, i)) break;
    }
  for (int i = 0; i < n; i++) recv[i] = rank == root ? value(root, call, i) : -1;
  MPI_Bcast(recv, n, MPI_INT, root, comm);
  for (int i = 0; i < n; i++)
    if (!ct_check(recv[i] == value(root, call, i), "call %ld: bcast of %d ints wrong at %d", call, n, i)) break;
  MPI_Allreduce(send, recv, n, MPI_INT, MPI_SUM, comm);
  for (int i = 0; i < n; i++) {
    int want = 0;
    for (int r = 0; r < size; r++) want += value(r, call, i);
    if (!ct_check(recv[i] == want, "call %ld: allreduce of %d ints wrong at %d", call, n, i)) break;
  }
  free(send);
  free(recv);
}

static long counted_as(const char *collective, const char *reason) {
  long (*counted)(const char *, const char *) =
      (long (*)(const char *, const char *))dlsym(RTLD_DEFAULT, "canopy_fallback_count");
  return counted ? counted(collective, reason) : -1;
}

static long below(const char *collective) { return counted_as(collective, "auto-below-threshold"); }

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  ct_init("cheap_after_ring", ct_seed_from(argc, argv, 3));
  long calls = 200;
  const char *alone = NULL;
  int world = 0;
  long warm = 256;
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], "--calls=", 8) == 0) calls = atol(argv[i] + 8);
    if (strncmp(argv[i], "--alone=", 8) == 0) alone = argv[i] + 8;
    if (strcmp(argv[i], "--world") == 0) world = 1;
    if (strncmp(argv[i], "--first=", 8) == 0) warm = atol(argv[i] + 8);
  }
  if (world) {
    long call = 0;
    for (long i = 0; i < 2 * calls; i++, call++) pair(MPI_COMM_WORLD, call, 4, 0);
    const long first = counted_as("allreduce", "auto-native-first"), cheap = below("allreduce");
    if (first >= 0) {
      if (ct.rank == 0)
        printf("cheap_after_ring: MPI_COMM_WORLD: of %ld allreduces %ld native first, %ld below the threshold\n",
               2 * calls, first, cheap);
      ct_check(cheap == 0, "%ld allreduces on MPI_COMM_WORLD were kept native for being cheap", cheap);
      // (How many more depends on what they cost: the trials begin at an agreement where
      // native's calls have cost what the trials are priced at, or for classes priced
      // under 2 us kCheapNativeFirstFactor times that: planner/trials.h.)
      ct_check(first >= (2 * calls < warm ? 2 * calls : warm),
               "%ld allreduces on MPI_COMM_WORLD ran native first, fewer than the first %ld", first, warm);
    }
    const int status = ct_finish();
    MPI_Finalize();
    return status;
  }
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  long call = 0;
  if (alone) {
    for (long i = 0; i < 2 * calls; i++, call++) pair(comm, call, 4, 0);
    const long reduces = below("reduce"), bcasts = below("bcast"), allreduces = below("allreduce");
    MPI_Comm_free(&comm);
    if (reduces >= 0) {
      if (ct.rank == 0)
        printf("cheap_after_ring: small calls alone: below the threshold %ld of %ld reduces, %ld of %ld bcasts, "
               "%ld of %ld allreduces\n",
               reduces, 2 * calls, bcasts, 2 * calls, allreduces, 2 * calls);
      ct_check(reduces == 2 * calls && bcasts == 2 * calls,
               "cheap reduces and bcasts left native MPI: %ld reduces and %ld bcasts of %ld below", reduces, bcasts,
               2 * calls);
      if (strcmp(alone, "made") == 0)
        ct_check(allreduces > 0 && allreduces < 2 * calls,
                 "the cheap allreduces did not make the ring: %ld of %ld below", allreduces, 2 * calls);
      else
        ct_check(allreduces == 2 * calls, "the ring was made with CANOPY_RING_AFTER=off: %ld allreduces of %ld below",
                 allreduces, 2 * calls);
    }
    const int status = ct_finish();
    MPI_Finalize();
    return status;
  }
  for (long i = 0; i < calls; i++, call++) pair(comm, call, 4, 0);
  const long reduce_before = below("reduce"), bcast_before = below("bcast"), allreduce_before = below("allreduce");
  pair(comm, call++, 1 << 18, 0); /* 1 MiB of ints */
  const long reduce_ring = below("reduce"), bcast_ring = below("bcast"), allreduce_ring = below("allreduce");
  for (long i = 0; i < calls; i++, call++) pair(comm, call, 4, 0);
  const long reduce_after = below("reduce") - reduce_ring, bcast_after = below("bcast") - bcast_ring;
  const long allreduce_after = below("allreduce") - allreduce_ring;
  MPI_Comm_free(&comm);
  if (ct.rank == 0 && reduce_before >= 0)
    printf("cheap_after_ring: below the threshold before the ring: %ld reduces, %ld bcasts, %ld allreduces; after: "
           "%ld reduces, %ld bcasts, %ld allreduces\n",
           reduce_before, bcast_before, allreduce_before, reduce_after, bcast_after, allreduce_after);
  const int status = ct_finish();
  MPI_Finalize();
  return status;
}
