#include "planner/cluster.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>

namespace canopy::planner {

namespace {

using Matrix = std::vector<std::vector<double>>;

constexpr double kNoEdge = std::numeric_limits<double>::infinity();

std::string number_text(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

void check_input(const Matrix& distance, double rho) {
  // Written so that NaN fails too. The upper bound only catches a percentage given
  // where a fraction is meant (rho = 20 for 20%): no sensible tolerance is that wide.
  if (!(rho > 0 && rho <= 10))
    throw std::invalid_argument("clustering: rho = " + number_text(rho) +
                                " is not in (0, 10] (a fraction: 0.2 is 20%)");
  const std::size_t n = distance.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (distance[i].size() != n)
      throw std::invalid_argument("clustering: the distance matrix is not square: row " + std::to_string(i) +
                                  " has " + std::to_string(distance[i].size()) + " entries, " +
                                  std::to_string(n) + " rows");
    for (std::size_t j = 0; j < n; ++j) {
      // Checked on the diagonal too, although it is not used: a NaN or a negative
      // number anywhere means the measurement went wrong. Infinity is refused rather
      // than read as "unreachable": (1 + rho) * infinity would let any edge through
      // the tolerance tests, and "no edge" already has a spelling, 0.
      const double d = distance[i][j];
      if (!std::isfinite(d) || d < 0)
        throw std::invalid_argument("clustering: distance[" + std::to_string(i) + "][" + std::to_string(j) +
                                    "] = " + number_text(d) + " is not a finite number >= 0");
    }
  }
}

// One undirected edge from the two directed measurements: their mean, or the one
// measured when the other is 0 ("not measured"); both 0: no edge.
// The mean rather than the maximum: for latency, both directions measure the same
// link (NWS, which 004 takes its distances from, derives latency from round trips,
// which is the mean), and averaging two measurements reduces their noise, where the
// maximum biases every edge upwards by an amount that depends on the noise. On 004's
// Table 4 with +-3% independent noise per entry, where the two Orsay clusters are
// 1.306 apart against a tolerance of 1.30, a simulation of this algorithm merged them
// in 4 of 100 draws with the maximum, in 2 of 600 with the mean. A link that really
// is slower one way still gets its own model per direction in the topology ("A->B");
// clustering only has to group the nodes.
double edge_weight(const Matrix& distance, std::size_t i, std::size_t j) {
  const double there = distance[i][j], back = distance[j][i];
  if (there == 0 || back == 0) return there + back > 0 ? there + back : kNoEdge;
  return (there + back) / 2;
}

struct Edge {
  double weight;
  int a, b;  // a < b
};

// Every edge, by non-decreasing weight. Ties go by node indices so that the result
// does not depend on the sort's implementation.
std::vector<Edge> edges_by_weight(const Matrix& distance) {
  std::vector<Edge> edges;
  const int n = static_cast<int>(distance.size());
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b)
      if (const double w = edge_weight(distance, a, b); w != kNoEdge) edges.push_back({w, a, b});
  std::sort(edges.begin(), edges.end(), [](const Edge& x, const Edge& y) {
    return x.weight != y.weight ? x.weight < y.weight : x.a != y.a ? x.a < y.a : x.b < y.b;
  });
  return edges;
}

// Each node's shortest edge (kNoEdge for a node without edges).
std::vector<double> min_edges(int n, const std::vector<Edge>& edges) {
  std::vector<double> out(n, kNoEdge);
  for (const Edge& e : edges) {
    out[e.a] = std::min(out[e.a], e.weight);
    out[e.b] = std::min(out[e.b], e.weight);
  }
  return out;
}

// The subnets as disjoint sets, each knowing the shortest edge merged into it.
class Subnets {
 public:
  explicit Subnets(int n) : parent_(n), shortest_(n, kNoEdge) { std::iota(parent_.begin(), parent_.end(), 0); }

  int find(int x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];  // path halving
    return x;
  }
  // kNoEdge for a node still alone: Algorithm 1 applies the subnet test only to a node
  // "in a subnet", and (1 + rho) * infinity passes every edge.
  double shortest_edge(int x) { return shortest_[find(x)]; }
  void merge(int a, int b, double weight) {
    const int ra = find(a), rb = find(b);
    parent_[rb] = ra;
    shortest_[ra] = std::min({shortest_[ra], shortest_[rb], weight});
  }

