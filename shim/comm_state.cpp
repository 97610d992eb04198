// The state's life cycle: made on a communicator's first collective (CommState::of) and
// freed with it (delete_attribute_callback) or at MPI_Finalize (release_all), the
// registry of the live ones, the private duplicate made at the first call that needs
// it, and the agreements the ranks make on it (agree for CANOPY_VERIFY, agree_max for
// trials and learning). What the state holds is used elsewhere: the plan cache
// (shim/plan_cache.cpp), the trials driver (shim/trials_driver.cpp) and the node's
// staging ring (shim/node_resources.cpp).
#include "shim/comm_state.h"
#include "shim/platform.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <vector>

#include "planner/fnv1a.h"
#include "planner/learn.h"
#include "planner/topology.h"
#include "shim/collectives.h"
#include "shim/polite.h"
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
    : user_comm_(user),
      private_comm_(private_comm),
      rank_(rank),
      size_(size),
      concurrent_(runtime().concurrent_calls()),
      topology_(std::move(topology)),
      ranks_per_node_(topology_ ? planner::largest_node(*topology_) : size),
      model_(runtime().model),
      // Learning refits the base model; across nodes the links (measured at MPI_Init)
      // price the messages, and they are not refitted.
      learning_(runtime().settings.learn && planner::learnable(runtime().model) && !topology_) {}

std::vector<int> world_ranks_of(MPI_Comm comm, int size) {
  MPI_Group group = MPI_GROUP_NULL, world_group = MPI_GROUP_NULL;
  PMPI_Comm_group(comm, &group);
  PMPI_Comm_group(MPI_COMM_WORLD, &world_group);
  std::vector<int> ranks(size), world_ranks(size, MPI_UNDEFINED);
  for (int r = 0; r < size; ++r) ranks[r] = r;
  PMPI_Group_translate_ranks(group, size, ranks.data(), world_group, world_ranks.data());
  PMPI_Group_free(&group);
  PMPI_Group_free(&world_group);
  for (int w : world_ranks)
    if (w < 0) return {};
  return world_ranks;
}

namespace {

// The world topology seen from `comm`: its ranks' world ranks, renumbered in
// communicator order. Null when there is no world topology, or the ranks share one node
// and one package and send at one speed (messages in a node follow the base model).
std::shared_ptr<const planner::Topology> topology_of(MPI_Comm comm, int size) {
  const auto& world = runtime().topology;
  if (!world) return nullptr;
  const std::vector<int> world_ranks = world_ranks_of(comm, size);
  if (world_ranks.empty()) return nullptr;
  for (int w : world_ranks)
    if (w >= world->nranks()) return nullptr;
  auto t = std::make_shared<planner::Topology>(planner::restrict_topology(*world, world_ranks));
  const bool one_speed = std::all_of(t->slowdown.begin(), t->slowdown.end(), [](double x) { return x == 1.0; });
  if (t->nodes() <= 1 && one_speed && !t->splits_a_node()) return nullptr;
  return t;
}

// Canopy's private duplicate of `comm`. Where ranks outnumber cores the nonblocking
// duplicate, waited for politely: MPICH's blocking MPI_Comm_dup busy-polls there (see
// CommState::agree). Every rank takes the same branch (agreed at MPI_Init). Without a
// nonblocking duplicate (SMPI) the blocking one.
bool duplicate(MPI_Comm comm, MPI_Comm& dup, bool polite) {
  if (!polite || !platform().nonblocking_dup) return PMPI_Comm_dup(comm, &dup) == MPI_SUCCESS;
  MPI_Request request = MPI_REQUEST_NULL;
  return PMPI_Comm_idup(comm, &dup, &request) == MPI_SUCCESS && wait_politely(&request) == MPI_SUCCESS;
}

}  // namespace

