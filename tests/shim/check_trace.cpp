// Checks a CANOPY_TRACE file (shim/trace.h) written by a job of N ranks whose traced
// calls all ran on MPI_COMM_WORLD:
//   check_trace FILE N KIND...
// - the Chrome trace-event format's fields: every event a name, a phase and a process
//   (a rank); complete events ("X") a start and a duration; metadata names each rank and
//   each track;
// - every traced call on every rank (the same calls everywhere), each step inside its
//   call's span on its rank, every KIND among the steps;
// - every send matched by one receive (an arrow: one "s" and one "f" event of one id,
//   from the sender's rank to the receiver's), as many receives as sends;
// - the clocks aligned: causality holds across ranks on the file's times (an allreduce
//   ends on no rank before it began on every rank; a reduce's root ends after every rank
//   began; a broadcast ends nowhere before its root began).
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

using nlohmann::json;

namespace {

int failures = 0;

void expect(bool ok, const std::string& what) {
  if (!ok && ++failures <= 20) std::cerr << "check_trace: " << what << "\n";
}

// The file's times are microseconds printed as doubles: a little slack for rounding.
constexpr double kSlackUs = 1.0;

struct Span {
  double start = 0, end = 0;
  std::string name;
  int root = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: check_trace FILE N KIND...\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::cerr << "check_trace: cannot read " << argv[1] << "\n";
    return 1;
  }
  const int ranks = std::stoi(argv[2]);
  json doc;
  try {
    in >> doc;
  } catch (const std::exception& e) {
    std::cerr << "check_trace: not JSON: " << e.what() << "\n";
    return 1;
  }
  expect(doc.contains("traceEvents") && doc["traceEvents"].is_array(), "no traceEvents array");
  expect(doc.value("displayTimeUnit", "") == "ns" || doc.value("displayTimeUnit", "") == "ms",
         "displayTimeUnit is not ns or ms");
  expect(doc["otherData"].value("ranks", -1) == ranks, "otherData.ranks is not " + std::to_string(ranks));
  if (failures) return 1;