 private:
  std::vector<int> parent_;
  std::vector<double> shortest_;
};

// Algorithm 1's tests for one edge: it may merge a's and b's subnets.
bool may_merge(const Edge& e, double limit_factor, const std::vector<double>& min_edge, Subnets& subnets) {
  const double w = e.weight;
  if (w > limit_factor * min_edge[e.a] || w > limit_factor * min_edge[e.b]) return false;
  return !(w > limit_factor * subnets.shortest_edge(e.a) || w > limit_factor * subnets.shortest_edge(e.b));
}

// Cluster indices in order of first node.
std::vector<int> number_by_first_node(int n, Subnets& subnets) {
  std::map<int, int> index_of_root;
  std::vector<int> out(n);
  for (int i = 0; i < n; ++i)
    out[i] = index_of_root.emplace(subnets.find(i), static_cast<int>(index_of_root.size())).first->second;
  return out;
}

}  // namespace

std::vector<int> lowekamp_clusters(const Matrix& distance, double rho) {
  check_input(distance, rho);
  const int n = static_cast<int>(distance.size());
  const std::vector<Edge> edges = edges_by_weight(distance);
  const std::vector<double> min_edge = min_edges(n, edges);
  const double limit_factor = 1 + rho;  // the pseudo-code's 1.20
  Subnets subnets(n);
  for (const Edge& e : edges) {
    if (subnets.find(e.a) == subnets.find(e.b)) continue;
    if (may_merge(e, limit_factor, min_edge, subnets)) subnets.merge(e.a, e.b, e.weight);
  }
  return number_by_first_node(n, subnets);
}

namespace {

// One pass of split_unequal_clusters: every cluster of `clusters` into groups by its
// rule, judged against `clusters` as they are.
std::vector<int> split_once(const Matrix& d, const std::vector<int>& clusters, double rho) {
  const int n = static_cast<int>(d.size());
  // Each node's shortest edge inside its cluster (kNoEdge: none measured).
  std::vector<double> shortest_inside(n, kNoEdge);
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b)
      if (a != b && clusters[a] == clusters[b]) shortest_inside[a] = std::min(shortest_inside[a], edge_weight(d, a, b));
  const auto alike = [&](int a, int b) {
    // Close to each other: within (1 + rho) of each one's shortest edge inside the
    // cluster, Lowekamp's own test for a merge, which it applies only where an edge
    // merges two subnets: a cluster grown along two short edges (0-1, 1-2) never looks
    // at the long one between their ends (0-2).
    const double w = edge_weight(d, a, b);
    if (w != kNoEdge && (w > (1 + rho) * shortest_inside[a] || w > (1 + rho) * shortest_inside[b])) return false;
    for (int k = 0; k < n; ++k) {
      if (clusters[k] == clusters[a] || d[a][k] <= 0 || d[b][k] <= 0) continue;  // 0: not measured
      if (std::max(d[a][k], d[b][k]) > (1 + rho) * std::min(d[a][k], d[b][k])) return false;
    }
    return true;
  };
  std::vector<int> out(n, -1), firsts;  // firsts: the first node of every group so far
  for (int a = 0; a < n; ++a) {
    for (int g = 0; g < static_cast<int>(firsts.size()) && out[a] < 0; ++g)
      if (clusters[firsts[g]] == clusters[a] && alike(a, firsts[g])) out[a] = g;
    if (out[a] < 0) {
      out[a] = static_cast<int>(firsts.size());
      firsts.push_back(a);
    }
  }
  return out;  // groups open in node order, so they are numbered in order of first node
}

}  // namespace

std::vector<int> split_unequal_clusters(const Matrix& d, const std::vector<int>& clusters, double rho) {
  check_input(d, rho);
  const int n = static_cast<int>(d.size());
  if (static_cast<int>(clusters.size()) != n)
    throw std::invalid_argument("clustering: " + std::to_string(clusters.size()) + " cluster labels for " +
                                std::to_string(n) + " nodes");
  // Until nothing splits: a split puts nodes outside their former partners, whom the
  // next pass compares by them (the test bed's three sites in one cluster: s2 leaves
  // first, being far from s0; then s0 and s1 see s2 at 14.5 and 3.05 ms). Each pass only
  // refines the last, so there are at most n.
  std::vector<int> out = split_once(d, clusters, rho);
  for (std::vector<int> next = split_once(d, out, rho); next != out; next = split_once(d, out, rho)) out = next;
  return out;
}

