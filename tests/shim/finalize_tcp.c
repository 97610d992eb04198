/* finalize_tcp: a program that must leave MPI_Finalize, as issue 14 describes it: ten
 * calls of 1 MiB on MPI_COMM_WORLD, MPI_Reduce and MPI_Bcast in turn (results checked),
 * then MPI_Finalize. Over UCX's tcp transport MPICH 4.0.x can hang in MPI_Finalize
 * after such a run (shim/finalize_progress.h explains why); tests/shim/finalize_tcp.sh
 * and the test bed's tests/tools/testbed_finalize.sh run it many times and require
 * every run to end.
 *
 * --late-ms=D makes the hang certain without Canopy's help: after the collectives,
 * rank 0 sends 8 bytes to every other rank, which then go straight into MPI_Finalize,
 * while rank 0 follows D milliseconds later. Those ranks only received on that last
 * connection, so their own closing is done at once and they wait in MPICH's PMI
 * barrier; rank 0's closing then needs them to answer. (A sleep orders the ranks here
 * on purpose; it is the test's, not Canopy's.)
 *
 * No allreduce agrees on the outcome at the end (ct_finish would add one): the last
 * messages before MPI_Finalize are the program's own, as in the program. Each
 * rank prints "finalize_tcp: rank R: N checks passed" (or "... FAILED ...") before
 * MPI_Finalize and "finalize_tcp: rank R left MPI_Finalize" after it; the exit status
 * is its own checks'.
 *
 * Options: --calls=N (default 10), --bytes=B (default 1048576, a multiple of 8),
 * --late-ms=D (default 0: no late rank).
 */
#include "canopy_check.h"

#include <time.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  long calls = 10, bytes = 1 << 20, late_ms = 0;
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], "--calls=", 8) == 0) calls = atol(argv[i] + 8);
    else if (strncmp(argv[i], "--bytes=", 8) == 0) bytes = atol(argv[i] + 8);
    else if (strncmp(argv[i], "--late-ms=", 10) == 0) late_ms = atol(argv[i] + 10);
    else if (strncmp(argv[i], "--seed=", 7) != 0) {
      fprintf(stderr, "finalize_tcp: unknown option '%s' (allowed: --calls=N, --bytes=B, --late-ms=D, --seed=N)\n",
              argv[i]);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  if (calls < 0 || bytes < 8 || bytes % 8 != 0 || late_ms < 0) {
    fprintf(stderr, "finalize_tcp: --calls=%ld, --bytes=%ld, --late-ms=%ld: want calls >= 0, bytes a positive "
            "multiple of 8, late-ms >= 0\n", calls, bytes, late_ms);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const unsigned long long seed = ct_seed_from(argc, argv, 14);
  ct_init("finalize_tcp", seed);
  const int n = (int)(bytes / 8);
  double *send = malloc((size_t)bytes), *recv = malloc((size_t)bytes);
  for (long c = 0; c < calls; c++) {
    ct_context("call %ld", c);
    if (c % 2 == 0) {
      for (int i = 0; i < n; i++) send[i] = (double)(ct_hash(seed, (uint64_t)c, (uint64_t)ct.rank, (uint64_t)i) % 1000);
      MPI_Reduce(send, recv, n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
      if (ct.rank == 0) {
        int bad = -1;
        for (int i = 0; i < n && bad < 0; i++) {
          double want = 0;
          for (int r = 0; r < ct.size; r++) want += (double)(ct_hash(seed, (uint64_t)c, (uint64_t)r, (uint64_t)i) % 1000);
          if (recv[i] != want) bad = i;
        }
        ct_check(bad < 0, "reduce of %d doubles wrong at %d", n, bad);
      }
    } else {
      for (int i = 0; i < n; i++) recv[i] = ct.rank == 0 ? (double)(ct_hash(seed, (uint64_t)c, 0, (uint64_t)i) % 1000) : -1;
      MPI_Bcast(recv, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
      int bad = -1;
      for (int i = 0; i < n && bad < 0; i++)
        if (recv[i] != (double)(ct_hash(seed, (uint64_t)c, 0, (uint64_t)i) % 1000)) bad = i;
      ct_check(bad < 0, "bcast of %d doubles wrong at %d", n, bad);
    }
  }
  if (ct.failures == 0) printf("finalize_tcp: rank %d: %ld checks passed\n", ct.rank, ct.checks);
  else printf("finalize_tcp: rank %d: FAILED: %ld of %ld checks failed (seed %llu)\n", ct.rank, ct.failures,
              ct.checks, seed);
  const int status = ct.failures ? 1 : 0;
  if (late_ms > 0) {
    char byte8[8] = {0};
    if (ct.rank == 0) {
      for (int r = 1; r < ct.size; r++) MPI_Send(byte8, 8, MPI_BYTE, r, 14, MPI_COMM_WORLD);
      struct timespec rest = {late_ms / 1000, (late_ms % 1000) * 1000000L};
      nanosleep(&rest, NULL);
    } else {
      MPI_Recv(byte8, 8, MPI_BYTE, 0, 14, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
  }
  free(send);
  free(recv);
  fflush(stdout);
  MPI_Finalize();
  printf("finalize_tcp: rank %d left MPI_Finalize\n", ct.rank);
  return status;
}