  std::set<std::pair<int, int>> named_tracks;  // (rank, tid) with a thread_name
  std::set<int> named_ranks;
  std::map<std::pair<int, std::string>, Span> calls;  // (rank, call id)
  std::map<std::string, std::set<int>> call_ranks;    // call id: the ranks that traced it
  std::set<std::string> kinds;
  long sends = 0, receives = 0, steps = 0;
  std::map<long, std::pair<int, int>> flow_starts, flow_ends;  // id: (rank, count)
  std::vector<json> step_events;
  for (const json& e : doc["traceEvents"]) {
    const bool fields = e.contains("name") && e["name"].is_string() && e.contains("ph") && e["ph"].is_string() &&
                        e.contains("pid") && e["pid"].is_number_integer();
    expect(fields, "an event without name, ph or pid: " + e.dump());
    if (!fields) continue;
    const std::string ph = e["ph"];
    const int pid = e["pid"];
    expect(pid >= 0 && pid < ranks, "pid out of range: " + e.dump());
    if (ph == "M") {
      if (e["name"] == "process_name") named_ranks.insert(pid);
      if (e["name"] == "thread_name") named_tracks.insert({pid, e.value("tid", -1)});
      continue;
    }
    const bool timed = e.contains("ts") && e["ts"].is_number() && e["ts"].get<double>() >= -kSlackUs &&
                       e.contains("tid") && e["tid"].is_number_integer();
    expect(timed, "an event without ts or tid: " + e.dump());
    if (!timed) continue;
    if (ph == "X") {
      const bool lasts = e.contains("dur") && e["dur"].is_number() && e["dur"].get<double>() >= 0;
      expect(lasts, "a complete event without a duration: " + e.dump());
      expect(named_tracks.count({pid, e["tid"].get<int>()}) == 1, "a track without a name: " + e.dump());
      const std::string cat = e.value("cat", "");
      const std::string id = e["args"].value("call", "");
      expect(!id.empty(), "an event without its call: " + e.dump());
      if (cat == "call") {
        const double ts = e["ts"];
        calls[{pid, id}] = {ts, ts + e["dur"].get<double>(), e["name"], e["args"].value("root", 0)};
        call_ranks[id].insert(pid);
      } else if (cat == "step") {
        ++steps;
        kinds.insert(e["name"].get<std::string>());
        sends += e["name"] == "send";
        receives += e["name"] == "receive";
        step_events.push_back(e);
      } else {
        expect(false, "a complete event of no known category: " + e.dump());
      }
    } else if (ph == "s" || ph == "f") {
      auto& ends = ph == "s" ? flow_starts : flow_ends;
      auto& [rank, count] = ends[e.value("id", -1L)];
      rank = pid;
      ++count;
    } else {
      expect(false, "an event of unknown phase: " + e.dump());
    }
  }
  for (int r = 0; r < ranks; ++r) expect(named_ranks.count(r) == 1, "rank " + std::to_string(r) + " has no name");
  expect(!calls.empty(), "no call was traced");
  for (const auto& [id, who] : call_ranks)
    expect(static_cast<int>(who.size()) == ranks,
           "call " + id + " traced on " + std::to_string(who.size()) + " of " + std::to_string(ranks) + " ranks");
  for (const json& e : step_events) {
    const auto it = calls.find({e["pid"].get<int>(), e["args"]["call"].get<std::string>()});
    expect(it != calls.end(), "a step of a call its rank did not trace: " + e.dump());
    if (it == calls.end()) continue;
    const double ts = e["ts"], end = ts + e["dur"].get<double>();
    expect(ts >= it->second.start - kSlackUs && end <= it->second.end + kSlackUs,
           "a step outside its call's span: " + e.dump());
  }
  expect(steps > 0, "no step was traced");
  for (int k = 3; k < argc; ++k) expect(kinds.count(argv[k]) == 1, std::string("no ") + argv[k] + " step");
  expect(sends == receives, "sends " + std::to_string(sends) + " but receives " + std::to_string(receives));
  expect(static_cast<long>(flow_starts.size()) == sends, "arrows " + std::to_string(flow_starts.size()) +
                                                              " for " + std::to_string(sends) + " sends");
  for (const auto& [id, start] : flow_starts) {
    const auto end = flow_ends.find(id);
    expect(start.second == 1 && end != flow_ends.end() && end->second.second == 1,
           "arrow " + std::to_string(id) + " has not one start and one end");
    if (end != flow_ends.end()) expect(end->second.first != start.first, "arrow " + std::to_string(id) + " to itself");
  }
  expect(flow_ends.size() == flow_starts.size(), "arrow ends without starts");
  // Causality on the aligned clocks.
  long checked = 0;
  for (const auto& [id, who] : call_ranks) {
    double latest_start = -INFINITY, earliest_end = INFINITY;
    Span root_span;
    bool root_seen = false;
    std::string name;
    for (int r : who) {
      const Span& s = calls[{r, id}];
      latest_start = std::max(latest_start, s.start);
      earliest_end = std::min(earliest_end, s.end);
      name = s.name;
      if (r == s.root) {
        root_span = s;
        root_seen = true;
      }
    }
    if (name.rfind("MPI_Allreduce", 0) == 0 && name.find("native") == std::string::npos) {
      expect(earliest_end + kSlackUs >= latest_start, "call " + id + " (" + name + ") ended on a rank before it began on another");
      ++checked;
    } else if (name.rfind("MPI_Reduce", 0) == 0 && root_seen) {
      expect(root_span.end + kSlackUs >= latest_start, "call " + id + " (" + name + ") ended at the root before a rank began");
      ++checked;
    } else if (name.rfind("MPI_Bcast", 0) == 0 && root_seen) {
      expect(earliest_end + kSlackUs >= root_span.start, "call " + id + " (" + name + ") ended on a rank before the root began");
      ++checked;
    }
  }
  expect(checked > 0, "no call to check the clocks with");
  if (failures) {
    std::cerr << "check_trace: " << failures << " problem(s)\n";
    return 1;
  }
  std::cout << "check_trace: " << calls.size() << " call spans, " << steps << " steps, " << sends
            << " messages, kinds:";
  for (const std::string& k : kinds) std::cout << " " << k;
  std::cout << "; OK\n";
  return 0;
}
