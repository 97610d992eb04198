#include "config/saved_rules.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <limits>
#include <map>
#include <sstream>
#include <tuple>

#include "planner/size_class.h"

namespace canopy::config {

using nlohmann::json;

json to_json(const Decision& d) {
  return {{"collective", planner::to_string(d.collective)},
          {"comm_size", d.comm_size},
          {"root", d.root},
          {"first_bytes", d.first_bytes},
          {"last_bytes", d.last_bytes},
          {"commutative", d.commutative},
          {"decided", d.decided},
          {"algorithm", d.algorithm},
          {"measured", d.measured}};
}

Decision decision_from_json(const json& j) {
  Decision d;
  const std::string c = j.at("collective").get<std::string>();
  if (!planner::parse_collective(c, d.collective)) throw json::other_error::create(501, "collective " + c, &j);
  d.comm_size = j.at("comm_size").get<int>();
  d.root = j.at("root").get<int>();
  d.first_bytes = j.at("first_bytes").get<std::int64_t>();
  d.last_bytes = j.at("last_bytes").get<std::int64_t>();
  d.commutative = j.at("commutative").get<int>();
  d.decided = j.at("decided").get<bool>();
  d.algorithm = j.at("algorithm").get<std::string>();
  d.measured = j.at("measured").get<std::string>();
  return d;
}

namespace {

// The calls one rule may cover: a collective, a communicator size, whether the operation
// commutes, and a byte range (the last two, so that runs of sizes sort together).
using Place = std::tuple<int, int, int, std::int64_t, std::int64_t>;  // collective, ranks, commutative, first, last
constexpr int kFirst = 3, kLast = 4;

Place place_of(const Decision& d) {
  return {static_cast<int>(d.collective), d.comm_size, d.commutative, d.first_bytes, d.last_bytes};
}

std::string range_text(std::int64_t first, std::int64_t last) {
  return first == last ? std::to_string(first) + " B" : std::to_string(first) + ".." + std::to_string(last) + " B";
}

// What the decisions of one place say.
struct Verdict {
  Place place;
  bool decided = false;
  std::string algorithm;
  std::vector<std::string> notes;  // one comment line each
};

Verdict judge(const Place& place, const std::vector<const Decision*>& here) {
  Verdict v;
  v.place = place;
  const Decision& any = *here.front();
  const std::string where = std::string(planner::to_string(any.collective)) +
                            (any.commutative == 0 ? " (non-commutative)" : "") + " on " +
                            std::to_string(any.comm_size) + " ranks, " + range_text(any.first_bytes, any.last_bytes);
  // Votes in order of first appearance, so that a tie goes to the first.
  std::vector<std::pair<std::string, int>> votes;
  for (const Decision* d : here) {
    if (!d->decided) continue;
    // (A name the settings file would not take makes no rule: every rule written must read back.)
    if (!is_algorithm_choice(d->collective, d->algorithm)) {
      v.notes.push_back(where + ": chose " + d->algorithm + ", which CANOPY_CONFIG does not take; no rule");
      continue;
    }
    auto at = std::find_if(votes.begin(), votes.end(), [&](const auto& p) { return p.first == d->algorithm; });
    if (at == votes.end()) votes.emplace_back(d->algorithm, 1);
    else ++at->second;
  }
  if (votes.empty()) {
    if (v.notes.empty()) v.notes.push_back(where + ": not decided, left to auto: " + any.measured);
    return v;
  }
  const auto best = std::max_element(votes.begin(), votes.end(),
                                     [](const auto& a, const auto& b) { return a.second < b.second; });
  v.decided = true;
  v.algorithm = best->first;
  int trials = 0;
  for (const auto& p : votes) trials += p.second;
  const Decision* shown = nullptr;
  for (const Decision* d : here)
    if (d->decided && d->algorithm == v.algorithm) {
      shown = d;
      break;
    }
  std::string line = where + ", root " + std::to_string(shown->root) + ": " + shown->measured;
  if (trials > 1) {
    line += " (" + std::to_string(best->second) + " of " + std::to_string(trials) + " trials chose " + v.algorithm;
    for (const auto& p : votes)
      if (p.first != v.algorithm) line += "; " + std::to_string(p.second) + " chose " + p.first;
    line += ")";
  }
  v.notes.push_back(line);
  return v;
}

// A rule as one line of JSON, its keys in the order a reader expects (nlohmann's objects
// sort theirs), the keys it leaves unset left out.
std::string rule_text(const Rule& r) {
  std::ostringstream out;
  out << "{\"collective\": " << json(planner::to_string(r.collective)).dump();
  if (r.min_ranks != 1) out << ", \"min_ranks\": " << r.min_ranks;
  if (r.max_ranks != INT_MAX) out << ", \"max_ranks\": " << r.max_ranks;
  if (r.min_bytes != 0) out << ", \"min_bytes\": " << r.min_bytes;
  if (r.max_bytes != INT64_MAX) out << ", \"max_bytes\": " << r.max_bytes;
  if (r.commutative >= 0) out << ", \"commutative\": " << (r.commutative ? "true" : "false");
  if (!r.algorithm.empty()) out << ", \"algorithm\": " << json(r.algorithm).dump();
  if (r.segment_bytes == -1) out << ", \"segment_bytes\": \"auto\"";
  else if (r.segment_bytes != Rule::kUnset) out << ", \"segment_bytes\": " << r.segment_bytes;
  out << "}";
  return out.str();
}

}  // namespace

std::string saved_rules_text(const std::vector<Decision>& decisions, const std::vector<Rule>& carried,
                             const std::string& header) {
  std::map<Place, std::vector<const Decision*>> by_place;  // sorted: collective, ranks, sizes
  for (const Decision& d : decisions) by_place[place_of(d)].push_back(&d);
  std::vector<Verdict> verdicts;
  for (const auto& [place, here] : by_place) verdicts.push_back(judge(place, here));

  std::ostringstream out;
  std::istringstream lines(header);
  for (std::string line; std::getline(lines, line);) out << "// " << line << "\n";
  out << "{\n  \"rules\": [";
  const char* separator = "";
  for (std::size_t i = 0; i < verdicts.size();) {
    const Verdict& v = verdicts[i];
    if (!v.decided) {
      for (const std::string& note : v.notes) out << "\n    // " << note;
      ++i;
      continue;
    }
    // A run of adjacent sizes with the same choice becomes one rule.
    std::size_t j = i;
    while (j + 1 < verdicts.size() && verdicts[j + 1].decided && verdicts[j + 1].algorithm == v.algorithm &&
           std::get<0>(verdicts[j + 1].place) == std::get<0>(v.place) &&
           std::get<1>(verdicts[j + 1].place) == std::get<1>(v.place) &&
           std::get<2>(verdicts[j + 1].place) == std::get<2>(v.place) &&
           std::get<kLast>(verdicts[j].place) + 1 == std::get<kFirst>(verdicts[j + 1].place))
      ++j;
    out << separator;
    for (std::size_t k = i; k <= j; ++k)
      for (const std::string& note : verdicts[k].notes) out << "\n    // " << note;
    Rule r;
    r.collective = static_cast<planner::Collective>(std::get<0>(v.place));
    r.min_ranks = r.max_ranks = std::get<1>(v.place);
    r.commutative = std::get<2>(v.place);
    r.min_bytes = std::get<kFirst>(v.place);
    r.max_bytes = std::get<kLast>(verdicts[j].place);
    r.algorithm = v.algorithm;
    out << "\n    " << rule_text(r);
    separator = ",";
    i = j + 1;
  }
  if (!carried.empty()) {
    out << separator << "\n    // the rules of CANOPY_CONFIG in force in this job (after the decisions: the first rule that matches wins)";
    separator = "";
    for (const Rule& r : carried) {
      out << separator << "\n    " << rule_text(r);
      separator = ",";
    }
  }
  out << "\n  ]\n}\n";
  return out.str();
}

bool rules_keep_size_classes(const std::vector<Rule>& rules) {
  for (const Rule& r : rules) {
    if (r.segment_bytes != Rule::kUnset && r.segment_bytes != -1) return false;
    if (r.min_bytes > 0 && planner::class_first_bytes(planner::size_class(r.min_bytes)) != r.min_bytes) return false;
    if (r.max_bytes != std::numeric_limits<std::int64_t>::max() && r.max_bytes >= 0 &&
        planner::class_last_bytes(planner::size_class(r.max_bytes)) != r.max_bytes)
      return false;
  }
  return true;
}

}  // namespace canopy::config
