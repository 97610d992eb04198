#include "planner/topology_json.h"

#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include "planner/problem.h"

namespace canopy::planner {

namespace {

using nlohmann::json;

std::string label_text(const json& j) { return j.is_string() ? j.get<std::string>() : j.dump(); }

// A JSON value for a message, cut short: a field holding a large array should not
// make a one-line error hundreds of characters long.
std::string shown(const json& j) {
  constexpr std::size_t kMax = 60;
  const std::string text = j.dump();
  return text.size() <= kMax ? text : text.substr(0, kMax) + "...";
}

// Per-rank labels (strings or integers) -> indices in order of first appearance.
std::vector<int> read_labels(const json& array, const char* field, std::vector<std::string>* names) {
  if (!array.is_array() || array.empty())
    throw std::invalid_argument(std::string("topology: \"") + field +
                                "\" must be a non-empty array of labels (strings or integers), got " + shown(array));
  std::map<std::string, int> index;
  std::vector<int> out;
  for (const json& l : array) {
    if (!l.is_string() && !l.is_number_integer())
      throw std::invalid_argument(std::string("topology: \"") + field + "\"[" + std::to_string(out.size()) +
                                  "] is " + shown(l) + "; labels are strings or integers");
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
                                shown(value));
  try {
    return parse_model(value.get<std::string>());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("topology: link \"" + key + "\": " + e.what());
  }
}

void check_keys(const json& j) {
  if (!j.is_object()) throw std::invalid_argument("topology: expected a JSON object, got " + shown(j));
  for (const auto& [key, value] : j.items())
    if (key != "ranks" && key != "nodes" && key != "links" && key != "slowdown" && key != "packages" &&
        key != "package_link")
      throw std::invalid_argument("topology: unknown key \"" + key +
                                  "\" (allowed: ranks, nodes, links, slowdown, packages, package_link)");
  if (!j.contains("ranks")) throw std::invalid_argument("topology: \"ranks\" (a cluster label per rank) is required");
}

// The node of every rank, numbered in order of first rank; `names` gets a label per
// node for messages. From "nodes", else from the caller's `nodes`, else a node per rank.
std::vector<int> read_nodes(const json& j, const std::vector<int>& nodes, int p, std::vector<std::string>& names) {
  std::vector<int> out;
  if (j.contains("nodes")) {
    out = read_labels(j["nodes"], "nodes", &names);
    if (static_cast<int>(out.size()) != p)
      throw std::invalid_argument("topology: \"nodes\" has " + std::to_string(out.size()) + " labels for " +
                                  std::to_string(p) + " ranks (one per rank, as \"ranks\")");
    return out;
  }
  if (!nodes.empty() && static_cast<int>(nodes.size()) != p)
    throw std::invalid_argument("topology: " + std::to_string(nodes.size()) + " nodes known for the " +
                                std::to_string(p) + " ranks of \"ranks\"");
  if (nodes.empty())
    for (int r = 0; r < p; ++r) out.push_back(r);
  else
    out = nodes;
  // Renumbered in order of first rank (given numbers may come in any order).
  std::map<int, int> index;
  for (int& n : out) {
    const auto [it, fresh] = index.emplace(n, static_cast<int>(index.size()));
    if (fresh) names.push_back(std::to_string(n));
    n = it->second;
  }
  return out;
}

// A node's ranks must lie in one cluster: its shared memory is one place. Checked here
// (check_topology checks it too) to name the labels the file used.
void check_nodes_in_one_cluster(const Topology& t, const std::vector<std::string>& node_names) {
  std::map<int, int> first_rank_of_node;
  for (int r = 0; r < t.nranks(); ++r) {
    const auto [it, fresh] = first_rank_of_node.emplace(t.node[r], r);
    const int first = it->second;
    if (!fresh && t.cluster[first] != t.cluster[r])
      throw std::invalid_argument("topology: node \"" + node_names[t.node[r]] + "\" holds rank " +
                                  std::to_string(first) + " of cluster \"" + t.labels[t.cluster[first]] +
                                  "\" and rank " + std::to_string(r) + " of cluster \"" + t.labels[t.cluster[r]] +
                                  "\"; a node lies in one cluster");
  }
}

std::vector<double> read_slowdowns(const json& j, int p) {
  std::vector<double> out;
  if (!j.contains("slowdown")) return out;
  const json& s = j["slowdown"];
  if (!s.is_array() || static_cast<int>(s.size()) != p)
    throw std::invalid_argument("topology: \"slowdown\" must be an array of " + std::to_string(p) +
                                " numbers (one per rank), got " +
                                (s.is_array() ? std::to_string(s.size()) + " entries" : shown(s)));
  for (const json& v : s) {
    if (!v.is_number() || !(v.get<double>() > 0) || v.get<double>() > 1e9)
      throw std::invalid_argument("topology: \"slowdown\"[" + std::to_string(out.size()) + "] is " + shown(v) +
                                  "; slowdowns are positive numbers up to 1e9");
    out.push_back(v.get<double>());
  }
  return out;
}

// The package of every rank from "packages" (labels within the rank's node), numbered
// over the whole topology in order of first rank; empty without the key.
std::vector<int> read_packages(const json& j, const std::vector<int>& node) {
  if (!j.contains("packages")) return {};
  const std::vector<int> within = read_labels(j["packages"], "packages", nullptr);
  if (within.size() != node.size())
    throw std::invalid_argument("topology: \"packages\" has " + std::to_string(within.size()) + " labels for " +
                                std::to_string(node.size()) + " ranks (one per rank, as \"ranks\")");
  return planner::number_packages(node, within);
}

// The clusters at both ends of a link key "A-B" or "A->B". Labels may hold '-'
// themselves (site names like "grid-orsay"), so every place of the separator is tried;
// exactly one must leave a label on each side.
std::pair<int, int> link_ends(const std::string& key, const std::string& separator,
                              const std::map<std::string, int>& cluster_index) {
  std::vector<std::pair<int, int>> splits;
  std::string unknown;  // a side that is no label, from the first place tried
  for (auto at = key.find(separator); at != std::string::npos; at = key.find(separator, at + 1)) {
    const std::string a = key.substr(0, at), b = key.substr(at + separator.size());
    const auto ia = cluster_index.find(a), ib = cluster_index.find(b);
    if (ia != cluster_index.end() && ib != cluster_index.end()) splits.emplace_back(ia->second, ib->second);
    else if (unknown.empty()) unknown = ia == cluster_index.end() ? a : b;
  }
  if (splits.empty())
    throw std::invalid_argument("topology: link \"" + key + "\" names \"" + unknown +
                                "\", which is not a label of \"ranks\"");
  if (splits.size() > 1)
    throw std::invalid_argument("topology: link \"" + key + "\" is ambiguous: it splits into labels of \"ranks\" " +
                                std::to_string(splits.size()) + " ways");
  return splits.front();
}

// Every directed link, from the "links" object; pairs it does not cover go to `missing`.
// A directed key ("A->B") wins over a symmetric one ("A-B"), which wins over "default",
// whatever their order in the file. A key equal to a label is that cluster's own link
// (between two of its nodes).
std::vector<CostModel> read_links(const json& j, const Topology& t, std::vector<std::pair<int, int>>& missing) {
  const int C = t.clusters;
  std::map<std::string, int> cluster_index;
  for (int c = 0; c < C; ++c) cluster_index[t.labels[c]] = c;
  std::vector<std::optional<CostModel>> directed(C * C), symmetric(C * C);
  std::optional<CostModel> fallback;
  if (j.contains("links")) {
    if (!j["links"].is_object())
      throw std::invalid_argument("topology: \"links\" must be an object of \"A-B\": \"model spec\", got " +
                                  shown(j["links"]));
    for (const auto& [key, value] : j["links"].items()) {
      const CostModel model = read_link(value, key);
      if (key == "default") {
        fallback = model;
      } else if (const auto own = cluster_index.find(key); own != cluster_index.end()) {
        directed[own->second * C + own->second] = model;
      } else if (key.find("->") != std::string::npos) {
        const auto [a, b] = link_ends(key, "->", cluster_index);
        directed[a * C + b] = model;
      } else if (key.find('-') != std::string::npos) {
        const auto [a, b] = link_ends(key, "-", cluster_index);
        symmetric[a * C + b] = symmetric[b * C + a] = model;
      } else {
        throw std::invalid_argument("topology: link key \"" + key +
                                    "\" is not \"A-B\", \"A->B\", a cluster label or \"default\"");
      }
    }
  }
  // A cluster on one node never carries a message between two of its nodes: its own
  // link is not needed, so not missing.
  std::vector<std::set<int>> nodes_of(C);
  for (int r = 0; r < t.nranks(); ++r) nodes_of[t.cluster[r]].insert(t.node[r]);
  std::vector<CostModel> links;
  for (int a = 0; a < C; ++a)
    for (int b = 0; b < C; ++b) {
      const auto& given = directed[a * C + b] ? directed[a * C + b] : symmetric[a * C + b];
      const auto& chosen = given ? given : fallback;
      if (!chosen && !(a == b && nodes_of[a].size() == 1)) missing.emplace_back(a, b);
      links.push_back(chosen ? *chosen : default_model());
    }
  return links;
}

}  // namespace

TopologyFile topology_from_json(const json& j, const std::vector<int>& nodes) {
  check_keys(j);
  TopologyFile out;
  Topology& t = out.topology;
  t.cluster = read_labels(j["ranks"], "ranks", &t.labels);
  t.clusters = static_cast<int>(t.labels.size());
  const int p = static_cast<int>(t.cluster.size());
  std::vector<std::string> node_names;
  t.node = read_nodes(j, nodes, p, node_names);
  check_nodes_in_one_cluster(t, node_names);
  t.slowdown = read_slowdowns(j, p);
  t.links = read_links(j, t, out.missing);
  t.package = read_packages(j, t.node);
  if (j.contains("package_link")) t.package_link = read_link(j["package_link"], "package_link");
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
  // Written as numbered over the whole topology: labels within a node read back the same.
  if (!t.package.empty()) out["packages"] = t.package;
  if (t.package_link) out["package_link"] = t.package_link->spec();
  return out;
}

}  // namespace canopy::planner
