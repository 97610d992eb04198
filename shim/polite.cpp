#include "shim/polite.h"

#include <sched.h>

#include "shim/platform.h"

namespace canopy::shim {

namespace {
// Calls `test` (PMPI_Test or PMPI_Testany, setting its flag) until it says done. A few
// quick polls catch messages already on their way; then each poll gives the core to the
// peer we are waiting for.
template <typename Test>
int poll_politely(Test test) {
  int done = 0;
  for (int polls = 0;; ++polls) {
    const int err = test(&done);
    if (err != MPI_SUCCESS || done) return err;
    if (polls >= 8) sched_yield();
  }
}
}  // namespace

int wait_politely(MPI_Request* request, MPI_Status* status) {
  if (*request == MPI_REQUEST_NULL) return MPI_SUCCESS;
  // Where polling is priced or cannot give a core away (SMPI: shim/platform.h), block.
  if (!platform().polling_waits) return PMPI_Wait(request, status);
  return poll_politely([&](int* done) { return PMPI_Test(request, done, status); });
}

int waitany_politely(int count, MPI_Request* requests, int* index, MPI_Status* status) {
  if (!platform().polling_waits) return PMPI_Waitany(count, requests, index, status);
  return poll_politely([&](int* done) { return PMPI_Testany(count, requests, index, done, status); });
}

// Canopy's own collectives: nonblocking and waited for politely, or blocking where the
// platform's nonblocking ones are not worth it (SMPI: shim/platform.h).
namespace {
template <typename Blocking, typename Start>
int politely(Blocking blocking, Start start) {
  if (!platform().nonblocking_collectives) return blocking();
  MPI_Request request = MPI_REQUEST_NULL;
  const int err = start(&request);
  return err != MPI_SUCCESS ? err : wait_politely(&request);
}
}  // namespace

int allreduce_politely(const void* in, void* out, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  return politely([&] { return PMPI_Allreduce(in, out, count, type, op, comm); },
                  [&](MPI_Request* r) { return PMPI_Iallreduce(in, out, count, type, op, comm, r); });
}

int allgather_politely(const void* in, int count, MPI_Datatype type, void* out, MPI_Comm comm) {
  return politely([&] { return PMPI_Allgather(in, count, type, out, count, type, comm); },
                  [&](MPI_Request* r) { return PMPI_Iallgather(in, count, type, out, count, type, comm, r); });
}

int bcast_politely(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  return politely([&] { return PMPI_Bcast(buffer, count, type, root, comm); },
                  [&](MPI_Request* r) { return PMPI_Ibcast(buffer, count, type, root, comm, r); });
}

int reduce_politely(const void* in, void* out, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm) {
  return politely([&] { return PMPI_Reduce(in, out, count, type, op, root, comm); },
                  [&](MPI_Request* r) { return PMPI_Ireduce(in, out, count, type, op, root, comm, r); });
}

int gather_politely(const void* in, int count, MPI_Datatype type, void* out, int root, MPI_Comm comm) {
  return politely([&] { return PMPI_Gather(in, count, type, out, count, type, root, comm); },
                  [&](MPI_Request* r) { return PMPI_Igather(in, count, type, out, count, type, root, comm, r); });
}

int barrier_politely(MPI_Comm comm) {
  return politely([&] { return PMPI_Barrier(comm); }, [&](MPI_Request* r) { return PMPI_Ibarrier(comm, r); });
}

}  // namespace canopy::shim
