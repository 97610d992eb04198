// Fortran entry points of MPI_INIT, MPI_INIT_THREAD, MPI_FINALIZE, MPI_REDUCE,
// MPI_BCAST and MPI_ALLREDUCE, for Open MPI.
//
// Open MPI's Fortran bindings (mpif.h and `use mpi`, in libmpi_mpifh) call the PMPI_
// C functions directly (open-mpi/ompi#3954), so the C wrappers in wrappers.cpp never see
// a Fortran program's calls: not its collectives, and not its MPI_INIT either, without
// which Canopy stays inactive. Preloaded, libcanopy.so defines the Fortran symbols
// themselves, under each name mangling a Fortran compiler may use (mpi_reduce_,
// mpi_reduce__, mpi_reduce, MPI_REDUCE), and hands the calls to the same code as the C
// wrappers: init and finalize to the C MPI_Init, MPI_Init_thread and MPI_Finalize of
// wrappers.cpp (as Open MPI's own bindings do: no argc/argv), the collectives to
// canopy::shim::reduce, bcast and allreduce.
//
// Built for Open MPI only (OPEN_MPI, from its mpi.h): MPICH's Fortran bindings call the
// C MPI_Init, MPI_Reduce, ..., which wrappers.cpp already replaces, and its Fortran
// sentinels differ; defining these symbols there as well would only add a second path
// to the same place. Against any other MPI this file compiles to nothing.
//
// Not covered: `use mpi_f08`. Open MPI's f08 module calls its internal ompi_reduce_f /
// ompi_bcast_f (and ompi_init_f, ...), and so do its PMPI f08 entry points; replacing
// those internal symbols would also capture PMPI calls, which must reach native MPI.
// An f08 program runs natively.
#include <mpi.h>

#if defined(OPEN_MPI)

#include <dlfcn.h>

#include <cstddef>

#include "shim/collectives.h"
#include "shim/export.h"

namespace {

// The address of one of Open MPI's Fortran sentinels: a common block (MPI_IN_PLACE,
// MPI_BOTTOM) whose address the program passes as the buffer, exported by libmpi
// under the name its Fortran compiler gave it (gfortran: mpi_fortran_in_place_).
// nullptr when none is found: then no buffer is taken for the sentinel.
template <std::size_t N>
const void* fortran_sentinel(const char* const (&names)[N]) {
  for (const char* name : names)
    if (const void* address = dlsym(RTLD_DEFAULT, name)) return address;
  return nullptr;
}

const void* fortran_in_place() {
  static const void* const address = fortran_sentinel(
      {"mpi_fortran_in_place_", "mpi_fortran_in_place", "mpi_fortran_in_place__", "MPI_FORTRAN_IN_PLACE"});
  return address;
}

const void* fortran_bottom() {
  static const void* const address =
      fortran_sentinel({"mpi_fortran_bottom_", "mpi_fortran_bottom", "mpi_fortran_bottom__", "MPI_FORTRAN_BOTTOM"});
  return address;
}

// A Fortran buffer argument as C sees it: the sentinels become C's MPI_IN_PLACE and
// MPI_BOTTOM (as Open MPI's own bindings convert them), any other address stays.
void* c_buffer(void* fortran, bool in_place_allowed) {
  if (fortran == nullptr) return fortran;  // never mistaken for a sentinel that was not found
  if (in_place_allowed && fortran == fortran_in_place()) return MPI_IN_PLACE;
  if (fortran == fortran_bottom()) return MPI_BOTTOM;
  return fortran;
}

void fortran_reduce(void* sendbuf, void* recvbuf, const MPI_Fint* count, const MPI_Fint* datatype, const MPI_Fint* op,
                    const MPI_Fint* root, const MPI_Fint* comm, MPI_Fint* ierr) {
  const int err =
      canopy::shim::reduce(c_buffer(sendbuf, true), c_buffer(recvbuf, false), static_cast<int>(*count),
                           PMPI_Type_f2c(*datatype), PMPI_Op_f2c(*op), static_cast<int>(*root), PMPI_Comm_f2c(*comm));
  if (ierr) *ierr = static_cast<MPI_Fint>(err);
}

void fortran_allreduce(void* sendbuf, void* recvbuf, const MPI_Fint* count, const MPI_Fint* datatype,
                       const MPI_Fint* op, const MPI_Fint* comm, MPI_Fint* ierr) {
  const int err = canopy::shim::allreduce(c_buffer(sendbuf, true), c_buffer(recvbuf, false), static_cast<int>(*count),
                                          PMPI_Type_f2c(*datatype), PMPI_Op_f2c(*op), PMPI_Comm_f2c(*comm));
  if (ierr) *ierr = static_cast<MPI_Fint>(err);
}

void fortran_bcast(void* buffer, const MPI_Fint* count, const MPI_Fint* datatype, const MPI_Fint* root,
                   const MPI_Fint* comm, MPI_Fint* ierr) {
  const int err = canopy::shim::bcast(c_buffer(buffer, false), static_cast<int>(*count), PMPI_Type_f2c(*datatype),
                                      static_cast<int>(*root), PMPI_Comm_f2c(*comm));
  if (ierr) *ierr = static_cast<MPI_Fint>(err);
}

// Through the C MPI_ names, which resolve to wrappers.cpp when Canopy is preloaded: the
// Fortran binding layered over the C binding, as MPICH's are.
void fortran_init(MPI_Fint* ierr) {
  const int err = MPI_Init(nullptr, nullptr);
  if (ierr) *ierr = static_cast<MPI_Fint>(err);
}

void fortran_init_thread(const MPI_Fint* required, MPI_Fint* provided, MPI_Fint* ierr) {
  int c_provided = MPI_THREAD_SINGLE;
  const int err = MPI_Init_thread(nullptr, nullptr, static_cast<int>(*required), &c_provided);
  *provided = static_cast<MPI_Fint>(c_provided);
  if (ierr) *ierr = static_cast<MPI_Fint>(err);
}

void fortran_finalize(MPI_Fint* ierr) {
  const int err = MPI_Finalize();
  if (ierr) *ierr = static_cast<MPI_Fint>(err);
}

}  // namespace

