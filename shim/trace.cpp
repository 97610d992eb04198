#include "shim/trace.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <tuple>

#include <nlohmann/json.hpp>

#include "shim/platform.h"

namespace canopy::shim::trace {

namespace {

// A rank keeps at most this many steps (about 40 MB); past it, calls are still noted
// but their steps are not, and the file says how many were left out. Fewer where rank 0
// would gather more than MPI_Gatherv's int byte counts hold: each rank keeps at most its
// share of 2 GiB of steps and as much of calls (State::step_cap, call_cap).
constexpr std::size_t kMaxSteps = std::size_t{1} << 20;
// Ping-pongs per rank for its clock offset: the one with the shortest round trip counts.
constexpr int kOffsetRounds = 8;
constexpr int kOffsetTag = 7001;

struct State {
  long first = 8, every = 64;
  double offset = 0;  // add to this rank's now() for rank 0's clock
  std::vector<Call> calls;
  std::vector<Step> steps;
  std::size_t step_cap = kMaxSteps, call_cap = 0;  // set by setup()
  std::int64_t dropped = 0;  // steps and calls left out (the caps)
  bool in_call = false;
  const std::vector<int>* world_ranks = nullptr;
  Recorder recorder;
};

State& state() {
  static State s;
  return s;
}

}  // namespace

const char* name(Kind k) {
  switch (k) {
    case Kind::Send: return "send";
    case Kind::Recv: return "receive";
    case Kind::Reduce: return "reduce";
    case Kind::Copy: return "copy";
    case Kind::Stage: return "stage";
    case Kind::Fetch: return "fetch";
    case Kind::FetchReduce: return "fetch-reduce";
    case Kind::Expose: return "expose";
    case Kind::Read: return "read";
    case Kind::Write: return "write";
    case Kind::Wait: return "wait";
  }
  return "?";
}

Kind kind_of(planner::StepKind k) {
  switch (k) {
    case planner::StepKind::Send: return Kind::Send;
    case planner::StepKind::Recv: return Kind::Recv;
    case planner::StepKind::Reduce: return Kind::Reduce;
    case planner::StepKind::Copy: return Kind::Copy;
    case planner::StepKind::Stage: return Kind::Stage;
    case planner::StepKind::Fetch: return Kind::Fetch;
    case planner::StepKind::FetchReduce: return Kind::FetchReduce;
    case planner::StepKind::Expose: return Kind::Expose;
    case planner::StepKind::Read: return Kind::Read;
    case planner::StepKind::Write: return Kind::Write;
  }
  return Kind::Wait;
}

namespace detail {
bool enabled = false;
}

bool sampled(long plan_call) {
  const State& s = state();
  if (plan_call < s.first) return true;
  return s.every > 0 && (plan_call - s.first) % s.every == s.every - 1;
}

void setup(MPI_Comm world, long first, long every, bool shares_rank0_clock) {
  State& s = state();
  s.first = first;
  s.every = every;
  int rank = 0, size = 1;
  PMPI_Comm_rank(world, &rank);
  PMPI_Comm_size(world, &size);
  const std::size_t share = static_cast<std::size_t>(std::numeric_limits<int>::max()) / static_cast<std::size_t>(size);
  s.step_cap = std::min(kMaxSteps, share / sizeof(Step));
  s.call_cap = share / sizeof(Call);
  // Cristian's method against rank 0, one rank after the other: rank r sends, rank 0
  // answers with its clock, and r takes the answer to have been read halfway through
  // the round trip.
  if (rank == 0) {
    for (int r = 1; r < size; ++r)
      for (int i = 0; i < kOffsetRounds; ++i) {
        char ping = 0;
        PMPI_Recv(&ping, 1, MPI_CHAR, r, kOffsetTag, world, MPI_STATUS_IGNORE);
        const double clock = now();
        PMPI_Send(&clock, 1, MPI_DOUBLE, r, kOffsetTag, world);
      }
  } else {
    double best_trip = std::numeric_limits<double>::infinity();
    for (int i = 0; i < kOffsetRounds; ++i) {
      char ping = 0;
      double theirs = 0;
      const double sent = now();
      PMPI_Send(&ping, 1, MPI_CHAR, 0, kOffsetTag, world);
      PMPI_Recv(&theirs, 1, MPI_DOUBLE, 0, kOffsetTag, world, MPI_STATUS_IGNORE);
      const double back = now();
      if (back - sent < best_trip) {
        best_trip = back - sent;
        s.offset = theirs - (sent + back) / 2;
      }
    }
  }
  // On rank 0's node every rank reads the one clock: a measured offset would only add
  // its error (tens of microseconds where ranks outnumber cores).
  if (shares_rank0_clock) s.offset = 0;
  detail::enabled = true;
}

void begin_call(planner::Collective c, int root, std::int64_t bytes, const std::string& algorithm, bool native,
                const std::string& schedule_id, const TracedComm& comm, std::int64_t serial) {
  State& s = state();
  if (s.calls.size() >= s.call_cap) {  // not traced: in_call stays false, so no step is recorded
    ++s.dropped;
    return;
  }
  Call call;
  call.comm = comm.id;
  call.serial = serial;
  call.bytes = bytes;
  call.collective = static_cast<std::int32_t>(c);
  call.root = root;
  call.comm_size = static_cast<std::int32_t>(comm.world_ranks->size());
  call.comm_rank = comm.rank;
  call.native = native ? 1 : 0;
  std::strncpy(call.algorithm, algorithm.c_str(), sizeof call.algorithm - 1);
  if (!native) std::strncpy(call.schedule_id, schedule_id.c_str(), sizeof call.schedule_id - 1);
  call.start = now();
  s.calls.push_back(call);
  s.world_ranks = comm.world_ranks;
  s.in_call = true;
}

void end_call() {
  State& s = state();
  if (!s.in_call) return;
  s.calls.back().end = now();
  s.in_call = false;
  s.world_ranks = nullptr;
}

Recorder* active() {
  State& s = state();
  return s.in_call ? &s.recorder : nullptr;
}

void Recorder::step(Kind kind, int peer, int segment, std::int64_t bytes, double start, double end, int index) {
  State& s = state();
  if (s.steps.size() >= s.step_cap) {
    ++s.dropped;
    return;
  }
  Step st;
  st.start = start;
  st.end = end;
  st.bytes = bytes;
  st.peer = peer >= 0 && s.world_ranks && peer < static_cast<int>(s.world_ranks->size()) ? (*s.world_ranks)[peer] : -1;
  st.segment = segment;
  st.index = index;
  st.call = static_cast<std::uint32_t>(s.calls.size() - 1);
  st.kind = kind;
  s.steps.push_back(st);
}

namespace {

// Rank 0 gathers every rank's records of one type as bytes (the same build on every
// rank: the same layout; the caps keep the total within an int). Others get an empty list.
template <typename T>
std::vector<std::vector<T>> gather(MPI_Comm world, const std::vector<T>& mine) {
  int rank = 0, size = 1;
  PMPI_Comm_rank(world, &rank);
  PMPI_Comm_size(world, &size);
  const int bytes = static_cast<int>(mine.size() * sizeof(T));
  std::vector<int> byte_counts(rank == 0 ? size : 0), displacements(rank == 0 ? size : 0);
  PMPI_Gather(&bytes, 1, MPI_INT, byte_counts.data(), 1, MPI_INT, 0, world);
  int total = 0;
  for (int r = 0; r < static_cast<int>(byte_counts.size()); ++r) {
    displacements[r] = total;
    total += byte_counts[r];
  }
  std::vector<T> all(static_cast<std::size_t>(total) / sizeof(T));
  PMPI_Gatherv(mine.data(), bytes, MPI_BYTE, all.data(), byte_counts.data(), displacements.data(), MPI_BYTE, 0, world);
  std::vector<std::vector<T>> out(rank == 0 ? size : 0);
  for (int r = 0; r < static_cast<int>(out.size()); ++r) {
    const auto from = all.begin() + displacements[r] / static_cast<std::ptrdiff_t>(sizeof(T));
    out[r].assign(from, from + byte_counts[r] / static_cast<std::ptrdiff_t>(sizeof(T)));
  }
  return out;
}

// Tracks: 0 for the calls, 1 + kind for each kind of step.
int track_of(Kind k) { return 1 + static_cast<int>(k); }

}  // namespace

AlignedSpan aligned_span(const std::vector<std::vector<Call>>& calls, const std::vector<double>& offsets) {
  AlignedSpan span{std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()};
  for (std::size_t r = 0; r < calls.size(); ++r)
    for (const Call& c : calls[r]) {
      span.origin = std::min(span.origin, c.start + offsets[r]);
      span.last = std::max(span.last, c.end + offsets[r]);
    }
  if (!std::isfinite(span.origin)) span = {};
  return span;
}

std::string call_name(const Call& c) {
  return std::string(planner::mpi_function_name(static_cast<planner::Collective>(c.collective))) + " " +
         (c.native ? "native MPI" : c.algorithm);
}

std::string chrome_json(const std::vector<std::vector<Call>>& calls, const std::vector<std::vector<Step>>& steps,
                        const std::vector<double>& offsets) {
  using nlohmann::json;
  const int ranks = static_cast<int>(calls.size());
  // Time zero: the earliest aligned call start, so the file's times are small.
  const double origin = aligned_span(calls, offsets).origin;
  auto us = [&](int r, double t) { return (t + offsets[r] - origin) * 1e6; };
  json events = json::array();
  for (int r = 0; r < ranks; ++r) {
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", r}, {"args", {{"name", "rank " + std::to_string(r)}}}});
    events.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", r}, {"args", {{"sort_index", r}}}});
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", r}, {"tid", 0}, {"args", {{"name", "calls"}}}});
    for (int k = 0; k < kKinds; ++k)
      events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", r}, {"tid", track_of(static_cast<Kind>(k))},
                        {"args", {{"name", name(static_cast<Kind>(k))}}}});
  }
  // A call's identity on every rank of its communicator: (communicator, serial).
  auto call_id = [](const Call& c) {
    return std::to_string(c.comm) + "/" + std::to_string(c.serial);
  };
  for (int r = 0; r < ranks; ++r)
    for (const Call& c : calls[r]) {
      events.push_back({{"name", call_name(c)}, {"cat", "call"}, {"ph", "X"}, {"pid", r}, {"tid", 0},
                        {"ts", us(r, c.start)}, {"dur", (c.end - c.start) * 1e6},
                        {"args", {{"call", call_id(c)}, {"bytes", c.bytes}, {"root", c.root},
                                  {"ranks", c.comm_size}, {"algorithm", c.native ? "native" : c.algorithm},
                                  {"schedule_id", c.schedule_id}, {"rank", c.comm_rank}}}});
    }
  // Messages: the n-th send from s to d of a segment in a call matches the n-th receive
  // at d from s of that segment in that call (MPI does not overtake on one tag).
  using MessageKey = std::tuple<std::string, int, int, int>;  // call, from, to, segment
  std::map<MessageKey, std::vector<std::pair<int, const Step*>>> sends, receives;
  for (int r = 0; r < ranks; ++r)
    for (const Step& st : steps[r]) {
      if (st.call >= calls[r].size()) continue;
      const Call& c = calls[r][st.call];
      json args = {{"call", call_id(c)}, {"segment", st.segment}, {"bytes", st.bytes}};
      if (st.peer >= 0) args["peer"] = st.peer;
      if (st.index >= 0) args["step"] = st.index;
      events.push_back({{"name", name(st.kind)}, {"cat", "step"}, {"ph", "X"}, {"pid", r},
                        {"tid", track_of(st.kind)}, {"ts", us(r, st.start)}, {"dur", (st.end - st.start) * 1e6},
                        {"args", args}});
      if (st.kind == Kind::Send) sends[{call_id(c), r, st.peer, st.segment}].push_back({r, &st});
      if (st.kind == Kind::Recv) receives[{call_id(c), st.peer, r, st.segment}].push_back({r, &st});
    }
  long id = 0;
  for (const auto& [key, out] : sends) {
    auto in = receives.find(key);
    if (in == receives.end()) continue;
    for (std::size_t i = 0; i < out.size() && i < in->second.size(); ++i, ++id) {
      const auto& [from, send] = out[i];
      const auto& [to, receive] = in->second[i];
      events.push_back({{"name", "message"}, {"cat", "message"}, {"ph", "s"}, {"id", id}, {"pid", from},
                        {"tid", track_of(Kind::Send)}, {"ts", us(from, send->start)}});
      events.push_back({{"name", "message"}, {"cat", "message"}, {"ph", "f"}, {"bp", "e"}, {"id", id},
                        {"pid", to}, {"tid", track_of(Kind::Recv)}, {"ts", us(to, receive->start)}});
    }
  }
  json offsets_us = json::array();
  for (double o : offsets) offsets_us.push_back(o * 1e6);
  json out = {{"traceEvents", events},
              {"displayTimeUnit", "ns"},
              {"otherData", {{"producer", "Canopy CANOPY_TRACE"}, {"ranks", ranks}, {"clock_offsets_us", offsets_us}}}};
  return out.dump() + "\n";
}

