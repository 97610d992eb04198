// What a plan is and how the plan cache finds it: a call's candidates (a Canopy schedule
// as this rank's view, or native MPI) with auto's trials among them (CachedPlan), the key
// that calls with the same plan share (PlanKey), the choices a size class's roots share
// (ClassChoices) and the cache's counts for the report. CommState (shim/comm_state.h)
// keeps a communicator's plans in a cache of these; shim/plan_cache.cpp makes them. Kept
// out of comm_state.h so that what a plan is can be read, and changed, apart from the
// communicator's life cycle and node resources.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "planner/learn.h"
#include "planner/schedule.h"
#include "planner/select.h"
#include "planner/size_class.h"
#include "planner/trials.h"
#include "shim/call_stats.h"
#include "shim/executor.h"
#include "shim/fallback.h"

namespace canopy::shim {

// One way to run a call: a Canopy schedule, or the native MPI collective.
struct Candidate {
  bool native = false;
  // This rank's view of the schedule (Schedule::view_rank), made for the plan's count
  // (a size class's representative count, or the exact count): the only steps this
  // rank keeps, whatever the communicator's size.
  planner::Schedule schedule;
  double predicted = 0;               // seconds under the cost model (schedules only)
  bool rank_needs_workspace = false;  // this rank writes an accumulator it does not own
  RecordCache stats;                  // where its calls are counted (CANOPY_TIMING/_REPORT)
  // The native candidate's records, one per reason it runs for (a trial, auto's
  // choice, ...), found on first use: looking a record up builds its key and takes a
  // lock, which at 8 bytes on 2 ranks cost more than the native call itself.
  std::array<RecordCache, kFallbackReasons> native_stats{};
  // What identifies the schedule on every rank (the views differ from rank to rank):
  // a hash of how it was planned, for CANOPY_VERIFY, and the log's id of it.
  std::uint64_t fingerprint = 0;
  std::string schedule_id;
  // The segments cut for the count last run (planner::rescale_segments of the view's
  // own), kept because programs repeat counts.
  std::int64_t layout_count = -1;
  std::vector<planner::Segment> layout;
  // The executor's local shortcuts for this rank's steps (shim/executor.h), made on
  // first use: [0] when the input is separate, [1] in place (MPI_IN_PLACE at the root).
  std::array<std::vector<Fused>, 2> fusions;
  bool fusions_made[2] = {false, false};
  const std::vector<Fused>& fusions_for(int rank, bool input_is_accumulator);
  // How its predicted time moves with the model's alpha, beta, gamma and copy
  // (planner/learn.h), when the communicator learns; zero otherwise.
  planner::ModelGradient gradient{};
  planner::Choice choice;  // what the schedule was built from (schedules only)
  std::string name() const { return native ? "native" : schedule.algorithm; }
  // The segments for a call of `count` elements, or null when this schedule cannot be
  // cut for it (then the count gets a plan of its own).
  const std::vector<planner::Segment>* segments_for(std::int64_t count);
};

// What Canopy runs for one kind of call. With CANOPY_*_ALGO=auto the first calls
// are trials (planner/trials.h): the model's best schedules run in rounds, the ranks
// agree on the times after each round, the best runs, and at the plan's
// CANOPY_AUTO_NATIVE_AFTER-th call native MPI and that schedule run rounds of their own;
// native stays unless a schedule is measured faster; a decision is checked again later
// (CANOPY_AUTO_RECHECK). The calls and the agreements are identical on every rank.
struct CachedPlan {
  std::vector<Candidate> candidates;
  planner::Trials trials{1, -1, planner::TrialSettings{}};  // decided at once unless replaced
  std::string native_reason;          // why only native is possible, for the log
  // Some candidate was built as this rank's view alone and checked by this rank alone
  // (beyond 2^18 steps, or under SMPI): CommState::plan has the ranks agree on the
  // candidates, so that a view one rank rejected cannot leave it planning apart.
  bool views_checked_alone = false;
  FallbackReason native_why = FallbackReason::PlanningError;  // the same, as a counted reason
  // Where native_why is AutoBelowThreshold: the model's price of the best schedule, which
  // CANOPY_RING_AFTER adds up (CommState::after_cheap_call).
  double cheap_price = 0;

  long calls = 0;  // calls made with the plan, trials included
  // Where CANOPY_SAVE_RULES noted its last decision (shim/save_rules.h; kNotNoted: none).
  std::size_t noted_decision = static_cast<std::size_t>(-1);

  bool trialling() const { return !trials.decided(); }
  int current() const { return trials.current(); }
  // Whether this call (the calls-th) of a decided plan is one the model learns from:
  // calls 16, 64, 256, ... (x4) up to 4096, then every 4096th. The same on every rank.
  // A plan whose schedule runs until native MPI's trial (Trials::waiting_for_native)
  // learns as a decided one: its calls are that schedule's.
  bool sample_due() const {
    if ((trialling() && !trials.waiting_for_native()) || calls < 16) return false;
    if (calls >= 4096) return calls % 4096 == 0;
    return (calls & (calls - 1)) == 0 && (calls & 0x5555555555555555L) != 0;
  }
  std::size_t bytes_held() const;  // memory the plan keeps (views, layouts), for the report
};

// What auto priced for a size class at the first root that met it (with trials: the
// schedules' choices, in candidate order), and, once a root's trials have decided, what
// they chose. A root that meets the class later builds these choices for itself
// instead of pricing every algorithm again (at 16 ranks, 1 MiB, pricing is most of a
// plan), and takes a decided choice without trials. Where the communicator has no
// topology only: one node or a homogeneous network, where roots are alike.
struct ClassChoices {
  std::vector<planner::Choice> picks;
  int priced_root = 0;    // the root they were priced at
  int decided_root = -1;  // the root whose trials decided (-1: none yet)
  bool native = false;    // what they decided: native MPI, or picks[chosen]
  int chosen = -1;
};

// Identifies calls that get the same plan; every field is identical on all ranks. A
// plan serves a size class of messages (planner/size_class.h) unless `exact_count` is
// set: with CANOPY_SEGMENT_BYTES or CANOPY_CONFIG rules (a forced segment size and a
// rule's byte range apply exactly), and for a count the class's schedule cannot be
// cut for.
struct PlanKey {
  planner::Collective collective;
  int root;
  int size_class;
  std::int64_t element_bytes;
  bool commutative;
  std::int64_t exact_count = -1;
  bool operator==(const PlanKey& o) const {
    return collective == o.collective && root == o.root && size_class == o.size_class &&
           element_bytes == o.element_bytes && commutative == o.commutative && exact_count == o.exact_count;
  }
};

struct PlanKeyHash {
  std::size_t operator()(const PlanKey& k) const {
    std::size_t h = std::hash<std::int64_t>()(k.exact_count);
    h = h * 31 + static_cast<std::size_t>(k.size_class);
    h = h * 31 + std::hash<std::int64_t>()(k.element_bytes);
    h = h * 31 + static_cast<std::size_t>(k.root);
    return h * 4 + static_cast<std::size_t>(k.collective) * 2 + (k.commutative ? 1 : 0);
  }
};

// The plan cache's counts over the whole process (every communicator), for the report.
struct PlanCacheStats {
  long hits = 0;
  long plans = 0;      // misses: plans made
  long evictions = 0;  // plans dropped for the size limit
  long most_held = 0;  // the most plans one communicator held at once
  std::size_t most_bytes = 0;  // the most memory one communicator's plans held at once
};

}  // namespace canopy::shim
