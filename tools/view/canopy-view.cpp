// canopy-view: shows one schedule — one that canopy-plan printed with --json, or one
// entry of a CANOPY_SCHEDULE_LOG — as a text tree, or as an SVG Gantt chart of its
// timeline simulated under a cost model.
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>

#include "planner/cost_model.h"
#include "planner/describe.h"
#include "planner/simulate.h"
#include "planner/topology.h"
#include "tools/view/gantt.h"
#include "tools/view/schedule_input.h"

using namespace canopy::planner;
using namespace canopy::tools;

namespace {

constexpr int kBadInput = 2;  // as canopy-plan: anything the user gave that we reject

const char* const kFooter = R"(
Input: a file, or - for stdin, holding canopy-plan --json output, a schedule in the
planner's JSON form, or a CANOPY_SCHEDULE_LOG (JSON lines; lines of other events are
skipped). Entries are numbered from 0 in input order, as --list prints them.

Selection: --entry, --collective, --algorithm and --bytes each narrow the choice;
canopy-view shows the first entry that meets all of them (none given: the first).

Timings come from the planner's simulator under the entry's recorded model (the log's
"model", canopy-plan's "model"; Canopy's default model for a bare schedule), or under
--model SPEC, with canopy-plan's --model syntax. An entry recorded with a "topology"
(canopy-plan --topology, or a log of a job with CANOPY_TOPOLOGY) is timed on that
network: messages between nodes follow its links and slower ranks send more slowly;
the model prices messages within a node, reductions and copies. --no-topology times
it under the model alone.

The SVG has one row per rank (at most --max-ranks: ranks 0 to N-1), each with three
lanes: sends, receives, then reductions and copies. Bars too thin to see merge with
neighbours less than a pixel away; hovering a bar names its step(s).

Bad input (a missing file, text that is not JSON, JSON that is not a schedule, no entry
matching, a bad model) prints one line naming it on stderr and exits with status 2.

Examples:
  canopy-plan reduce -p 8 --bytes 1048576 --json | canopy-view -
  canopy-plan reduce -p 8 --bytes 1048576 --json | canopy-view - --svg reduce.svg
  CANOPY_SCHEDULE_LOG=/tmp/canopy.jsonl mpiexec.mpich -n 4 ./app   (with libcanopy.so preloaded)
  canopy-view /tmp/canopy.jsonl --list
  canopy-view /tmp/canopy.jsonl --entry 2 --svg entry2.svg
  canopy-view /tmp/canopy.jsonl --collective bcast --bytes 65536 --model hockney:alpha=5e-6,beta=1e-10
  canopy-view /tmp/canopy.jsonl --trace /tmp/trace.json --svg measured.svg
      (a job run with CANOPY_SCHEDULE_LOG=/tmp/canopy.jsonl CANOPY_TRACE=/tmp/trace.json)

Measured against predicted (--trace): the traced call's steps, as each rank ran them
(times from the call's start on its earliest rank, clocks aligned at MPI_Init), beside
the simulated timeline of the schedule it ran; the five steps that ended furthest
behind their predicted end are named. A send's or receive's measured time is its
posting; the wait for its data falls in the step that needs it.
)";

struct Options {
  std::string input;
  std::string trace;  // a CANOPY_TRACE file: draw a traced call's measured timeline too
  std::string call;   // its call id (empty: the first traced call that ran a logged schedule)
  bool list = false;
  Selection selection;
  std::string model;
  bool no_topology = false;
  std::string svg;
  bool steps = false;
  GanttOptions gantt;
};

