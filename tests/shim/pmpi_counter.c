/* pmpi_counter: a second, minimal PMPI tool, for stacking tests with Canopy (issue 14).
 * Built as a shared library and preloaded beside libcanopy.so, before or after it. Like
 * any PMPI tool it replaces some MPI_ functions, counts each call and hands it to the
 * PMPI_ function; at MPI_Finalize it prints one line per rank:
 *   pmpi_counter: rank R: MPI_Init N, MPI_Reduce N, MPI_Bcast N, MPI_Send N, MPI_Recv N,
 *   MPI_Isend N, MPI_Irecv N, MPI_Finalize 1
 * and pmpi_counter_count(name) returns a count while the program runs (the programs
 * find it with dlsym, as they find Canopy's canopy_intercepted_calls).
 * MPI_Init_thread counts as MPI_Init.
 */
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

enum { INIT, REDUCE, BCAST, SEND, RECV, ISEND, IRECV, FINALIZE, KINDS };
static const char *const names[KINDS] = {"MPI_Init", "MPI_Reduce", "MPI_Bcast", "MPI_Send",
                                         "MPI_Recv", "MPI_Isend", "MPI_Irecv", "MPI_Finalize"};
static long counts[KINDS];

EXPORT long pmpi_counter_count(const char *name) {
  for (int k = 0; k < KINDS; k++)
    if (strcmp(name, names[k]) == 0) return counts[k];
  return -1;
}

EXPORT int MPI_Init(int *argc, char ***argv) {
  counts[INIT]++;
  return PMPI_Init(argc, argv);
}

EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
  counts[INIT]++;
  return PMPI_Init_thread(argc, argv, required, provided);
}

EXPORT int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op, int root,
                      MPI_Comm comm) {
  counts[REDUCE]++;
  return PMPI_Reduce(sendbuf, recvbuf, count, type, op, root, comm);
}

EXPORT int MPI_Bcast(void *buffer, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  counts[BCAST]++;
  return PMPI_Bcast(buffer, count, type, root, comm);
}

EXPORT int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  counts[SEND]++;
  return PMPI_Send(buf, count, type, dest, tag, comm);
}

EXPORT int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                    MPI_Status *status) {
  counts[RECV]++;
  return PMPI_Recv(buf, count, type, source, tag, comm, status);
}

EXPORT int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                     MPI_Request *request) {
  counts[ISEND]++;
  return PMPI_Isend(buf, count, type, dest, tag, comm, request);
}

EXPORT int MPI_Irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                     MPI_Request *request) {
  counts[IRECV]++;
  return PMPI_Irecv(buf, count, type, source, tag, comm, request);
}

EXPORT int MPI_Finalize(void) {
  counts[FINALIZE]++;
  int rank = -1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char line[512];
  int used = snprintf(line, sizeof line, "pmpi_counter: rank %d:", rank);
  for (int k = 0; k < KINDS && used > 0 && used < (int)sizeof line; k++)
    used += snprintf(line + used, sizeof line - (size_t)used, "%s %s %ld", k ? "," : "", names[k], counts[k]);
  printf("%s\n", line); /* one write, so ranks' lines do not interleave */
  fflush(stdout);
  return PMPI_Finalize();
}
