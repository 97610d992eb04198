#include "shim/comm_state.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <vector>

#include "planner/describe.h"
#include "planner/schedule_json.h"
#include "planner/select.h"
#include "planner/validate.h"
#include "shim/executor.h"
#include "shim/runtime.h"

namespace canopy::shim {

namespace {

// Every live state, so MPI_Finalize can free those whose communicators the
// application never freed. Touched only when a state is created or destroyed, which
// threads may do at once for different communicators.
ThreadLock registry_mutex;
std::set<CommState*> registry;

}  // namespace

char* Workspace::get(std::size_t bytes) {
  if (bytes > capacity_) {
    std::free(data_);
    capacity_ = (bytes + 63) / 64 * 64;
    data_ = static_cast<char*>(std::aligned_alloc(64, capacity_));
    if (!data_) {
      capacity_ = 0;
      throw std::bad_alloc();
    }
  }
  return data_;
}

CommState::CommState(MPI_Comm user, MPI_Comm private_comm, int rank, int size,
                     std::shared_ptr<const planner::Topology> topology)
    : user_comm_(user), private_comm_(private_comm), rank_(rank), size_(size), topology_(std::move(topology)) {}

namespace {

// The world topology seen from `comm`: its ranks' world ranks (a local group
// translation, the same on every rank), renumbered in communicator order. Null when
// there is no world topology, or the ranks share one node and send at one speed
// (messages in a node follow the base model).
std::shared_ptr<const planner::Topology> topology_of(MPI_Comm comm, int size) {
  const auto& world = runtime().topology;
  if (!world) return nullptr;
  MPI_Group group = MPI_GROUP_NULL, world_group = MPI_GROUP_NULL;
  PMPI_Comm_group(comm, &group);
  PMPI_Comm_group(MPI_COMM_WORLD, &world_group);
  std::vector<int> ranks(size), world_ranks(size, MPI_UNDEFINED);
  for (int r = 0; r < size; ++r) ranks[r] = r;
  PMPI_Group_translate_ranks(group, size, ranks.data(), world_group, world_ranks.data());
  PMPI_Group_free(&group);
  PMPI_Group_free(&world_group);
  for (int w : world_ranks)
    if (w < 0 || w >= world->nranks()) return nullptr;  // a process from outside MPI_COMM_WORLD
  auto t = std::make_shared<planner::Topology>(planner::restrict_topology(*world, world_ranks));
  const bool one_speed = std::all_of(t->slowdown.begin(), t->slowdown.end(), [](double x) { return x == 1.0; });
  if (t->nodes() <= 1 && one_speed) return nullptr;
  return t;
}

}  // namespace

CommState::~CommState() {
  if (private_comm_ != MPI_COMM_NULL) PMPI_Comm_free(&private_comm_);
}

CommState* CommState::of(MPI_Comm comm, FallbackReason* why) {
  Runtime& rt = runtime();
  auto none = [why](FallbackReason r) -> CommState* {
    if (why) *why = r;
    return nullptr;
  };
  if (!rt.active) return none(FallbackReason::Disabled);
  if (comm == MPI_COMM_NULL) return none(FallbackReason::InvalidArgument);
  void* value = nullptr;
  int found = 0;
  if (PMPI_Comm_get_attr(comm, rt.keyval, &value, &found) != MPI_SUCCESS) return none(FallbackReason::InvalidArgument);
  if (found) return static_cast<CommState*>(value);
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter) return none(FallbackReason::Intercommunicator);
  MPI_Comm dup = MPI_COMM_NULL;
  if (PMPI_Comm_dup(comm, &dup) != MPI_SUCCESS) return none(FallbackReason::StateFailed);
  int rank = 0, size = 0;
  PMPI_Comm_rank(dup, &rank);
  PMPI_Comm_size(dup, &size);
  auto* state = new CommState(comm, dup, rank, size, topology_of(dup, size));
  {
    std::lock_guard<ThreadLock> lock(registry_mutex);
    registry.insert(state);
  }
  PMPI_Comm_set_attr(comm, rt.keyval, state);
  return state;
}