std::string read_input(const std::string& path) {
  if (path == "-") {
    std::ostringstream text;
    text << std::cin.rdbuf();
    return text.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(std::string("cannot read: ") + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The model an entry is timed under: --model, else the one recorded with it.
CostModel model_for(const ScheduleEntry& e, const std::string& override_spec) {
  const std::string spec = !override_spec.empty() ? override_spec : e.model.empty() ? "default" : e.model;
  try {
    return spec == "default" ? default_model() : parse_model(spec);
  } catch (const std::exception& ex) {
    throw InputError((override_spec.empty() ? "entry " + std::to_string(e.index) + ": recorded model"
                                            : std::string("--model")) +
                     ": " + ex.what());
  }
}

// The network an entry is timed on: its recorded topology unless --no-topology.
const Topology* topology_for(const ScheduleEntry& e, const Options& o) {
  return o.no_topology ? nullptr : e.topology.get();
}

Simulation simulate_entry(const ScheduleEntry& e, const CostModel& model, const Topology* topology) {
  Simulation sim = simulate(e.schedule, model, topology);
  if (!sim.ok)
    throw InputError("entry " + std::to_string(e.index) + " cannot be simulated under " + model.spec() + ": " +
                     sim.error);
  return sim;
}

void print_list(const std::vector<ScheduleEntry>& entries, const Options& o) {
  std::printf("%5s  %-10s %5s %5s %12s  %-22s %8s  %s\n", "entry", "collective", "ranks", "root", "bytes",
              "algorithm", "segments", "predicted");
  for (const ScheduleEntry& e : entries) {
    if (!o.selection.matches(e)) continue;
    const Schedule& s = e.schedule;
    // The recorded prediction, unless --model or --no-topology asks for another.
    const CostModel model = model_for(e, o.model);
    const bool as_recorded = o.model.empty() && (!o.no_topology || !e.topology);
    // A rank's view cannot be simulated: it shows what was recorded.
    const bool recorded = (as_recorded || s.is_view()) && e.predicted;
    const std::string predicted = recorded ? format_time(*e.predicted, model)
                                  : s.is_view() ? std::string("-")
                                                : format_time(simulate_entry(e, model, topology_for(e, o)).makespan, model);
    // (A std::string through printf's "..." is undefined: it printed stray bytes, at
    // times a newline, after every entry.)
    const std::string whose = s.is_view() ? "  (rank " + std::to_string(s.view_rank) + "'s view)" : "";
    std::printf("%5d  %-10s %5d %5d %12lld  %-22s %8zu  %s%s\n", e.index, to_string(s.collective), s.nranks, s.root,
                static_cast<long long>(s.bytes()), s.algorithm.c_str(), s.segments.size(), predicted.c_str(),
                whose.c_str());
  }
}

void write_file(const std::string& path, const std::string& text) {
  std::FILE* out = std::fopen(path.c_str(), "w");
  if (!out) throw InputError("cannot write " + path + ": " + std::strerror(errno));
  const bool ok = std::fputs(text.c_str(), out) >= 0;
  if (std::fclose(out) != 0 || !ok) throw InputError("cannot write " + path);
}

// A rank's view (the log of a communicator too large to hold every rank's steps):
// its steps and the prediction recorded with it; a timeline needs every rank.
int show_view(const ScheduleEntry& e, const Options& o) {
  if (!o.svg.empty())
    throw InputError("entry " + std::to_string(e.index) + " holds rank " + std::to_string(e.schedule.view_rank) +
                     "'s steps only (the shim logs one rank's view when a communicator's whole schedule is too "
                     "large); a Gantt chart needs every rank's: plan it with canopy-plan --json and view that");
  const CostModel model = model_for(e, o.model);
  std::cout << "entry " << e.index << ": " << summarize(e.schedule) << "\n";
  if (e.predicted) std::cout << "predicted makespan " << format_time(*e.predicted, model) << " (as recorded)\n";
  std::cout << describe_schedule(e.schedule, o.steps);
  return 0;
}

// One traced call (shim/trace.h's file): each rank's span, and its steps' measured times.
struct TracedCall {
  std::string id, schedule_id, name;
  double first_start = 0;                      // the earliest rank's start, µs
  std::map<int, std::pair<double, double>> span;  // schedule rank: start, end (µs)
  std::map<int, std::map<int, std::pair<double, double>>> steps;  // schedule rank: step index: start, end
};

// The call `wanted` of a CANOPY_TRACE file (empty: the first, in time, that ran a
// schedule `entries` holds).
TracedCall read_traced_call(const std::string& path, const std::string& wanted,
                            const std::vector<ScheduleEntry>& entries) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(read_input(path));
  } catch (const nlohmann::json::exception& e) {
    throw InputError("--trace " + path + ": not JSON: " + e.what());
  }
  if (!doc.contains("traceEvents") || !doc["traceEvents"].is_array())
    throw InputError("--trace " + path + ": no traceEvents (not a CANOPY_TRACE file)");
  std::map<std::string, TracedCall> calls;
  std::map<std::pair<std::string, int>, int> rank_of;  // (call, pid): schedule rank
  for (const auto& e : doc["traceEvents"]) {
    if (e.value("cat", "") != "call" || !e.contains("args")) continue;
    const auto& a = e["args"];
    TracedCall& c = calls[a.value("call", "")];
    c.id = a.value("call", "");
    c.schedule_id = a.value("schedule_id", "");
    c.name = e.value("name", "");
    const int rank = a.value("rank", e.value("pid", 0));
    const double ts = e.value("ts", 0.0);
    c.first_start = c.span.empty() ? ts : std::min(c.first_start, ts);
    c.span[rank] = {ts, ts + e.value("dur", 0.0)};
    rank_of[{c.id, e.value("pid", 0)}] = rank;
  }
  auto logged = [&](const TracedCall& c) {
    return !c.schedule_id.empty() &&
           std::any_of(entries.begin(), entries.end(), [&](const ScheduleEntry& e) { return e.id == c.schedule_id; });
  };
  const TracedCall* chosen = nullptr;
  if (!wanted.empty()) {
    const auto it = calls.find(wanted);
    if (it == calls.end()) throw InputError("--call " + wanted + ": no such call in " + path);
    chosen = &it->second;
  } else {
    for (const auto& [id, c] : calls)
      if (logged(c) && (!chosen || c.first_start < chosen->first_start)) chosen = &c;
    if (!chosen)
      throw InputError("--trace " + path + ": no traced call ran a schedule that the input holds (record the "
                       "job with CANOPY_SCHEDULE_LOG as well, and give that log as the input)");
  }
  if (chosen->schedule_id.empty()) throw InputError("call " + chosen->id + " ran native MPI: no schedule to compare");
  TracedCall c = *chosen;
  for (const auto& e : doc["traceEvents"]) {
    if (e.value("cat", "") != "step" || !e.contains("args")) continue;
    const auto& a = e["args"];
    if (a.value("call", "") != c.id || !a.contains("step")) continue;
    const auto rank = rank_of.find({c.id, e.value("pid", 0)});
    if (rank == rank_of.end()) continue;
    const double ts = e.value("ts", 0.0);
    c.steps[rank->second][a["step"].get<int>()] = {ts, ts + e.value("dur", 0.0)};
  }
  return c;
}

// A traced call's measured timeline beside the schedule's predicted one: the SVG has
// the prediction on top and the measurement below on one time axis; stdout names the
// steps that ended furthest behind their predicted end (times from the call's start on
// its earliest rank, the trace's clocks aligned at MPI_Init).
int show_measured(const std::vector<ScheduleEntry>& entries, const Options& o) {
  const TracedCall call = read_traced_call(o.trace, o.call, entries);
  const auto entry = std::find_if(entries.begin(), entries.end(),
                                  [&](const ScheduleEntry& e) { return e.id == call.schedule_id; });
  if (entry == entries.end())
    throw InputError("call " + call.id + " ran schedule " + call.schedule_id + ", which " + o.input +
                     " does not hold (give the job's CANOPY_SCHEDULE_LOG)");
  const ScheduleEntry& e = *entry;
  if (e.schedule.is_view())
    throw InputError("entry " + std::to_string(e.index) + " holds one rank's view: a timeline needs every rank's steps");
  const CostModel model = model_for(e, o.model);
  const Simulation predicted = simulate_entry(e, model, topology_for(e, o));
  Simulation measured;
  measured.ok = true;
  measured.timing.resize(e.schedule.steps.size());
  for (std::size_t r = 0; r < e.schedule.steps.size(); ++r) {
    measured.timing[r].assign(e.schedule.steps[r].size(), StepTiming{});
    const auto span = call.span.find(static_cast<int>(r));
    if (span != call.span.end()) measured.makespan = std::max(measured.makespan, (span->second.second - call.first_start) * 1e-6);
    const auto steps = call.steps.find(static_cast<int>(r));
    if (steps == call.steps.end()) continue;
    for (const auto& [index, t] : steps->second)
      if (index >= 0 && index < static_cast<int>(measured.timing[r].size()))
        measured.timing[r][index] = {(t.first - call.first_start) * 1e-6, (t.second - call.first_start) * 1e-6};
  }
  std::cout << "call " << call.id << " (" << call.name << "): entry " << e.index << ", " << summarize(e.schedule)
            << "\npredicted makespan " << format_time(predicted.makespan, model) << " under " << model.spec()
            << "; measured " << format_time(measured.makespan, model) << " (" << call.span.size() << " ranks traced)\n";
  // The steps that ended furthest behind their predicted end.
  struct Late {
    double behind;
    int rank, index;
  };
  std::vector<Late> late;
  for (std::size_t r = 0; r < measured.timing.size(); ++r)
    for (std::size_t i = 0; i < measured.timing[r].size(); ++i) {
      const StepTiming& m = measured.timing[r][i];
      const StepTiming& p = predicted.timing[r][i];
      if (m.end > m.start || (m.end > 0 && p.end >= 0))
        late.push_back({m.end - p.end, static_cast<int>(r), static_cast<int>(i)});
    }
  std::sort(late.begin(), late.end(), [](const Late& a, const Late& b) { return a.behind > b.behind; });
  std::cout << "furthest behind the prediction (measured end - predicted end):\n";
  for (std::size_t k = 0; k < std::min<std::size_t>(late.size(), 5); ++k) {
    const Late& l = late[k];
    std::cout << "  rank " << l.rank << " step " << l.index << " (" << describe(e.schedule.steps[l.rank][l.index])
              << "): ended " << format_time(measured.timing[l.rank][l.index].end, model) << ", predicted "
              << format_time(predicted.timing[l.rank][l.index].end, model) << "\n";
  }
  if (!o.svg.empty()) {
    GanttOptions top = o.gantt, bottom = o.gantt;
    top.span = bottom.span = std::max(predicted.makespan, measured.makespan);
    top.label = "predicted makespan";
    bottom.label = "measured";
    bottom.under = " (CANOPY_TRACE, call " + call.id + ")";
    const std::string first = gantt_svg(e.schedule, predicted, model, top);
    const std::string second = gantt_svg(e.schedule, measured, model, bottom);
    // Two charts stacked: each is an <svg> of its own, placed by y in an outer one.
    auto height_of = [](const std::string& svg) {
      const auto at = svg.find("height='");  // svg::Document quotes attributes with '
      return at == std::string::npos ? 0.0 : std::stod(svg.substr(at + 8));
    };
    auto placed = [](const std::string& svg, double y) {
      const auto open = svg.find("<svg");
      std::string inner = svg.substr(open);
      inner.insert(4, " y=\"" + std::to_string(y) + "\"");
      return inner;
    };
    const double h1 = height_of(first), h2 = height_of(second);
    std::ostringstream out;
    out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << o.gantt.width << "\" height=\"" << h1 + h2
        << "\" data-predicted=\"" << predicted.makespan << "\" data-measured=\"" << measured.makespan << "\">\n"
        << placed(first, 0) << "\n" << placed(second, h1) << "\n</svg>\n";
    write_file(o.svg, out.str());
    std::cout << "wrote " << o.svg << " (predicted above, measured below, one time axis)\n";
  }
  return 0;
}

int show(const std::vector<ScheduleEntry>& entries, const Options& o) {
  if (!o.trace.empty()) return show_measured(entries, o);
  const ScheduleEntry& e = select_entry(entries, o.selection);
  if (e.schedule.is_view()) return show_view(e, o);
  const CostModel model = model_for(e, o.model);
  const Topology* topology = topology_for(e, o);
  const Simulation sim = simulate_entry(e, model, topology);
  // The file first: a failure to write it then leaves stdout empty.
  if (!o.svg.empty()) write_file(o.svg, gantt_svg(e.schedule, sim, model, o.gantt));
  std::cout << "entry " << e.index << ": " << summarize(e.schedule) << "\n"
            << "predicted makespan " << format_time(sim.makespan, model) << " under " << model.spec()
            << (topology ? " on the recorded topology" : "") << "\n";
  if (topology) std::cout << "topology " << describe_topology(*topology) << "\n";
  if (!o.svg.empty()) std::cout << "wrote " << o.svg << "\n";
  std::cout << describe_schedule(e.schedule, o.steps);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"canopy-view: show one Canopy schedule as a text tree or an SVG Gantt chart"};
  app.footer(kFooter);
  app.add_option("input", o.input, "canopy-plan --json output, a schedule, or a CANOPY_SCHEDULE_LOG; - for stdin")
      ->required();
  app.add_flag("--list", o.list, "list the input's schedules (those the selection matches) and exit");
  app.add_option("--entry", o.selection.entry, "the entry with this index (see --list)")->check(CLI::NonNegativeNumber);
  app.add_option("--collective", o.selection.collective, "an entry of this collective")
      ->check(CLI::IsMember({"reduce", "bcast", "allreduce"}));
  app.add_option("--algorithm", o.selection.algorithm, "an entry of this algorithm");
  app.add_option("--bytes", o.selection.bytes, "an entry of this message size")->check(CLI::NonNegativeNumber);
  app.add_option("--model", o.model, "time under this cost model instead of the recorded one (canopy-plan --model)");
  app.add_flag("--no-topology", o.no_topology,
               "ignore the entry's recorded topology: time every message under the model");
  app.add_option("--svg", o.svg, "write the simulated timeline as an SVG Gantt chart to this file");
  app.add_option("--max-ranks", o.gantt.max_ranks, "SVG: draw at most this many ranks")
      ->check(CLI::Range(1, 100000))->capture_default_str();
  app.add_flag("--steps", o.steps, "also print every rank's steps");
  app.add_option("--trace", o.trace,
                 "a CANOPY_TRACE file of the job that wrote the input log: compare a traced call's measured timeline "
                 "with its schedule's prediction (with --svg: both charts, on one time axis)");
  app.add_option("--call", o.call, "with --trace: the call to compare (its \"call\" in the trace; default: the "
                                   "first traced call that ran a schedule of the input)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::cerr << "canopy-view: " << e.what() << "\n";
    return kBadInput;
  }
  try {
    const std::vector<ScheduleEntry> entries = read_schedules(read_input(o.input));
    if (o.list) {
      print_list(entries, o);
      return 0;
    }
    return show(entries, o);
  } catch (const std::exception& e) {
    std::cerr << "canopy-view: " << (o.input == "-" ? "stdin" : o.input) << ": " << e.what() << "\n";
    return kBadInput;
  }
}
