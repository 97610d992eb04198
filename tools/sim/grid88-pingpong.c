/* grid88-pingpong.c: checks tools/sim/platforms/grid88.xml against Table 4 of 004: for
 * some pairs of ranks (one rank a host, in the platform's host order) the one-way time
 * (half a round trip, the third of three) of 8 B and 4 MiB. docs/simulation.md shows how
 * to run it and what it printed. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int r; MPI_Comm_rank(MPI_COMM_WORLD, &r);
  int peers[][2] = {{0,1},{0,31},{0,60},{0,66},{0,67},{0,68},{60,61},{66,67},{60,66},{68,69},{31,68},{1,2}};
  int sizes[] = {8, 4194304};
  char* buf = malloc(4194304);
  for (int s = 0; s < 2; ++s)
    for (unsigned k = 0; k < sizeof peers / sizeof peers[0]; ++k) {
      int a = peers[k][0], b = peers[k][1];
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      for (int it = 0; it < 3; ++it) { t0 = MPI_Wtime();
      if (r == a) { MPI_Send(buf, sizes[s], MPI_CHAR, b, 0, MPI_COMM_WORLD); MPI_Recv(buf, sizes[s], MPI_CHAR, b, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); if (it == 2) printf("%d-%d %d B: one-way (half rtt) %.2f us\n", a, b, sizes[s], (MPI_Wtime()-t0)/2*1e6); }
      if (r == b) { MPI_Recv(buf, sizes[s], MPI_CHAR, a, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); MPI_Send(buf, sizes[s], MPI_CHAR, a, 0, MPI_COMM_WORLD); } }
    }
  MPI_Finalize();
}
