#include "shim/fallback.h"

#include "shim/runtime.h"

namespace canopy::shim {

namespace {

struct ReasonInfo {
  const char* name;
  const char* text;
  bool forced;
};

// Indexed by FallbackReason.
const ReasonInfo kReasons[kFallbackReasons] = {
    {"disabled", "Canopy is off (CANOPY_ENABLE, or it switched itself off at MPI_Init)", true},
    {"algorithm-native", "CANOPY_*_ALGO is native (set, or forced by a bad setting)", true},
    {"intercommunicator", "an intercommunicator (Canopy plans intracommunicators only)", false},
    {"invalid-argument", "invalid count, root or communicator (MPI reports its own error)", false},
    {"unsupported-datatype", "a datatype Canopy cannot lay out (non-positive extent, or no size)", false},
    {"op-query-failed", "MPI_Op_commutative failed on the op", false},
    {"state-failed", "Canopy's state for the communicator could not be set up (MPI_Comm_dup failed)", false},
    {"planning-error", "the planner failed for this call", false},
    {"validator-rejected", "the validator rejected every schedule the planner offered", false},
    {"auto-trial-native", "auto is measuring native MPI (trial round)", false},
    {"auto-chose-native",
     "auto measured native MPI fastest (or, for calls of a millisecond or more, priced every schedule over twice "
     "native's measured time)",
     false},
    {"internal-error", "an error before any message was sent (e.g. out of memory)", false},
    {"configured", "CANOPY_CONFIG says native MPI for this collective, size and communicator", true},
    {"auto-below-threshold", "auto keeps native MPI for calls the model prices under 5 us (not worth a trial)",
     false},
    {"no-staging-ring",
     "the schedule moves data through the node's staging ring, which could not be made for this communicator "
     "(its later calls are planned without it)",
     false},
    {"auto-native-first",
     "auto runs native MPI first, until its calls have cost what the trials are priced at (CANOPY_AUTO_NATIVE_FIRST)",
     false},
};

int index(planner::Collective c) { return static_cast<int>(c); }

}  // namespace

const char* fallback_name(FallbackReason r) { return kReasons[static_cast<int>(r)].name; }
const char* fallback_text(FallbackReason r) { return kReasons[static_cast<int>(r)].text; }
bool fallback_forced(FallbackReason r) { return kReasons[static_cast<int>(r)].forced; }

void FallbackCounters::say_once(planner::Collective collective, FallbackReason reason, PerReason& slot) {
  if (slot.said.exchange(true)) return;
  const Runtime& rt = runtime();
  if (!rt.log) return;
  const bool info = fallback_forced(reason) && rt.world_rank == 0;
  rt.log->log(info ? spdlog::level::info : spdlog::level::debug,
              "{}: native MPI runs: {} [{}] (said once; later calls are counted)",
              planner::mpi_function_name(collective), fallback_text(reason),
              fallback_name(reason));
}

long FallbackCounters::count(planner::Collective collective, FallbackReason reason) const {
  return by_collective_[index(collective)][static_cast<int>(reason)].calls.load(std::memory_order_relaxed);
}

long FallbackCounters::total() const {
  long sum = 0;
  for (const auto& reasons : by_collective_)
    for (const PerReason& r : reasons) sum += r.calls.load(std::memory_order_relaxed);
  return sum;
}

std::vector<std::pair<std::string, long>> FallbackCounters::counts(planner::Collective collective) const {
  std::vector<std::pair<std::string, long>> out;
  for (int r = 0; r < kFallbackReasons; ++r) {
    const long n = count(collective, static_cast<FallbackReason>(r));
    if (n > 0) out.emplace_back(fallback_name(static_cast<FallbackReason>(r)), n);
  }
  return out;
}

}  // namespace canopy::shim
