// Canopy's state for one application communicator, cached on it as an MPI attribute
// and freed with it: a private duplicate for Canopy's own messages (they can never
// match the application's), the plans already made for it, and scratch memory reused
// from call to call.
//
// CommState is one class whose member functions are defined by responsibility, one file
// each, the sections below saying which: shim/comm_state.cpp the state's life cycle,
// its private communicator and agreements; shim/plan_cache.cpp the plan cache and the
// making of plans (what a plan is: shim/plan_cache.h); shim/trials_driver.cpp auto's
// trials after each call and CANOPY_LEARN; shim/node_resources.cpp the staging ring and
// CANOPY_RING_AFTER.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "planner/cost_model.h"
#include "planner/learn.h"
#include "planner/staged.h"
#include "planner/topology.h"
#include "shim/executor.h"
#include "shim/fallback.h"
#include "shim/plan_cache.h"
#include "shim/staging.h"
#include "shim/thread_lock.h"

namespace canopy::shim {

// Grow-only scratch memory, 64-byte aligned; contents are not kept across calls.
class Workspace {
 public:
  Workspace() = default;
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  ~Workspace() { std::free(data_); }
  char* get(std::size_t bytes);

 private:
  char* data_ = nullptr;
  std::size_t capacity_ = 0;
};

// The MPI_COMM_WORLD rank of each rank of `comm`, in communicator order (a local group
// translation, the same on every rank); empty when one is a process from outside
// MPI_COMM_WORLD.
std::vector<int> world_ranks_of(MPI_Comm comm, int size);

class CommState {
  using PlanList = std::list<std::pair<PlanKey, std::unique_ptr<CachedPlan>>>;

 public:
  // Where a plan sits in its communicator's cache (for touch()).
  using PlanHandle = PlanList::iterator;

  // ---- Life cycle, private communicator, agreements: shim/comm_state.cpp ----------

  // The state of `comm`, created on first use. Creating it duplicates the
  // communicator, which is collective: call it only where every rank of `comm` calls
  // it too (inside a collective Canopy runs). Returns nullptr for communicators
  // Canopy leaves to native MPI (intercommunicators) or when the runtime is off, and
  // then sets `*why` (when given) to the reason.
  // Threads: safe for different communicators at once (MPI_THREAD_MULTIPLE): the
  // attribute calls are MPI's, and the registry of live states has its own lock.
  static CommState* of(MPI_Comm comm, FallbackReason* why = nullptr);

  // Frees every state still alive (at MPI_Finalize).
  static void release_all();
  // stamp_learned_predictions() of every state still alive (before the report).
  static void stamp_all();
  // The state of `comm` if one exists (never creates one), else null.
  static CommState* existing(MPI_Comm comm);
  // How many states are alive in this process (canopy_live_comm_states).
  static long live_states();

  // Canopy's private duplicate of the communicator, for its own messages and
  // agreements: made by private_ready(), which every rank calls at the same call (the
  // first that runs a schedule, a trial or a CANOPY_VERIFY agreement), so that calls
  // that all stay native never make it. False where MPI_Comm_dup failed (then, and for
  // every later call, native MPI runs: the same on every rank, as the failure is).
  bool private_ready();
  MPI_Comm comm() const { return private_comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }

  // CANOPY_VERIFY: whether every rank of the communicator passes the same `hash`
  // (collective on comm(): one MPI_Allreduce of two 64-bit words).
  bool agree(std::uint64_t hash);

  // The maximum over the ranks of each of `values` (collective on comm(); waited for
  // politely where a node runs more ranks than cores).
  bool agree_max(std::vector<double>& values);

  Workspace& workspace() { return workspace_; }
  ExecutorScratch& executor_scratch() { return executor_scratch_; }

  // CANOPY_TRACE (shim/trace.h): the communicator's ranks' world ranks (found on first
  // use), and its traced calls so far (every rank traces the same calls).
  const std::vector<int>& world_ranks();
  std::int64_t next_trace_serial() { return trace_serial_++; }
  // The communicator's identity in a trace (trace::Call::comm): its world ranks hashed,
  // the same on its every rank; found on first use.
  std::uint64_t trace_id();

