#include "planner/topology.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <unordered_map>

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

bool Topology::splits_a_node() const {
  std::map<int, int> package_of_node;
  for (int r = 0; r < nranks() && !package.empty(); ++r)
    if (package_of_node.emplace(node[r], package[r]).first->second != package[r]) return true;
  return false;
}

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
  if (!t.package.empty()) {
    if (static_cast<int>(t.package.size()) != p)
      throw PlanError("topology: " + std::to_string(t.package.size()) + " package labels for " + std::to_string(p) +
                      " ranks");
    int next_package = 0;
    std::map<int, int> node_of_package;
    for (int r = 0; r < p; ++r) {
      if (t.package[r] < 0 || t.package[r] > next_package)
        throw PlanError("topology: packages must be numbered 0, 1, ... in order of first rank (rank " +
                        std::to_string(r) + ")");
      next_package = std::max(next_package, t.package[r] + 1);
      const auto [it, fresh] = node_of_package.emplace(t.package[r], t.node[r]);
      if (!fresh && it->second != t.node[r])
        throw PlanError("topology: package " + std::to_string(t.package[r]) + " spans nodes " +
                        std::to_string(it->second) + " and " + std::to_string(t.node[r]));
    }
  }
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
    if (!t.package.empty()) out.package.push_back(t.package[r]);
  }
  renumber(out.node);
  renumber(out.package);
  out.package_link = t.package_link;
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

std::vector<int> number_packages(const std::vector<int>& node, const std::vector<int>& within_node) {
  if (node.size() != within_node.size())
    throw PlanError("topology: " + std::to_string(within_node.size()) + " packages for " +
                    std::to_string(node.size()) + " ranks");
  std::map<std::pair<int, int>, int> index;
  std::vector<int> out;
  for (std::size_t r = 0; r < node.size(); ++r)
    out.push_back(index.emplace(std::make_pair(node[r], within_node[r]), static_cast<int>(index.size())).first->second);
  return out;
}

NodeMap map_nodes(const std::vector<std::uint64_t>& name, const std::vector<long>& cores, int me) {
  const int p = static_cast<int>(name.size());
  if (cores.size() != name.size() || me < 0 || me >= p)
    throw PlanError("node map: " + std::to_string(name.size()) + " names, " + std::to_string(cores.size()) +
                    " core counts, rank " + std::to_string(me));
  struct Node {
    int first = 0;
    int ranks = 0;
  };
  std::unordered_map<std::uint64_t, Node> nodes;
  NodeMap out;
  for (int r = 0; r < p; ++r) {
    Node& n = nodes.try_emplace(name[r], Node{r, 0}).first->second;
    if (r == me) out.local_rank = n.ranks;
    ++n.ranks;
  }
  out.leader = nodes.at(name[me]).first;
  out.local_size = nodes.at(name[me]).ranks;
  out.nodes = static_cast<int>(nodes.size());
  for (const auto& [key, n] : nodes) out.max_ranks_per_node = std::max(out.max_ranks_per_node, n.ranks);
  for (int r = 0; r < p && !out.oversubscribed; ++r)
    out.oversubscribed = cores[r] > 0 && nodes.at(name[r]).ranks > cores[r];
  return out;
}

std::vector<int> package_labels(const std::vector<int>& node, const std::vector<int>& machine_package) {
  Topology t;
  t.node = node;
  t.package = number_packages(node, machine_package);  // (checks the lengths first)
  const bool all_placed = std::none_of(machine_package.begin(), machine_package.end(), [](int k) { return k < 0; });
  return all_placed && t.splits_a_node() ? t.package : std::vector<int>{};
}

CostModel package_link_from_times(const CostModel& base, double within_small, double within_large,
                                  double across_small, double across_large) {
  auto ratio = [](double across, double within) {
    const double r = across / within;
    return within > 0 && across > 0 && std::isfinite(r) && r > 1 ? r : 1.0;
  };
  const double per_message = ratio(across_small, within_small), per_byte = ratio(across_large, within_large);
  CostModel link = base;
  link.alpha *= per_message;
  link.beta *= per_byte;
  for (auto& [bytes, g] : link.gap) g *= per_byte;
  return link;
}

