// The PMPI interposition layer: each wrapper is a few lines that hand over to the
// shim. No exception crosses these extern "C" functions.
#include <mpi.h>

#include <string>

#include "shim/canopy.h"
#include "shim/collectives.h"
#include "shim/comm_state.h"
#include "shim/export.h"
#include "shim/finalize_progress.h"
#include "shim/runtime.h"

CANOPY_EXPORT int MPI_Init(int* argc, char*** argv) {
  canopy::shim::finalize_progress_init_begin();
  const int err = PMPI_Init(argc, argv);
  canopy::shim::finalize_progress_init_end();
  if (err == MPI_SUCCESS) canopy::shim::initialize(MPI_THREAD_SINGLE);
  return err;
}

CANOPY_EXPORT int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  canopy::shim::finalize_progress_init_begin();
  const int err = PMPI_Init_thread(argc, argv, required, provided);
  canopy::shim::finalize_progress_init_end();
  if (err == MPI_SUCCESS) canopy::shim::initialize(*provided);
  return err;
}

CANOPY_EXPORT int MPI_Finalize(void) {
  canopy::shim::finalize();
  auto& rt = canopy::shim::runtime();
  canopy::shim::finalize_progress_arm(rt.settings.finalize_progress);
  const int err = PMPI_Finalize();
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

CANOPY_EXPORT long canopy_intercepted_calls(void) { return canopy::shim::runtime().intercepted.load(); }

CANOPY_EXPORT long canopy_fallback_calls(void) { return canopy::shim::runtime().fallbacks.load(); }

CANOPY_EXPORT long canopy_fallback_count(const char* collective, const char* reason) {
  using canopy::planner::Collective;
  if (!collective || !reason) return -1;
  const std::string c = collective;
  if (c != "reduce" && c != "bcast") return -1;
  for (int r = 0; r < canopy::shim::kFallbackReasons; ++r) {
    const auto why = static_cast<canopy::shim::FallbackReason>(r);
    if (std::string(canopy::shim::fallback_name(why)) == reason)
      return canopy::shim::runtime().fallback_reasons.count(c == "reduce" ? Collective::Reduce : Collective::Bcast,
                                                            why);
  }
  return -1;
}

CANOPY_EXPORT long canopy_live_comm_states(void) { return canopy::shim::CommState::live_states(); }

CANOPY_EXPORT long canopy_plans_made(void) { return canopy::shim::CommState::cache_stats().plans; }

CANOPY_EXPORT long canopy_plan_cache_hits(void) { return canopy::shim::CommState::cache_stats().hits; }

CANOPY_EXPORT const char* canopy_version(void) { return CANOPY_VERSION_STRING; }
