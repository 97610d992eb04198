#include "tools/view/schedule_input.h"

#include <nlohmann/json.hpp>

#include "planner/schedule_json.h"
#include "planner/topology_json.h"

namespace canopy::tools {

using nlohmann::json;

namespace {

const char* const kWhatWeRead =
    "expected canopy-plan --json output, a schedule in the planner's JSON form, or CANOPY_SCHEDULE_LOG lines";

// The "topology" recorded with a schedule, checked against it. What the shim and
// canopy-plan write spells out every link; a hand-written one may not, and canopy-view
// has nothing to measure a missing link with.
std::shared_ptr<const planner::Topology> topology_of(const json& j, const planner::Schedule& schedule,
                                                     const std::string& where) {
  planner::TopologyFile file;
  try {
    file = planner::topology_from_json(j);
  } catch (const std::exception& ex) {  // invalid_argument, or whatever else bad JSON raises
    throw InputError(where + "the topology does not read back: " + ex.what());
  }
  const planner::Topology& t = file.topology;
  if (!file.missing.empty()) {
    const auto [a, b] = file.missing.front();
    throw InputError(where + "the topology has no link from cluster \"" + t.labels[a] + "\" to \"" + t.labels[b] +
                     "\"");
  }
  if (t.nranks() != schedule.nranks)
    throw InputError(where + "the topology has " + std::to_string(t.nranks()) + " ranks, the schedule " +
                     std::to_string(schedule.nranks));
  return std::make_shared<const planner::Topology>(std::move(file.topology));
}

// One JSON value of the input as a schedule entry; nothing for a log line of another
// event. `where` prefixes messages: "line N: ", or nothing for a whole document.
std::optional<ScheduleEntry> entry_of(const json& j, const std::string& where) {
  if (!j.is_object()) throw InputError(where + "not a schedule: " + kWhatWeRead);
  const auto event = j.find("event");
  if (event != j.end() && *event != "schedule") return std::nullopt;
  const auto body = j.find("schedule");
  const bool wrapped = body != j.end() && body->is_object();
  if (!wrapped && !(j.contains("steps") && j.contains("nranks")))
    throw InputError(where + "not a schedule: " + kWhatWeRead);
  ScheduleEntry e;
  try {
    e.schedule = planner::schedule_from_json(wrapped ? *body : j);
  } catch (const std::exception& ex) {
    throw InputError(where + "the schedule does not read back: " + ex.what());
  }
  if (wrapped) {
    if (const auto m = j.find("model"); m != j.end() && m->is_string()) e.model = m->get<std::string>();
    if (const auto id = j.find("id"); id != j.end() && id->is_string()) e.id = id->get<std::string>();
    // The log says predicted_s, canopy-plan --json says makespan.
    for (const char* key : {"predicted_s", "makespan"})
      if (const auto p = j.find(key); p != j.end() && p->is_number()) e.predicted = p->get<double>();
    if (const auto t = j.find("topology"); t != j.end()) e.topology = topology_of(*t, e.schedule, where);
  }
  return e;
}

}  // namespace

std::vector<ScheduleEntry> read_schedules(const std::string& text) {
  std::vector<ScheduleEntry> out;
  // One document (possibly spread over lines, as a pretty-printed file is) ...
  json whole = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!whole.is_discarded()) {
    if (auto e = entry_of(whole, "")) out.push_back(std::move(*e));
  } else {
    // ... or JSON lines. A first line that is not JSON means the input is not JSON.
    std::size_t start = 0;
    bool first = true;
    for (int line = 1; start < text.size(); ++line) {
      std::size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      const std::string row = text.substr(start, end - start);
      start = end + 1;
      if (row.find_first_not_of(" \t\r") == std::string::npos) continue;
      json j;
      try {
        j = json::parse(row);
      } catch (const json::exception& ex) {  // parse_error, or out_of_range for numbers like 1e999
        if (first) throw InputError(std::string("not JSON: ") + kWhatWeRead);
        throw InputError("line " + std::to_string(line) + ": not JSON: " + ex.what());
      }
      first = false;
      if (auto e = entry_of(j, "line " + std::to_string(line) + ": ")) {
        e->line = line;
        out.push_back(std::move(*e));
      }
    }
  }
  if (out.empty()) throw InputError(std::string("no schedule in the input: ") + kWhatWeRead);
  for (std::size_t i = 0; i < out.size(); ++i) out[i].index = static_cast<int>(i);
  return out;
}

bool Selection::matches(const ScheduleEntry& e) const {
  return (entry < 0 || e.index == entry) &&
         (collective.empty() || collective == planner::to_string(e.schedule.collective)) &&
         (algorithm.empty() || algorithm == e.schedule.algorithm) && (bytes < 0 || bytes == e.schedule.bytes());
}

std::string Selection::describe() const {
  std::string out;
  if (entry >= 0) out += " --entry " + std::to_string(entry);
  if (!collective.empty()) out += " --collective " + collective;
  if (!algorithm.empty()) out += " --algorithm " + algorithm;
  if (bytes >= 0) out += " --bytes " + std::to_string(bytes);
  return out.empty() ? out : out.substr(1);
}

const ScheduleEntry& select_entry(const std::vector<ScheduleEntry>& entries, const Selection& selection) {
  if (selection.entry >= static_cast<int>(entries.size()))
    throw InputError("--entry " + std::to_string(selection.entry) + " is out of range: the input holds " +
                     std::to_string(entries.size()) + " schedule(s), 0 to " + std::to_string(entries.size() - 1));
  for (const ScheduleEntry& e : entries)
    if (selection.matches(e)) return e;
  throw InputError("no schedule matches " + selection.describe() + " (of " + std::to_string(entries.size()) +
                   "; see --list)");
}

}  // namespace canopy::tools