  // The network under this communicator's ranks (the world topology restricted to
  // them), null when there is none or they all share one node.
  const std::shared_ptr<const planner::Topology>& topology() const { return topology_; }

  ~CommState();

  // MPI attribute delete callback: the application freed the communicator.
  static int delete_attribute_callback(MPI_Comm comm, int keyval, void* value, void* extra);

  // ---- The plan cache: shim/plan_cache.cpp ----------------------------------------

  // At most this many plans, holding at most this much memory, are kept per
  // communicator; the least recently used go first. Plans are per size class (a
  // hundred classes cover 8 B to 1 GiB) and root, and a plan keeps this rank's view only
  // (some KiB), so the bounds are reached by programs that rotate through many roots
  // and sizes, not by a communicator's size.
  static constexpr std::size_t kMaxPlans = 1024;
  static constexpr std::size_t kMaxPlanBytes = std::size_t{16} << 20;
  // The plan cache's counts so far, over every communicator of this process.
  static PlanCacheStats cache_stats();
  // Lookups that found their plan, over every communicator (counted on the hot path
  // without a lock below MPI_THREAD_MULTIPLE).
  static std::atomic<long> cache_hits;

  // The plan for `key`, made (and logged) on first use, for `count` elements: the count
  // of the class's first call, which every rank makes alike (MPI orders a
  // communicator's collectives), so the plan is exact for a program that repeats one
  // count and is cut for the class's other counts. The reference stays valid until
  // the next plan() call on this communicator: MPI forbids concurrent collectives on
  // one communicator, so that is after the current call has finished.
  CachedPlan& plan(const PlanKey& key, std::int64_t count, PlanHandle* where = nullptr);
  // What plan() does on a hit, for a plan found before (its handle): counted and made
  // the most recently used, so that the cache evicts alike on every rank whether a rank
  // looked the plan up or took a shortcut to it. Valid while generation() is unchanged.
  // Inline, and no splice where the plan is the most recent already (a loop of one
  // call): native MPI's shortcut (shim/collectives.cpp) takes it on every call.
  void touch(PlanHandle where) {
    std::unique_lock<ThreadLock> lock(plans_lock_, std::defer_lock);  // (concurrent_: no need to ask the runtime)
    if (concurrent_) lock.lock();
    if (where != lru_.begin()) lru_.splice(lru_.begin(), lru_, where);
    add_one(cache_hits, concurrent_);
  }
  // As `hits` touches (a native shortcut's quiet calls, handed on together; never
  // concurrent: the shortcuts are only below MPI_THREAD_MULTIPLE).
  void touch(PlanHandle where, long hits) {
    if (where != lru_.begin()) lru_.splice(lru_.begin(), lru_, where);
    cache_hits.store(cache_hits.load(std::memory_order_relaxed) + hits, std::memory_order_relaxed);
  }
  // Changes whenever a state is freed or a plan leaves a cache: a pointer to either,
  // or a handle, taken before is then no longer to be used.
  static std::uint64_t generation() { return generation_.load(std::memory_order_relaxed); }

  // ---- auto's trials and CANOPY_LEARN: shim/trials_driver.cpp ---------------------

  // Records how long this rank took for the current call of `plan` while it is
  // trialling; at the end of a round, agrees with the other ranks on the times
  // (collective on comm()) and lets the trials prune or decide. `first_touch`: the call
  // warmed ring entries up on this rank (StagingRing::touched_new_entries).
  void finish_call(CachedPlan& plan, const PlanKey& key, double seconds, bool first_touch = false);
  // The same for a call of `plan` that its trials left untimed (planner::Trials::times_next).
  void finish_untimed_call(CachedPlan& plan, const PlanKey& key);
  // After a call of a decided plan (made through the plan or a native shortcut): counts
  // it towards the recheck of its choice (planner::Trials::count_decided_call). True
  // where a recheck begins, which rank 0 says at debug level.
  bool count_decided_call(CachedPlan& plan, const PlanKey& key) const;

