#include "tools/view/schedule_input.h"

#include <nlohmann/json.hpp>

#include "planner/schedule_json.h"

namespace canopy::tools {

using nlohmann::json;

namespace {

const char* const kWhatWeRead =
    "expected canopy-plan --json output, a schedule in the planner's JSON form, or CANOPY_SCHEDULE_LOG lines";

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
    // The log says predicted_s, canopy-plan --json says makespan.
    for (const char* key : {"predicted_s", "makespan"})
      if (const auto p = j.find(key); p != j.end() && p->is_number()) e.predicted = p->get<double>();
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
