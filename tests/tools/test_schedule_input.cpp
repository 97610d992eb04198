// What canopy-view reads (tools/view/schedule_input.h): the "topology" recorded next to
// a schedule, in a CANOPY_SCHEDULE_LOG line or canopy-plan --json output.
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "planner/problem.h"
#include "planner/registry.h"
#include "planner/schedule_json.h"
#include "planner/simulate.h"
#include "planner/topology_json.h"
#include "tools/view/schedule_input.h"

using namespace canopy;
using nlohmann::json;

namespace {

planner::Schedule flat_bcast(int p) {
  planner::Problem problem;
  problem.collective = planner::Collective::Bcast;
  problem.nranks = p;
  problem.count = 1000;
  return planner::find_algorithm(planner::Collective::Bcast, "flat")->plan(problem);
}

const char* const kTopology = R"({"ranks": ["s0", "s0", "s1"], "nodes": [1, 2, 3],
  "links": {"default": "hockney:alpha=1e-3,beta=0"}, "slowdown": [2, 1, 1]})";

// A schedule log line as the shim writes it, with `topology` unless it is null.
std::string log_line(const planner::Schedule& s, const json& topology) {
  json line = {{"event", "schedule"}, {"model", "hockney:alpha=1e-6,beta=0"}, {"predicted_s", 1.0},
               {"schedule", planner::schedule_to_json(s)}};
  if (!topology.is_null()) line["topology"] = topology;
  return line.dump() + "\n";
}

// The error for a log holding a timing line, then `line`.
std::string error_of(const std::string& line) {
  try {
    tools::read_schedules("{\"event\":\"timing\"}\n" + line);
  } catch (const tools::InputError& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("canopy-view input: a recorded topology is read with its schedule", "[topology]") {
  const planner::Schedule s = flat_bcast(3);
  const std::string text = "{\"event\":\"timing\"}\n" + log_line(s, nullptr) + log_line(s, json::parse(kTopology));
  const auto entries = tools::read_schedules(text);
  REQUIRE(entries.size() == 2);
  CHECK(entries[0].topology == nullptr);
  REQUIRE(entries[1].topology != nullptr);
  CHECK(entries[1].topology->clusters == 2);
  // Timed on it: two messages from rank 0 (slowdown 2) over 1 ms links.
  const auto sim = planner::simulate(s, planner::parse_model(entries[1].model), entries[1].topology.get());
  REQUIRE(sim.ok);
  CHECK(sim.makespan == Approx(2 * 2 * 1e-3));
}

TEST_CASE("canopy-view input: a recorded topology that cannot be used is named", "[topology]") {
  const planner::Schedule s = flat_bcast(3);
  CHECK(error_of(log_line(s, json::parse(R"({"ranks": ["s0", "s0", "s1"], "extra": 1})"))) ==
        "line 2: the topology does not read back: topology: unknown key \"extra\" (allowed: ranks, nodes, links, "
        "slowdown, packages, package_link)");
  CHECK(error_of(log_line(s, json::parse(R"({"ranks": ["s0", "s1", "s1"]})"))) ==
        "line 2: the topology has no link from cluster \"s0\" to \"s1\"");
  CHECK(error_of(log_line(flat_bcast(4), json::parse(kTopology))) == "line 2: the topology has 3 ranks, the schedule 4");
  CHECK(error_of(log_line(s, json::parse("[1]"))) ==
        "line 2: the topology does not read back: topology: expected a JSON object, got [1]");
}