CommState::~CommState() {
  flush_native_shortcuts();  // before this state and its plans go
  generation_.fetch_add(1, std::memory_order_relaxed);
  stamp_learned_predictions();
  // Before the private communicator it was made on: kept for the next communicator over
  // the same processes (staging.h), or freed.
  StagingRing::park(std::move(staging_), std::move(ring_world_ranks_));
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
  // The state found last, while no state has been freed since (a freed communicator's
  // handle may come back for another): the attribute's lookup is a hash table's in Open
  // MPI, 30-50 ns of a 0.3-0.6 us two-rank allreduce of 8 B. Not with concurrent calls
  // (one process-wide entry).
  static struct {
    MPI_Comm comm = MPI_COMM_NULL;
    CommState* state = nullptr;
    std::uint64_t generation = 0;
  } last;
  const bool remember = !rt.concurrent_calls();
  if (remember && last.comm == comm && last.generation == generation()) return last.state;
  void* value = nullptr;
  int found = 0;
  if (PMPI_Comm_get_attr(comm, rt.keyval, &value, &found) != MPI_SUCCESS) return none(FallbackReason::InvalidArgument);
  if (found) {
    if (remember) last = {comm, static_cast<CommState*>(value), generation()};
    return static_cast<CommState*>(value);
  }
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter) return none(FallbackReason::Intercommunicator);
  // The private duplicate waits for the first call that sends Canopy's own messages
  // (CommState::private_ready): a communicator whose calls all stay native never pays
  // for it (2 ranks, a communicator split for one 8 B reduce and freed, 300 times:
  // 13.2-17.4 us a call with the duplicate made at once, 6.6-10.0 without; native
  // 5.2-10.5).
  int rank = 0, size = 0;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &size);
  auto* state = new CommState(comm, MPI_COMM_NULL, rank, size, topology_of(comm, size));
  {
    std::lock_guard<ThreadLock> lock(registry_mutex);
    registry.insert(state);
  }
  PMPI_Comm_set_attr(comm, rt.keyval, state);
  return state;
}

const std::vector<int>& CommState::world_ranks() {
  if (world_ranks_.empty()) world_ranks_ = world_ranks_of(user_comm_, size_);
  return world_ranks_;
}

std::uint64_t CommState::trace_id() {
  if (trace_id_ == 0) {
    planner::Fnv1a h;
    for (int w : world_ranks()) h.word(static_cast<std::uint64_t>(w));
    trace_id_ = h.value() | 1;  // never 0, the mark of not yet found
  }
  return trace_id_;
}

bool CommState::private_ready() {
  if (private_comm_ != MPI_COMM_NULL) return true;
  if (private_failed_) return false;
  MPI_Comm dup = MPI_COMM_NULL;
  if (!duplicate(user_comm_, dup, runtime().oversubscribed)) {
    private_failed_ = true;
    return false;
  }
  private_comm_ = dup;
  if (rank_ == 0)
    runtime().log->debug("private duplicate made for a communicator of {} ranks (in MPI_Init for "
                         "MPI_COMM_WORLD's ring, else at its first call that needs it)",
                         size_);
  return true;
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
  // Freeing a staging ring is collective over its node: every rank frees its rings in
  // the order they were made (the order of the calls that made them, the same on every
  // rank), before the states go in whatever order the registry holds them.
  std::vector<CommState*> staged;
  for (CommState* state : alive)
    if (state->staging_) staged.push_back(state);
  std::sort(staged.begin(), staged.end(),
            [](const CommState* a, const CommState* b) { return a->staging_->sequence() < b->staging_->sequence(); });
  for (CommState* state : staged) state->free_staging_ring();
  // Deleting the attribute runs delete_attribute_callback, which frees the state.
  for (CommState* state : alive) PMPI_Comm_delete_attr(state->user_comm_, runtime().keyval);
  StagingRing::clear_parked();
}

void CommState::stamp_all() {
  std::lock_guard<ThreadLock> lock(registry_mutex);
  for (const CommState* state : registry) state->stamp_learned_predictions();
}

CommState* CommState::existing(MPI_Comm comm) {
  Runtime& rt = runtime();
  void* value = nullptr;
  int found = 0;
  if (!rt.active || comm == MPI_COMM_NULL || PMPI_Comm_get_attr(comm, rt.keyval, &value, &found) != MPI_SUCCESS ||
      !found)
    return nullptr;
  return static_cast<CommState*>(value);
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
    if (allreduce_politely(both, max, 2, MPI_UINT64_T, MPI_MAX, private_comm_) != MPI_SUCCESS) return false;
  }
  return max[0] == hash && max[1] == ~hash;
}

bool CommState::agree_max(std::vector<double>& values) {
  std::vector<double> max(values.size());
  const int n = static_cast<int>(values.size());
  if (!runtime().oversubscribed) {
    if (PMPI_Allreduce(values.data(), max.data(), n, MPI_DOUBLE, MPI_MAX, private_comm_) != MPI_SUCCESS) return false;
  } else {
    // As agree(): a blocking collective busy-polls and starves the ranks it waits for.
    if (allreduce_politely(values.data(), max.data(), n, MPI_DOUBLE, MPI_MAX, private_comm_) != MPI_SUCCESS)
      return false;
  }
  values = std::move(max);
  return true;
}

}  // namespace canopy::shim
