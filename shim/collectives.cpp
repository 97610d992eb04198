#include "shim/collectives.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <new>

#include <spdlog/fmt/fmt.h>

#include "planner/fnv1a.h"
#include "shim/call_stats.h"
#include "shim/comm_state.h"
#include "shim/executor.h"
#include "shim/native_reduce.h"
#include "shim/runtime.h"
#include "shim/trace.h"

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
  // A receive spanning several segments (planner/schedule.h) packs them from its first
  // slot's start over the slots after it: a slot also holds `largest` elements at the
  // extent's stride, so that n slots hold any n segments packed.
  const std::size_t slot_bytes = round_up(std::max(layout.span(largest), largest * layout.extent));
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
// them into (null for native); `where` gets the plan's handle. A class's schedule that
// cannot be cut for this count (its segments would be empty) gives way to a plan for
// the exact count; every rank decides that alike, from the count.
CachedPlan& plan_for(CommState& state, PlanKey& key, std::int64_t count,
                     const std::vector<planner::Segment>** segments, CommState::PlanHandle* where) {
  CachedPlan* plan = &state.plan(key, count, where);
  Candidate* c = &plan->candidates[plan->current()];
  *segments = c->native ? nullptr : c->segments_for(count);
  if (!c->native && !*segments) {
    key.exact_count = count;
    plan = &state.plan(key, count, where);
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
  planner::Fnv1a h;
  for (std::uint64_t v : {static_cast<std::uint64_t>(key.collective), static_cast<std::uint64_t>(key.root),
                          static_cast<std::uint64_t>(count), static_cast<std::uint64_t>(key.element_bytes),
                          std::uint64_t{key.commutative ? 1u : 0u}, static_cast<std::uint64_t>(candidate_index),
                          c.native ? std::uint64_t{0} : c.fingerprint})
    h.word(v);
  return h.value();
}

// run_native's call where the report records calls and the record is to be found or
// the call timed (out of line: its frame and the record's lookup would slow every
// other native call down).
template <typename RunNative>
[[gnu::noinline]] int run_native_recorded(planner::Collective collective, MPI_Comm comm, int root, std::int64_t bytes,
                                          FallbackReason why, const RunNative& native, RecordCache* cache) {
  Runtime& rt = runtime();
  CallRecord* record = cache && cache->record && cache->bytes == bytes ? cache->record : nullptr;
  if (!record) {
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
    record = rt.stats.record(kind);
    if (cache) *cache = {record, bytes};
  }
  if (!record->time_next()) {
    record->count(rt.concurrent_calls());
    return native();
  }
  const double start = PMPI_Wtime();
  const int err = native();
  record->add(PMPI_Wtime() - start);
  return err;
}

// Runs a call natively for `why`: counted, and with CANOPY_TIMING or CANOPY_REPORT
// also timed and recorded under its kind of call and reason. `cache`, when given,
// keeps the record found on the first call for the next ones. (`native` by reference:
// copied, a lambda's captures went through the stack on every call.)
template <typename RunNative>
inline int run_native(planner::Collective collective, MPI_Comm comm, int root, std::int64_t bytes, FallbackReason why,
                      const RunNative& native, RecordCache* cache = nullptr) {
  Runtime& rt = runtime();
  rt.count_fallback(collective, why);
  if (!rt.stats.enabled()) return native();
  if (cache && cache->record && cache->bytes == bytes && !cache->record->time_next()) {
    cache->record->count(rt.concurrent_calls());  // most calls of a kind: counted, not timed
    return native();
  }
  return run_native_recorded(collective, comm, root, bytes, why, native, cache);
}

// Message bytes of `count` elements of `datatype`, or -1 when MPI cannot say.
std::int64_t message_bytes(int count, MPI_Datatype datatype) {
  int size = 0;
  if (count < 0 || datatype == MPI_DATATYPE_NULL || PMPI_Type_size(datatype, &size) != MPI_SUCCESS || size < 0)
    return -1;
  return static_cast<std::int64_t>(count) * size;
}

// run_native for a call whose size Canopy has not worked out (it goes to native MPI
// before any lookup): the size only feeds the report's records, so MPI is asked for it
// only where the report records calls.
template <typename RunNative>
int run_native_unsized(planner::Collective collective, MPI_Comm comm, int root, int count, MPI_Datatype type,
                       FallbackReason why, const RunNative& native) {
  const std::int64_t bytes = runtime().stats.enabled() ? message_bytes(count, type) : -1;
  return run_native(collective, comm, root, bytes, why, native);
}

// Whether the last call of each collective left its plan trialling, so that the next
// call of it is timed from its start (run_call): a trial measures what a schedule's call
// costs the program, the lookups before it included, and a decided call pays no clock.
// Decision: trials timed a schedule from where it began to run and native MPI around
// its own call, and a schedule's lookups went unmeasured (2 ranks, Open MPI 4.1.4, 8 B
// allreduces with a barrier after each: shm-recursive-doubling measured 233-244 ns in
// trials against native's 356-401 and won, then ran at 340-400 ns a call, medians over
// 20,000, against 260-350 for Open MPI's own in the same processes). Native MPI is still
// timed around its own call alone: once decided, it runs through the shortcut, with
// none of those lookups. A flag per collective, not per plan: the plan is known only
// after the lookups it times. Where calls of several plans interleave, one that follows
// a decided plan's call is timed from where it runs, as before.
std::atomic<bool> timing_lookups[planner::kCollectives];

// Where native MPI was decided, the next call with the same arguments goes straight to
// it: one comparison of the arguments and a counter instead of the communicator's
// attribute, the datatype, the plan key and the cache lookup (the bound for
// interception where native stays: 10 ns a call on one rank). It stands for exactly the
// lookup it skips: the same plan (the arguments and nothing freed or evicted since:
// CommState::generation), touched in the cache as a hit would be, and run for the same
// reason. Native MPI's calls in trials (its first calls, its batches) take it too, timed
// and recorded as run_plan would, so that native is measured as it runs once decided.
// Decision: through the lookups native MPI's calls measured 350-530 ns in trials, 420
// typical, where the same processes' own MPI_Allreduce took 311 (2 ranks, Open MPI
// 4.1.4, 8 B, median; the lookups before a call slow the call itself down on this VM),
// and the ring's schedule won at 378 against 444 and ran 0.78x native after. Only for
// predefined datatypes and operations (a user's handle could be freed and reused for
// another type), without CANOPY_VERIFY (its agreement runs every call), and below
// MPI_THREAD_MULTIPLE (the shortcuts are the process's, not a thread's).
struct alignas(64) NativeShortcut {
  // What a call is matched on and what a quiet call reads and writes first, in one cache
  // line (quiet calls below).
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Op op = MPI_OP_NULL;
  int count = -1;
  int root = -1;
  std::uint64_t generation = 0;
  FallbackReason why = FallbackReason::AutoChoseNative;
  // Quiet calls: those this shortcut may still run with nothing but native MPI's call and
  // a count here (0: every call does the bookkeeping), and those it ran since its counts
  // were last handed on (flush_quiet_calls).
  long quiet_left = 0;
  long quiet_calls = 0;
  CommState* state = nullptr;
  CommState::PlanHandle where;
  std::int64_t bytes = 0;
  double cheap_price = 0;  // CachedPlan::cheap_price, where why is AutoBelowThreshold
  RecordCache* stats = nullptr;

  bool matches(MPI_Comm c, MPI_Datatype t, MPI_Op o, int n, int r) const {
    return comm == c && count == n && type == t && op == o && root == r && generation == CommState::generation();
  }
};
void flush_quiet_calls(NativeShortcut& s);  // below, with the quiet calls

// The shortcuts of one collective: several, so that calls that alternate between roots
// (a root per rank in turn) or communicators each keep theirs; with one, 2 ranks
// alternating roots paid the whole lookup on every call, 0.1-0.3 us on a 0.3-0.5 us
// native call. The entry that matched last is tried first (one comparison while the
// arguments repeat, as with one entry); a miss scans the rest.
struct NativeShortcuts {
  static constexpr int kEntries = 16;
  int last = 0;        // the entry that matched or was written last
  int next = 0;        // the entry a new communicator and root overwrite
  bool quiet = false;  // an entry may hold quiet calls not yet handed on
  NativeShortcut entries[kEntries];

  NativeShortcut* find(MPI_Comm c, MPI_Datatype t, MPI_Op o, int n, int r) {
    if (entries[last].matches(c, t, o, n, r)) return &entries[last];
    for (int i = 0; i < kEntries; ++i)
      if (entries[i].matches(c, t, o, n, r)) return &entries[last = i];
    return nullptr;
  }
  // The entry for `c` at root `r`: the one it has (whatever its other arguments), else
  // the oldest written. Its quiet calls are handed on first.
  NativeShortcut& slot(MPI_Comm c, int r) {
    int i = 0;
    while (i < kEntries && !(entries[i].comm == c && entries[i].root == r)) ++i;
    if (i < kEntries) {
      last = i;
    } else {
      last = next;
      next = (next + 1) % kEntries;
    }
    flush_quiet_calls(entries[last]);
    return entries[last];
  }
  // No entry for `c` at root `r` (its quiet calls handed on).
  void forget(MPI_Comm c, int r) {
    for (NativeShortcut& e : entries)
      if (e.comm == c && e.root == r) {
        flush_quiet_calls(e);
        e.comm = MPI_COMM_NULL;
        e.quiet_left = 0;
      }
  }
};
NativeShortcuts shortcuts[planner::kCollectives];  // by planner::Collective

bool predefined_type(MPI_Datatype type) {
  int integers = 0, addresses = 0, types = 0, combiner = 0;
  return PMPI_Type_get_envelope(type, &integers, &addresses, &types, &combiner) == MPI_SUCCESS &&
         combiner == MPI_COMBINER_NAMED;
}

bool predefined_op(MPI_Op op) {
  for (MPI_Op o : {MPI_MAX, MPI_MIN, MPI_SUM, MPI_PROD, MPI_LAND, MPI_BAND, MPI_LOR, MPI_BOR, MPI_LXOR, MPI_BXOR,
                   MPI_MINLOC, MPI_MAXLOC, MPI_REPLACE, MPI_NO_OP})
    if (op == o) return true;
  return op == MPI_OP_NULL;  // a broadcast has none
}

// The operations MPI_Reduce and MPI_Allreduce define (not MPI_REPLACE and MPI_NO_OP,
// which only one-sided calls take).
bool predefined_reduction_op(MPI_Op op) {
  for (MPI_Op o : {MPI_SUM, MPI_MAX, MPI_MIN, MPI_PROD, MPI_LAND, MPI_BAND, MPI_LOR, MPI_BOR, MPI_LXOR, MPI_BXOR,
                   MPI_MINLOC, MPI_MAXLOC})
    if (op == o) return true;
  return false;
}

NativeShortcuts& shortcuts_of(planner::Collective collective) { return shortcuts[static_cast<int>(collective)]; }

// After a call its plan ran natively for being cheap (CANOPY_AUTO_NATIVE_BELOW), its
// plan's calls counted: counts it towards the plan's warm native calls and towards
// CANOPY_RING_AFTER. True where the plan goes at the next lookup (no shortcut to it).
// Only where such calls are trialled through the ring (CommState::ring_trials_cheap says
// which): other cheap calls stay native, so they neither wait for the ring nor make it.
bool after_cheap_native(CommState& state, CommState::PlanHandle where, double price) {
  if (!state.ring_trials_cheap(where->first.collective, price)) return false;
  const bool warmed = where->second->calls == CommState::kWarmNativeCalls && state.native_warmed(where);
  const bool ring = state.after_cheap_call(price);
  return warmed || ring;
}

// Quiet calls. A shortcut whose plan has decided on native MPI for good (kept native for
// being cheap, where such calls are not trialled through the ring; or native chosen by
// the trials, until its recheck is due) does nothing on most calls but count them: the
// plan's calls, the cache hit, the fallback reason, a decided call towards the recheck.
// Those counts now wait in the entry (quiet_calls) and are handed on together
// (flush_quiet_calls) before anything reads them: before any other path through the
// shim (run_call), before the entry is reused or forgotten, before a plan leaves a cache,
// a state is freed or the generation changes for another reason (each of those places
// calls flush_native_shortcuts first, so an entry with quiet calls always points at a
// live state and plan), and before the report, the schedule log and the counters the
// API exports are read (MPI_Finalize, shim/wrappers.cpp).
// Decision: the bookkeeping of a native call through the shortcut read and wrote five
// or six cache lines besides the entry's (the plan, the state's cache list and hit
// counter, the runtime's fallback counter and switches), and in OSU's loop, whose MPI
// calls and barrier evict them between calls, the misses cost more than the work: a
// throwaway build that skipped the bookkeeping cost 4-9 ns a call over MPI's own where
// the whole path cost 11-24. Measured in one process (canopy-bench --osu --paired), 2
// ranks, medians of 4 runs, ns a call more than MPI's own, before / after (with the
// runtime's switches moved into one line, shim/runtime.h): MPICH 4.0.2 reduce 8 B 39 / 7
// (0.92x / 0.98x), 1 KiB 45 / 10; Open MPI 4.1.4 reduce 8 B 29 / 15 (0.88x / 0.93x),
// bcast 8 B 17 / 9 (0.91x / 0.95x). (Not with the report's records on: those count and
// time calls of their own, CANOPY_REPORT/_TIMING.)

// Hands on `s`'s quiet calls: to the fallback counter, the plan cache's hits and the
// plan (its calls, and a decided choice's calls towards its recheck). The entry's plan
// is the current generation's: every change of generation flushes first.
void flush_quiet_calls(NativeShortcut& s) {
  if (s.quiet_calls == 0) return;
  const long n = s.quiet_calls;
  s.quiet_calls = 0;
  runtime().fallback_reasons.add(s.where->first.collective, s.why, n);
  s.state->touch(s.where, n);
  CachedPlan& plan = *s.where->second;
  plan.calls += n;
  if (s.why == FallbackReason::AutoChoseNative) plan.trials.count_decided_calls(n);
}

// Makes `s` quiet where its plan allows (see above): how many calls may run quietly. A
// quiet call is not counted as it runs, so the reason's first call is said here
// (FallbackCounters logs each reason once).
void arm_quiet(planner::Collective collective, NativeShortcut& s) {
  Runtime& rt = runtime();
  s.quiet_left = 0;
  if (rt.stats.enabled() || trace::on()) return;
  const CachedPlan& plan = *s.where->second;
  if (s.why == FallbackReason::AutoBelowThreshold && !s.state->ring_trials_cheap(collective, s.cheap_price)) {
    s.quiet_left = std::numeric_limits<long>::max();
  } else if (s.why == FallbackReason::AutoChoseNative) {
    // Up to the call before the recheck, which takes the whole path (count_decided_call).
    const long until = plan.trials.calls_until_recheck();
    s.quiet_left = until < 0 ? std::numeric_limits<long>::max() : std::max(0L, until - 1);
  }
  if (s.quiet_left > 0) rt.fallback_reasons.say(collective, s.why);
}

// Every shortcut's quiet calls handed on (see above).
void flush_all_quiet_calls() {
  for (int c = 0; c < planner::kCollectives; ++c) {
    NativeShortcuts& all = shortcuts[c];
    if (!all.quiet) continue;
    all.quiet = false;
    for (NativeShortcut& e : all.entries) flush_quiet_calls(e);
  }
}

// After a call: where its plan has decided on native, the shortcut for its arguments
// (none where the plan, kept native for being cheap, is to be made again).
void remember_native(planner::Collective collective, CommState& state, CachedPlan& plan, CommState::PlanHandle where,
                     MPI_Comm comm, MPI_Datatype type, MPI_Op op, int count, int root, std::int64_t bytes) {
  const Runtime& rt = runtime();
  if (plan.native_why == FallbackReason::AutoBelowThreshold && after_cheap_native(state, where, plan.cheap_price))
    return;
  if (!plan.candidates[plan.current()].native || rt.concurrent_calls() || rt.settings.verify ||
      !predefined_type(type) || !predefined_op(op) || (plan.trialling() && trace::on())) {
    shortcuts_of(collective).forget(comm, root);  // not for this communicator's next call at this root
    return;
  }
  NativeShortcut& s = shortcuts_of(collective).slot(comm, root);
  Candidate& c = plan.candidates[plan.current()];
  s.why = plan.trialling() && plan.trials.native_first() ? FallbackReason::AutoNativeFirst
          : plan.trialling()                               ? FallbackReason::AutoTrialNative
          : plan.candidates.size() > 1                     ? FallbackReason::AutoChoseNative
                                                           : plan.native_why;
  s.comm = comm;
  s.type = type;
  s.op = op;
  s.count = count;
  s.root = root;
  s.generation = CommState::generation();
  s.state = &state;
  s.where = where;
  s.bytes = bytes;
  s.cheap_price = plan.cheap_price;
  s.stats = &c.native_stats[static_cast<int>(s.why)];
  arm_quiet(collective, s);
}

// A call through shortcut `s` (its arguments matched): what the lookup it skips would
// have done, a native call for the same plan and reason, counted as that plan's.
template <typename RunNative>
int run_shortcut(planner::Collective collective, NativeShortcut& s, MPI_Comm comm, int root,
                 const RunNative& native) {
  if (s.quiet_left > 0) {
    --s.quiet_left;
    ++s.quiet_calls;
    shortcuts_of(collective).quiet = true;
    return native();
  }
  flush_quiet_calls(s);
  s.state->touch(s.where);
  if (s.why == FallbackReason::AutoNativeFirst && s.where->second->trials.count_quiet_call()) {
    // One of native's first calls that is neither timed nor the end of a round: counted.
    ++s.where->second->calls;
    return run_native(collective, comm, root, s.bytes, s.why, native, s.stats);
  }
  if (s.why == FallbackReason::AutoNativeFirst || s.why == FallbackReason::AutoTrialNative) {
    // Native MPI's call in a trial: timed and recorded as run_plan does. Once the trial
    // moves on (another candidate, native's first calls over, a decision), the next call
    // looks its plan up again.
    // Native's first calls of a cheap class are timed one in several (Trials::times_next).
    CachedPlan& plan = *s.where->second;
    const bool timed = plan.trials.times_next();
    const double start = timed ? PMPI_Wtime() : 0;
    const int err = run_native(collective, comm, root, s.bytes, s.why, native, s.stats);
    if (timed) s.state->finish_call(plan, s.where->first, PMPI_Wtime() - start, false);
    else s.state->finish_untimed_call(plan, s.where->first);
    ++plan.calls;
    const bool still = plan.trialling() && plan.candidates[plan.current()].native &&
                       plan.trials.native_first() == (s.why == FallbackReason::AutoNativeFirst);
    timing_lookups[static_cast<int>(collective)].store(plan.trialling(), std::memory_order_relaxed);
    if (!still) shortcuts_of(collective).forget(comm, root);
    return err;
  }
  const int err = run_native(collective, comm, root, s.bytes, s.why, native, s.stats);
  // (Where the plan is to be made again, the generation changes: no shortcut stands.)
  if (s.why == FallbackReason::AutoBelowThreshold) {
    ++s.where->second->calls;  // as run_plan counts them
    after_cheap_native(*s.state, s.where, s.cheap_price);
  } else if (s.why == FallbackReason::AutoChoseNative && s.state->count_decided_call(*s.where->second, s.where->first)) {
    // Native's choice is due a recheck (counted as run_plan counts it): the next call trials.
    shortcuts_of(collective).forget(comm, root);
  }
  return err;
}

// The record `c`'s calls of `bytes` are counted in (CANOPY_TIMING/_REPORT): found when
// the size changes, kept while it repeats.
CallRecord* record_of(Candidate& c, const PlanKey& key, int comm_size, std::int64_t bytes) {
  if (c.stats.record && c.stats.bytes == bytes) return c.stats.record;
  CallKind kind;
  kind.collective = key.collective;
  kind.comm_size = comm_size;
  kind.root = key.root;
  kind.bytes = bytes;
  kind.algorithm = c.name();
  kind.segments = static_cast<int>(c.schedule.segments.size());
  kind.predicted = c.predicted;
  kind.schedule_id = c.schedule_id;
  c.stats = {runtime().stats.record(kind), bytes};
  return c.stats.record;
}

// Runs one call of `count` elements with `plan`'s current candidate, cut into
// `segments`, timing it while trials last (a schedule from `entered`, the call's start,
// where that is not 0). `schedule` runs a Canopy schedule and returns the MPI error
// code; `native` calls the PMPI collective.
template <typename RunSchedule, typename RunNative>
int run_plan(CommState& state, CachedPlan& plan, const PlanKey& key, std::int64_t count,
             const std::vector<planner::Segment>* segments, MPI_Comm comm, double entered, RunSchedule schedule,
             const RunNative& native) {
  Runtime& rt = runtime();
  Candidate& candidate = plan.candidates[plan.current()];
  const std::int64_t bytes = count * key.element_bytes;
  // Canopy's own messages (a schedule, a trial's agreement, CANOPY_VERIFY's, a learning
  // sample's, which only schedules take) go over its private duplicate, made here on
  // the first call that needs it: the same call on every rank, as every condition here is.
  const bool own_messages = !candidate.native || plan.trialling() || rt.settings.verify;
  if (own_messages && !state.private_ready())
    return run_native(key.collective, comm, key.root, bytes, FallbackReason::StateFailed, native);
  if (rt.settings.verify && !state.agree(call_fingerprint(key, count, plan.current(), candidate))) {
    // An erroneous program: running either plan would hang or corrupt memory. Every
    // rank sees the mismatch (agree() is collective), so every rank returns the error.
    const bool bytes_only = key.collective == planner::Collective::Bcast;
    rt.log->error("{} on a communicator of {} ranks: the ranks passed different arguments (this rank: root {}, "
                  "{}); CANOPY_VERIFY returns MPI_ERR_ARG on every rank",
                  planner::mpi_function_name(key.collective), state.size(), key.root,
                  bytes_only ? fmt::format("{} bytes", count)
                             : fmt::format("{} elements of {} bytes", count, key.element_bytes));
    const int err = verify_error_code();
    PMPI_Comm_call_errhandler(comm, err);
    return err;
  }
  // A staged schedule needs the node's ring (made here on first use, on every rank at
  // the same call) and every segment of this count within an entry; the answer is the
  // same on every rank.
  // Otherwise native MPI stands in for it (timed as its trial, if it is in one).
  bool without_ring = false;
  const StagingRing* ring = nullptr;
  if (!candidate.native && candidate.schedule.uses_staging()) {
    // (Every plan of a communicator asks for the same entries: with_staging_ring.)
    const int entries = candidate.schedule.staging_entries;
    const std::int64_t entry_bytes = candidate.schedule.staging_entry_bytes;
    // (A direct schedule stages nothing: its segments need not fit an entry.)
    const bool direct = candidate.schedule.uses_direct();
    bool fits = true;
    for (const planner::Segment& s : *segments) fits = fits && (direct || s.count * key.element_bytes <= entry_bytes);
    ring = fits ? state.staging_ring(entries, entry_bytes) : nullptr;
    without_ring = !ring || ring->entries() != entries || ring->entry_bytes() != entry_bytes ||
                   (direct && !ring->direct());
  }
  const bool trial = plan.trialling();
  // (Native's first calls of a cheap class are timed one in several: Trials::times_next.)
  const bool trial_timed = trial && plan.trials.times_next();
  CallRecord* record = rt.stats.enabled() && !candidate.native ? record_of(candidate, key, state.size(), bytes) : nullptr;
  const bool sampled = record && record->time_next();
  if (record && !sampled) record->count(rt.concurrent_calls());
  // CANOPY_LEARN: a few decided calls are timed and agreed on, for the model to learn.
  const bool learn_sample = !candidate.native && state.learning() && plan.sample_due();
  const bool timed = trial_timed || sampled || learn_sample;
  if (learn_sample) state.align_for_sample();
  const double start = !timed ? 0 : trial && !candidate.native && entered > 0 ? entered : PMPI_Wtime();
  // CANOPY_TRACE: a sampled call (the same calls on every rank) is recorded step by step.
  const bool traced = trace::on() && trace::sampled(plan.calls);
  if (traced)
    trace::begin_call(key.collective, key.root, bytes, candidate.name(), candidate.native || without_ring,
                      candidate.schedule_id, {&state.world_ranks(), state.trace_id(), state.rank()},
                      state.next_trace_serial());
  int err = MPI_SUCCESS;
  if (candidate.native) {
    const FallbackReason why = trial && plan.trials.native_first() ? FallbackReason::AutoNativeFirst
                               : trial                        ? FallbackReason::AutoTrialNative
                               : plan.candidates.size() > 1 ? FallbackReason::AutoChoseNative
                                                            : plan.native_why;
    err = run_native(key.collective, comm, key.root, bytes, why, native,
                     &candidate.native_stats[static_cast<int>(why)]);
  } else if (without_ring) {
    err = run_native(key.collective, comm, key.root, bytes, FallbackReason::NoStagingRing, native);
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
  if (traced) trace::end_call();
  if (timed) {
    const double seconds = PMPI_Wtime() - start;
    if (sampled) record->add(seconds);
    // (A ring's first passes pay for its pages once: not what a trial measures.)
    if (trial_timed) state.finish_call(plan, key, seconds, !without_ring && ring && ring->touched_new_entries());
    if (learn_sample) state.sample_call(candidate, seconds);
  }
  if (trial && !trial_timed) state.finish_untimed_call(plan, key);
  ++plan.calls;
  // A decided plan's calls count towards the recheck of its choice (planner/trials.h);
  // every rank makes this call of the plan, here or through a shortcut, so every rank
  // begins the recheck at the same call.
  if (!trial) state.count_decided_call(plan, key);
  timing_lookups[static_cast<int>(key.collective)].store(plan.trialling(), std::memory_order_relaxed);
  return err;
}

// One intercepted call, whatever its collective: what the one path through the shim
// (run_call) needs to know of it besides how it plans and runs.
struct CallArgs {
  planner::Collective collective;
  MPI_Comm comm;
  MPI_Datatype type;
  MPI_Op op;  // MPI_OP_NULL for a broadcast
  int count;
  int root;  // 0 for a root-less collective (allreduce): its schedules reduce to rank 0
};

// Whether the collective has a root the caller names (checked against the size).
bool has_root(planner::Collective c) { return c != planner::Collective::Allreduce; }

// The first step of the one path: where the runtime's switches say native MPI (Canopy
// off, CANOPY_*_ALGO=native) or a native shortcut stands for the call's arguments,
// native MPI runs at once (true, its error code in `err`), before the wrapper sets up
// anything the rest of the path needs (a reduction's layout, the plan key's lambdas,
// run_call's frame). Decision: with the shortcut tried in run_call, a one-rank 8 B
// MPI_Reduce that auto keeps native took 40 ns with Canopy against Open MPI's 13.5
// (4.1.4, a loop of 2,000,000 calls); perf put the 27 ns in the wrapper's set-up, the
// calls to runtime() and the shortcut's bookkeeping, and a shortcut checked first that
// only called MPI cost 0.5 ns. Section 16 of docs/performance-history.md has what each
// change saved.
template <typename RunNative>
inline bool ran_natively_at_once(planner::Collective collective, MPI_Comm comm, MPI_Datatype type, MPI_Op op,
                                 int count, int root, const RunNative& native, int& err) {
  const Runtime& rt = runtime();
  // (After MPI_Finalize's tear-down Canopy is off, and the shortcuts' states are gone.)
  if (!rt.active || rt.always_native(collective)) {
    err = run_native_unsized(collective, comm, root, count, type,
                             rt.active ? FallbackReason::AlgorithmNative : FallbackReason::Disabled, native);
    return true;
  }
  NativeShortcut* s = shortcuts_of(collective).find(comm, type, op, count, root);
  if (!s) return false;
  err = run_shortcut(collective, *s, comm, root, native);
  return true;
}

// The one path of every intercepted collective past its first step
// (ran_natively_at_once, which the wrapper takes first): the communicator's state, the
// call's plan key (`describe` fills it, and whatever the schedule needs to lay out
// buffers, or names why native MPI runs), the plan, and then run_plan with `schedule`
// or `native`. A new collective is a CallArgs, a describe and a schedule, not a copy of
// this function.
template <typename Describe, typename RunSchedule, typename RunNative>
int run_call(const CallArgs& call, Describe describe, RunSchedule schedule, const RunNative& native) {
  flush_all_quiet_calls();  // what the lookups, trials and counts below read
  Runtime& rt = runtime();
  const planner::Collective collective = call.collective;
  auto fallback = [&](FallbackReason why) {
    return run_native_unsized(collective, call.comm, call.root, call.count, call.type, why, native);
  };
  const double entered =
      timing_lookups[static_cast<int>(collective)].load(std::memory_order_relaxed) ? PMPI_Wtime() : 0;
  CommState* state = nullptr;
  CachedPlan* plan = nullptr;
  CommState::PlanHandle where;
  const std::vector<planner::Segment>* segments = nullptr;
  PlanKey key{};
  std::int64_t units = 0;  // what the plan counts: elements, or a broadcast's bytes
  try {
    FallbackReason why = FallbackReason::InvalidArgument;
    state = CommState::of(call.comm, &why);
    if (!state) return fallback(why);
    // MPI's own checks and error reporting apply.
    if (call.count < 0 || (has_root(collective) && (call.root < 0 || call.root >= state->size())))
      return fallback(FallbackReason::InvalidArgument);
    std::int64_t element_bytes = 0;
    bool commutative = true;
    if (!describe(units, element_bytes, commutative, why)) return fallback(why);
    key = plan_key(rt, collective, call.root, units, element_bytes, commutative);
    plan = &plan_for(*state, key, units, &segments, &where);
  } catch (const std::exception& e) {
    // Planning throws before any message: native is safe.
    rt.log->warn("{}: {}; native MPI runs", planner::mpi_function_name(collective), e.what());
    return fallback(FallbackReason::InternalError);
  }
  auto run = [&](Candidate& c, const std::vector<planner::Segment>& cut) { return schedule(*state, c, cut); };
  const int err = run_plan(*state, *plan, key, units, segments, call.comm, entered, run, native);
  remember_native(collective, *state, *plan, where, call.comm, call.type, call.op, call.count, call.root,
                  units * key.element_bytes);
  return err;
}

// A reduction's call (MPI_Reduce, MPI_Allreduce) is planned over its elements: the
// datatype's layout and the operation's commutativity. False, with the reason, where
// Canopy cannot lay the datatype out or MPI cannot say whether the op commutes.
bool describe_reduction(MPI_Datatype datatype, MPI_Op op, int count, DatatypeLayout& layout, std::int64_t& units,
                        std::int64_t& element_bytes, bool& commutative, FallbackReason& why) {
  if (!describe_datatype(datatype, layout)) {
    why = FallbackReason::UnsupportedDatatype;
    return false;
  }
  // MPI assumes every predefined reduction operation commutative (the standard's
  // MPI_REDUCE): no need to ask MPI on every call (20-30 ns, Open MPI).
  int commutes = 1;
  if (!predefined_reduction_op(op) && PMPI_Op_commutative(op, &commutes) != MPI_SUCCESS) {
    why = FallbackReason::OpQueryFailed;
    return false;
  }
  units = count;
  element_bytes = layout.size;
  commutative = commutes != 0;
  return true;
}

// The native MPI call of each collective, for run_call and the shortcut alike.
int native_reduction(planner::Collective collective, const void* sendbuf, void* recvbuf, int count,
                     MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm) {
  if (collective == planner::Collective::Allreduce)
    return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
  return native_reduce(sendbuf, recvbuf, count, datatype, op, root, comm, runtime().copy_in_place_at_nonzero_root);
}

// MPI_Reduce and MPI_Allreduce past the shortcut (the wrappers below try it first): the
// same buffers but for whose accumulator is the receive buffer (the root's, or every
// rank's) and who may pass MPI_IN_PLACE. A rank of a reduce that is not the root builds
// partial results in a workspace of its own. Not inlined into the wrappers: its frame
// and set-up are what the shortcut saves.
[[gnu::noinline]] int reduction(planner::Collective collective, const void* sendbuf, void* recvbuf, int count,
                                MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm) {
  const bool all = collective == planner::Collective::Allreduce;
  auto native = [&] { return native_reduction(collective, sendbuf, recvbuf, count, datatype, op, root, comm); };
  DatatypeLayout layout;
  auto describe = [&](std::int64_t& units, std::int64_t& element_bytes, bool& commutative, FallbackReason& why) {
    return describe_reduction(datatype, op, count, layout, units, element_bytes, commutative, why);
  };
  auto schedule = [&](CommState& state, Candidate& c, const std::vector<planner::Segment>& cut) {
    const bool owns_result = all || state.rank() == root;  // its accumulator is its receive buffer
    ExecutionBuffers b;
    b.input_is_accumulator = owns_result && sendbuf == MPI_IN_PLACE;
    b.input = b.input_is_accumulator ? recvbuf : sendbuf;
    void* workspace_acc = nullptr;
    const bool own_workspace = !owns_result && c.rank_needs_workspace;
    carve_scratch(state, c.schedule, cut, layout, own_workspace ? count : 0, b,
                  own_workspace ? &workspace_acc : nullptr);
    b.accumulator = owns_result ? recvbuf : workspace_acc;
    b.ring = state.staging_if_made();  // run_plan made it for a staged schedule
    return execute(c.schedule, cut, state.rank(), b, layout, op, state.comm(),
                   c.fusions_for(state.rank(), b.input_is_accumulator), state.executor_scratch());
  };
  return run_call({collective, comm, datatype, op, count, all ? 0 : root}, describe, schedule, native);
}

// MPI_Bcast past the shortcut (as reduction).
[[gnu::noinline]] int broadcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  Runtime& rt = runtime();
  auto native = [&] { return PMPI_Bcast(buffer, count, datatype, root, comm); };
  std::int64_t bytes = 0;
  auto describe = [&](std::int64_t& units, std::int64_t& element_bytes, bool& commutative, FallbackReason& why) {
    int type_size = 0;
    // A type size of MPI_UNDEFINED (negative) means over 2 GiB per element.
    if (PMPI_Type_size(datatype, &type_size) != MPI_SUCCESS || type_size < 0) {
      why = FallbackReason::UnsupportedDatatype;
      return false;
    }
    // Ranks may describe the message with different datatypes of the same signature,
    // so the plan is made over bytes, which all ranks agree on.
    bytes = static_cast<std::int64_t>(count) * type_size;
    units = bytes;
    element_bytes = 1;
    commutative = true;
    return true;
  };
  auto schedule = [&](CommState& state, Candidate& c, const std::vector<planner::Segment>& cut) {
    DatatypeLayout bytes_layout;
    describe_datatype(MPI_BYTE, bytes_layout);
    DatatypeLayout mine;
    // Our own type decides only how this rank moves bytes in and out of its buffer.
    const bool direct = describe_datatype(datatype, mine) && mine.dense;
    ExecutionBuffers b;
    void* packed = nullptr;
    carve_scratch(state, c.schedule, cut, bytes_layout, direct ? 0 : bytes, b, direct ? nullptr : &packed);
    b.accumulator = direct ? buffer : packed;
    b.ring = state.staging_if_made();  // run_plan made it for a staged schedule
    const bool is_root = state.rank() == root;
    int err = MPI_SUCCESS;
    // (pack_elements / unpack_elements: MPI_Pack takes int sizes; bytes may exceed 2 GiB.)
    if (!direct && is_root && bytes > 0) err = pack_elements(buffer, count, datatype, packed, bytes, state.comm());
    const int run = execute(c.schedule, cut, state.rank(), b, bytes_layout, MPI_OP_NULL, state.comm(),
                            c.fusions_for(state.rank(), false), state.executor_scratch());
    if (err == MPI_SUCCESS) err = run;
    if (const std::string& failed = state.executor_scratch().direct_error; !failed.empty())
      rt.log->error("MPI_Bcast ({}): {}; the call fails with MPI_ERR_OTHER", c.name(), failed);
    if (!direct && !is_root && bytes > 0 && err == MPI_SUCCESS)
      err = unpack_elements(packed, bytes, buffer, count, datatype, state.comm());
    return err;
  };
  return run_call({planner::Collective::Bcast, comm, datatype, MPI_OP_NULL, count, root}, describe, schedule, native);
}

}  // namespace

