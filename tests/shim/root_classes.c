/* root_classes: one size class at several roots. 200 reduces and bcasts of 64 KiB at
 * root 0 (auto's trials decide there), then 20 at each other root in turn (they take
 * root 0's decision, without trials); then 1 MiB at rotating roots from the first call
 * (every root after the first builds the candidates priced at root 0 and trials them).
 * Every result is checked. Canopy's info log says which plans were taken from another
 * root (shim/plan_cache.h, ClassChoices). Options: --seed=N.
 */
#include "canopy_check.h"

static double value(int rank, long call, long i) { return (double)((rank + 1) * 1000 + call * 7 + i % 13); }

static void pair(MPI_Comm comm, long call, long n, int root, double *send, double *recv) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  for (long i = 0; i < n; i++) send[i] = value(rank, call, i), recv[i] = -1;
  MPI_Reduce(send, recv, (int)n, MPI_DOUBLE, MPI_SUM, root, comm);
  if (rank == root)
    for (long i = 0; i < n; i++) {
      double want = 0;
      for (int r = 0; r < size; r++) want += value(r, call, i);
      if (!ct_check(recv[i] == want, "call %ld: reduce of %ld doubles at root %d wrong at %ld", call, n, root, i))
        break;
    }
  for (long i = 0; i < n; i++) recv[i] = rank == root ? value(root, call, i) : -1;
  MPI_Bcast(recv, (int)n, MPI_DOUBLE, root, comm);
  for (long i = 0; i < n; i++)
    if (!ct_check(recv[i] == value(root, call, i), "call %ld: bcast of %ld doubles from root %d wrong at %ld", call,
                  n, root, i))
      break;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  ct_init("root_classes", ct_seed_from(argc, argv, 7));
  const long small = 8192, large = 131072; /* 64 KiB and 1 MiB of doubles */
  double *send = malloc(sizeof(double) * (size_t)large), *recv = malloc(sizeof(double) * (size_t)large);
  long call = 0;
  for (int i = 0; i < 200; i++) pair(MPI_COMM_WORLD, call++, small, 0, send, recv); /* enough for the trials to decide: their batches are twice the ring's entries, at least 16 */
  for (int root = 1; root < ct.size; root++)
    for (int i = 0; i < 20; i++) pair(MPI_COMM_WORLD, call++, small, root, send, recv);
  for (int i = 0; i < 20 * ct.size; i++) pair(MPI_COMM_WORLD, call++, large, i % ct.size, send, recv);
  free(send);
  free(recv);
  const int status = ct_finish();
  MPI_Finalize();
  return status;
}
