// Checks what Canopy reported about a run of log_calls on N ranks with
// tests/shim/report_config.json (reduces of 4000 B forced to `chain`, every broadcast
// native, no trials):
//   check_report json N REPORT.json SCHEDULE_LOG...  the JSON report, and the timing
//                                                    lines of each rank's schedule log
//   check_report text N REPORT.txt                   the text report's totals
// The expected counts follow from the calls log_calls makes (see log_calls.c).
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
  if (!ok) {
    std::cerr << "check_report: " << what << "\n";
    ++failures;
  }
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  if (!in) expect(false, "cannot read " + path);
  return s.str();
}

struct Expected {
  long calls, native, canopy_per_rank;
};

// log_calls: 3 reduces of 4000 B, 1 of 56 B and 1 broadcast of 100 B on all ranks,
// then 1 reduce of 4 B on each half of a split (one half when N = 1), then one
// allreduce of 4 B on all ranks.
Expected expected_for(int n) {
  const long subs = n > 1 ? 2 : 1;
  return {6 + subs, 1, 6};
}

void check_json(int n, const std::string& report_path, char** logs, int nlogs) {
  const Expected want = expected_for(n);
  const json r = json::parse(read(report_path));
  expect(r["job"]["ranks"] == n, "job.ranks is " + r["job"]["ranks"].dump());
  const json& t = r["totals"];
  expect(t["calls"] == want.calls, "totals.calls is " + t["calls"].dump() + ", want " + std::to_string(want.calls));
  expect(t["native_calls"] == want.native, "totals.native_calls is " + t["native_calls"].dump());
  expect(t["canopy_calls"] == want.calls - want.native, "totals.canopy_calls is " + t["canopy_calls"].dump());
  expect(t["time_in_collectives_s"]["max"].get<double>() > 0, "no time in collectives");
  // Canopy's part of MPI_Init holds its parts (each measured inside it, one after another).
  const json& startup = r["startup_s"];
  double parts = 0;
  for (const char* part : {"probing", "staging_ring", "code_reading"}) {
    expect(startup.contains(part) && startup[part].get<double>() >= 0, std::string("startup_s lacks ") + part);
    parts += startup.value(part, 0.0);
  }
  expect(parts <= startup["canopy_in_mpi_init"].get<double>(),
         "startup_s's parts add up to more than canopy_in_mpi_init: " + startup.dump());

  long kind_calls = 0;
  bool saw_chain = false, saw_native_bcast = false;
  for (const json& k : r["kinds"]) {
    kind_calls += k["calls"].get<long>();
    const json& m = k["measured_s"];
    expect(m["min"] <= m["mean"] && m["mean"] <= m["max"] && m["min"].get<double>() > 0,
           "measured min <= mean <= max fails: " + k.dump());
    if (k["collective"] == "reduce" && k["bytes"] == 4000) {
      saw_chain = true;
      expect(k["algorithm"] == "chain", "the 4000 B reduce ran " + k["algorithm"].dump() + ", the rule says chain");
      expect(k["calls"] == 3, "the 4000 B reduce counted " + k["calls"].dump() + " calls, want 3");
    }
    if (k["collective"] == "bcast") {
      saw_native_bcast = k["algorithm"] == "native" && k["reason"] == "algorithm-native";
      expect(saw_native_bcast, "the broadcast did not run natively for the configured reason: " + k.dump());
    }
    if (k["algorithm"] != "native")
      expect(k["predicted_s"].get<double>() > 0 &&
                 (k.contains("measured_over_predicted") || k["predicted_s"].get<double>() <= 1e-9),
             "no prediction for " + k.dump());
  }
  expect(saw_chain && saw_native_bcast, "the report misses the 4000 B reduce or the broadcast");
  expect(kind_calls == want.calls, "the kinds add up to " + std::to_string(kind_calls) + " calls");
  long size_calls = 0;
  for (const json& b : r["by_size"]) size_calls += b["calls"].get<long>();
  expect(size_calls == want.calls, "the size ranges add up to " + std::to_string(size_calls) + " calls");
  expect(r["fallbacks"].size() == 1 && r["fallbacks"][0]["calls"] == 1, "fallbacks: " + r["fallbacks"].dump());

  // Each rank's schedule log: timing lines for exactly the schedules it ran.
  expect(nlogs == n, "want one schedule log per rank");
  for (int i = 0; i < nlogs; ++i) {
    std::ifstream in(logs[i]);
    std::set<std::string> ids;
    long timed = 0;
    for (std::string line; std::getline(in, line);) {
      const json j = json::parse(line);
      if (j["event"] == "schedule") ids.insert(j["id"].get<std::string>());
      if (j["event"] != "timing") continue;
      expect(ids.count(j["schedule_id"].get<std::string>()) == 1, "timing line before or without its schedule");
      expect(j["min_s"] <= j["mean_s"] && j["mean_s"] <= j["max_s"], "timing min <= mean <= max fails: " + line);
      timed += j["calls"].get<long>();
    }
    expect(timed == want.canopy_per_rank, std::string(logs[i]) + ": timing lines count " + std::to_string(timed) +
                                              " calls, want " + std::to_string(want.canopy_per_rank));
  }
}

void check_text(int n, const std::string& path) {
  const Expected want = expected_for(n);
  const std::string text = read(path);
  const std::string line = "calls: " + std::to_string(want.calls) + " MPI_Reduce/MPI_Bcast/MPI_Allreduce; " +
                           std::to_string(want.calls - want.native) + " ran a Canopy schedule, " +
                           std::to_string(want.native) + " native MPI";
  expect(text.find(line) != std::string::npos, "the text report lacks '" + line + "':\n" + text);
  expect(text.find(std::to_string(n) + " ranks on 1 node") != std::string::npos, "the text report lacks the job line");
  expect(text.find("1 calls: algorithm-native (CANOPY_*_ALGO is native") != std::string::npos,
         "the text report lacks the fallback reason");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 3 ? argv[1] : "";
  if (mode != "json" && mode != "text") {
    std::cerr << "usage: check_report json N REPORT.json LOG... | check_report text N REPORT.txt\n";
    return 2;
  }
  const int n = std::stoi(argv[2]);
  if (mode == "json") check_json(n, argv[3], argv + 4, argc - 4);
  else check_text(n, argv[3]);
  if (failures == 0) std::cout << "check_report: " << mode << " report of " << n << " ranks is right\n";
  return failures ? 1 : 0;
}
