// MPI_Reduce, MPI_Bcast and MPI_Allreduce as Canopy runs them: find the communicator's state, look up
// the plan, lay out buffers, execute, or hand the call to native MPI. Every decision
// that changes the message pattern depends only on arguments identical on all ranks.
#pragma once

#include <mpi.h>

namespace canopy::shim {

int reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm);
int bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm);
int allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);

// Hands on the counts that native shortcuts keep for the calls they ran quietly (the
// plans' calls, cache hits, fallback reasons: shim/collectives.cpp) to where they are
// read: before a generation changes (a state or plan may go), before the report and the
// schedule log, before the API's counters are read. Not thread-safe; needed only below
// MPI_THREAD_MULTIPLE, where the shortcuts are.
void flush_native_shortcuts();

}  // namespace canopy::shim
