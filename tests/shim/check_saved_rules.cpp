// Checks a CANOPY_SAVE_RULES file and a later job that ran with it (tests/shim/checks.cmake):
//   check_saved_rules RULES REPORT.json BYTES RANKS
// RULES must read back as a settings file with no errors and hold, for each collective,
// a rule for the communicator size RANKS whose sizes cover BYTES (timing_loop's message);
// the JSON report of the later job (run with CANOPY_CONFIG=RULES) must show every call of
// BYTES run by that rule's algorithm (native ones for the reason "configured"): no trials.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "config/config_file.h"

using nlohmann::json;

namespace {

int failures = 0;

void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::cerr << "check_saved_rules: " << what << "\n";
    ++failures;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: check_saved_rules RULES REPORT.json BYTES RANKS\n";
    return 2;
  }
  const canopy::config::ConfigFile file = canopy::config::read_config_file(argv[1]);
  for (const std::string& e : file.errors) expect(false, "the saved file does not read back: " + e);
  const long bytes = std::stol(argv[3]);
  const int ranks = std::stoi(argv[4]);
  std::ifstream in(argv[2]);
  std::stringstream text;
  text << in.rdbuf();
  const json report = json::parse(text.str(), nullptr, false);
  expect(!report.is_discarded(), std::string("the report ") + argv[2] + " is not JSON");
  for (const auto collective : {canopy::planner::Collective::Reduce, canopy::planner::Collective::Bcast}) {
    const std::string name = canopy::planner::to_string(collective);
    const canopy::config::Rule* rule = nullptr;
    for (const canopy::config::Rule& r : file.rules)
      if (r.matches(collective, bytes, ranks)) {
        rule = &r;
        break;
      }
    expect(rule != nullptr, "no saved rule for " + name + " of " + std::to_string(bytes) + " B on " +
                                std::to_string(ranks) + " ranks");
    if (!rule || report.is_discarded()) continue;
    expect(rule->min_ranks == ranks && rule->max_ranks == ranks, "the " + name + " rule is not for " +
                                                                      std::to_string(ranks) + " ranks alone");
    expect(rule->algorithm != "auto" && !rule->algorithm.empty(), "the " + name + " rule decides nothing");
    long calls = 0;
    for (const json& kind : report.at("kinds")) {
      if (kind.at("collective") != name || kind.at("bytes").get<long>() != bytes) continue;
      calls += kind.at("calls").get<long>();
      expect(kind.at("algorithm") == rule->algorithm,
             name + " of " + std::to_string(bytes) + " B ran " + kind.at("algorithm").dump() + ", the rule says " +
                 rule->algorithm);
      if (rule->algorithm == "native")
        expect(kind.value("reason", "") == "configured", name + ": native for " + kind.value("reason", "?"));
    }
    expect(calls > 0, "the report has no " + name + " of " + std::to_string(bytes) + " B");
    std::cout << "check_saved_rules: " << name << " of " << bytes << " B on " << ranks << " ranks: " << calls
              << " calls, all " << rule->algorithm << "\n";
  }
  if (failures == 0) std::cout << "check_saved_rules: OK\n";
  return failures == 0 ? 0 : 1;
}
