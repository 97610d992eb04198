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

std::string describe_rule(const Rule& r) {
  auto range = [](std::int64_t lo, std::int64_t hi, std::int64_t any_lo, std::int64_t any_hi, const char* unit) {
    if (lo == any_lo && hi == any_hi) return std::string("any ") + unit;
    if (lo == hi) return std::to_string(lo) + " " + unit;
    if (hi == any_hi) return std::to_string(lo) + " " + unit + " or more";
    if (lo == any_lo) return "up to " + std::to_string(hi) + " " + unit;
    return std::to_string(lo) + ".." + std::to_string(hi) + " " + unit;
  };
  std::string out = std::string(planner::to_string(r.collective)) + ", " +
                    range(r.min_ranks, r.max_ranks, 1, INT_MAX, "ranks") + ", " +
                    range(r.min_bytes, r.max_bytes, 0, INT64_MAX, "B");
  if (r.commutative >= 0) out += r.commutative ? ", commutative operations" : ", non-commutative operations";
  out += ":";
  if (!r.algorithm.empty()) out += " algorithm " + r.algorithm;
  if (r.segment_bytes == -1) out += std::string(r.algorithm.empty() ? "" : ",") + " segments auto";
  else if (r.segment_bytes != Rule::kUnset)
    out += std::string(r.algorithm.empty() ? "" : ",") + " segments of " + std::to_string(r.segment_bytes) + " B";
  return out;
}

}  // namespace canopy::config