int CommState::delete_attribute_callback(MPI_Comm, int, void* value, void*) {
  auto* state = static_cast<CommState*>(value);
  {
    std::lock_guard<ThreadLock> lock(registry_mutex);
    registry.erase(state);
  }
  delete state;
  return MPI_SUCCESS;
}

void CommState::release_all() {
  std::vector<CommState*> alive;
  {
    std::lock_guard<ThreadLock> lock(registry_mutex);
    alive.assign(registry.begin(), registry.end());
  }
  // Deleting the attribute runs delete_attribute_callback, which frees the state.
  for (CommState* state : alive) PMPI_Comm_delete_attr(state->user_comm_, runtime().keyval);
}

long CommState::live_states() {
  std::lock_guard<ThreadLock> lock(registry_mutex);
  return static_cast<long>(registry.size());
}

bool CommState::agree(std::uint64_t hash) {
  // The maximum of h and of ~h are both this rank's only if every rank has the same h.
  std::uint64_t both[2] = {hash, ~hash};
  std::uint64_t max[2] = {0, 0};
  if (!runtime().oversubscribed) {
    if (PMPI_Allreduce(both, max, 2, MPI_UINT64_T, MPI_MAX, private_comm_) != MPI_SUCCESS) return false;
  } else {
    // With more ranks than cores MPICH's blocking collectives busy-poll and starve the
    // ranks they wait for: wait for a nonblocking one politely, as the executor does
    // (the bcast_matrix test at 3 ranks on 2 cores: 2.1 s without CANOPY_VERIFY, 10.7 s
    // with the blocking allreduce, 4.6 s with this). Every rank takes the same branch
    // (the flag is agreed at MPI_Init), so blocking and nonblocking never meet.
    MPI_Request request = MPI_REQUEST_NULL;
    if (PMPI_Iallreduce(both, max, 2, MPI_UINT64_T, MPI_MAX, private_comm_, &request) != MPI_SUCCESS) return false;
    if (wait_politely(&request) != MPI_SUCCESS) return false;
  }
  return max[0] == hash && max[1] == ~hash;
}

namespace {

// FNV-1a over the schedule's JSON form: every field, the same on every rank.
std::uint64_t schedule_fingerprint(const planner::Schedule& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : planner::schedule_to_json(s).dump()) h = (h ^ c) * 1099511628211ull;
  return h;
}

// CANOPY_FAULT=invalid-schedule: a receive from a rank that does not exist, which the
// validator rejects whatever the schedule was ("bad peer").
void corrupt(planner::Schedule& s) {
  if (s.steps.empty()) s.steps.resize(1);
  s.steps[0].push_back(planner::Step::recv_into_accumulator(s.nranks, 0));
}

bool writes_accumulator(const planner::Schedule& s, int rank) {
  for (const planner::Step& st : s.steps_of(rank))
    if (st.kind != planner::StepKind::Send && !(st.kind == planner::StepKind::Recv && st.buffer == planner::Buffer::Slot))
      return true;
  return false;
}

// A candidate in auto's log line: the algorithm and, for a schedule, its segments (two
// candidates may be one algorithm cut differently).
std::string trial_name(const Candidate& c) {
  return c.native ? c.name() : c.name() + "/" + std::to_string(c.schedule.segments.size());
}

// auto's trials add a coarser segmentation of the best schedule from this many segments.
constexpr std::size_t kCoarserTrialSegments = 8;

// Native MPI competes in auto mode, except where it is known to fail or to mislead:
// - Debian's MPICH 4.0.2 crashes on MPI_Reduce with MPI_IN_PLACE at a non-zero root
//   (pmodels/mpich#6540); only the root knows whether it passed MPI_IN_PLACE, so every
//   rank excludes native for every reduce at a non-zero root;
// - on an oversubscribed node MPICH's first calls are fast and later ones are not
//   (its busy-polling starves the ranks it waits for), so trials cannot judge it.
bool native_may_compete(const PlanKey& key) {
  if (runtime().oversubscribed) return false;
  return key.collective == planner::Collective::Bcast || key.root == 0;
}

}  // namespace

