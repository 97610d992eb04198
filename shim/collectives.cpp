#include "shim/collectives.h"

#include <algorithm>
#include <new>

#include <spdlog/fmt/fmt.h>

#include "shim/call_stats.h"
#include "shim/comm_state.h"
#include "shim/executor.h"
#include "shim/runtime.h"

namespace canopy::shim {

namespace {

std::size_t round_up(std::int64_t bytes) { return static_cast<std::size_t>((bytes + 63) / 64 * 64); }

// Carves the accumulator workspace (if any) and the slots out of the state's scratch
// memory. Allocation happens before any message is sent, so running out of memory
// can still fall back to native MPI.
void carve_scratch(CommState& state, const planner::Schedule& s, const std::vector<planner::Segment>& segments,
                   const DatatypeLayout& layout, std::int64_t accumulator_elements, ExecutionBuffers& b,
                   void** accumulator) {
  std::int64_t largest = 0;
  for (const planner::Segment& seg : segments) largest = std::max(largest, seg.count);
  const std::size_t acc_bytes = round_up(layout.span(accumulator_elements));
  const std::size_t slot_bytes = round_up(layout.span(largest));
  const int nslots = s.slots_of(state.rank());
  char* base = state.workspace().get(acc_bytes + slot_bytes * static_cast<std::size_t>(nslots) + 64);
  if (accumulator) *accumulator = layout.origin(base);
  b.slots.resize(nslots);
  for (int k = 0; k < nslots; ++k) b.slots[k] = layout.origin(base + acc_bytes + slot_bytes * k);
}

// The plan key of a call: its size class, or its exact count where plans are made per
// count (Runtime::exact_plans).
PlanKey plan_key(const Runtime& rt, planner::Collective collective, int root, std::int64_t count,
                 std::int64_t element_bytes, bool commutative) {
  PlanKey key{collective, root, planner::size_class(count * element_bytes), element_bytes, commutative};
  if (rt.exact_plans) key.exact_count = count;
  return key;
}

// The plan for a call of `count` elements and the segments its current candidate cuts
// them into (null for native). A class's schedule that cannot be cut for this count
// (its segments would be empty) gives way to a plan for the exact count; every rank
// decides that alike, from the count.
CachedPlan& plan_for(CommState& state, PlanKey& key, std::int64_t count,
                     const std::vector<planner::Segment>** segments) {
  CachedPlan* plan = &state.plan(key, count);
  Candidate* c = &plan->candidates[plan->current()];
  *segments = c->native ? nullptr : c->segments_for(count);
  if (!c->native && !*segments) {
    key.exact_count = count;
    plan = &state.plan(key, count);
    c = &plan->candidates[plan->current()];
    *segments = c->native ? nullptr : c->segments_for(count);
  }
  return *plan;
}

// The error code CANOPY_VERIFY returns: class MPI_ERR_ARG, with its own message.
int verify_error_code() {
  static const int code = [] {
    int c = MPI_ERR_ARG;
    if (PMPI_Add_error_code(MPI_ERR_ARG, &c) != MPI_SUCCESS) return static_cast<int>(MPI_ERR_ARG);
    char text[] = "Canopy (CANOPY_VERIFY): the ranks called this collective with different arguments";
    PMPI_Add_error_string(c, text);
    return c;
  }();
  return code;
}

// CANOPY_VERIFY: the call's plan key and the candidate about to run, hashed (FNV-1a).
// Ranks that passed different counts, roots or datatype sizes differ here.
std::uint64_t call_fingerprint(const PlanKey& key, std::int64_t count, int candidate_index, const Candidate& c) {
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&h](std::uint64_t v) {
    for (int b = 0; b < 8; ++b) h = (h ^ ((v >> (8 * b)) & 0xff)) * 1099511628211ull;
  };
  mix(static_cast<std::uint64_t>(key.collective));
  mix(static_cast<std::uint64_t>(key.root));
  mix(static_cast<std::uint64_t>(count));
  mix(static_cast<std::uint64_t>(key.element_bytes));
  mix(key.commutative ? 1 : 0);
  mix(static_cast<std::uint64_t>(candidate_index));
  mix(c.native ? 0 : c.fingerprint);
  return h;
}

// Runs a call natively for `why`: counted, and with CANOPY_TIMING or CANOPY_REPORT
// also timed and recorded under its kind of call and reason. `cache`, when given,
// keeps the record found on the first call for the next ones.
template <typename RunNative>
int run_native(planner::Collective collective, MPI_Comm comm, int root, std::int64_t bytes, FallbackReason why,
               RunNative native, CallRecord** cache = nullptr) {
  Runtime& rt = runtime();
  rt.count_fallback(collective, why);
  if (!rt.stats.enabled()) return native();
  const double start = PMPI_Wtime();
  const int err = native();
  if (cache && *cache) {
    (*cache)->add(PMPI_Wtime() - start);
    return err;
  }
  CallKind kind;
  kind.collective = collective;
  int size = 0;
  int inter = 0;
  if (comm != MPI_COMM_NULL && PMPI_Comm_test_inter(comm, &inter) == MPI_SUCCESS && !inter)
    PMPI_Comm_size(comm, &size);
  kind.comm_size = size;  // 0: unknown (intercommunicator or invalid)
  kind.root = root;
  kind.bytes = bytes;
  kind.algorithm = "native";
  kind.reason = fallback_name(why);
  CallRecord* record = rt.stats.record(kind);
  if (cache) *cache = record;
  record->add(PMPI_Wtime() - start);
  return err;
}

// Message bytes of `count` elements of `datatype`, or -1 when MPI cannot say.
std::int64_t message_bytes(int count, MPI_Datatype datatype) {
  int size = 0;
  if (count < 0 || datatype == MPI_DATATYPE_NULL || PMPI_Type_size(datatype, &size) != MPI_SUCCESS || size < 0)
    return -1;
  return static_cast<std::int64_t>(count) * size;
}

// The record `c`'s calls of `bytes` are counted in (CANOPY_TIMING/_REPORT): found when
// the size changes, kept while it repeats.
CallRecord* record_of(Candidate& c, const PlanKey& key, int comm_size, std::int64_t bytes) {
  if (c.stats && c.stats_bytes == bytes) return c.stats;
  CallKind kind;
  kind.collective = key.collective;
  kind.comm_size = comm_size;
  kind.root = key.root;
  kind.bytes = bytes;
  kind.algorithm = c.name();
  kind.segments = static_cast<int>(c.schedule.segments.size());
  kind.predicted = c.predicted;
  kind.schedule_id = c.schedule_id;
  c.stats = runtime().stats.record(kind);
  c.stats_bytes = bytes;
  return c.stats;
}

// Runs one call of `count` elements with `plan`'s current candidate, cut into
// `segments`, timing it while trials last. `schedule` runs a Canopy schedule and
// returns the MPI error code; `native` calls the PMPI collective.
template <typename RunSchedule, typename RunNative>
int run_plan(CommState& state, CachedPlan& plan, const PlanKey& key, std::int64_t count,
             const std::vector<planner::Segment>* segments, MPI_Comm comm, RunSchedule schedule, RunNative native) {
  Runtime& rt = runtime();
  Candidate& candidate = plan.candidates[plan.current()];
  const std::int64_t bytes = count * key.element_bytes;
  if (rt.settings.verify && !state.agree(call_fingerprint(key, count, plan.current(), candidate))) {
    // An erroneous program: running either plan would hang or corrupt memory. Every
    // rank sees the mismatch (agree() is collective), so every rank returns the error.
    const bool reduce = key.collective == planner::Collective::Reduce;
    rt.log->error("{} on a communicator of {} ranks: the ranks passed different arguments (this rank: root {}, "
                  "{}); CANOPY_VERIFY returns MPI_ERR_ARG on every rank",
                  reduce ? "MPI_Reduce" : "MPI_Bcast", state.size(), key.root,
                  reduce ? fmt::format("{} elements of {} bytes", count, key.element_bytes)
                         : fmt::format("{} bytes", count));
    const int err = verify_error_code();
    PMPI_Comm_call_errhandler(comm, err);
    return err;
  }
  const bool trial = plan.trialling();
  CallRecord* record = rt.stats.enabled() && !candidate.native ? record_of(candidate, key, state.size(), bytes) : nullptr;
  const bool timed = trial || record;
  const double start = timed ? PMPI_Wtime() : 0;
  int err = MPI_SUCCESS;
  if (candidate.native) {
    const FallbackReason why = trial                        ? FallbackReason::AutoTrialNative
                               : plan.candidates.size() > 1 ? FallbackReason::AutoChoseNative
                                                            : plan.native_why;
    err = run_native(key.collective, comm, key.root, bytes, why, native,
                     &candidate.native_stats[static_cast<int>(why)]);
  } else {
    add_one(rt.intercepted, rt.concurrent_calls());
    try {
      err = schedule(candidate, *segments);
    } catch (const std::bad_alloc&) {
      // Scratch memory ran out before this rank sent anything. Falling back to native
      // here alone would leave the other ranks inside Canopy's schedule, so the call
      // fails as MPI would fail it: MPI_ERR_NO_MEM through the error handler (by
      // default MPI_ERRORS_ARE_FATAL ends the job cleanly) instead of an exception
      // escaping the C interface and terminating this rank alone.
      err = MPI_ERR_NO_MEM;
    }
    // Report an error as native MPI would: through the communicator's handler.
    if (err != MPI_SUCCESS) PMPI_Comm_call_errhandler(comm, err);
  }
  if (timed) {
    const double seconds = PMPI_Wtime() - start;
    if (record) record->add(seconds);
    if (trial) state.finish_call(plan, key, seconds);
  }
  return err;
}

}  // namespace

int reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm) {
  Runtime& rt = runtime();
  auto native = [&] { return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm); };
  auto fallback = [&](FallbackReason why) {
    return run_native(planner::Collective::Reduce, comm, root, message_bytes(count, datatype), why, native);
  };
  if (!rt.active) return fallback(FallbackReason::Disabled);
  if (rt.always_native(planner::Collective::Reduce)) return fallback(FallbackReason::AlgorithmNative);
  CommState* state = nullptr;
  CachedPlan* plan = nullptr;
  const std::vector<planner::Segment>* segments = nullptr;
  DatatypeLayout layout;
  PlanKey key{};
  try {
    FallbackReason why = FallbackReason::InvalidArgument;
    state = CommState::of(comm, &why);
    if (!state) return fallback(why);
    // MPI's own checks and error reporting apply.
    if (count < 0 || root < 0 || root >= state->size()) return fallback(FallbackReason::InvalidArgument);
    if (!describe_datatype(datatype, layout)) return fallback(FallbackReason::UnsupportedDatatype);
    int commutative = 1;
    if (PMPI_Op_commutative(op, &commutative) != MPI_SUCCESS) return fallback(FallbackReason::OpQueryFailed);
    key = plan_key(rt, planner::Collective::Reduce, root, count, layout.size, commutative != 0);
    plan = &plan_for(*state, key, count, &segments);
  } catch (const std::exception& e) {
    // Planning throws before any message: native is safe.
    rt.log->warn("MPI_Reduce: {}; native MPI runs", e.what());
    return fallback(FallbackReason::InternalError);
  }
  const bool is_root = state->rank() == root;
  auto schedule = [&](Candidate& c, const std::vector<planner::Segment>& cut) {
    ExecutionBuffers b;
    b.input_is_accumulator = is_root && sendbuf == MPI_IN_PLACE;
    b.input = b.input_is_accumulator ? recvbuf : sendbuf;
    void* workspace_acc = nullptr;
    const bool own_workspace = !is_root && c.rank_needs_workspace;
    carve_scratch(*state, c.schedule, cut, layout, own_workspace ? count : 0, b,
                  own_workspace ? &workspace_acc : nullptr);
    b.accumulator = is_root ? recvbuf : workspace_acc;
    return execute(c.schedule, cut, state->rank(), b, layout, op, state->comm(),
                   c.fusions_for(state->rank(), b.input_is_accumulator), state->executor_scratch());
  };
  return run_plan(*state, *plan, key, count, segments, comm, schedule, native);
}

int bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  Runtime& rt = runtime();
  auto native = [&] { return PMPI_Bcast(buffer, count, datatype, root, comm); };
  auto fallback = [&](FallbackReason why) {
    return run_native(planner::Collective::Bcast, comm, root, message_bytes(count, datatype), why, native);
  };
  if (!rt.active) return fallback(FallbackReason::Disabled);
  if (rt.always_native(planner::Collective::Bcast)) return fallback(FallbackReason::AlgorithmNative);
  CommState* state = nullptr;
  CachedPlan* plan = nullptr;
  const std::vector<planner::Segment>* segments = nullptr;
  PlanKey key{};
  std::int64_t bytes = 0;
  try {
    FallbackReason why = FallbackReason::InvalidArgument;
    state = CommState::of(comm, &why);
    if (!state) return fallback(why);
    if (count < 0 || root < 0 || root >= state->size()) return fallback(FallbackReason::InvalidArgument);
    int type_size = 0;
    // A type size of MPI_UNDEFINED (negative) means over 2 GiB per element.
    if (PMPI_Type_size(datatype, &type_size) != MPI_SUCCESS || type_size < 0)
      return fallback(FallbackReason::UnsupportedDatatype);
    // Ranks may describe the message with different datatypes of the same signature,
    // so the plan is made over bytes, which all ranks agree on.
    bytes = static_cast<std::int64_t>(count) * type_size;
    key = plan_key(rt, planner::Collective::Bcast, root, bytes, 1, true);
    plan = &plan_for(*state, key, bytes, &segments);
  } catch (const std::exception& e) {
    rt.log->warn("MPI_Bcast: {}; native MPI runs", e.what());
    return fallback(FallbackReason::InternalError);
  }
  auto schedule = [&](Candidate& c, const std::vector<planner::Segment>& cut) {
    DatatypeLayout bytes_layout;
    describe_datatype(MPI_BYTE, bytes_layout);
    DatatypeLayout mine;
    // Our own type decides only how this rank moves bytes in and out of its buffer.
    const bool direct = describe_datatype(datatype, mine) && mine.dense;
    ExecutionBuffers b;
    void* packed = nullptr;
    carve_scratch(*state, c.schedule, cut, bytes_layout, direct ? 0 : bytes, b, direct ? nullptr : &packed);
    b.accumulator = direct ? buffer : packed;
    const bool is_root = state->rank() == root;
    int err = MPI_SUCCESS;
    // (pack_elements / unpack_elements: MPI_Pack takes int sizes; bytes may exceed 2 GiB.)
    if (!direct && is_root && bytes > 0) err = pack_elements(buffer, count, datatype, packed, bytes, state->comm());
    const int run = execute(c.schedule, cut, state->rank(), b, bytes_layout, MPI_OP_NULL, state->comm(),
                            c.fusions_for(state->rank(), false), state->executor_scratch());
    if (err == MPI_SUCCESS) err = run;
    if (!direct && !is_root && bytes > 0 && err == MPI_SUCCESS)
      err = unpack_elements(packed, bytes, buffer, count, datatype, state->comm());
    return err;
  };
  return run_plan(*state, *plan, key, bytes, segments, comm, schedule, native);
}

}  // namespace canopy::shim
