/* varying_counts: MPI_Reduce and MPI_Bcast over many distinct counts (--calls of each,
 * counts 1 to --max-count doubles drawn from the seed, nearly all distinct), every
 * result checked, at rotating roots on MPI_COMM_WORLD.
 *
 * With Canopy preloaded (canopy_plans_made found), plans are made per size class, not
 * per count: the plans made on each rank must stay at most --max-plans (default: the
 * quarter-octave classes the counts can fall in, 4 per octave, times the collectives
 * and roots that can meet), far below the number of distinct counts, and the rank says
 * how many it made. Options: --seed=N, --calls=N (default 600), --max-count=N (default
 * 100000), --max-plans=N.
 */
#include "canopy_check.h"

static double value(int rank, long it, long i) { return (double)((unsigned)(rank * 7 + it * 3 + i) % 101); }

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ct_init("varying_counts", ct_seed_from(argc, argv, 5));
  long calls = 600, max_count = 100000, max_plans = -1;
  for (int a = 1; a < argc; ++a) {
    if (!strncmp(argv[a], "--calls=", 8)) calls = atol(argv[a] + 8);
    if (!strncmp(argv[a], "--max-count=", 12)) max_count = atol(argv[a] + 12);
    if (!strncmp(argv[a], "--max-plans=", 12)) max_plans = atol(argv[a] + 12);
  }
  double* send = malloc((size_t)max_count * sizeof(double));
  double* recv = malloc((size_t)max_count * sizeof(double));
  const int rank = ct.rank, size = ct.size;
  for (long it = 0; it < calls; ++it) {
    const long n = 1 + (long)(ct_hash(ct.seed, 0xC0, (uint64_t)it, 0) % (uint64_t)max_count);
    const int root = (int)(it % size);
    for (long i = 0; i < n; ++i) send[i] = value(rank, it, i), recv[i] = -1;
    MPI_Reduce(send, recv, (int)n, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD);
    if (rank == root) {
      long bad = -1;
      for (long i = 0; i < n && bad < 0; ++i) {
        double want = 0;
        for (int r = 0; r < size; ++r) want += value(r, it, i);
        if (recv[i] != want) bad = i;
      }
      ct_check(bad < 0, "call %ld: reduce of %ld doubles at root %d wrong at %ld", it, n, root, bad);
    }
    for (long i = 0; i < n; ++i) recv[i] = rank == root ? value(root, it, i) : -1;
    MPI_Bcast(recv, (int)n, MPI_DOUBLE, root, MPI_COMM_WORLD);
    long bad = -1;
    for (long i = 0; i < n && bad < 0; ++i)
      if (recv[i] != value(root, it, i)) bad = i;
    ct_check(bad < 0, "call %ld: bcast of %ld doubles from root %d wrong at %ld", it, n, root, bad);
  }
  long (*plans_made)(void) = (long (*)(void))dlsym(RTLD_DEFAULT, "canopy_plans_made");
  long (*hits)(void) = (long (*)(void))dlsym(RTLD_DEFAULT, "canopy_plan_cache_hits");
  if (plans_made && hits) {
    /* Classes from 8 B to max_count doubles: about 4 per octave, and one per size up
     * to 64 B; per collective and per root. */
    long octaves = 0;
    for (long b = 64; b < max_count * 8; b *= 2) ++octaves;
    const long classes = 4 * (octaves + 1) + 8;
    if (max_plans < 0) max_plans = 2 * size * classes;
    const long made = plans_made();
    ct_check(made <= max_plans, "%ld plans made for %ld calls of each collective: more than %ld", made, calls,
             max_plans);
    ct_check(hits() + made >= 2 * calls, "%ld hits and %ld plans for %ld lookups", hits(), made, 2 * calls);
    if (rank == 0)
      printf("varying_counts: rank 0 made %ld plans (at most %ld allowed) for %ld calls of %ld-double-or-fewer "
             "messages, %ld plan-cache hits\n",
             made, max_plans, 2 * calls, max_count, hits());
  }
  free(send);
  free(recv);
  const int status = ct_finish();
  MPI_Finalize();
  return status;
}
