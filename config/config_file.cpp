#include "config/config_file.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace canopy::config {

namespace {

using nlohmann::json;

const char* const kRuleKeys =
    "collective, min_bytes, max_bytes, min_ranks, max_ranks, commutative, algorithm, segment_bytes";

// A JSON scalar as the text an environment variable would hold; false when the value
// is an object, an array or null. Numbers keep JSON's spelling (CANOPY_RHO: 0.3).
bool scalar_text(const json& v, std::string& out) {
  if (v.is_string()) out = v.get<std::string>();
  else if (v.is_boolean()) out = v.get<bool>() ? "1" : "0";
  else if (v.is_number()) out = v.dump();
  else return false;
  return true;
}

// Reads rule `r` into `rule`; on a problem returns the message (the rule is dropped).
std::string read_rule(const json& r, Rule& rule) {
  if (!r.is_object()) return "is not an object (keys: " + std::string(kRuleKeys) + ")";
  auto integer = [&](const char* key, std::int64_t lo, std::int64_t hi, std::int64_t& out) -> std::string {
    const json& v = r.at(key);
    if (!v.is_number_integer() || v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi)
      return std::string(key) + "=" + v.dump() + " is not valid (allowed: an integer from " + std::to_string(lo) +
             " to " + std::to_string(hi) + ")";
    out = v.get<std::int64_t>();
    return "";
  };
  for (const auto& [key, value] : r.items()) {
    std::string problem;
    if (key == "collective") {
      const std::string c = value.is_string() ? value.get<std::string>() : value.dump();
      if (!planner::parse_collective(c, rule.collective))
        problem = "collective=" + value.dump() + " is not valid (allowed: reduce, bcast, allreduce)";
    } else if (key == "min_bytes") {
      problem = integer("min_bytes", 0, INT64_MAX, rule.min_bytes);
    } else if (key == "max_bytes") {
      problem = integer("max_bytes", 0, INT64_MAX, rule.max_bytes);
    } else if (key == "min_ranks" || key == "max_ranks") {
      std::int64_t n = 0;
      problem = integer(key.c_str(), 1, INT_MAX, n);
      (key == "min_ranks" ? rule.min_ranks : rule.max_ranks) = static_cast<int>(n);
    } else if (key == "commutative") {
      if (value.is_boolean()) rule.commutative = value.get<bool>() ? 1 : 0;
      else problem = "commutative=" + value.dump() + " is not valid (allowed: true, false)";
    } else if (key == "algorithm") {
      rule.algorithm = value.is_string() ? value.get<std::string>() : value.dump();
    } else if (key == "segment_bytes") {
      if (value == "auto") rule.segment_bytes = -1;
      else if (value.is_number_integer() && value.get<std::int64_t>() >= 0) rule.segment_bytes = value.get<std::int64_t>();
      else problem = "segment_bytes=" + value.dump() + " is not valid (allowed: \"auto\" or an integer >= 0)";
    } else {
      problem = "unknown key " + json(key).dump() + " (allowed: " + kRuleKeys + ")";
    }
    if (!problem.empty()) return problem;
  }
  if (!r.contains("collective")) return "has no collective (allowed: reduce, bcast, allreduce)";
  if (rule.commutative >= 0 && rule.collective == planner::Collective::Bcast)
    return "commutative applies to reduce and allreduce rules only (a broadcast has no operation)";
  if (!rule.algorithm.empty() && !is_algorithm_choice(rule.collective, rule.algorithm))
    return "algorithm=" + json(rule.algorithm).dump() + " is not valid (allowed: " + algorithm_choices(rule.collective) + ")";
  if (rule.algorithm.empty() && rule.segment_bytes == Rule::kUnset)
    return "sets neither algorithm nor segment_bytes";
  if (rule.min_bytes > rule.max_bytes) return "min_bytes is larger than max_bytes";
  if (rule.min_ranks > rule.max_ranks) return "min_ranks is larger than max_ranks";
  return "";
}

}  // namespace

ConfigFile parse_config_text(const std::string& text, const std::string& origin) {
  ConfigFile out;
  const std::string where = "CANOPY_CONFIG='" + origin + "'";
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false, /*ignore_comments=*/true);
  if (doc.is_discarded() || !doc.is_object()) {
    out.errors.push_back(where + " is not a JSON object of CANOPY_* settings and \"rules\"; the file is ignored");
    return out;
  }
  for (const auto& [key, value] : doc.items()) {
    if (key == "rules") {
      if (!value.is_array()) {
        out.errors.push_back(where + ": \"rules\" is not a list; no rules apply");
        continue;
      }
      for (std::size_t i = 0; i < value.size(); ++i) {
        Rule rule;
        rule.origin = "rules[" + std::to_string(i) + "] of " + origin;
        const std::string problem = read_rule(value[i], rule);
        if (problem.empty()) out.rules.push_back(std::move(rule));
        else out.errors.push_back(where + ": rules[" + std::to_string(i) + "] " + problem + "; the rule is ignored");
      }
    } else if (key == "CANOPY_CONFIG") {
      out.errors.push_back(where + ": a settings file cannot name another (CANOPY_CONFIG); the key is ignored");
    } else {
      std::string text_value;
      if (!scalar_text(value, text_value))
        out.errors.push_back(where + ": " + json(key).dump() + "=" + value.dump() +
                             " is not valid (allowed: a string, a number or a boolean); the key is ignored");
      else
        out.settings.emplace_back(key, text_value);
    }
  }
  return out;
}

ConfigFile read_config_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    ConfigFile out;
    out.errors.push_back("CANOPY_CONFIG='" + path + "': cannot read the file; it is ignored");
    return out;
  }
  std::stringstream text;
  text << in.rdbuf();
  return parse_config_text(text.str(), path);
}

}  // namespace canopy::config