void flush_native_shortcuts() { flush_all_quiet_calls(); }

int reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm) {
  constexpr planner::Collective kReduce = planner::Collective::Reduce;
  auto native = [&] { return native_reduction(kReduce, sendbuf, recvbuf, count, datatype, op, root, comm); };
  if (int err = MPI_SUCCESS; ran_natively_at_once(kReduce, comm, datatype, op, count, root, native, err)) return err;
  return reduction(kReduce, sendbuf, recvbuf, count, datatype, op, root, comm);
}

int allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  constexpr planner::Collective kAllreduce = planner::Collective::Allreduce;
  auto native = [&] { return native_reduction(kAllreduce, sendbuf, recvbuf, count, datatype, op, 0, comm); };
  if (int err = MPI_SUCCESS; ran_natively_at_once(kAllreduce, comm, datatype, op, count, 0, native, err)) return err;
  return reduction(kAllreduce, sendbuf, recvbuf, count, datatype, op, 0, comm);
}

int bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  constexpr planner::Collective kBcast = planner::Collective::Bcast;
  auto native = [&] { return PMPI_Bcast(buffer, count, datatype, root, comm); };
  if (int err = MPI_SUCCESS; ran_natively_at_once(kBcast, comm, datatype, MPI_OP_NULL, count, root, native, err))
    return err;
  return broadcast(buffer, count, datatype, root, comm);
}

}  // namespace canopy::shim
