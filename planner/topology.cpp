#include "planner/topology.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "planner/problem.h"

namespace canopy::planner {

namespace {

// Renumbers labels 0..k-1 in order of first appearance; returns k.
int renumber(std::vector<int>& labels) {
  std::map<int, int> index;
  for (int& l : labels) {
    const auto it = index.emplace(l, static_cast<int>(index.size())).first;
    l = it->second;
  }
  return static_cast<int>(index.size());
}

// "0-1,4,6-7" for a sorted rank list.
std::string ranges(const std::vector<int>& ranks) {
  std::ostringstream out;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    out << (i ? "," : "") << ranks[i];
    if (j > i) out << "-" << ranks[j];
    i = j + 1;
  }
  return out.str();
}

}  // namespace

int Topology::nodes() const { return node.empty() ? 0 : *std::max_element(node.begin(), node.end()) + 1; }

std::vector<int> Topology::members(int c) const {
  std::vector<int> out;
  for (int r = 0; r < nranks(); ++r)
    if (cluster[r] == c) out.push_back(r);
  return out;
}

void check_topology(const Topology& t) {
  const int p = t.nranks();
  if (p < 1) throw PlanError("topology: no ranks");
  if (static_cast<int>(t.cluster.size()) != p)
    throw PlanError("topology: " + std::to_string(t.cluster.size()) + " cluster labels for " + std::to_string(p) +
                    " ranks");
  if (t.clusters < 1) throw PlanError("topology: at least one cluster");
  if (t.links.size() != static_cast<std::size_t>(t.clusters) * t.clusters)
    throw PlanError("topology: " + std::to_string(t.links.size()) + " links for " + std::to_string(t.clusters) +
                    " clusters (want clusters^2)");
  if (!t.slowdown.empty() && static_cast<int>(t.slowdown.size()) != p)
    throw PlanError("topology: " + std::to_string(t.slowdown.size()) + " slowdowns for " + std::to_string(p) +
                    " ranks");
  for (double s : t.slowdown)
    if (!(s > 0)) throw PlanError("topology: slowdowns must be positive");
  int next_node = 0, next_cluster = 0;
  std::map<int, int> cluster_of_node;
  for (int r = 0; r < p; ++r) {
    if (t.node[r] < 0 || t.node[r] > next_node || t.cluster[r] < 0 || t.cluster[r] > next_cluster ||
        t.cluster[r] >= t.clusters)
      throw PlanError("topology: nodes and clusters must be numbered 0, 1, ... in order of first rank (rank " +
                      std::to_string(r) + ")");
    next_node = std::max(next_node, t.node[r] + 1);
    next_cluster = std::max(next_cluster, t.cluster[r] + 1);
    const auto [it, fresh] = cluster_of_node.emplace(t.node[r], t.cluster[r]);
    if (!fresh && it->second != t.cluster[r])
      throw PlanError("topology: node " + std::to_string(t.node[r]) + " spans clusters " + std::to_string(it->second) +
                      " and " + std::to_string(t.cluster[r]));
  }
  if (next_cluster != t.clusters)
    throw PlanError("topology: " + std::to_string(t.clusters) + " clusters declared, " +
                    std::to_string(next_cluster) + " used");
  if (!t.labels.empty() && static_cast<int>(t.labels.size()) != t.clusters)
    throw PlanError("topology: " + std::to_string(t.labels.size()) + " labels for " + std::to_string(t.clusters) +
                    " clusters");
}

Topology restrict_topology(const Topology& t, const std::vector<int>& ranks) {
  Topology out;
  std::vector<int> old_cluster;  // new cluster index -> old
  for (int r : ranks) {
    out.node.push_back(t.node.at(r));
    out.cluster.push_back(t.cluster.at(r));
    if (!t.slowdown.empty()) out.slowdown.push_back(t.slowdown[r]);
  }
  renumber(out.node);
  std::vector<int> old = out.cluster;
  out.clusters = renumber(out.cluster);
  old_cluster.assign(out.clusters, 0);
  for (std::size_t i = 0; i < old.size(); ++i) old_cluster[out.cluster[i]] = old[i];
  for (int a = 0; a < out.clusters; ++a)
    for (int b = 0; b < out.clusters; ++b) out.links.push_back(t.link(old_cluster[a], old_cluster[b]));
  if (!t.labels.empty())
    for (int c : old_cluster) out.labels.push_back(t.labels[c]);
  return out;
}

Topology slowdown_topology(const CostModel& link, std::vector<double> slowdown) {
  Topology t;
  const int p = static_cast<int>(slowdown.size());
  for (int r = 0; r < p; ++r) t.node.push_back(r);
  t.cluster.assign(p, 0);
  t.links = {link};
  t.slowdown = std::move(slowdown);
  return t;
}

std::string describe_topology(const Topology& t) {
  std::ostringstream out;
  out << t.nranks() << " ranks on " << t.nodes() << " node" << (t.nodes() == 1 ? "" : "s") << " in " << t.clusters
      << " cluster" << (t.clusters == 1 ? "" : "s") << ":";
  auto name = [&](int c) { return t.labels.empty() ? "c" + std::to_string(c) : t.labels[c]; };
  for (int c = 0; c < t.clusters; ++c) out << (c ? "; " : " ") << name(c) << " = ranks " << ranges(t.members(c));
  out << "; links between nodes:";
  for (int a = 0; a < t.clusters; ++a)
    for (int b = 0; b < t.clusters; ++b) out << " " << name(a) << "->" << name(b) << " " << t.link(a, b).spec();
  if (!t.slowdown.empty()) {
    out << "; slowdown";
    for (double s : t.slowdown) out << " " << s;
  }
  return out.str();
}

const CostModel& Network::link(int from, int to) const {
  if (!topology_ || topology_->same_node(from, to)) return model_;
  return topology_->link(topology_->cluster[from], topology_->cluster[to]);
}

}  // namespace canopy::planner
