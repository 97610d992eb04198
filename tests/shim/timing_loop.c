/* timing_loop: back-to-back MPI_Reduce and MPI_Bcast of 8 KB on MPI_COMM_WORLD.
 *
 * Prints the median (and min / 90th percentile) time per call in microseconds as
 * measured on rank 0, and the largest per-rank median (a root's MPI_Bcast may return
 * before the others have the data), so that runs with and without the interposer, and
 * with more ranks than cores, can be compared. Not a timed assertion: it only checks the
 * results of the last reduce and bcast (and, with CANOPYTEST_EXPECT_INTERCEPT=1, that Canopy
 * ran them).
 *
 * Options: --iters=N (default 300), --bytes=N (default 8192, rounded down to doubles),
 * --root=R (default 0), --seed=N.
 */
#include "canopy_check.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, cmp_double);
  return t[n / 2];
}

/* t sorted by median(); slowest: the largest median over all ranks. */
static void report(const char *what, const double *t, int n, long bytes, double slowest) {
  printf("timing_loop: %-10s %6ld bytes x %d: median %.1f us (min %.1f, p90 %.1f) on rank 0; "
         "slowest rank's median %.1f us\n",
         what, bytes, n, t[n / 2] * 1e6, t[0] * 1e6, t[(n * 9) / 10] * 1e6, slowest * 1e6);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  unsigned long long seed = ct_seed_from(argc, argv, 99);
  ct_init("timing_loop", seed);
  int iters = 300, root = 0;
  long bytes = 8192;
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], "--iters=", 8) == 0) iters = atoi(argv[i] + 8);
    if (strncmp(argv[i], "--bytes=", 8) == 0) bytes = atol(argv[i] + 8);
    if (strncmp(argv[i], "--root=", 7) == 0) root = atoi(argv[i] + 7);
  }
  if (iters < 1) iters = 1;
  root %= ct.size;
  const int n = (int)(bytes / (long)sizeof(double));
  double *send = malloc(sizeof(double) * (size_t)n + 8), *recv = malloc(sizeof(double) * (size_t)n + 8);
  double *t_reduce = malloc(sizeof(double) * (size_t)iters), *t_bcast = malloc(sizeof(double) * (size_t)iters);

  /* small integers: the sum is exact in any order */
  for (int i = 0; i < n; i++) send[i] = (double)((ct_hash(seed, 1, (uint64_t)ct.rank, (uint64_t)i) % 200) - 100);

  MPI_Barrier(MPI_COMM_WORLD);
  for (int it = 0; it < iters; it++) {
    double t0 = MPI_Wtime();
    MPI_Reduce(send, recv, n, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD);
    t_reduce[it] = MPI_Wtime() - t0;
  }
  ct_context("last MPI_Reduce of %d doubles at root %d", n, root);
  if (ct.rank == root) {
    long bad = -1;
    for (int i = 0; i < n && bad < 0; i++) {
      double want = 0;
      for (int r = 0; r < ct.size; r++) want += (double)((ct_hash(seed, 1, (uint64_t)r, (uint64_t)i) % 200) - 100);
      if (recv[i] != want) bad = i;
    }
    ct_check(bad < 0, "sum wrong at %ld", bad);
  }

  MPI_Barrier(MPI_COMM_WORLD);
  for (int it = 0; it < iters; it++) {
    if (ct.rank == root)
      for (int i = 0; i < n; i += 97) recv[i] = (double)(it + i); /* a little change per call */
    double t0 = MPI_Wtime();
    MPI_Bcast(recv, n, MPI_DOUBLE, root, MPI_COMM_WORLD);
    t_bcast[it] = MPI_Wtime() - t0;
  }
  ct_context("last MPI_Bcast of %d doubles from root %d", n, root);
  {
    /* What the root sent: its buffer held the reduce result, then the per-call changes. */
    long bad = -1;
    for (int i = 0; i < n && bad < 0; i++) {
      double want = 0;
      if (i % 97 == 0)
        want = (double)(iters - 1 + i);
      else
        for (int r = 0; r < ct.size; r++) want += (double)((ct_hash(seed, 1, (uint64_t)r, (uint64_t)i) % 200) - 100);
      if (recv[i] != want) bad = i;
    }
    ct_check(bad < 0, "bcast data wrong at %ld", bad);
  }

  double med[2] = {median(t_reduce, iters), median(t_bcast, iters)}, slowest[2];
  MPI_Allreduce(med, slowest, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (ct.rank == 0) {
    printf("timing_loop: %d ranks, root %d\n", ct.size, root);
    report("MPI_Reduce", t_reduce, iters, (long)n * 8, slowest[0]);
    report("MPI_Bcast", t_bcast, iters, (long)n * 8, slowest[1]);
  }
  free(send);
  free(recv);
  free(t_reduce);
  free(t_bcast);
  int status = ct_finish();
  MPI_Finalize();
  return status;
}
