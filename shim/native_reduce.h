// MPI_Reduce as native MPI runs it, with one known crash of the MPI worked around.
//
// MPICH 4.0 to 4.1.1 (ch4) segfault in MPI_Reduce when the root passes MPI_IN_PLACE and
// is not rank 0, from a few KB (pmodels/mpich#6540, found by this project's tests with
// Debian's 4.0.2; fixed in MPICH by pmodels/mpich#6543, released in 4.1.2). Canopy's own
// schedules get those calls right, but every call Canopy hands to native MPI (a setting
// that says native, a datatype Canopy does not stage, a planner failure, a trial of
// native) met the crash. There, the root passes a copy of its receive buffer as the
// send buffer instead: MPICH's fix makes the same copy. Only the root's arguments
// change, so every rank still runs MPI's own algorithm and message pattern (which,
// per the MPI standard, cannot depend on the root's MPI_IN_PLACE: the other ranks do
// not know it).
#pragma once

#include <mpi.h>

#include <string_view>

namespace canopy::shim {

// Whether the MPI library that MPI_Get_library_version describes crashes on
// MPI_Reduce(MPI_IN_PLACE, ...) at a non-zero root: "MPICH Version:" 4.0.0 to 4.1.1.
// Other MPIs (Open MPI, and MPICH's derivatives, which name themselves otherwise) and
// versions say no.
bool in_place_reduce_at_nonzero_root_crashes(std::string_view library_version);

// The same question for the MPI this process runs on (one MPI_Get_library_version).
bool this_mpi_crashes_on_in_place_reduce_at_nonzero_root();

// PMPI_Reduce with the same arguments, except that where `copy_in_place_at_nonzero_root`
// is set and this rank is a non-zero root passing MPI_IN_PLACE, the send buffer is a
// copy of the receive buffer's `count` elements (a memcpy for a contiguous type, MPI's
// pack and unpack for others). Where no copy can be made (no memory, a buffer at
// MPI_BOTTOM whose type holds absolute addresses) the call goes as it came.
// Inline where no copy can be needed: every call of every rank but such a root's.
int native_reduce_with_copy(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                            MPI_Comm comm);
inline int native_reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                         MPI_Comm comm, bool copy_in_place_at_nonzero_root) {
  if (!copy_in_place_at_nonzero_root || sendbuf != MPI_IN_PLACE || root <= 0 || count <= 0 || recvbuf == MPI_BOTTOM)
    return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
  return native_reduce_with_copy(sendbuf, recvbuf, count, datatype, op, root, comm);
}

}  // namespace canopy::shim