// CANOPY_FORTRAN(lower, UPPER, implementation, (parameters), (arguments)): the four
// manglings of one Fortran entry point, each calling the implementation. Every Fortran
// argument arrives by reference; ierr receives the C error code.
#define CANOPY_FORTRAN_NAME(name, implementation, parameters, arguments) \
  CANOPY_EXPORT void name parameters { implementation arguments; }
#define CANOPY_FORTRAN(lower, upper, implementation, parameters, arguments) \
  CANOPY_FORTRAN_NAME(lower##_, implementation, parameters, arguments)      \
  CANOPY_FORTRAN_NAME(lower##__, implementation, parameters, arguments)     \
  CANOPY_FORTRAN_NAME(lower, implementation, parameters, arguments)         \
  CANOPY_FORTRAN_NAME(upper, implementation, parameters, arguments)

CANOPY_FORTRAN(mpi_init, MPI_INIT, fortran_init, (MPI_Fint* ierr), (ierr))
CANOPY_FORTRAN(mpi_init_thread, MPI_INIT_THREAD, fortran_init_thread,
               (MPI_Fint* required, MPI_Fint* provided, MPI_Fint* ierr), (required, provided, ierr))
CANOPY_FORTRAN(mpi_finalize, MPI_FINALIZE, fortran_finalize, (MPI_Fint* ierr), (ierr))
CANOPY_FORTRAN(mpi_reduce, MPI_REDUCE, fortran_reduce,
               (void* sendbuf, void* recvbuf, MPI_Fint* count, MPI_Fint* datatype, MPI_Fint* op, MPI_Fint* root,
                MPI_Fint* comm, MPI_Fint* ierr),
               (sendbuf, recvbuf, count, datatype, op, root, comm, ierr))
CANOPY_FORTRAN(mpi_bcast, MPI_BCAST, fortran_bcast,
               (void* buffer, MPI_Fint* count, MPI_Fint* datatype, MPI_Fint* root, MPI_Fint* comm, MPI_Fint* ierr),
               (buffer, count, datatype, root, comm, ierr))
CANOPY_FORTRAN(mpi_allreduce, MPI_ALLREDUCE, fortran_allreduce,
               (void* sendbuf, void* recvbuf, MPI_Fint* count, MPI_Fint* datatype, MPI_Fint* op, MPI_Fint* comm,
                MPI_Fint* ierr),
               (sendbuf, recvbuf, count, datatype, op, comm, ierr))

#endif  // OPEN_MPI
