/* canopy-demo: an ordinary MPI program (it knows nothing of Canopy) that times
 * MPI_Reduce, MPI_Bcast and MPI_Allreduce and checks their results. Run it as is for native MPI, and
 * with LD_PRELOAD=libcanopy.so to let Canopy plan the same calls. */
#include <getopt.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE* out) {
  fprintf(out,
          "usage: mpiexec -n N canopy-demo [--sizes B,B,...] [--seconds S] [--warmup N] [--root R]\n"
          "\n"
          "Times MPI_Reduce and MPI_Allreduce (MPI_SUM of doubles) and MPI_Bcast for each\n"
          "message size and checks every result. Prints one line per measurement:\n"
          "  RESULT <collective> <bytes> <median microseconds per call> <calls>\n"
          "\n"
          "  --sizes B,...   message sizes in bytes (default 8,1048576)\n"
          "  --seconds S     time budget per measurement (default 0.5)\n"
          "  --warmup N      untimed calls of each collective and size first (default 15:\n"
          "                  more than Canopy's auto needs to try its schedules; native MPI's\n"
          "                  trial comes at a size's 256th call, in one timed batch of many,\n"
          "                  which the median leaves out)\n"
          "  --root R        root rank (default 0)\n"
          "  --help          this text\n"
          "\n"
          "example:\n"
          "  mpiexec.mpich -n 4 canopy-demo\n"
          "  LD_PRELOAD=build/shim/libcanopy.so CANOPY_LOG_LEVEL=info mpiexec.mpich -n 4 canopy-demo\n");
}

static int compare_doubles(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* Times back-to-back calls in batches (a barrier before each) until the budget is
 * spent and returns the median per-call time of the batches in seconds. Batches grow
 * to about 50 ms so that the harness's own synchronisation, native MPI that may
 * busy-poll on an oversubscribed machine, weighs little on the result. */
enum { K_REDUCE, K_BCAST, K_ALLREDUCE };

static void call(int kind, double* send, double* recv, int count, int root) {
  if (kind == K_REDUCE) MPI_Reduce(send, recv, count, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD);
  else if (kind == K_ALLREDUCE) MPI_Allreduce(send, recv, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  else MPI_Bcast(send, count, MPI_DOUBLE, root, MPI_COMM_WORLD);
}

static double time_collective(int kind, double* send, double* recv, int count, int root, double budget,
                              int warmup, int* calls_out) {
  enum { kMaxBatches = 64 };
  double per_call[kMaxBatches];
  int batches = 0, go = 1, batch = 2, calls = 0;
  /* Steady state: the first calls set up connections and buffers, and with Canopy's
   * CANOPY_*_ALGO=auto they are its trials of its schedules (native MPI's comes at the
   * 256th call, CANOPY_AUTO_NATIVE_AFTER: in one batch of the median's many). */
  for (int i = 0; i < warmup; ++i) call(kind, send, recv, count, root);
  double start = MPI_Wtime();
  while (go && batches < kMaxBatches) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < batch; ++i) call(kind, send, recv, count, root);
    double t = (MPI_Wtime() - t0) / batch, slowest = 0;
    MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    per_call[batches++] = slowest;
    calls += batch;
    double elapsed = MPI_Wtime() - start;
    MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    go = elapsed < budget || batches < 3;
    /* Every rank derives the next batch size from the same reduced values. */
    const double want = 0.05 / (slowest > 1e-9 ? slowest : 1e-9);
    batch = want < 1 ? 1 : want > 1000 ? 1000 : (int)want;
  }
  *calls_out = calls;
  /* The first batch warms up (connections, buffers, Canopy's plan): leave it out. */
  qsort(per_call + 1, batches - 1, sizeof(double), compare_doubles);
  return per_call[1 + (batches - 1) / 2];
}

