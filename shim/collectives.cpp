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

int finish(MPI_Comm comm, int err) {
  Runtime& rt = runtime();
  rt.intercepted.fetch_add(1, std::memory_order_relaxed);
  // Report the error as native MPI would: through the communicator's handler.
  if (err != MPI_SUCCESS) PMPI_Comm_call_errhandler(comm, err);
  return err;
}

}  // namespace

int reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm) {
  Runtime& rt = runtime();
  auto native = [&] {
    rt.fallbacks.fetch_add(1, std::memory_order_relaxed);
    return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
  };
  if (!rt.active || rt.settings.reduce_algorithm == "native") return native();
  try {
    CommState* state = CommState::of(comm);
    DatatypeLayout layout;
    if (!state || count < 0 || root < 0 || root >= state->size() || !describe_datatype(datatype, layout))
      return native();  // MPI's own checks and error reporting apply
    int commutative = 1;
    if (PMPI_Op_commutative(op, &commutative) != MPI_SUCCESS) return native();
    const CachedPlan& plan =
        state->plan({planner::Collective::Reduce, root, count, layout.size, commutative != 0});
    if (plan.native) return native();

    const bool is_root = state->rank() == root;
    ExecutionBuffers b;
    b.input_is_accumulator = is_root && sendbuf == MPI_IN_PLACE;
    b.input = b.input_is_accumulator ? recvbuf : sendbuf;
    void* workspace_acc = nullptr;
    const bool own_workspace = !is_root && plan.rank_needs_workspace;
    carve_scratch(*state, plan.schedule, layout, own_workspace ? count : 0, b, own_workspace ? &workspace_acc : nullptr);
    b.accumulator = is_root ? recvbuf : workspace_acc;
    return finish(comm, execute(plan.schedule, state->rank(), b, layout, op, state->comm()));
  } catch (const std::exception& e) {
    // Only planning and allocation throw, both before any message: native is safe.
    rt.log->warn("MPI_Reduce: {}; native MPI runs", e.what());
    return native();
  }
}

int bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  Runtime& rt = runtime();
  auto native = [&] {
    rt.fallbacks.fetch_add(1, std::memory_order_relaxed);
    return PMPI_Bcast(buffer, count, datatype, root, comm);
  };
  if (!rt.active || rt.settings.bcast_algorithm == "native") return native();
  try {
    CommState* state = CommState::of(comm);
    int type_size = 0;
    if (!state || count < 0 || root < 0 || root >= state->size() ||
        PMPI_Type_size(datatype, &type_size) != MPI_SUCCESS)
      return native();
    // Ranks may describe the message with different datatypes of the same signature,
    // so the plan is made over bytes, which all ranks agree on.
    const std::int64_t bytes = static_cast<std::int64_t>(count) * type_size;
    const CachedPlan& plan = state->plan({planner::Collective::Bcast, root, bytes, 1, true});
    if (plan.native) return native();

    DatatypeLayout bytes_layout;
    describe_datatype(MPI_BYTE, bytes_layout);
    DatatypeLayout mine;
    // Our own type decides only how this rank moves bytes in and out of its buffer.
    const bool direct = describe_datatype(datatype, mine) && mine.dense;
    ExecutionBuffers b;
    void* packed = nullptr;
    carve_scratch(*state, plan.schedule, bytes_layout, direct ? 0 : bytes, b, direct ? nullptr : &packed);
    b.accumulator = direct ? buffer : packed;
    const bool is_root = state->rank() == root;
    int err = MPI_SUCCESS;
    if (!direct && is_root && bytes > 0) {
      int position = 0;
      err = PMPI_Pack(buffer, count, datatype, packed, static_cast<int>(bytes), &position, state->comm());
    }
    const int run = execute(plan.schedule, state->rank(), b, bytes_layout, MPI_OP_NULL, state->comm());
    if (err == MPI_SUCCESS) err = run;
    if (!direct && !is_root && bytes > 0 && err == MPI_SUCCESS) {
      int position = 0;
      err = PMPI_Unpack(packed, static_cast<int>(bytes), &position, buffer, count, datatype, state->comm());
    }
    return finish(comm, err);
  } catch (const std::exception& e) {
    rt.log->warn("MPI_Bcast: {}; native MPI runs", e.what());
    return native();
  }
}

}  // namespace canopy::shim
