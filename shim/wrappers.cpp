// The PMPI interposition layer: each wrapper is a few lines that hand over to the
// shim. No exception crosses these extern "C" functions.
#include <dlfcn.h>
#include <mpi.h>

#include <string>

#include "shim/canopy.h"
#include "shim/collectives.h"
#include "shim/comm_state.h"
#include "shim/export.h"
#include "shim/finalize_progress.h"
#include "shim/platform.h"
#include "shim/runtime.h"

namespace {

// The MPI_Init, MPI_Init_thread and MPI_Finalize that come after libcanopy.so: those of
// another PMPI tool preloaded after it, else the MPI library's own (its MPI_X does what
// PMPI_X does). Canopy only does its own set-up and tear-down around these three, so a
// tool stacked after it still sees the application's MPI_Init and MPI_Finalize (and
// can set up and report). Canopy's own messages keep going to PMPI_ directly.
template <typename F>
F* next_mpi(const char* name, F* pmpi) {
  static_assert(sizeof(void*) == sizeof(F*), "function and object pointers differ in size");
  void* found = dlsym(RTLD_NEXT, name);
  return found ? reinterpret_cast<F*>(found) : pmpi;
}

}  // namespace

CANOPY_EXPORT int MPI_Init(int* argc, char*** argv) {
  static auto* const next = next_mpi("MPI_Init", &PMPI_Init);
  canopy::shim::finalize_progress_init_begin();
  const int err = next(argc, argv);
  canopy::shim::finalize_progress_init_end();
  if (err == MPI_SUCCESS) canopy::shim::initialize(MPI_THREAD_SINGLE);
  return err;
}

CANOPY_EXPORT int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  static auto* const next = next_mpi("MPI_Init_thread", &PMPI_Init_thread);
  canopy::shim::finalize_progress_init_begin();
  const int err = next(argc, argv, required, provided);
  canopy::shim::finalize_progress_init_end();
  if (err == MPI_SUCCESS) canopy::shim::initialize(*provided);
  return err;
}

CANOPY_EXPORT int MPI_Finalize(void) {
  canopy::shim::finalize();
  auto& rt = canopy::shim::runtime();
  // No helper thread where the platform has none to give (SMPI: shim/platform.h).
  canopy::shim::finalize_progress_arm(rt.settings.finalize_progress && canopy::shim::platform().helper_threads);
  static auto* const next = next_mpi("MPI_Finalize", &PMPI_Finalize);
  const int err = next();
  const canopy::shim::FinalizeHelperStats helped = canopy::shim::finalize_progress_disarm();
  if (rt.log && helped.ran)
    rt.log->debug("MPI_Finalize: kept {} UCX worker(s) progressing while MPICH closed its connections "
                  "({} progress calls, {} with something to do)",
                  helped.workers, helped.calls, helped.busy);
  return err;
}

CANOPY_EXPORT int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                             int root, MPI_Comm comm) {
  return canopy::shim::reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
}

CANOPY_EXPORT int MPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  return canopy::shim::bcast(buffer, count, datatype, root, comm);
}

CANOPY_EXPORT int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                                MPI_Comm comm) {
  return canopy::shim::allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

CANOPY_EXPORT long canopy_intercepted_calls(void) { return canopy::shim::runtime().intercepted.load(); }

CANOPY_EXPORT long canopy_fallback_calls(void) {
  canopy::shim::flush_native_shortcuts();
  return canopy::shim::runtime().fallback_calls();
}

CANOPY_EXPORT long canopy_fallback_count(const char* collective, const char* reason) {
  using canopy::planner::Collective;
  if (!collective || !reason) return -1;
  canopy::shim::flush_native_shortcuts();
  Collective c = Collective::Reduce;
  if (!canopy::planner::parse_collective(collective, c)) return -1;
  for (int r = 0; r < canopy::shim::kFallbackReasons; ++r) {
    const auto why = static_cast<canopy::shim::FallbackReason>(r);
    if (std::string(canopy::shim::fallback_name(why)) == reason)
      return canopy::shim::runtime().fallback_reasons.count(c, why);
  }
  return -1;
}

CANOPY_EXPORT long canopy_live_comm_states(void) { return canopy::shim::CommState::live_states(); }

CANOPY_EXPORT long canopy_plans_made(void) { return canopy::shim::CommState::cache_stats().plans; }

CANOPY_EXPORT long canopy_plan_cache_hits(void) {
  canopy::shim::flush_native_shortcuts();
  return canopy::shim::CommState::cache_stats().hits;
}

CANOPY_EXPORT const char* canopy_version(void) { return CANOPY_VERSION_STRING; }