CostModel measured_link(const CostModel& base, std::vector<std::pair<std::int64_t, double>> one_way,
                        const std::vector<std::pair<std::int64_t, double>>& gaps) {
  if (one_way.size() < 2) throw PlanError("measured_link: needs one-way times at two sizes or more");
  CostModel m;
  if (one_way.size() == 2) {
    const auto [small_bytes, small] = one_way[0];
    const auto [large_bytes, large] = one_way[1];
    // A second size no larger than the first gives no slope: latency only.
    const bool slope = large_bytes > small_bytes;
    const double beta = slope ? std::max(0.0, (large - small) / static_cast<double>(large_bytes - small_bytes)) : 0.0;
    m = hockney_model(slope ? small : std::min(small, large), beta, base.gamma);
  } else {
    double floor = 0;
    for (std::size_t i = 0; i < one_way.size(); ++i) {
      if (i > 0 && one_way[i].first <= one_way[i - 1].first)
        throw PlanError("measured_link: sizes must increase, got " + std::to_string(one_way[i - 1].first) +
                        " then " + std::to_string(one_way[i].first));
      floor = std::max(floor, one_way[i].second);
      one_way[i].second = floor;
    }
    m = plogp_model(0, std::move(one_way));
    m.gamma = base.gamma;
  }
  m.copy_per_byte = base.copy_per_byte;
  m.direct_per_byte = base.direct_per_byte;
  m.direct_fixed = base.direct_fixed;
  m.duplex = Duplex::Full;
  m.overlap = true;
  if (gaps.size() == 2 && m.ports_held_for_transfer()) {
    const auto [small_bytes, small_gap] = gaps[0];
    const auto [large_bytes, large_gap] = gaps[1];
    if (large_bytes > small_bytes && large_gap > 0 && large_gap <= kLatencyInFlight * m.transfer(large_bytes)) {
      const double per_byte = (large_gap - small_gap) / static_cast<double>(large_bytes - small_bytes);
      if (per_byte > 0) {  // a flat or falling line says nothing of a card's rate: ports held
        m.port_per_byte = per_byte;
        m.port_fixed = std::max(0.0, small_gap - per_byte * static_cast<double>(small_bytes));
      }
    }
  }
  return m;
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
  // At most kDescribedLinks of the clusters^2: 004's 88 machines probed with
  // CANOPY_TOPOLOGY=auto first came out as 40 clusters, and the report's one line held
  // 1,600 links (150 KB). The JSON form (the schedule log's, CANOPY_TOPOLOGY's file) keeps
  // every link.
  constexpr int kDescribedLinks = 16;
  const int links = t.clusters * t.clusters;
  out << "; links between nodes:";
  for (int k = 0; k < links && k < kDescribedLinks; ++k)
    out << " " << name(k / t.clusters) << "->" << name(k % t.clusters) << " "
        << t.link(k / t.clusters, k % t.clusters).spec();
  if (links > kDescribedLinks)
    out << " ... and " << links - kDescribedLinks << " more links";
  if (t.splits_a_node()) {
    out << "; packages " << *std::max_element(t.package.begin(), t.package.end()) + 1 << ", per rank";
    for (int k : t.package) out << " " << k;
    out << ", between packages " << (t.package_link ? t.package_link->spec() : "as inside one");
  }
  if (!t.slowdown.empty()) {
    out << "; slowdown";
    for (double s : t.slowdown) out << " " << s;
  }
  return out.str();
}

const CostModel& Network::link(int from, int to) const {
  if (!topology_) return model_;
  if (topology_->same_node(from, to))
    return topology_->package_link && !topology_->same_package(from, to) ? *topology_->package_link : model_;
  return topology_->link(topology_->cluster[from], topology_->cluster[to]);
}

