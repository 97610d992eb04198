// Why a call went to native MPI. Every path that hands an intercepted collective to
// the PMPI collective names one reason; the runtime counts them per collective and
// says each one once per process (see FallbackCounters::record).
#pragma once

#include <array>
#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "planner/schedule.h"

namespace canopy::shim {

// Stable names (fallback_name) are part of Canopy's output: keep them, add new ones.
enum class FallbackReason {
  Disabled,             // CANOPY_ENABLE=0, or Canopy switched itself off at MPI_Init
  AlgorithmNative,      // CANOPY_*_ALGO=native (set, or forced by a bad setting)
  Intercommunicator,    // Canopy plans intracommunicators only
  InvalidArgument,      // bad count, root or communicator: MPI reports its own error
  UnsupportedDatatype,  // a datatype Canopy cannot lay out (non-positive extent, no size)
  OpQueryFailed,        // MPI_Op_commutative failed on the op
  StateFailed,          // Canopy's per-communicator state could not be set up
  PlanningError,        // the planner threw for this call kind
  ValidatorRejected,    // every schedule the planner offered failed validation
  AutoTrialNative,      // auto is measuring native MPI in a trial round
  AutoChoseNative,      // auto measured native MPI fastest and kept it (or priced long schedules out)
  InternalError,        // an exception before any message (e.g. out of memory)
  Configured,           // a CANOPY_CONFIG rule (or the global setting beside rules) says native
  AutoBelowThreshold,   // auto: the model's best schedule is too short a call to try against native
  NoStagingRing,        // a staged schedule, but the staging ring could not be made
  AutoNativeFirst,      // auto runs native MPI first, until its calls pay for the trials
  kCount
};

constexpr int kFallbackReasons = static_cast<int>(FallbackReason::kCount);

// A short stable token ("intercommunicator") and a sentence for the log.
const char* fallback_name(FallbackReason reason);
const char* fallback_text(FallbackReason reason);
// Whether the user asked for it (logged at info rather than debug).
bool fallback_forced(FallbackReason reason);

// Adds one to `counter`. Without `concurrent` callers (one thread calls MPI at a time)
// a plain load and store does: an atomic add locks the bus, which costs a measurable
// part of an 8-byte collective that Canopy only counts and hands to native MPI.
inline void add_one(std::atomic<long>& counter, bool concurrent) {
  if (concurrent) counter.fetch_add(1, std::memory_order_relaxed);
  else counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// Per collective, per reason counts; lock-free, safe from any thread.
class FallbackCounters {
 public:
  // Counts one call and, the first time this (collective, reason) occurs in the
  // process, logs it: at info on world rank 0 when the user forced it, otherwise at
  // debug (on every rank, so a reason only ranks of a sub-communicator see shows too).
  // `concurrent`: other threads may count at the same time (MPI_THREAD_MULTIPLE).
  void record(planner::Collective collective, FallbackReason reason, bool concurrent = true) {
    PerReason& slot = by_collective_[static_cast<int>(collective)][static_cast<int>(reason)];
    add_one(slot.calls, concurrent);
    if (!slot.said.load(std::memory_order_relaxed)) say_once(collective, reason, slot);
  }
  // Adds `calls` calls of a (collective, reason) already said (say; the native
  // shortcuts' quiet calls, shim/collectives.cpp), without the atomic add: only below
  // MPI_THREAD_MULTIPLE.
  void add(planner::Collective collective, FallbackReason reason, long calls) {
    std::atomic<long>& n = by_collective_[static_cast<int>(collective)][static_cast<int>(reason)].calls;
    n.store(n.load(std::memory_order_relaxed) + calls, std::memory_order_relaxed);
  }
  // Logs (collective, reason) as record() does on its first call, without counting one:
  // where its calls are counted later (add).
  void say(planner::Collective collective, FallbackReason reason) {
    PerReason& slot = by_collective_[static_cast<int>(collective)][static_cast<int>(reason)];
    if (!slot.said.load(std::memory_order_relaxed)) say_once(collective, reason, slot);
  }
  long count(planner::Collective collective, FallbackReason reason) const;
  long total() const;  // every collective's, every reason's
  // The reasons with a non-zero count, in enum order, as (fallback_name, calls): what
  // an end-of-run report prints.
  std::vector<std::pair<std::string, long>> counts(planner::Collective collective) const;

 private:
  struct PerReason {
    std::atomic<long> calls{0};
    std::atomic<bool> said{false};
  };
  // The first call of a (collective, reason): logs it (record's words), once.
  void say_once(planner::Collective collective, FallbackReason reason, PerReason& slot);
  std::array<std::array<PerReason, kFallbackReasons>, planner::kCollectives> by_collective_;
};

}  // namespace canopy::shim
