// Process-wide Canopy state: settings and cost model (immutable after MPI_Init), the
// logger, the schedule log, and counters. Set up in MPI_Init, torn down in
// MPI_Finalize.
#pragma once

#include <mpi.h>

#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <spdlog/logger.h>

#include "config/settings.h"
#include "planner/cost_model.h"
#include "planner/topology.h"
#include "shim/call_stats.h"
#include "shim/fallback.h"
#include "shim/schedule_log.h"

namespace canopy::shim {

struct Runtime {
  // What every intercepted call reads first (shim/collectives.cpp, ran_natively_at_once),
  // together at the top: one cache line for a call that goes straight to native MPI.
  bool active = false;  // false: every call goes to native MPI
  // CANOPY_REDUCE_ALGO / CANOPY_BCAST_ALGO / CANOPY_ALLREDUCE_ALGO say native with no
  // rule saying otherwise (Settings::always_native, decided once at MPI_Init: it
  // compares strings).
  std::array<bool, planner::kCollectives> native_only{};
  // The MPI crashes on in-place reduces at a non-zero root, so Canopy's native calls
  // pass the root a copy instead (shim/native_reduce.h). Read from the library at
  // MPI_Init, whatever the settings: the same library on every rank.
  bool copy_in_place_at_nonzero_root = false;
  config::Settings settings;
  planner::CostModel model;
  int world_rank = 0;
  int thread_level = MPI_THREAD_SINGLE;
  int keyval = MPI_KEYVAL_INVALID;  // attribute holding a communicator's CommState
  // Some node runs more ranks than it has cores (agreed by all ranks at MPI_Init).
  bool oversubscribed = false;
  int nodes = 1;               // shared-memory nodes of MPI_COMM_WORLD
  int max_ranks_per_node = 1;
  int node_leader = 0;         // world rank of the lowest rank on this rank's node
  int node_rank = 0;           // this rank's rank among the world's ranks on its node
  long cores_per_node = 0;     // online cores of this rank's node
  // The network beyond one node (CANOPY_TOPOLOGY; index = world rank), identical on
  // every rank; null: every message follows `model`.
  std::shared_ptr<const planner::Topology> topology;
  std::string topology_source = "none";  // "none", "measured" or "file", for the report
  // Where `model` came from, for the report: "built-in", "CANOPY_MODEL", or how it was
  // measured (runtime.cpp, measures_model_with_network).
  std::string model_source = "built-in";
  std::string topology_description;      // what was found (even one trivial cluster)
  // What Canopy added to MPI_Init on this rank (seconds): in all, and in probing the
  // network and fitting CANOPY_MODEL=measure (0 where nothing needed them).
  double startup_seconds = 0;
  double probe_seconds = 0;
  // ... and in making MPI_COMM_WORLD's private duplicate and its node's staging ring
  // (0 where none was made: make_world_ring in runtime.cpp).
  double ring_seconds = 0;
  // ... and in reading Canopy's code once (shim/warm_code.h; 0 bytes where it was not).
  double code_seconds = 0;
  std::size_t code_bytes = 0;
  config::Environment effective_settings;  // the CANOPY_* in force, for the report
  std::shared_ptr<spdlog::logger> log;
  ScheduleLog schedule_log;
  std::atomic<long> intercepted{0};  // calls run with a Canopy schedule
  CallStats stats;                   // per kind of call, with CANOPY_TIMING or CANOPY_REPORT
  MPI_Comm report_comm = MPI_COMM_NULL;  // private duplicate of MPI_COMM_WORLD for the report
  FallbackCounters fallback_reasons;  // the same calls by collective and reason

  // Plans are made per exact count, not per size class: CANOPY_SEGMENT_BYTES forces a
  // segment size and CANOPY_CONFIG rules have byte ranges, which apply exactly
  // (decided once at MPI_Init).
  bool exact_plans = false;
  bool always_native(planner::Collective c) const { return native_only[static_cast<int>(c)]; }

  // Whether Canopy's code may run in several threads at once (MPI_THREAD_MULTIPLE);
  // below that, counters and records need no atomic add or lock (shim/thread_lock.h).
  bool concurrent_calls() const { return thread_level == MPI_THREAD_MULTIPLE; }

  // Counts one call handed to native MPI (logs a reason's first call). One counter a
  // call: the total is their sum (fallback_calls), asked for rarely.
  void count_fallback(planner::Collective c, FallbackReason why) {
    fallback_reasons.record(c, why, concurrent_calls());
  }
  long fallback_calls() const { return fallback_reasons.total(); }
  // This rank's calls of collective `c` that native MPI ran, as (reason, calls) for
  // every reason that occurred, in a fixed order; reasons are FallbackReason's stable
  // names ("intercommunicator", "planning-error", ...). For an end-of-run report.
  std::vector<std::pair<std::string, long>> fallback_counts(planner::Collective c) const {
    return fallback_reasons.counts(c);
  }
};

namespace detail {
// The process's Runtime once made (null before: constant-initialised, so whatever the
// order in which the library's statics are made), and its making, on first use.
extern std::atomic<Runtime*> made_runtime;
Runtime& make_runtime();
}  // namespace detail

// The process's one Runtime. Inline, one load: every intercepted call asks for it,
// several times on the way to native MPI, and a call into runtime.cpp for it (a local
// static, whose constructor kept it from being inlined) was 2-4 ns of what Canopy added
// to a one-rank 8 B MPI_Reduce (perf; docs/performance-history.md, section 16).
inline Runtime& runtime() {
  Runtime* made = detail::made_runtime.load(std::memory_order_acquire);
  return made ? *made : detail::make_runtime();
}

// After PMPI_Init*: parse settings, agree across ranks, set up logging.
void initialize(int thread_level);
// Before PMPI_Finalize: free communicator states and close logs.
void finalize();

}  // namespace canopy::shim
