/* canopy-sim-bench: simulated time per call of MPI_Reduce, MPI_Bcast and MPI_Allreduce
 * under SimGrid's SMPI, with a check of every call's result. An ordinary MPI program:
 * tools/sim/canopy-sim runs it with and without Canopy linked in.
 *
 * Why not tools/bench/canopy-bench: its harness waits politely (MPI_Test, then
 * sched_yield) and sizes its batches by wall-clock seconds; under SMPI each MPI_Test is
 * priced 100 us of simulated time and the simulation's wall time goes into them. Here
 * every wait is a blocking call and the loop counts are fixed.
 *
 * For each collective and size: --warmup untimed calls (Canopy's auto makes its trials
 * there), a barrier, then --calls back-to-back calls; a rank's time is from the barrier
 * to its last call's return, and the time per call is the slowest rank's over --calls
 * (MPI_Gather, which Canopy does not intercept). Every call of doubles is checked:
 * element i of rank r is r + i + c + 1 for call c, so a sum is known in closed form.
 * Rank 0 prints, per collective and size:
 *   RESULT <collective> <bytes> <simulated us per call> <calls>
 * and finally CHECK OK, or CHECK FAILED with exit status 1. With Canopy linked in it
 * also prints CANOPY <calls Canopy ran> <calls handed to native MPI> (summed over ranks). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Canopy's counters (shim/canopy.h), weak: the program also runs without Canopy. */
extern long canopy_intercepted_calls(void) __attribute__((weak));
extern long canopy_fallback_calls(void) __attribute__((weak));

static void usage(FILE* out) {
  fprintf(out,
          "usage: smpirun ... canopy-sim-bench [--collectives reduce,bcast,allreduce] [--sizes B,...]\n"
          "                                  [--warmup N] [--calls N] [--root R]\n"
          "  --collectives L  comma-separated: reduce, bcast, allreduce (default all three)\n"
          "  --sizes B,...    message sizes in bytes, multiples of 8 (default 8,1048576)\n"
          "  --warmup N       untimed calls per collective and size first (default 4)\n"
          "  --calls N        timed calls per collective and size (default 10)\n"
          "  --root R         root of reduce and bcast (default 0)\n");
}

static int failures = 0;

static double value(int rank, long i, int call) { return (double)rank + (double)i + (double)call + 1.0; }

/* The sum over ranks 0..p-1 of value(r, i, c). */
static double expected_sum(int p, long i, int call) {
  return (double)p * (p - 1) / 2.0 + (double)p * ((double)i + (double)call + 1.0);
}

static void check(const char* what, int ok, int rank, int call) {
  if (!ok) {
    if (failures < 5) fprintf(stderr, "canopy-sim-bench: rank %d: %s call %d: wrong result\n", rank, what, call);
    ++failures;
  }
}

