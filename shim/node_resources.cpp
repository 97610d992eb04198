// Node resources of a communicator: the staging rings of its nodes (shim/staging.h) and
// the rules for them. staging_offered() and direct_offered() say what new plans may use;
// staging_ring() makes the rings at the first call whose schedule needs them
// (collective), and where they cannot be made, or cross-memory attach does not work
// through them, flags the plans that used them for plan() to drop; CANOPY_RING_AFTER
// (count_cheap_call, native_warmed) makes them for calls kept native for being cheap and
// has those plans trialled through them. Kept apart from the plan cache because the
// ring belongs to the communicator, not to a plan: made once, used by all its plans,
// parked or freed with the state (CommState::~CommState, release_all).
#include "shim/comm_state.h"

#include <string>
#include <vector>

#include <spdlog/fmt/fmt.h>

#include "planner/staged.h"
#include "shim/collectives.h"
#include "shim/runtime.h"

namespace canopy::shim {

bool CommState::count_cheap_call(double price) {
  const Runtime& rt = runtime();
  // Done where a ring exists, cannot be made, or the setting or the communicator rules
  // one out (one rank, several nodes; asked at the first call only, it is cheap to know).
  if (staging_ || staging_failed_ || rt.settings.ring_after < 0 || (cheap_calls_ == 0 && !staging_offered())) {
    cheap_ring_done_ = true;
    return false;
  }
  cheap_seconds_ += price;
  ++cheap_calls_;
  if (cheap_seconds_ < rt.settings.ring_after) return false;
  cheap_ring_done_ = true;
  // Why a price and not a count: the ring costs the same whatever the calls' size
  // (0.5 ms at 2 ranks, 1.6-2.7 ms at 16) and pays back per call in proportion to the
  // call (2 ranks: 8 B 0.4 -> 0.3 us, 4 KiB 3.5 -> 0.4, 16 KiB 10 -> 2.1; docs/performance-history.md),
  // so small calls wait longer for it. Where no ring is offered the rule is done.
  if (!staging_offered() || !private_ready()) return false;
  if (rank_ == 0)
    rt.log->info("communicator of {} ranks: {} calls kept native for being cheap have cost {:.2f} "
                 "ms as the model prices them (CANOPY_RING_AFTER={}): the staging ring is made for them, and they "
                 "are trialled against native MPI through it",
                 size_, cheap_calls_, cheap_seconds_ * 1e3, rt.settings.ring_after);
  staging_ring(planner::staging_entries_for(ranks_per_node()), planner::staging_entry_bytes_for(ranks_per_node()));
  return true;
}

bool CommState::native_warmed(PlanHandle where) {
  if (!staging_) return false;  // plan() picks the plan up when the ring is made
  std::lock_guard<ThreadLock> lock(plans_lock_);
  warm_cheap_keys_.insert(where->first);
  drop_warm_plans_ = true;
  flush_native_shortcuts();
  generation_.fetch_add(1, std::memory_order_relaxed);  // no shortcut to the plan from now on
  return true;
}

bool CommState::staging_offered() const {
  const Runtime& rt = runtime();
  // One node by the world topology when there is one (a file may describe sites the
  // test bed emulates on one machine: its nodes are what the planner plans for), else
  // by the nodes found at MPI_Init: all of MPI_COMM_WORLD on one node. Several
  // nodes and no topology: no ring is offered rather than guessed.
  // Several nodes by the topology: a ring on each, for the node levels of hierarchical
  // schedules, where no node holds more ranks than a ring is offered to.
  if (rt.settings.shm == "off" || staging_failed_) return false;
  if (!rt.topology && rt.nodes != 1) return false;
  return planner::staging_ring_allowed(ranks_per_node());
}

bool CommState::direct_offered() const {
  // Before the ring is made its probe has not run: direct schedules are offered, and
  // dropped if it fails (every rank alike).
  return runtime().settings.cma != "off" && staging_offered() && !(staging_ && !staging_->direct());
}

StagingRing* CommState::staging_ring(int entries, std::int64_t entry_bytes) {
  if (staging_ || staging_failed_) return staging_.get();
  Runtime& rt = runtime();
  std::string why;
  static const std::vector<int> one_node;
  const double start = PMPI_Wtime();
  const WorldNode world{rt.node_leader, rt.node_rank};
  const RingMemory memory = rt.settings.shm == "window"  ? RingMemory::Window
                            : rt.settings.shm == "posix" ? RingMemory::Posix
                                                         : RingMemory::Auto;
  const RingFaults faults{rt.settings.fault == "shm-unavailable",
                          rt.settings.fault == "shm-unavailable" || rt.settings.fault == "shm-posix-unavailable",
                          rt.settings.fault == "cma-unavailable"};
  ring_world_ranks_ = world_ranks_of(private_comm_, size_);
  staging_ = StagingRing::create(private_comm_, entries, entry_bytes, topology_ ? topology_->node : one_node, ring_world_ranks_,
                                 world, memory, faults, why, rt.settings.cma != "off");
  if (staging_ && rt.settings.cma != "off" && !staging_->direct()) {
    // Every rank learnt it here: plans that offered direct schedules are made again
    // without them (plan()). Said once per communicator, at warn where the user asked
    // for cross-memory attach (CANOPY_CMA=on).
    drop_direct_plans_ = true;
    if (rank_ == 0) {
      const std::string line = fmt::format(
          "cross-memory attach between the {} ranks of a communicator does not work ({}); its broadcasts use the "
          "staging ring, point-to-point schedules or native MPI instead",
          size_, staging_->direct_why());
      if (rt.settings.cma == "on") rt.log->warn("CANOPY_CMA=on: {}", line);
      else rt.log->info("{}", line);
    }
  }
  if (staging_ && rank_ == 0) {
    if (staging_->reused())
      rt.log->debug(
          "staging ring reused for a communicator of {} ranks: {} entries of {} bytes per rank, in {:.2f} ms ({}, "
          "parked by a freed communicator over the same processes)",
          size_, staging_->entries(), staging_->entry_bytes(), (PMPI_Wtime() - start) * 1e3, staging_->memory());
    else
      rt.log->debug(
          "staging ring made for a communicator of {} ranks: {} entries of {} bytes per rank, in {:.2f} ms ({}: "
          "rank 0 {:.2f} ms in making it)",
          size_, staging_->entries(), staging_->entry_bytes(), (PMPI_Wtime() - start) * 1e3, staging_->memory(),
          staging_->allocate_seconds() * 1e3);
  }
  // Cheap calls planned before the ring existed kept native MPI without a trial; with a
  // ring their staged schedules may beat it, so those whose native calls are warm are
  // planned again (plan()).
  if (staging_) drop_cheap_native_plans_ = true;
  // Either way plan() drops plans at its next lookup; a new generation sends every call
  // to that lookup, so no native shortcut (shim/collectives.cpp) stands for a plan about
  // to go, on any rank.
  flush_native_shortcuts();
  generation_.fetch_add(1, std::memory_order_relaxed);
  if (!staging_) {
    staging_failed_ = true;
    drop_staged_plans_ = true;
    // Said once per communicator: at warn when the user asked for the ring
    // (CANOPY_SHM=window), on world rank 0 or this communicator's rank 0.
    if (rank_ == 0) {
      const std::string line = fmt::format(
          "the node's staging ring for a communicator of {} ranks cannot be made ({}); its calls use "
          "point-to-point schedules or native MPI instead",
          size_, why);
      if (rt.settings.shm == "window" || rt.settings.shm == "posix")
        rt.log->warn("CANOPY_SHM={}: {}", rt.settings.shm, line);
      else rt.log->info("{}", line);
    }
  }
  return staging_.get();
}

}  // namespace canopy::shim
