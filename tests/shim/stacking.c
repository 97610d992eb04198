/* stacking: Canopy and another PMPI tool (pmpi_counter.c) preloaded together.
 * 20 rounds of MPI_Reduce and MPI_Bcast of 1000 doubles at rotating roots and a ring
 * of MPI_Send/MPI_Recv on MPI_COMM_WORLD; every result is checked, and then who saw
 * what, for the preload order named by --order:
 *   counter        the counter alone: it counts every call;
 *   counter-first  LD_PRELOAD=libpmpi_counter.so:libcanopy.so: the counter gets the
 *                  application's calls and hands them to PMPI_, the MPI library's:
 *                  Canopy sees nothing (not even MPI_Init, so it stays off);
 *   canopy-first   LD_PRELOAD=libcanopy.so:libpmpi_counter.so: Canopy gets MPI_Reduce and
 *                  MPI_Bcast and runs them (its own messages go to PMPI_, so the
 *                  counter counts no MPI_Isend or MPI_Irecv of Canopy's); it hands
 *                  MPI_Init and MPI_Finalize on to the counter's, which counts them;
 *                  the counter sees the application's MPI_Send and MPI_Recv.
 * Options: --order=counter|counter-first|canopy-first (required), --seed=N.
 */
#include "canopy_check.h"

#define ROUNDS 20
#define N 1000

typedef long (*count_fn)(void);
typedef long (*named_count_fn)(const char *);

static long canopy_count(const char *symbol) {
  count_fn fn;
  void *sym = dlsym(RTLD_DEFAULT, symbol);
  if (!sym) return -1;
  memcpy(&fn, &sym, sizeof fn);
  return fn();
}

static long counter(const char *name) {
  named_count_fn fn;
  void *sym = dlsym(RTLD_DEFAULT, "pmpi_counter_count");
  if (!sym) return -1;
  memcpy(&fn, &sym, sizeof fn);
  return fn(name);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const unsigned long long seed = ct_seed_from(argc, argv, 140);
  ct_init("stacking", seed);
  const char *order = NULL;
  for (int i = 1; i < argc; i++)
    if (strncmp(argv[i], "--order=", 8) == 0) order = argv[i] + 8;
  if (!order || (strcmp(order, "counter") && strcmp(order, "counter-first") && strcmp(order, "canopy-first"))) {
    if (ct.rank == 0)
      fprintf(stderr, "stacking: --order='%s' is not valid (allowed: counter, counter-first, canopy-first)\n",
              order ? order : "");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  static double send[N], recv[N];
  const int right = (ct.rank + 1) % ct.size, left = (ct.rank + ct.size - 1) % ct.size;
  for (int round = 0; round < ROUNDS; round++) {
    const int root = round % ct.size;
    ct_context("round %d, root %d", round, root);
    for (int i = 0; i < N; i++) send[i] = (double)(ct_hash(seed, (uint64_t)round, (uint64_t)ct.rank, (uint64_t)i) % 1000);
    MPI_Reduce(send, recv, N, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD);
    if (ct.rank == root) {
      int bad = -1;
      for (int i = 0; i < N && bad < 0; i++) {
        double want = 0;
        for (int r = 0; r < ct.size; r++) want += (double)(ct_hash(seed, (uint64_t)round, (uint64_t)r, (uint64_t)i) % 1000);
        if (recv[i] != want) bad = i;
      }
      ct_check(bad < 0, "reduce wrong at %d", bad);
    }
    for (int i = 0; i < N; i++) recv[i] = ct.rank == root ? (double)(round * N + i) : -1;
    MPI_Bcast(recv, N, MPI_DOUBLE, root, MPI_COMM_WORLD);
    int bad = -1;
    for (int i = 0; i < N && bad < 0; i++)
      if (recv[i] != (double)(round * N + i)) bad = i;
    ct_check(bad < 0, "bcast wrong at %d", bad);
    /* The application's own point-to-point: one message around the ring. */
    int token = -1, mine = round * 100 + ct.rank;
    if (ct.rank % 2 == 0) {
      MPI_Send(&mine, 1, MPI_INT, right, round, MPI_COMM_WORLD);
      MPI_Recv(&token, 1, MPI_INT, left, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(&token, 1, MPI_INT, left, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(&mine, 1, MPI_INT, right, round, MPI_COMM_WORLD);
    }
    ct_check(token == round * 100 + left, "ring: got %d from rank %d, want %d", token, left, round * 100 + left);
  }

  const long init = counter("MPI_Init"), reduces = counter("MPI_Reduce"), bcasts = counter("MPI_Bcast"),
             sends = counter("MPI_Send"), recvs = counter("MPI_Recv"), isends = counter("MPI_Isend"),
             irecvs = counter("MPI_Irecv");
  const long intercepted = canopy_count("canopy_intercepted_calls"), native = canopy_count("canopy_fallback_calls");
  printf("stacking: rank %d, order %s: counter saw MPI_Init %ld, MPI_Reduce %ld, MPI_Bcast %ld, MPI_Send %ld, "
         "MPI_Recv %ld, MPI_Isend %ld, MPI_Irecv %ld; Canopy ran %ld calls, handed %ld to native MPI (-1: absent)\n",
         ct.rank, order, init, reduces, bcasts, sends, recvs, isends, irecvs, intercepted, native);
  ct_context("order %s", order);
  /* The application's MPI_Send/MPI_Recv reach the counter in every order. */
  ct_check(sends == ROUNDS && recvs == ROUNDS, "counter saw %ld sends and %ld receives, want %d each", sends, recvs,
           ROUNDS);
  ct_check(init == 1, "counter saw MPI_Init %ld times, want 1", init);
  ct_check(isends == 0 && irecvs == 0, "counter saw %ld MPI_Isend and %ld MPI_Irecv, want none", isends, irecvs);
  if (strcmp(order, "canopy-first") == 0) {
    ct_check(reduces == 0 && bcasts == 0, "counter saw %ld reduces and %ld bcasts: Canopy should have had them",
             reduces, bcasts);
    ct_check(intercepted > 0 && intercepted + native == 2 * ROUNDS,
             "Canopy ran %ld and handed %ld to native MPI, want %d calls in all, some run by Canopy", intercepted,
             native, 2 * ROUNDS);
  } else {
    ct_check(reduces == ROUNDS && bcasts == ROUNDS, "counter saw %ld reduces and %ld bcasts, want %d each", reduces,
             bcasts, ROUNDS);
    if (strcmp(order, "counter-first") == 0)
      ct_check(intercepted == 0 && native == 0,
               "Canopy ran %ld and handed %ld calls to native MPI: the counter before it should pass them by",
               intercepted, native);
    else
      ct_check(intercepted == -1, "canopy_intercepted_calls exists: Canopy is preloaded");
  }
  const int status = ct_finish();
  MPI_Finalize();
  return status;
}