int main(int argc, char** argv) {
  const char* sizes = "8,1048576";
  double budget = 0.5;
  int root = 0, warmup = 15;
  static struct option options[] = {{"sizes", required_argument, 0, 's'},
                                    {"warmup", required_argument, 0, 'w'},
                                    {"seconds", required_argument, 0, 't'},
                                    {"root", required_argument, 0, 'r'},
                                    {"help", no_argument, 0, 'h'},
                                    {0, 0, 0, 0}};
  for (int c; (c = getopt_long(argc, argv, "s:t:w:r:h", options, NULL)) != -1;) {
    if (c == 'h') {
      usage(stdout);
      return 0;
    }
    if (c == 's') sizes = optarg;
    else if (c == 't') budget = atof(optarg);
    else if (c == 'r') root = atoi(optarg);
    else if (c == 'w') {
      char* end = NULL;
      const long n = strtol(optarg, &end, 10);
      if (*optarg == '\0' || *end != '\0' || n < 0 || n > 1000000) {
        fprintf(stderr, "canopy-demo: --warmup must be an integer from 0 to 1000000, not '%s'\n", optarg);
        return 2;
      }
      warmup = (int)n;
    }
    else {
      usage(stderr);
      return 2;
    }
  }

  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (root < 0 || root >= size) {
    if (rank == 0) fprintf(stderr, "canopy-demo: --root %d is outside 0..%d\n", root, size - 1);
    MPI_Finalize();
    return 2;
  }

  int failures = 0;
  char* list = strdup(sizes);
  for (char* item = strtok(list, ","); item; item = strtok(NULL, ",")) {
    const long bytes = atol(item);
    const int count = (int)(bytes / (long)sizeof(double)) > 0 ? (int)(bytes / (long)sizeof(double)) : 1;
    double* send = malloc(sizeof(double) * count);
    double* recv = malloc(sizeof(double) * count);
    for (int i = 0; i < count; ++i) send[i] = rank + (i % 7);

    /* Check once, outside the timing: sums of small integers are exact in any order. */
    MPI_Reduce(send, recv, count, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD);
    if (rank == root)
      for (int i = 0; i < count; ++i)
        if (recv[i] != (double)size * (size - 1) / 2 + (double)size * (i % 7)) { ++failures; break; }
    for (int i = 0; i < count; ++i) recv[i] = rank == root ? i * 0.5 : -1;
    MPI_Bcast(recv, count, MPI_DOUBLE, root, MPI_COMM_WORLD);
    for (int i = 0; i < count; ++i)
      if (recv[i] != i * 0.5) { ++failures; break; }
    MPI_Allreduce(send, recv, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < count; ++i)
      if (recv[i] != (double)size * (size - 1) / 2 + (double)size * (i % 7)) { ++failures; break; }

    int calls = 0;
    const double reduce_s = time_collective(K_REDUCE, send, recv, count, root, budget, warmup, &calls);
    if (rank == 0) printf("RESULT MPI_Reduce %ld %.2f %d\n", (long)count * 8, reduce_s * 1e6, calls);
    const double bcast_s = time_collective(K_BCAST, rank == root ? send : recv, NULL, count, root, budget, warmup, &calls);
    if (rank == 0) printf("RESULT MPI_Bcast %ld %.2f %d\n", (long)count * 8, bcast_s * 1e6, calls);
    const double allreduce_s = time_collective(K_ALLREDUCE, send, recv, count, root, budget, warmup, &calls);
    if (rank == 0) printf("RESULT MPI_Allreduce %ld %.2f %d\n", (long)count * 8, allreduce_s * 1e6, calls);
    fflush(stdout);
    free(send);
    free(recv);
  }
  free(list);

  int all_failures = 0;
  MPI_Allreduce(&failures, &all_failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("CHECK %s (%d ranks, %d wrong results)\n", all_failures ? "FAILED" : "OK", size, all_failures);
  MPI_Finalize();
  return all_failures ? 1 : 0;
}