CostModel slowest_link(const Topology& t, const CostModel& inside, std::int64_t bytes) {
  const double b = static_cast<double>(std::max<std::int64_t>(bytes, 1));
  // A link's latency is the time of an empty message: Hockney's alpha, pLogP's L + g(0)
  // (a measured link's L is 0 and its g(0) the 8-byte time: planner::measured_link).
  double alpha = inside.transfer(0), per_byte = (inside.transfer(bytes) - alpha) / b;
  const auto take = [&](const CostModel& link) {
    const double latency = link.transfer(0);
    alpha = std::max(alpha, latency);
    per_byte = std::max(per_byte, (link.transfer(bytes) - latency) / b);
  };
  for (const CostModel& link : t.links) take(link);
  if (t.package_link) take(*t.package_link);
  double slowest = 1;
  for (double s : t.slowdown) slowest = std::max(slowest, s);
  CostModel m = inside;
  if (!m.gap.empty()) {
    m.gap.clear();
    m.kind = "hockney";
  }
  m.alpha = alpha * slowest;
  m.beta = per_byte * slowest;
  return m;
}

bool keeps_latency_in_flight(const Topology& t) {
  for (const CostModel& link : t.links)
    if (link.port_per_byte > 0) return true;
  return false;
}

std::string wide_area_declines(const Topology* t, const std::string& algorithm) {
  if (t && keeps_latency_in_flight(*t)) return {};
  return algorithm +
         ": it needs a topology with links whose latency does not hold the ports (port=, as between sites far "
         "apart); where a port serves one message at a time, latency included, nothing is gained";
}

std::vector<double> cluster_cards(const Topology& t) {
  const int C = t.clusters;
  std::vector<bool> spans_nodes(static_cast<std::size_t>(C), false);
  std::vector<int> first_node(static_cast<std::size_t>(C), -1);
  for (int r = 0; r < t.nranks(); ++r) {
    int& first = first_node[t.cluster[r]];
    if (first < 0) first = t.node[r];
    else if (t.node[r] != first) spans_nodes[t.cluster[r]] = true;
  }
  std::vector<double> card(static_cast<std::size_t>(C), 0);
  const auto take = [&](int c, const CostModel& l) {
    for (const double per_byte : {l.large_message_per_byte(), l.port_per_byte})
      if (per_byte > 0 && (card[c] == 0 || per_byte < card[c])) card[c] = per_byte;
  };
  for (int c = 0; c < C; ++c)
    for (int x = 0; x < C; ++x) {
      if (x == c && !spans_nodes[c]) continue;
      take(c, t.link(c, x));
      take(c, t.link(x, c));
    }
  return card;
}

int keep_wide_area_latency_in_flight(Topology& t) {
  const int C = t.clusters;
  const std::vector<double> card = cluster_cards(t);
  int kept = 0;
  for (int a = 0; a < C; ++a)
    for (int b = 0; b < C; ++b) {
      CostModel& l = t.links[static_cast<std::size_t>(a) * C + b];
      if (a == b || l.port_per_byte > 0 || l.kind != "hockney" || l.alpha < kWideAreaLatency) continue;
      const double port = std::max(card[a], card[b]);
      if (!(port > 0)) continue;
      l.port_per_byte = port;
      ++kept;
    }
  return kept;
}

double busiest_link(const Schedule& s, const Topology& t) {
  if (t.clusters < 2 || s.is_view()) return 0;
  std::vector<std::int64_t> through(static_cast<std::size_t>(t.clusters) * t.clusters, 0);
  for (int r = 0; r < s.nranks; ++r)
    for (const Step& st : s.steps_of(r))
      if (st.kind == StepKind::Send && t.cluster[r] != t.cluster[st.peer])
        through[static_cast<std::size_t>(t.cluster[r]) * t.clusters + t.cluster[st.peer]] += s.span_bytes(st);
  double busiest = 0;
  for (int a = 0; a < t.clusters; ++a)
    for (int b = 0; b < t.clusters; ++b)
      if (const std::int64_t bytes = through[static_cast<std::size_t>(a) * t.clusters + b]; bytes > 0)
        busiest = std::max(busiest, t.link(a, b).transfer(bytes));
  return busiest;
}

}  // namespace canopy::planner