CachedPlan& CommState::plan(const PlanKey& key) {
  std::lock_guard<ThreadLock> lock(plans_lock_);
  auto it = plans_.find(key);
  if (it != plans_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);  // now the most recently used
    return *it->second->second;
  }

  Runtime& rt = runtime();
  auto made = std::make_unique<CachedPlan>();
  planner::Problem problem;
  problem.collective = key.collective;
  problem.nranks = size_;
  problem.root = key.root;
  problem.count = key.count;
  problem.element_bytes = key.element_bytes;
  problem.commutative = key.commutative;
  problem.model = rt.model;
  problem.topology = topology_;
  // The global settings, or what a CANOPY_CONFIG rule says for this size.
  const config::Choice choice = rt.settings.choice_for(key.collective, key.count * key.element_bytes, size_);
  planner::Request request;
  request.algorithm = choice.algorithm;
  request.segment_bytes = choice.segment_bytes;
  const bool tune = request.algorithm == "auto" && rt.settings.auto_trials > 0;
  const bool rule_says_native = request.algorithm == "native";
  if (!rule_says_native) try {
    // The model's best schedules (two when tuning, so a wrong model can be overruled),
    // each validated before it may run.
    std::vector<planner::Plan> ranked;
    if (rt.settings.fault == "planner-error") throw planner::PlanError("injected by CANOPY_FAULT=planner-error");
    try {
      ranked = planner::rank_plans(problem, request);
    } catch (const planner::PlanError& e) {
      if (request.algorithm == "auto") throw;
      // A forced algorithm may decline a call (e.g. a commutative-only one meeting a
      // non-commutative op). Native MPI is no safe harbour (MPICH 4.0.2 crashes on
      // in-place reduces at non-zero roots), so the model's best algorithm runs.
      // Said once per process and collective; later cases at debug level.
      static std::atomic<bool> said[2];
      const bool first = !said[static_cast<int>(key.collective)].exchange(true);
      if (rank_ == 0)
        rt.log->log(first ? spdlog::level::warn : spdlog::level::debug,
                    "{}={} cannot plan {} on {} ranks ({}); using the model's best algorithm{}",
                    key.collective == planner::Collective::Reduce ? "CANOPY_REDUCE_ALGO" : "CANOPY_BCAST_ALGO",
                    request.algorithm, planner::to_string(key.collective), size_, e.what(),
                    first ? " (further cases at debug level)" : "");
      request.algorithm = "auto";
      ranked = planner::rank_plans(problem, request);
    }
    // Trials also try the model's best algorithm with segments four times as large when
    // it cuts the message into many: what one more message costs is what the model
    // knows least (on the test bed, 6 ranks on 2 cores over tcp, about 1.7 ms where
    // the idle ping-pong says 30 us, so 22 segments of a 1 MiB bcast ran at 100 ms
    // where 4 ran at 72). Only when the planner chooses the segment size.
    std::size_t wanted = tune ? 2 : 1;
    const planner::Schedule& best = ranked.front().schedule;
    if (tune && request.segment_bytes < 0 && best.segments.size() >= kCoarserTrialSegments) {
      planner::Request coarser{best.algorithm, 4 * best.largest_segment_count() * best.element_bytes};
      try {
        planner::Plan variant = planner::rank_plans(problem, coarser).front();
        ranked.insert(ranked.begin() + std::min<std::size_t>(2, ranked.size()), std::move(variant));
        wanted = 3;
      } catch (const planner::PlanError&) {
        // The algorithm declines that segment size: the usual two candidates compete.
      }
    }
    for (planner::Plan& p : ranked) {
      if (made->candidates.size() == wanted) break;
      if (rt.settings.fault == "invalid-schedule") corrupt(p.schedule);
      const planner::Validation v = planner::validate(p.schedule);
      if (!v) {
        if (rank_ == 0) rt.log->warn("{}: rejected by the validator: {}", planner::summarize(p.schedule), v.summary());
        continue;
      }
      Candidate c;
      c.rank_needs_workspace = writes_accumulator(p.schedule, rank_);
      if (rt.settings.verify) c.fingerprint = schedule_fingerprint(p.schedule);
      c.schedule = std::move(p.schedule);
      c.predicted = p.predicted;
      made->candidates.push_back(std::move(c));
    }
    if (made->candidates.empty()) {
      made->native_why = FallbackReason::ValidatorRejected;
      throw planner::PlanError("every schedule failed validation");
    }
  } catch (const std::exception& e) {
    // Deterministic: every rank gets the same error for the same key.
    made->candidates.clear();
    made->native_reason = e.what();
  }
  if (made->candidates.empty() || (tune && native_may_compete(key))) {
    Candidate native;
    native.native = true;
    made->candidates.push_back(std::move(native));
  }
  if (tune && made->candidates.size() > 1)
    made->trial_calls = static_cast<int>(made->candidates.size()) * (1 + rt.settings.auto_trials);

  if (rule_says_native) made->native_why = FallbackReason::Configured;  // counted and said when it runs
  if (!made->native_reason.empty() && rank_ == 0)
    rt.log->warn("{} on {} ranks, root {}, {} elements: planning failed ({}); native MPI runs",
                 planner::to_string(key.collective), size_, key.root, key.count, made->native_reason);
  for (Candidate& c : made->candidates) {
    if (c.native) continue;  // native calls are recorded with their reason as they run
    if (rt.stats.enabled()) {
      CallKind kind;
      kind.collective = key.collective;
      kind.comm_size = size_;
      kind.root = key.root;
      kind.bytes = key.count * key.element_bytes;
      kind.algorithm = c.name();
      kind.segments = static_cast<int>(c.schedule.segments.size());
      kind.predicted = c.predicted;
      kind.schedule_id = schedule_id(c.schedule);
      c.stats = rt.stats.record(kind);
    }
    rt.schedule_log.record(c.schedule, size_, c.predicted, rt.model.spec(), topology_.get());
    if (rank_ == 0 && rt.log->should_log(spdlog::level::info)) {
      std::string text = planner::describe_schedule(c.schedule, rt.log->should_log(spdlog::level::debug));
      if (!text.empty() && text.back() == '\n') text.pop_back();
      rt.log->info("new schedule: {}; predicted {}\n{}", planner::summarize(c.schedule),
                   planner::format_seconds(c.predicted), text);
    }
  }
  lru_.emplace_front(key, std::move(made));
  plans_[key] = lru_.begin();
  if (lru_.size() > kMaxPlans) {
    plans_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return *lru_.front().second;
}

