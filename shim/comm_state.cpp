#include "shim/comm_state.h"

#include <mutex>
#include <set>
#include <vector>

#include "planner/describe.h"
#include "planner/select.h"
#include "shim/runtime.h"

namespace canopy::shim {

namespace {

// Every live state, so MPI_Finalize can free those whose communicators the
// application never freed. Touched only when a state is created or destroyed.
std::mutex registry_mutex;
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

CommState::CommState(MPI_Comm user, MPI_Comm private_comm, int rank, int size)
    : user_comm_(user), private_comm_(private_comm), rank_(rank), size_(size) {}

CommState::~CommState() {
  if (private_comm_ != MPI_COMM_NULL) PMPI_Comm_free(&private_comm_);
}

CommState* CommState::of(MPI_Comm comm) {
  Runtime& rt = runtime();
  if (!rt.active || comm == MPI_COMM_NULL) return nullptr;
  void* value = nullptr;
  int found = 0;
  if (PMPI_Comm_get_attr(comm, rt.keyval, &value, &found) != MPI_SUCCESS) return nullptr;
  if (found) return static_cast<CommState*>(value);
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter) return nullptr;
  MPI_Comm dup = MPI_COMM_NULL;
  if (PMPI_Comm_dup(comm, &dup) != MPI_SUCCESS) return nullptr;
  int rank = 0, size = 0;
  PMPI_Comm_rank(dup, &rank);
  PMPI_Comm_size(dup, &size);
  auto* state = new CommState(comm, dup, rank, size);
  {
    std::lock_guard<std::mutex> lock(registry_mutex);
    registry.insert(state);
  }
  PMPI_Comm_set_attr(comm, rt.keyval, state);
  return state;
}

int CommState::delete_attribute_callback(MPI_Comm, int, void* value, void*) {
  auto* state = static_cast<CommState*>(value);
  {
    std::lock_guard<std::mutex> lock(registry_mutex);
    registry.erase(state);
  }
  delete state;
  return MPI_SUCCESS;
}

void CommState::release_all() {
  std::vector<CommState*> alive;
  {
    std::lock_guard<std::mutex> lock(registry_mutex);
    alive.assign(registry.begin(), registry.end());
  }
  // Deleting the attribute runs delete_attribute_callback, which frees the state.
  for (CommState* state : alive) PMPI_Comm_delete_attr(state->user_comm_, runtime().keyval);
}

const CachedPlan& CommState::plan(const PlanKey& key) {
  auto it = plans_.find(key);
  if (it != plans_.end()) return *it->second;

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
  planner::Request request;
  request.algorithm = key.collective == planner::Collective::Reduce ? rt.settings.reduce_algorithm
                                                                    : rt.settings.bcast_algorithm;
  request.segment_bytes = rt.settings.segment_bytes;
  try {
    planner::Plan plan = planner::make_plan(problem, request);
    made->schedule = std::move(plan.schedule);
    made->predicted = plan.predicted;
    for (const planner::Step& st : made->schedule.steps[rank_])
      if (st.kind != planner::StepKind::Send && !(st.kind == planner::StepKind::Recv && st.buffer == planner::Buffer::Slot))
        made->rank_needs_workspace = true;
  } catch (const std::exception& e) {
    // Deterministic: every rank gets the same error for the same key.
    made->native = true;
    made->reason = e.what();
  }

  if (made->native) {
    if (rank_ == 0) rt.log->warn("{} on {} ranks, root {}, {} elements: planning failed ({}); native MPI runs",
                                 planner::to_string(key.collective), size_, key.root, key.count, made->reason);
  } else {
    rt.schedule_log.record(made->schedule, size_, made->predicted, rt.model.spec());
    if (rank_ == 0 && rt.log->should_log(spdlog::level::info))
    {
      std::string text = planner::describe_schedule(made->schedule, rt.log->should_log(spdlog::level::debug));
      if (!text.empty() && text.back() == '\n') text.pop_back();
      rt.log->info("new schedule: {}; predicted {}\n{}", planner::summarize(made->schedule),
                   planner::format_seconds(made->predicted), text);
    }
  }
  return *plans_.emplace(key, std::move(made)).first->second;
}

}  // namespace canopy::shim