double now() {
  // SMPI: the simulated time is the clock (one for every simulated rank).
  if (platform().simulated) return PMPI_Wtime();
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool otf2_available() {
#ifdef CANOPY_HAVE_OTF2
  return true;
#else
  return false;
#endif
}

std::string write(MPI_Comm world, const std::string& path, bool otf2) {
  State& s = state();
  if (!on()) return "";
  int rank = 0;
  PMPI_Comm_rank(world, &rank);
  const auto calls = gather(world, s.calls);
  const auto steps = gather(world, s.steps);
  std::vector<double> offsets;
  std::int64_t dropped = s.dropped, all_dropped = 0;
  int size = 1;
  PMPI_Comm_size(world, &size);
  offsets.resize(rank == 0 ? size : 0);
  PMPI_Gather(&s.offset, 1, MPI_DOUBLE, offsets.data(), 1, MPI_DOUBLE, 0, world);
  PMPI_Reduce(&dropped, &all_dropped, 1, MPI_INT64_T, MPI_SUM, 0, world);
  const std::size_t step_cap = s.step_cap;
  s = State{};
  detail::enabled = false;
  if (rank != 0) return "";
  if (otf2) {
#ifdef CANOPY_HAVE_OTF2
    const std::string error = write_otf2(path, calls, steps, offsets);
    if (!error.empty()) return "CANOPY_TRACE='" + path + "': " + error;
    return all_dropped > 0 ? "CANOPY_TRACE='" + path + "': " + std::to_string(all_dropped) +
                                 " steps or calls were left out; sample fewer calls (CANOPY_TRACE_CALLS)"
                           : "";
#else
    return "CANOPY_TRACE_FORMAT=otf2: this libcanopy.so was built without OTF2; no trace";
#endif
  }
  std::ofstream out(path);
  if (!out) return "CANOPY_TRACE='" + path + "': cannot write the file; no trace";
  out << chrome_json(calls, steps, offsets);
  if (!out) return "CANOPY_TRACE='" + path + "': writing failed; the trace is incomplete";
  if (all_dropped > 0)
    return "CANOPY_TRACE='" + path + "': " + std::to_string(all_dropped) + " steps or calls were left out (more than " +
           std::to_string(step_cap) + " steps on a rank); sample fewer calls (CANOPY_TRACE_CALLS)";
  return "";
}

}  // namespace canopy::shim::trace
