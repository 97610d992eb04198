/* threads: under MPI_THREAD_MULTIPLE, collectives on different communicators from
 * different threads at the same time must all be right. Each of NTHREADS threads has
 * its own duplicate of MPI_COMM_WORLD (made by the main thread, so Canopy sets up its
 * state for them concurrently, inside the threads' first calls) and runs reduces and
 * broadcasts of varied sizes, roots and datatypes, checking every result. One thread
 * also creates and frees communicators of its own along the way, so Canopy's states
 * are created and released while other threads use theirs.
 *
 * Exits with 77 (CTest's SKIP_RETURN_CODE) when MPI does not provide
 * MPI_THREAD_MULTIPLE. Options: --seed=N, --rounds=N (default 40).
 */
#include "canopy_check.h"

#include <pthread.h>

#define NTHREADS 4
#define MAXN 3000

static unsigned long long seed;
static int rounds = 40;
static long failures[NTHREADS], checks[NTHREADS];

typedef struct {
  int id;
  MPI_Comm comm;
} job_t;

static double value(int thread, int rank, int round, int i) {
  return (double)(ct_hash(seed, (uint64_t)(thread * 1000 + round), (uint64_t)rank, (uint64_t)i) % 1000);
}

static void check(int id, int cond, const char *what, int round, int i) {
  checks[id]++;
  if (!cond) {
    if (failures[id]++ < 5) fprintf(stderr, "threads: FAIL rank %d thread %d round %d: %s at %d (seed %llu)\n",
                                    ct.rank, id, round, what, i, seed);
  }
}

/* A reduce (sum of doubles, or max of ints) and a broadcast per round, on `comm`. */
static void collectives(int id, MPI_Comm comm, int round, double *dsend, double *drecv, int *ibuf) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int sizes[] = {1, 7, 64, 513, MAXN};
  const int n = sizes[(round + id) % 5];
  const int root = (round * 3 + id) % size;
  for (int i = 0; i < n; i++) dsend[i] = value(id, rank, round, i), drecv[i] = -1;
  if (MPI_Reduce(dsend, drecv, n, MPI_DOUBLE, MPI_SUM, root, comm) != MPI_SUCCESS) check(id, 0, "reduce error", round, 0);
  if (rank == root)
    for (int i = 0; i < n; i++) {
      double want = 0;
      for (int r = 0; r < size; r++) want += value(id, r, round, i);
      check(id, drecv[i] == want, "reduce sum", round, i);
    }
  for (int i = 0; i < n; i++) ibuf[i] = rank == root ? (int)value(id, root, round + 7, i) : -1;
  if (MPI_Bcast(ibuf, n, MPI_INT, root, comm) != MPI_SUCCESS) check(id, 0, "bcast error", round, 0);
  for (int i = 0; i < n; i++) check(id, ibuf[i] == (int)value(id, root, round + 7, i), "bcast data", round, i);
}

static void *work(void *arg) {
  const job_t *job = arg;
  double *dsend = malloc(MAXN * sizeof *dsend), *drecv = malloc(MAXN * sizeof *drecv);
  int *ibuf = malloc(MAXN * sizeof *ibuf);
  for (int round = 0; round < rounds; round++) {
    collectives(job->id, job->comm, round, dsend, drecv, ibuf);
    if (job->id == 0 && round % 10 == 0) {
      /* A short-lived communicator of this thread's own (dup is collective on
       * job->comm, which only this thread uses). */
      MPI_Comm mine;
      MPI_Comm_dup(job->comm, &mine);
      collectives(job->id, mine, round + 1000, dsend, drecv, ibuf);
      MPI_Comm_free(&mine);
    }
  }
  free(dsend);
  free(drecv);
  free(ibuf);
  return NULL;
}

int main(int argc, char **argv) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  seed = ct_seed_from(argc, argv, 5);
  for (int i = 1; i < argc; i++)
    if (strncmp(argv[i], "--rounds=", 9) == 0) rounds = atoi(argv[i] + 9);
  ct_init("threads", seed);
  if (provided < MPI_THREAD_MULTIPLE) {
    if (ct.rank == 0) printf("threads: MPI provides thread level %d, not MPI_THREAD_MULTIPLE: skipped\n", provided);
    MPI_Finalize();
    return 77;
  }
  job_t jobs[NTHREADS];
  pthread_t threads[NTHREADS];
  for (int t = 0; t < NTHREADS; t++) {
    jobs[t].id = t;
    MPI_Comm_dup(MPI_COMM_WORLD, &jobs[t].comm);
  }
  for (int t = 0; t < NTHREADS; t++) pthread_create(&threads[t], NULL, work, &jobs[t]);
  for (int t = 0; t < NTHREADS; t++) pthread_join(threads[t], NULL);
  for (int t = 0; t < NTHREADS; t++) {
    MPI_Comm_free(&jobs[t].comm);
    ct.checks += checks[t];
    ct.failures += failures[t];
  }
  const int status = ct_finish();
  MPI_Finalize();
  return status;
}