  // CANOPY_LEARN: a call of `c` took `seconds` on this rank; the ranks agree on the
  // slowest (collective on comm()) and the model learns from it (planner/learn.h).
  void sample_call(const Candidate& c, double seconds);
  // Before such a call: the ranks start it together (an agreement on Canopy's private
  // communicator, waited for politely), so that its slowest rank's time is the makespan
  // the model predicts. Timed as they come, back-to-back calls overlap: on 8 ranks of 2
  // cores a 1 KiB broadcast's sampled call took 3 us against 70-250 us per call in its
  // trial rounds, and those samples dragged the fit's alpha to its lower bound.
  void align_for_sample();
  // The model new plans of this communicator use: the runtime's, refitted to what its
  // calls measured.
  const planner::CostModel& model() const { return model_; }
  bool learning() const { return learning_; }
  // Sets the learned prediction on the records of its candidates' calls (for the
  // report); done when the state is freed.
  void stamp_learned_predictions() const;

  // ---- Node resources (the staging ring): shim/node_resources.cpp -----------------

  // The staging rings of this communicator's nodes (shim/staging.h), made on the first
  // call that needs them, with the entries (and their size) its schedule names: collective on comm()
  // then, so call it only where every rank runs the same staged schedule. Null, the
  // same on every rank, where they cannot be made; the reason is logged once and
  // staging_offered() is false from then on.
  StagingRing* staging_ring(int entries, std::int64_t entry_bytes);
  // Whether new plans may use staging rings: CANOPY_SHM is not off, no attempt to make
  // them failed, the nodes are known (a topology, or MPI_Init found one node) and no node
  // holds more of the ranks than a ring is offered to (planner/staged.h).
  bool staging_offered() const;
  // Whether new plans may use direct schedules (cross-memory attach through the ring's
  // board): a ring is offered, CANOPY_CMA is not off, and the ring, if made, probed it.
  bool direct_offered() const;
  // CANOPY_RING_AFTER: called after each call that ran native for being cheap (a plan
  // whose native_why is AutoBelowThreshold), with the model's price of it. Once those
  // prices add up to the setting, makes the staging ring (collective: the same calls and
  // prices on every rank reach the sum at the same call), so that plan() makes those
  // plans again with trials through it. True when it made the ring or failed to: the
  // cheap plans, the caller's among them, go at the next lookup (a new generation).
  // Inline while the rule has nothing to do here: the shortcut's calls pass through it.
  bool after_cheap_call(double price) { return !cheap_ring_done_ && count_cheap_call(price); }
  // Native MPI has now run the cheap plan at `where` kWarmNativeCalls times (its calls
  // count, the same on every rank): where the ring exists, the plan is made again at
  // the next lookup, with trials through the ring (a new generation: no shortcut to it).
  // True when it did (false before the ring exists: its making picks the plan up).
  bool native_warmed(PlanHandle where);
  // The calls a cheap plan runs natively before it is trialled through the ring: native
  // MPI's first calls of a size are slow for hundreds of calls (make_cached_plan).
  static constexpr long kWarmNativeCalls = planner::kWarmNativeFirstCalls;
  // Whether cheap calls of `collective` priced at `price` are trialled through the ring:
  // planner::cheap_calls_through_ring says which, and why.
  bool ring_trials_cheap(planner::Collective collective, double price) const {
    return planner::cheap_calls_through_ring(collective, ranks_per_node_, price);
  }
  // The ring if it was made (never makes one: not collective).
  StagingRing* staging_if_made() { return staging_.get(); }
  // Frees the staging ring (collective over the node).
  void free_staging_ring() { staging_.reset(); }
  const StagingRing* staging() const { return staging_.get(); }

 private:
  // ---- The state: shim/comm_state.cpp ---------------------------------------------
  CommState(MPI_Comm user, MPI_Comm private_comm, int rank, int size,
            std::shared_ptr<const planner::Topology> topology);

