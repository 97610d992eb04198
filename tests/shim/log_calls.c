/* Makes a known set of collective calls so that the schedule log they produce can be
 * checked against them (see check_schedule_log.cpp). Each call is checked too. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size, bad = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  int ints[1000], sum[1000];
  for (int i = 0; i < 1000; ++i) ints[i] = rank + i;
  for (int repeat = 0; repeat < 3; ++repeat) /* the same schedule: logged once */
    MPI_Reduce(ints, sum, 1000, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0)
    for (int i = 0; i < 1000; ++i) bad += sum[i] != size * (size - 1) / 2 + size * i;

  double d[7], dmax[7];
  for (int i = 0; i < 7; ++i) d[i] = rank * 10 + i;
  MPI_Reduce(d, dmax, 7, MPI_DOUBLE, MPI_MAX, size - 1, MPI_COMM_WORLD);
  if (rank == size - 1)
    for (int i = 0; i < 7; ++i) bad += dmax[i] != (size - 1) * 10 + i;

  char bytes[100];
  for (int i = 0; i < 100; ++i) bytes[i] = rank == 1 % size ? (char)i : 0;
  MPI_Bcast(bytes, 100, MPI_CHAR, 1 % size, MPI_COMM_WORLD);
  for (int i = 0; i < 100; ++i) bad += bytes[i] != (char)i;

  /* A sub-communicator of the even ranks, reversed. */
  MPI_Comm sub;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &sub);
  int subsize, one = 1, count = 0;
  MPI_Comm_size(sub, &subsize);
  MPI_Reduce(&one, &count, 1, MPI_INT, MPI_SUM, 0, sub);
  int subrank;
  MPI_Comm_rank(sub, &subrank);
  if (subrank == 0) bad += count != subsize;
  MPI_Comm_free(&sub);

  int total = 0;
  MPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("log_calls: %s\n", total ? "FAILED" : "all results right");
  MPI_Finalize();
  return total ? 1 : 0;
}
