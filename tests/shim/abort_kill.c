/* abort_kill: one rank ends the job in the middle of a run of collectives, the others
 * being inside an MPI_Reduce or MPI_Bcast that waits for it:
 *   --mode=abort  the victim calls MPI_Abort(MPI_COMM_WORLD, 7);
 *   --mode=kill   the victim kills itself with SIGKILL (as the OOM killer or a crash would).
 * The job must end as it does natively: the launcher sees the abort or the dead rank
 * and ends the others, which Canopy must not keep alive (tests/shim/job_end.sh runs
 * it natively and with Canopy and compares). --mode=none: no victim, 400 rounds of 64 KiB
 * that end normally.
 * Options: --mode=abort|kill|none (required), --victim=R (default: the last rank),
 * --at=I (round, default 20).
 */
#include "canopy_check.h"

#include <signal.h>
#include <unistd.h>

#define ROUNDS 400
#define N 8192

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  ct_init("abort_kill", 7);
  const char *mode = NULL;
  int victim = ct.size - 1, at = 20;
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], "--mode=", 7) == 0) mode = argv[i] + 7;
    if (strncmp(argv[i], "--victim=", 9) == 0) victim = atoi(argv[i] + 9);
    if (strncmp(argv[i], "--at=", 5) == 0) at = atoi(argv[i] + 5);
  }
  if (!mode || (strcmp(mode, "abort") && strcmp(mode, "kill") && strcmp(mode, "none")) || victim < 0 ||
      victim >= ct.size || at < 0 || at >= ROUNDS) {
    if (ct.rank == 0)
      fprintf(stderr, "abort_kill: --mode='%s', --victim=%d, --at=%d: want abort, kill or none, a rank below %d "
              "and a round below %d\n", mode ? mode : "", victim, at, ct.size, ROUNDS);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  static double send[N], recv[N];
  for (int round = 0; round < ROUNDS; round++) {
    if (round == at && ct.rank == victim && strcmp(mode, "none") != 0) {
      printf("abort_kill: rank %d ends the job (%s) at round %d\n", ct.rank, mode, round);
      fflush(stdout);
      if (strcmp(mode, "abort") == 0) MPI_Abort(MPI_COMM_WORLD, 7);
      if (strcmp(mode, "kill") == 0) kill(getpid(), SIGKILL);
    }
    for (int i = 0; i < N; i++) send[i] = (double)(round + ct.rank + i);
    MPI_Reduce(send, recv, N, MPI_DOUBLE, MPI_SUM, round % ct.size, MPI_COMM_WORLD);
    if (ct.rank == round % ct.size)
      ct_check(recv[N - 1] == (double)ct.size * (round + N - 1) + ct.size * (ct.size - 1) / 2.0,
               "round %d: reduce wrong", round);
    MPI_Bcast(recv, N, MPI_DOUBLE, round % ct.size, MPI_COMM_WORLD);
  }
  const int status = ct_finish();
  MPI_Finalize();
  return status;
}
