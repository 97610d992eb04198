#include "targets.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "config/config_file.h"
#include "config/settings.h"
#include "planner/cost_model.h"
#include "planner/schedule_json.h"
#include "planner/simulate.h"
#include "planner/validate.h"
#include "tools/view/schedule_input.h"

namespace canopy::fuzz {

namespace {

// A broken invariant is a finding like a crash: say which, then abort.
void require(bool ok, const char* what, const std::string& detail) {
  if (ok) return;
  std::fprintf(stderr, "fuzz invariant broken: %s: %s\n", what, detail.c_str());
  std::abort();
}

std::string text(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// A file holding `contents`, one per process, rewritten for every input.
std::string scratch_file(const std::string& contents) {
  static const std::string path = [] {
    char name[] = "/tmp/canopy-fuzz-XXXXXX";
    const int fd = mkstemp(name);
    require(fd >= 0, "mkstemp", name);
    close(fd);
    return std::string(name);
  }();
  std::ofstream(path, std::ios::binary | std::ios::trunc) << contents;
  return path;
}

// The model a spec gives must print a spec that gives it back (cost_model.h).
void check_round_trip(const std::string& spec) {
  const planner::CostModel m = planner::parse_model(spec);
  const std::string printed = m.spec();
  std::string again;
  try {
    again = planner::parse_model(printed).spec();
  } catch (const std::invalid_argument& e) {
    require(false, "parse_model(spec()) rejects its own output", printed + ": " + e.what());
  }
  require(again == printed, "parse_model(spec()) changes the model", printed + " -> " + again);
}

// settings: lines NAME=VALUE make the environment map (a later line wins), which
// parse_settings reads. Every error line names a CANOPY_ variable; values stay in range.
void settings(const std::uint8_t* data, std::size_t size) {
  config::Environment env;
  const std::string in = text(data, size);
  for (std::size_t start = 0; start <= in.size();) {
    std::size_t end = in.find('\n', start);
    if (end == std::string::npos) end = in.size();
    const std::string line = in.substr(start, end - start);
    if (const auto eq = line.find('='); eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
    start = end + 1;
  }
  // A CANOPY_MODEL value that is no spec names a file: keep the fuzzer off the
  // machine's files (a path under a folder that does not exist reads nothing).
  if (auto it = env.find("CANOPY_MODEL"); it != env.end()) {
    const std::string& v = it->second;
    const bool spec = v.empty() || v == "default" || v == "measure" || v.rfind("hockney:", 0) == 0 ||
                      v.rfind("overlap:", 0) == 0 || (v.rfind("plogp:", 0) == 0 && v.find('=') != std::string::npos);
    if (!spec) it->second = "/nonexistent-canopy-fuzz/" + v;
  }
  const config::ParseResult r = config::parse_settings(env);
  for (const auto& e : r.errors) require(e.rfind("CANOPY_", 0) == 0, "error line names no variable", e);
  const config::Settings& s = r.settings;
  require(s.segment_bytes >= -1, "segment_bytes below -1", std::to_string(s.segment_bytes));
  require(s.auto_trials >= 0 && s.auto_trials <= 100, "auto_trials outside 0..100", std::to_string(s.auto_trials));
  require(s.auto_native_after >= 0 && s.auto_native_after <= 1000000000, "auto_native_after outside 0..1e9",
          std::to_string(s.auto_native_after));
  require(s.auto_recheck >= 0 && s.auto_recheck <= 0.5, "auto_recheck outside 0..0.5", std::to_string(s.auto_recheck));
  if (!s.model.empty() && s.model != "measure") check_round_trip(s.model);
  (void)config::fingerprint(env);
}

// model: the first byte picks the form, the rest is the text.
//   0: a CANOPY_MODEL value (a spec or a keyword; never a file name, so the fuzzer
//      reads no file of the machine's)   1: a model file   2: a plogp:FILE file
// A model that reads must round-trip through CostModel::spec().
void model(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return;
  const std::string body = text(data + 1, size - 1);
  std::string value;
  switch (data[0] % 3) {
    case 0: {
      const bool keyword = body.empty() || body == "default" || body == "measure";
      const bool spec = body.rfind("hockney:", 0) == 0 || body.rfind("overlap:", 0) == 0 ||
                        (body.rfind("plogp:", 0) == 0 && body.find('=') != std::string::npos);
      value = keyword || spec ? body : "hockney:" + body;
      break;
    }
    case 1:
      value = scratch_file(body);
      break;
    default:
      try {
        check_round_trip("plogp:" + scratch_file(body));
      } catch (const std::invalid_argument&) {
      }
      return;
  }
  std::string error;
  const std::string spec = config::resolve_model(value, error);
  require(error.empty() || spec.empty(), "resolve_model returns a spec with an error", error);
  // A model file whose spec line names a pLogP file reads that file in turn; fine for
  // the files it may name, all of which the fuzzer wrote or cannot reach.
  if (error.empty() && !spec.empty() && spec != "measure") check_round_trip(spec);
}

// schedule: one JSON text: a schedule log line (an object with a "schedule" member)
// or a bare schedule. What schedule_from_json accepts goes through validate() and
// simulate() under three models, whatever it contains; schedule_to_json of it reads
// back to the same JSON.
void schedule(const std::uint8_t* data, std::size_t size) {
  const nlohmann::json doc = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return;
  const nlohmann::json* j = &doc;
  if (doc.is_object() && doc.contains("schedule")) j = &doc["schedule"];
  planner::Schedule s;
  try {
    s = planner::schedule_from_json(*j);
  } catch (const std::invalid_argument&) {
    return;
  }
  const nlohmann::json out = planner::schedule_to_json(s);
  require(planner::schedule_to_json(planner::schedule_from_json(out)) == out, "JSON round trip", out.dump());
  const planner::Validation v = planner::validate(s);
  require(v.ok == v.errors.empty(), "validation ok with errors", v.summary());
  (void)v.summary();
  for (const planner::CostModel& m : {planner::default_model(), planner::overlap_model(1, 2),
                                      planner::plogp_model(1e-6, {{1, 1e-6}, {1024, 2e-6}})}) {
    const planner::Simulation sim = planner::simulate(s, m);
    require(sim.ok || !sim.error.empty(), "simulation fails without a reason", out.dump());
  }
}

// config: the text of a CANOPY_CONFIG file. Every problem is one line naming the
// file; every rule kept is well formed (a known collective, ranges in order, an
// action, an algorithm Canopy knows).
void config(const std::uint8_t* data, std::size_t size) {
  const config::ConfigFile file = config::parse_config_text(text(data, size), "fuzz.json");
  for (const std::string& e : file.errors) {
    require(e.rfind("CANOPY_CONFIG='fuzz.json'", 0) == 0, "error line does not name the file", e);
    require(e.find('\n') == std::string::npos, "error line spans lines", e);
  }
  for (const config::Rule& r : file.rules) {
    require(r.min_bytes <= r.max_bytes && r.min_ranks <= r.max_ranks && r.min_ranks >= 1, "rule range", r.origin);
    require(!r.algorithm.empty() || r.segment_bytes != config::Rule::kUnset, "rule without an action", r.origin);
    require(r.algorithm.empty() || config::is_algorithm_choice(r.collective, r.algorithm), "rule algorithm",
            r.algorithm);
    require(r.segment_bytes >= -1 || r.segment_bytes == config::Rule::kUnset, "rule segment size", r.origin);
  }
}

// log: what canopy-view reads (a schedule log, canopy-plan --json output, a bare
// schedule). It either returns schedules that validate-or-explain and simulate-or-
// explain, or throws InputError; nothing else.
void log(const std::uint8_t* data, std::size_t size) {
  std::vector<tools::ScheduleEntry> entries;
  try {
    entries = tools::read_schedules(text(data, size));
  } catch (const tools::InputError&) {
    return;
  }
  require(!entries.empty(), "read_schedules returned no schedule without an error", "");
  for (const tools::ScheduleEntry& e : entries) {
    const planner::Validation v = planner::validate(e.schedule);
    require(v.ok == v.errors.empty(), "validation ok with errors", v.summary());
    const planner::Simulation sim = planner::simulate(e.schedule, planner::default_model());
    require(sim.ok || !sim.error.empty(), "simulation fails without a reason", "");
  }
}

}  // namespace

const std::vector<Target>& targets() {
  static const std::vector<Target> list = {
      {"settings", settings, "lines NAME=VALUE: the environment parse_settings reads"},
      {"model", model, "byte 0 % 3 picks: 0 a CANOPY_MODEL spec, 1 a model file, 2 a plogp:FILE file; then its text"},
      {"schedule", schedule, "a schedule JSON, or a schedule log line holding one in \"schedule\""},
      {"config", config, "the text of a CANOPY_CONFIG settings file (JSON with CANOPY_* keys and rules)"},
      {"log", log, "what canopy-view reads: a CANOPY_SCHEDULE_LOG, canopy-plan --json output or a schedule"},
  };
  return list;
}

const Target* find_target(const std::string& name) {
  for (const auto& t : targets())
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace canopy::fuzz