static void run(const char* collective, long count, int warmup, int calls, int root, int rank, int size) {
  double* in = malloc((size_t)count * sizeof(double));
  double* out = malloc((size_t)count * sizeof(double));
  if (!in || !out) {
    fprintf(stderr, "canopy-sim-bench: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  double started = 0;
  for (int c = 0; c < warmup + calls; ++c) {
    if (c == warmup) {
      MPI_Barrier(MPI_COMM_WORLD);
      started = MPI_Wtime();
    }
    /* Inputs are refilled every call (outside the time: simulate-computation is off). */
    if (strcmp(collective, "bcast") == 0) {
      for (long i = 0; i < count; ++i) out[i] = rank == root ? value(0, i, c) : -1.0;
      MPI_Bcast(out, (int)count, MPI_DOUBLE, root, MPI_COMM_WORLD);
      int ok = 1;
      for (long i = 0; i < count && ok; ++i) ok = out[i] == value(0, i, c);
      check("MPI_Bcast", ok, rank, c);
    } else {
      for (long i = 0; i < count; ++i) {
        in[i] = value(rank, i, c);
        out[i] = -1.0;
      }
      int ok = 1;
      if (strcmp(collective, "reduce") == 0) {
        MPI_Reduce(in, out, (int)count, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD);
        for (long i = 0; rank == root && i < count && ok; ++i) ok = out[i] == expected_sum(size, i, c);
        check("MPI_Reduce", ok, rank, c);
      } else {
        MPI_Allreduce(in, out, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        for (long i = 0; i < count && ok; ++i) ok = out[i] == expected_sum(size, i, c);
        check("MPI_Allreduce", ok, rank, c);
      }
    }
  }
  double mine = calls > 0 ? MPI_Wtime() - started : 0.0;
  double* all = rank == 0 ? malloc((size_t)size * sizeof(double)) : NULL;
  MPI_Gather(&mine, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    double slowest = 0;
    for (int r = 0; r < size; ++r)
      if (all[r] > slowest) slowest = all[r];
    printf("RESULT %s %ld %.3f %d\n", strcmp(collective, "reduce") == 0   ? "MPI_Reduce"
                                      : strcmp(collective, "bcast") == 0 ? "MPI_Bcast"
                                                                          : "MPI_Allreduce",
           count * 8, calls > 0 ? slowest / calls * 1e6 : 0.0, calls);
    fflush(stdout);
    free(all);
  }
  free(in);
  free(out);
}

int main(int argc, char** argv) {
  const char* collectives = "reduce,bcast,allreduce";
  const char* sizes = "8,1048576";
  int warmup = 4, calls = 10, root = 0;
  for (int a = 1; a < argc; ++a) {
    const char* v = a + 1 < argc ? argv[a + 1] : NULL;
    if (strcmp(argv[a], "--help") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(argv[a], "--collectives") == 0 && v) collectives = argv[++a];
    else if (strcmp(argv[a], "--sizes") == 0 && v) sizes = argv[++a];
    else if (strcmp(argv[a], "--warmup") == 0 && v) warmup = atoi(argv[++a]);
    else if (strcmp(argv[a], "--calls") == 0 && v) calls = atoi(argv[++a]);
    else if (strcmp(argv[a], "--root") == 0 && v) root = atoi(argv[++a]);
    else {
      fprintf(stderr, "canopy-sim-bench: unknown or incomplete option '%s'\n", argv[a]);
      usage(stderr);
      return 2;
    }
  }
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (root < 0 || root >= size || warmup < 0 || calls < 0) {
    if (rank == 0) fprintf(stderr, "canopy-sim-bench: --root must be a rank, --warmup and --calls >= 0\n");
    MPI_Finalize();
    return 2;
  }
  char list[256];
  snprintf(list, sizeof list, "%s", collectives);
  /* strtok_r: SMPI privatizes the program's globals per rank, not libc's, so strtok's
   * hidden position would be shared by all simulated ranks. */
  char* position = NULL;
  for (char* c = strtok_r(list, ",", &position); c; c = strtok_r(NULL, ",", &position)) {
    if (strcmp(c, "reduce") != 0 && strcmp(c, "bcast") != 0 && strcmp(c, "allreduce") != 0) {
      if (rank == 0) fprintf(stderr, "canopy-sim-bench: unknown collective '%s'\n", c);
      failures++;
      continue;
    }
    const char* s = sizes;
    while (*s) {
      long bytes = strtol(s, (char**)&s, 10);
      if (bytes <= 0 || bytes % 8) {
        if (rank == 0) fprintf(stderr, "canopy-sim-bench: sizes must be positive multiples of 8\n");
        failures++;
        break;
      }
      run(c, bytes / 8, warmup, calls, root, rank, size);
      if (*s == ',') ++s;
    }
  }
  /* Everyone's failures and Canopy's counters, summed on rank 0 (MPI_Reduce of longs:
   * Canopy may run it too, and a wrong sum would show as a failure here). */
  long mine[3] = {failures, canopy_intercepted_calls ? canopy_intercepted_calls() : -1,
                  canopy_fallback_calls ? canopy_fallback_calls() : -1};
  long all[3] = {0, 0, 0};
  MPI_Reduce(mine, all, 3, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    if (canopy_intercepted_calls) printf("CANOPY %ld %ld\n", all[1], all[2]);
    printf(all[0] == 0 ? "CHECK OK\n" : "CHECK FAILED (%ld wrong results)\n", all[0]);
  }
  MPI_Finalize();
  return rank == 0 && all[0] != 0 ? 1 : 0;
}