  MPI_Comm user_comm_;
  MPI_Comm private_comm_;  // MPI_COMM_NULL until private_ready()
  bool private_failed_ = false;
  int rank_;
  int size_;
  bool concurrent_;  // Runtime::concurrent_calls(), fixed at MPI_Init
  std::shared_ptr<const planner::Topology> topology_;  // fixed when the state is made
  // The most of its ranks one node holds (the ring's size follows it, planner/staged.h);
  // fixed with the topology, kept because every cheap call asks (ring_trials_cheap).
  int ranks_per_node_;
  int ranks_per_node() const { return ranks_per_node_; }
  // ---- Learning: shim/trials_driver.cpp -------------------------------------------
  // CANOPY_LEARN: the model refitted to this communicator's agreed measurements (the
  // same on every rank: every rank feeds it the same agreed times in the same order).
  static constexpr std::size_t kLearnSamples = 64;
  planner::CostModel model_;
  bool learning_;
  std::vector<planner::ModelSample> samples_;
  // Adds an agreed time of a call of `c` and refits the model.
  void learn(const Candidate& c, double seconds);
  // A round of `plan`'s trials has ended: the ranks agree on it, and the trials go on.
  void end_trial_round(CachedPlan& plan, const PlanKey& key);
  // ---- The plan cache: shim/plan_cache.cpp ----------------------------------------
  // The plan cache, most recently used first, bounded by kMaxPlans. Eviction is the
  // same on every rank: every rank of a communicator makes the same sequence of
  // collective calls on it, hence the same sequence of plan() lookups. A plan evicted
  // in the middle of auto's trials starts its trials afresh, on every rank alike.
  static std::atomic<std::uint64_t> generation_;
  PlanList lru_;
  std::unordered_map<PlanKey, PlanList::iterator, PlanKeyHash> plans_;
  std::size_t plans_bytes_ = 0;  // bytes_held() of the plans in the cache
  // Guards lru_ and plans_ under MPI_THREAD_MULTIPLE. MPI forbids concurrent
  // collectives on one communicator, so a correct program never contends for it (one
  // uncontended lock per call); an erroneous one still gets wrong results, but the
  // cache's lists stay intact.
  ThreadLock plans_lock_;
  // ClassChoices by the key without its root (root -1), the first made first; at most
  // kClassChoices, the oldest dropped first (alike on every rank: every rank makes the
  // same plans at the same calls).
  std::list<std::pair<PlanKey, ClassChoices>> class_choices_;
  static constexpr std::size_t kClassChoices = 256;
  ClassChoices* class_choices(const PlanKey& key);
  // Where `made`'s candidates were views checked by each rank alone: the ranks agree on
  // them (collective), else `made` becomes native MPI's (plan_cache.cpp says why).
  void agree_on_views(const PlanKey& key, std::unique_ptr<CachedPlan>& made);
  // Drops the cached plans `drop` says (a changed generation: shortcuts to them go);
  // called where every rank drops alike.
  void drop_plans(const std::function<bool(const PlanKey&, const CachedPlan&)>& drop);
  // ---- Scratch memory, reused from call to call -----------------------------------
  Workspace workspace_;
  ExecutorScratch executor_scratch_;
  std::vector<int> world_ranks_;  // world_ranks(), once asked
  std::uint64_t trace_id_ = 0;    // trace_id(), once asked (0: not yet)
  std::int64_t trace_serial_ = 0;
  // ---- Node resources (the staging ring): shim/node_resources.cpp -----------------
  std::unique_ptr<StagingRing> staging_;
  std::vector<int> ring_world_ranks_;  // the processes staging_ serves (for StagingRing::park)
  bool staging_failed_ = false;
  bool drop_staged_plans_ = false;  // set when the ring fails: plan() drops plans using it
  bool drop_direct_plans_ = false;  // set when the ring has no cross-memory attach: the same for direct plans
  bool drop_cheap_native_plans_ = false;  // set when the ring is made: plan() drops warm cheap plans
  // CANOPY_RING_AFTER: the prices and number of this communicator's cheap calls so far,
  // and whether the rule is done here (a ring made or found impossible).
  double cheap_seconds_ = 0;
  long cheap_calls_ = 0;
  bool cheap_ring_done_ = false;
  bool count_cheap_call(double price);
  // Cheap plans whose native calls are warm, to be made with trials at their next lookup.
  std::unordered_set<PlanKey, PlanKeyHash> warm_cheap_keys_;
  bool drop_warm_plans_ = false;
};

}  // namespace canopy::shim