std::vector<int> next_representatives(const Matrix& d, const std::vector<int>& representatives, double rho) {
  const std::vector<int> clusters = split_unequal_clusters(d, lowekamp_clusters(d, rho), rho);  // (checks the input)
  const int n = static_cast<int>(d.size());
  const int count = n ? *std::max_element(clusters.begin(), clusters.end()) + 1 : 0;
  std::vector<std::vector<int>> held(count);  // the representatives of each cluster
  for (int r : representatives) {
    if (r < 0 || r >= n)
      throw std::invalid_argument("clustering: representative " + std::to_string(r) + " is not a node of " +
                                  std::to_string(n));
    held[clusters[r]].push_back(r);
  }
  std::vector<int> next;
  // A second opinion: a node measured only against representatives knows only those
  // edges, so Lowekamp's test against its shortest edge is as lax as its nearest
  // representative is far. A cluster grown around one representative may so hold
  // nodes of a neighbouring cluster (004's two Orsay clusters, 47.6 and 47.9 us inside,
  // 62.1 between, merged where the first representative was in the second: 62.1 is
  // within 30% of its 47.9 and was the first's only edge). Its member farthest from
  // that representative becomes one too: the nodes' edges to it show the neighbours
  // their shorter edges, and a cluster that is whole is confirmed. (A cluster of two
  // has no pair of nodes left unmeasured.)
  std::vector<int> size(count, 0);
  for (int c : clusters) ++size[c];
  for (int c = 0; c < count; ++c) {
    if (held[c].size() != 1 || size[c] < 3) continue;
    const int r = held[c][0];
    int farthest = -1;
    for (int a = 0; a < n; ++a)
      if (clusters[a] == c && a != r && (farthest < 0 || edge_weight(d, a, r) > edge_weight(d, farthest, r)))
        farthest = a;
    if (farthest >= 0) next.push_back(farthest);
  }
  // Alike: within (1 + rho) of each other from every representative that measured both.
  const auto alike = [&](int a, int b) {
    for (int r : representatives) {
      const double x = edge_weight(d, a, r), y = edge_weight(d, b, r);
      if (r == a || r == b || x == kNoEdge || y == kNoEdge) continue;
      if (std::max(x, y) > (1 + rho) * std::min(x, y)) return false;
    }
    return true;
  };
  const std::size_t seconds = next.size();
  for (int a = 0; a < n; ++a) {
    if (!held[clusters[a]].empty()) continue;
    if (std::none_of(next.begin() + static_cast<std::ptrdiff_t>(seconds), next.end(),
                     [&](int b) { return alike(a, b); }))
      next.push_back(a);
  }
  std::sort(next.begin(), next.end());
  return next;
}

std::vector<int> probe_order(const std::vector<std::pair<int, int>>& pairs) {
  std::vector<std::vector<int>> busy;  // busy[node]: the rounds it measures in, ascending
  std::vector<int> round(pairs.size());
  const auto free_in = [&](int node, int r) {
    return node >= static_cast<int>(busy.size()) || !std::binary_search(busy[node].begin(), busy[node].end(), r);
  };
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    const auto [a, b] = pairs[k];
    if (a < 0 || b < 0 || a == b)
      throw std::invalid_argument("probe order: pair " + std::to_string(k) + " is (" + std::to_string(a) + ", " +
                                  std::to_string(b) + "): two distinct nodes >= 0 expected");
    if (std::max(a, b) >= static_cast<int>(busy.size())) busy.resize(static_cast<std::size_t>(std::max(a, b)) + 1);
    int r = 0;
    while (!free_in(a, r) || !free_in(b, r)) ++r;
    round[k] = r;
    for (int node : {a, b}) busy[node].insert(std::upper_bound(busy[node].begin(), busy[node].end(), r), r);
  }
  std::vector<int> order(pairs.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = static_cast<int>(k);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return round[x] < round[y]; });
  return order;
}

}  // namespace canopy::planner
