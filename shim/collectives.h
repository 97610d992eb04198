// MPI_Reduce, MPI_Bcast and MPI_Allreduce as Canopy runs them: find the communicator's state, look up
// the plan, lay out buffers, execute, or hand the call to native MPI. Every decision
// that changes the message pattern depends only on arguments identical on all ranks.
#pragma once

#include <mpi.h>

namespace canopy::shim {

int reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm);
int bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm);
int allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);

}  // namespace canopy::shim
