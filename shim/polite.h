// Waiting without spinning a core flat out, and the collectives of Canopy's own
// agreements and probes built on it. Apart from the executor (which waits this way too)
// so that what needs only these (shim/members.h, its test) needs nothing else.
#pragma once

#include <mpi.h>

namespace canopy::shim {

// Waits for a request without spinning a core flat out; `status` as PMPI_Test's.
int wait_politely(MPI_Request* request, MPI_Status* status = MPI_STATUS_IGNORE);
// The same for the first of `count` requests to complete (PMPI_Waitany's arguments).
int waitany_politely(int count, MPI_Request* requests, int* index, MPI_Status* status = MPI_STATUS_IGNORE);

// The collectives of Canopy's own agreements and probes: the nonblocking forms, waited
// for with wait_politely (where ranks outnumber cores MPICH's blocking collectives
// busy-poll and starve the ranks they wait for); the blocking ones where the platform's
// nonblocking collectives are not worth it (SMPI: Platform::nonblocking_collectives).
// Gathers and allgathers take `count` elements from each rank. MPI_SUCCESS or the error.
int allreduce_politely(const void* in, void* out, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm);
int allgather_politely(const void* in, int count, MPI_Datatype type, void* out, MPI_Comm comm);
int bcast_politely(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm);
int reduce_politely(const void* in, void* out, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm);
int gather_politely(const void* in, int count, MPI_Datatype type, void* out, int root, MPI_Comm comm);
int barrier_politely(MPI_Comm comm);

}  // namespace canopy::shim
