// The network under a communicator as the planner sees it (004_*.txt, Steffenel,
// section 2.1 and 4.1): ranks share memory on nodes, nodes fall into homogeneous
// logical clusters (Lowekamp's clustering, cluster.h), every ordered pair of clusters
// has a link model, and a rank may send more slowly than the others (the slower nodes
// of 002_*.txt, Liu & Wang).
//
// Pricing one message from rank a to rank b (Network below):
//   same node                 Problem::model (shared memory, the homogeneous model)
//   different nodes           links[cluster(a) * clusters + cluster(b)]; the diagonal
//                             is between two nodes of one cluster
// and the sender's slowdown multiplies the time (a slowdown of 2 sends at half speed).
// Reductions and copies always follow Problem::model.
//
// Topology is plain data, identical on every rank of a communicator (the shim shares
// what it measured from one rank), so every rank plans the same schedule.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "planner/cost_model.h"

namespace canopy::planner {

struct Topology {
  std::vector<int> node;         // node[rank], numbered 0..nodes-1 in order of first rank
  std::vector<int> cluster;      // cluster[rank], 0..clusters-1 in order of first rank;
                                 // ranks of one node are in one cluster
  int clusters = 1;
  std::vector<CostModel> links;  // clusters x clusters, row = sending cluster
  std::vector<double> slowdown;  // per rank, >= 1 means slower sends; empty: all 1
  std::vector<std::string> labels;  // a name per cluster (site names, for logs); may be empty

  int nranks() const { return static_cast<int>(node.size()); }
  int nodes() const;
  const CostModel& link(int from_cluster, int to_cluster) const { return links[from_cluster * clusters + to_cluster]; }
  double slowdown_of(int rank) const { return slowdown.empty() ? 1.0 : slowdown[rank]; }
  // The ranks of cluster c, in rank order.
  std::vector<int> members(int c) const;
  bool same_node(int a, int b) const { return node[a] == node[b]; }
};

// Checks sizes and numbering (throws PlanError naming what is wrong): node and
// cluster have one entry per rank, are numbered in order of first appearance, every
// node lies in one cluster, links has clusters^2 entries, slowdowns are positive.
void check_topology(const Topology& t);

// The topology of the ranks `ranks` (indices into t), renumbered 0..k-1 in that order:
// how a sub-communicator or one cluster of a hierarchy sees the network. Clusters and
// nodes are renumbered in order of first appearance; links are kept for the clusters
// that remain.
Topology restrict_topology(const Topology& t, const std::vector<int>& ranks);

// Every rank its own node in one cluster with link `link`, slowdowns as given: the
// heterogeneous cluster of 002 (Liu & Wang), where only the senders' speeds differ.
Topology slowdown_topology(const CostModel& link, std::vector<double> slowdown);

// A description for logs: "3 clusters (s0: ranks 0-1, ...), links ...".
std::string describe_topology(const Topology& t);

// How the simulator and the algorithms price messages: a model plus, optionally, a
// topology that refines it per pair of ranks.
class Network {
 public:
  Network(const CostModel& model, const Topology* topology) : model_(model), topology_(topology) {}
  const CostModel& model() const { return model_; }
  const Topology* topology() const { return topology_; }
  // The model that carries a message from rank a to rank b (before the slowdown).
  const CostModel& link(int from, int to) const;
  double transfer(int from, int to, std::int64_t bytes) const {
    return scale(from) * link(from, to).transfer(bytes);
  }
  double occupancy(int from, int to, std::int64_t bytes) const {
    return scale(from) * link(from, to).occupancy(bytes);
  }

 private:
  double scale(int from) const { return topology_ ? topology_->slowdown_of(from) : 1.0; }
  const CostModel& model_;
  const Topology* topology_;
};

}  // namespace canopy::planner