void CommState::finish_call(CachedPlan& plan, const PlanKey& key, double seconds) {
  if (!plan.trialling()) return;
  const int n = static_cast<int>(plan.candidates.size());
  const int round = plan.calls / n;
  if (round > 0) plan.trial_seconds.push_back(seconds);  // round 0 warms up
  if (++plan.calls < plan.trial_calls) return;

  // The slowest rank's time is the call's time; every rank gets the same maxima.
  std::vector<double> slowest(plan.trial_seconds.size());
  PMPI_Allreduce(plan.trial_seconds.data(), slowest.data(), static_cast<int>(slowest.size()), MPI_DOUBLE, MPI_MAX,
                 private_comm_);
  std::vector<double> best(n, 1e300);
  for (std::size_t k = 0; k < slowest.size(); ++k) best[k % n] = std::min(best[k % n], slowest[k]);
  plan.chosen = static_cast<int>(std::min_element(best.begin(), best.end()) - best.begin());
  plan.trial_seconds.clear();
  Runtime& rt = runtime();
  if (rank_ == 0 && rt.log->should_log(spdlog::level::info)) {
    std::string measured;
    for (int c = 0; c < n; ++c)
      measured += (c ? ", " : "") + trial_name(plan.candidates[c]) + " " + planner::format_seconds(best[c]);
    rt.log->info("auto: {} on {} ranks, root {}, {} B: measured {}; chose {}", planner::to_string(key.collective),
                 size_, key.root, key.count * key.element_bytes, measured, trial_name(plan.candidates[plan.chosen]));
  }
}

}  // namespace canopy::shim
