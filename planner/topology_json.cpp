#include "planner/topology_json.h"

#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "planner/problem.h"

namespace canopy::planner {

namespace {

using nlohmann::json;

std::string label_text(const json& j) { return j.is_string() ? j.get<std::string>() : j.dump(); }

// Per-rank labels (strings or integers) -> indices in order of first appearance.
std::vector<int> read_labels(const json& array, const char* field, std::vector<std::string>* names) {
  if (!array.is_array() || array.empty())
    throw std::invalid_argument(std::string("topology: \"") + field + "\" must be a non-empty array of labels");
  std::map<std::string, int> index;
  std::vector<int> out;
  for (const json& l : array) {
    if (!l.is_string() && !l.is_number_integer())
      throw std::invalid_argument(std::string("topology: \"") + field + "\" holds " + l.dump() +
                                  "; labels are strings or integers");
    const std::string text = label_text(l);
    const auto [it, fresh] = index.emplace(text, static_cast<int>(index.size()));
    if (fresh && names) names->push_back(text);
    out.push_back(it->second);
  }
  return out;
}

CostModel read_link(const json& value, const std::string& key) {
  if (!value.is_string())
    throw std::invalid_argument("topology: link \"" + key + "\" must be a cost model spec string, got " +
                                value.dump());
  try {
    return parse_model(value.get<std::string>());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("topology: link \"" + key + "\": " + e.what());
  }
}

}  // namespace

TopologyFile topology_from_json(const json& j, const std::vector<int>& nodes) {
  if (!j.is_object()) throw std::invalid_argument("topology: expected a JSON object");
  for (const auto& [key, value] : j.items())
    if (key != "ranks" && key != "nodes" && key != "links" && key != "slowdown")
      throw std::invalid_argument("topology: unknown key \"" + key + "\" (allowed: ranks, nodes, links, slowdown)");
  if (!j.contains("ranks")) throw std::invalid_argument("topology: \"ranks\" (a cluster label per rank) is required");
  TopologyFile out;
  Topology& t = out.topology;
  t.cluster = read_labels(j["ranks"], "ranks", &t.labels);
  t.clusters = static_cast<int>(t.labels.size());
  const int p = static_cast<int>(t.cluster.size());
  if (j.contains("nodes")) {
    t.node = read_labels(j["nodes"], "nodes", nullptr);
  } else if (!nodes.empty()) {
    t.node = nodes;
  } else {
    for (int r = 0; r < p; ++r) t.node.push_back(r);
  }
  if (static_cast<int>(t.node.size()) != p)
    throw std::invalid_argument("topology: " + std::to_string(t.node.size()) + " node labels for " +
                                std::to_string(p) + " ranks");
  {
    // Renumber nodes in order of first rank (given labels may come in any order).
    std::map<int, int> index;
    for (int& n : t.node) n = index.emplace(n, static_cast<int>(index.size())).first->second;
  }
  if (j.contains("slowdown")) {
    const json& s = j["slowdown"];
    if (!s.is_array() || static_cast<int>(s.size()) != p)
      throw std::invalid_argument("topology: \"slowdown\" must be an array of " + std::to_string(p) +
                                  " numbers (one per rank)");
    for (const json& v : s) {
      if (!v.is_number() || !(v.get<double>() > 0) || v.get<double>() > 1e9)
        throw std::invalid_argument("topology: slowdown " + v.dump() + " is not a positive number up to 1e9");
      t.slowdown.push_back(v.get<double>());
    }
  }

  std::map<std::string, int> cluster_index;
  for (int c = 0; c < t.clusters; ++c) cluster_index[t.labels[c]] = c;
  auto cluster_named = [&](const std::string& name, const std::string& key) {
    const auto it = cluster_index.find(name);
    if (it == cluster_index.end())
      throw std::invalid_argument("topology: link \"" + key + "\" names \"" + name +
                                  "\", which is not a label of \"ranks\"");
    return it->second;
  };
  const int C = t.clusters;
  std::vector<std::optional<CostModel>> directed(C * C), symmetric(C * C);
  std::optional<CostModel> fallback;
  if (j.contains("links")) {
    if (!j["links"].is_object())
      throw std::invalid_argument("topology: \"links\" must be an object of \"A-B\": \"model spec\"");
    for (const auto& [key, value] : j["links"].items()) {
      const CostModel model = read_link(value, key);
      if (key == "default") {
        fallback = model;
      } else if (const auto arrow = key.find("->"); arrow != std::string::npos) {
        const int a = cluster_named(key.substr(0, arrow), key), b = cluster_named(key.substr(arrow + 2), key);
        directed[a * C + b] = model;
      } else if (cluster_index.count(key)) {
        const int a = cluster_index[key];
        directed[a * C + a] = model;
      } else if (const auto dash = key.find('-'); dash != std::string::npos) {
        const int a = cluster_named(key.substr(0, dash), key), b = cluster_named(key.substr(dash + 1), key);
        symmetric[a * C + b] = symmetric[b * C + a] = model;
      } else {
        throw std::invalid_argument("topology: link key \"" + key +
                                    "\" is not \"A-B\", \"A->B\", a cluster label or \"default\"");
      }
    }
  }
  for (int a = 0; a < C; ++a)
    for (int b = 0; b < C; ++b) {
      const auto& chosen = directed[a * C + b] ? directed[a * C + b] : symmetric[a * C + b] ? symmetric[a * C + b] : fallback;
      if (!chosen) out.missing.emplace_back(a, b);
      t.links.push_back(chosen ? *chosen : default_model());
    }
  try {
    check_topology(t);
  } catch (const PlanError& e) {
    throw std::invalid_argument(e.what());
  }
  return out;
}

TopologyFile read_topology_file(const std::string& path, const std::vector<int>& nodes) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("cannot read topology file " + path);
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    throw std::invalid_argument("topology file " + path + " is not JSON: " + e.what());
  }
  try {
    return topology_from_json(j, nodes);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(path + ": " + e.what());
  }
}

json topology_to_json(const Topology& t) {
  auto name = [&](int c) { return t.labels.empty() ? "c" + std::to_string(c) : t.labels[c]; };
  json ranks = json::array(), nodes = json::array(), links = json::object();
  for (int r = 0; r < t.nranks(); ++r) {
    ranks.push_back(name(t.cluster[r]));
    nodes.push_back(t.node[r]);
  }
  for (int a = 0; a < t.clusters; ++a)
    for (int b = 0; b < t.clusters; ++b) links[name(a) + "->" + name(b)] = t.link(a, b).spec();
  json out = {{"ranks", ranks}, {"nodes", nodes}, {"links", links}};
  if (!t.slowdown.empty()) out["slowdown"] = t.slowdown;
  return out;
}

}  // namespace canopy::planner
