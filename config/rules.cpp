#include "config/rules.h"

#include "planner/registry.h"

namespace canopy::config {

std::string algorithm_choices(planner::Collective c) {
  std::string out = "native, auto";
  for (const auto& n : planner::algorithm_names(c)) out += ", " + n;
  return out;
}

bool is_algorithm_choice(planner::Collective c, const std::string& value) {
  return value == "native" || value == "auto" || planner::find_algorithm(c, value) != nullptr;
}

std::string canonical(const std::vector<Rule>& rules) {
  std::string out;
  for (const Rule& r : rules)
    out += std::string(planner::to_string(r.collective)) + " " + std::to_string(r.min_bytes) + ".." +
           std::to_string(r.max_bytes) + " " + std::to_string(r.min_ranks) + ".." + std::to_string(r.max_ranks) +
           " algorithm=" + r.algorithm + " segment_bytes=" + std::to_string(r.segment_bytes) +
           " commutative=" + std::to_string(r.commutative) + "\n";
  return out;
}

}  // namespace canopy::config
