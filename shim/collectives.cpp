#include "shim/collectives.h"

#include "shim/comm_state.h"
#include "shim/executor.h"
#include "shim/runtime.h"

namespace canopy::shim {

namespace {

std::size_t round_up(std::int64_t bytes) { return static_cast<std::size_t>((bytes + 63) / 64 * 64); }

// Carves the accumulator workspace (if any) and the slots out of the state's scratch
// memory. Allocation happens before any message is sent, so running out of memory
// can still fall back to native MPI.
void carve_scratch(CommState& state, const planner::Schedule& s, const DatatypeLayout& layout,
                   std::int64_t accumulator_elements, ExecutionBuffers& b, void** accumulator) {
  const std::size_t acc_bytes = round_up(layout.span(accumulator_elements));
  const std::size_t slot_bytes = round_up(layout.span(s.largest_segment_count()));
  const int nslots = s.slots[state.rank()];
  char* base = state.workspace().get(acc_bytes + slot_bytes * static_cast<std::size_t>(nslots) + 64);
  if (accumulator) *accumulator = layout.origin(base);
  b.slots.resize(nslots);
  for (int k = 0; k < nslots; ++k) b.slots[k] = layout.origin(base + acc_bytes + slot_bytes * k);
}

// Runs one call with `plan`'s current candidate, timing it while trials last.
// `schedule` runs a Canopy schedule and returns the MPI error code; `native` calls
// the PMPI collective.
template <typename RunSchedule, typename RunNative>
int run_plan(CommState& state, CachedPlan& plan, const PlanKey& key, MPI_Comm comm, RunSchedule schedule,
             RunNative native) {
  Runtime& rt = runtime();
  const Candidate& candidate = plan.candidates[plan.current()];
  const bool timed = plan.trialling();
  const double start = timed ? PMPI_Wtime() : 0;
  int err = MPI_SUCCESS;
  if (candidate.native) {
    rt.fallbacks.fetch_add(1, std::memory_order_relaxed);
    err = native();
  } else {
    rt.intercepted.fetch_add(1, std::memory_order_relaxed);
    err = schedule(candidate);
    // Report an error as native MPI would: through the communicator's handler.
    if (err != MPI_SUCCESS) PMPI_Comm_call_errhandler(comm, err);
  }
  if (timed) state.finish_call(plan, key, PMPI_Wtime() - start);
  return err;
}

}  // namespace

int reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm) {
  Runtime& rt = runtime();
  auto native = [&] { return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm); };
  auto fallback = [&] {
    rt.fallbacks.fetch_add(1, std::memory_order_relaxed);
    return native();
  };
  if (!rt.active || rt.settings.reduce_algorithm == "native") return fallback();
  CommState* state = nullptr;
  CachedPlan* plan = nullptr;
  DatatypeLayout layout;
  PlanKey key{};
  try {
    state = CommState::of(comm);
    if (!state || count < 0 || root < 0 || root >= state->size() || !describe_datatype(datatype, layout))
      return fallback();  // MPI's own checks and error reporting apply
    int commutative = 1;
    if (PMPI_Op_commutative(op, &commutative) != MPI_SUCCESS) return fallback();
    key = {planner::Collective::Reduce, root, count, layout.size, commutative != 0};
    plan = &state->plan(key);
  } catch (const std::exception& e) {
    // Planning throws before any message: native is safe.
    rt.log->warn("MPI_Reduce: {}; native MPI runs", e.what());
    return fallback();
  }
  const bool is_root = state->rank() == root;
  auto schedule = [&](const Candidate& c) {
    ExecutionBuffers b;
    b.input_is_accumulator = is_root && sendbuf == MPI_IN_PLACE;
    b.input = b.input_is_accumulator ? recvbuf : sendbuf;
    void* workspace_acc = nullptr;
    const bool own_workspace = !is_root && c.rank_needs_workspace;
    carve_scratch(*state, c.schedule, layout, own_workspace ? count : 0, b, own_workspace ? &workspace_acc : nullptr);
    b.accumulator = is_root ? recvbuf : workspace_acc;
    return execute(c.schedule, state->rank(), b, layout, op, state->comm());
  };
  return run_plan(*state, *plan, key, comm, schedule, native);
}

int bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  Runtime& rt = runtime();
  auto native = [&] { return PMPI_Bcast(buffer, count, datatype, root, comm); };
  auto fallback = [&] {
    rt.fallbacks.fetch_add(1, std::memory_order_relaxed);
    return native();
  };
  if (!rt.active || rt.settings.bcast_algorithm == "native") return fallback();
  CommState* state = nullptr;
  CachedPlan* plan = nullptr;
  PlanKey key{};
  std::int64_t bytes = 0;
  try {
    state = CommState::of(comm);
    int type_size = 0;
    if (!state || count < 0 || root < 0 || root >= state->size() ||
        PMPI_Type_size(datatype, &type_size) != MPI_SUCCESS || type_size < 0)  // MPI_UNDEFINED: over 2 GiB
      return fallback();
    // Ranks may describe the message with different datatypes of the same signature,
    // so the plan is made over bytes, which all ranks agree on.
    bytes = static_cast<std::int64_t>(count) * type_size;
    key = {planner::Collective::Bcast, root, bytes, 1, true};
    plan = &state->plan(key);
  } catch (const std::exception& e) {
    rt.log->warn("MPI_Bcast: {}; native MPI runs", e.what());
    return fallback();
  }
  auto schedule = [&](const Candidate& c) {
    DatatypeLayout bytes_layout;
    describe_datatype(MPI_BYTE, bytes_layout);
    DatatypeLayout mine;
    // Our own type decides only how this rank moves bytes in and out of its buffer.
    const bool direct = describe_datatype(datatype, mine) && mine.dense;
    ExecutionBuffers b;
    void* packed = nullptr;
    carve_scratch(*state, c.schedule, bytes_layout, direct ? 0 : bytes, b, direct ? nullptr : &packed);
    b.accumulator = direct ? buffer : packed;
    const bool is_root = state->rank() == root;
    int err = MPI_SUCCESS;
    // (pack_elements / unpack_elements: MPI_Pack takes int sizes; bytes may exceed 2 GiB.)
    if (!direct && is_root && bytes > 0) err = pack_elements(buffer, count, datatype, packed, bytes, state->comm());
    const int run = execute(c.schedule, state->rank(), b, bytes_layout, MPI_OP_NULL, state->comm());
    if (err == MPI_SUCCESS) err = run;
    if (!direct && !is_root && bytes > 0 && err == MPI_SUCCESS)
      err = unpack_elements(packed, bytes, buffer, count, datatype, state->comm());
    return err;
  };
  return run_plan(*state, *plan, key, comm, schedule, native);
}

}  // namespace canopy::shim
