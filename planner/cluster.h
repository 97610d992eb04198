// Logical clusters from measured distances: Lowekamp's greedy clustering, as 004_*.txt
// (Steffenel, section 4.1.2, Algorithm 1) adopts it to split a grid into homogeneous
// subnets before pricing links between them (topology.h).
//
// Nodes i and j are joined by an edge whose weight is their distance (a latency, or
// the time of a probe message: anything where smaller means closer). Edges are taken
// by non-decreasing weight; edge (a, b) merges the subnets of a and b unless
//   w(a, b) > (1 + rho) * min_edge(a)  or  w(a, b) > (1 + rho) * min_edge(b)
//   (a node only joins a subnet through one of its shortest edges), or
//   w(a, b) > (1 + rho) * subnet_min(a)  or  w(a, b) > (1 + rho) * subnet_min(b)
//   (a subnet only grows through edges close to its own shortest one, so a chain of
//   slowly rising distances cannot drift into one cluster).
// min_edge is the node's shortest edge, subnet_min the shortest edge merged into its
// subnet so far. The paper's pseudo-code writes 1.20 for 1 + rho (rho = 20%); its
// experiment (Table 4) uses rho = 30%.
#pragma once

#include <utility>
#include <vector>

namespace canopy::planner {

// A cluster index per node, numbered 0, 1, ... in order of first node; a node that
// merges with no other is a cluster of its own.
//
// distance[i][j]: how far node j is from node i, an n x n matrix of finite numbers
// >= 0 (n = 0 gives no clusters). 0 off the diagonal means "not measured", as the
// paper's distance matrix M writes a missing link (it need not be complete). The
// diagonal is ignored. Asymmetric matrices are allowed: the edge between i and j
// weighs the mean of the two directions, or the one measured if the other is 0 (why:
// cluster.cpp).
// rho: the tolerance, in (0, 10] (0.20 is 20%).
// Throws std::invalid_argument for a matrix that is not square, an entry that is
// negative, NaN or infinite, or rho out of range; the message names the entry or value.
std::vector<int> lowekamp_clusters(const std::vector<std::vector<double>>& distance, double rho);

// Canopy's refinement after Lowekamp (not in 004): a cluster is split until every two
// of its nodes see each node outside it within a factor (1 + rho) and lie within
// (1 + rho) times each one's shortest edge inside the cluster of each other; a node
// joins the first group (in node order) whose first node it matches, else opens a new
// one; repeated until nothing splits (a node that leaves its cluster becomes one the
// others are compared by).
// Why: Lowekamp checks that a cluster's nodes are close to one another, not that they
// are equally far from the rest, yet pricing each cluster pair by one sample (004,
// section 4.1.3) presumes both. With one node per site it cannot tell sites apart: the
// shortest edge always merges, so the test bed's 3 sites came out as s0 | s1+s2 and the
// 50 Mbit/s s0-s2 link was priced as the 200 Mbit/s s0-s1 one. 0 entries (not
// measured) are skipped. The second test: Lowekamp checks an edge only where it merges
// two subnets, so three sites whose probes measured 2.89 ms (s0-s1), 3.05 (s1-s2) and
// 14.5 (s0-s2) came out as one cluster, priced as one link, with nothing outside it for
// the first test to compare (a test-bed run; the next run found three). Returns
// clusters numbered in order of first node; the same input checks as
// lowekamp_clusters, plus one label per node.
std::vector<int> split_unequal_clusters(const std::vector<std::vector<double>>& distance,
                                        const std::vector<int>& clusters, double rho);

// Canopy's probing of more nodes than can be probed pairwise (not in 004;
// shim/topology_probe.cpp): every node's distance is measured to a few representative
// nodes only, round by round, and Lowekamp's algorithm (then split_unequal_clusters)
// runs on that partial matrix (its 0 entries: not measured). Node 0 is the first
// round's representative; after each round this gives the next round's, in node order:
// - in a cluster of 3 nodes or more that holds one representative, its member farthest
//   from it (a second opinion: cluster.cpp says why);
// - the nodes in no cluster that holds a representative, each taken unless its
//   distances to the representatives match one already taken this round (every one
//   within a factor 1 + rho, as split_unequal_clusters compares nodes): nodes the
//   representatives see differently cannot share a cluster, so they can be measured
//   in one round, while two that look alike wait for the next (they may be one
//   cluster, and one of them as a representative settles it).
// Empty when every node's cluster holds a representative, and two where it has 3 nodes
// or more. Every round takes at least one new node, and N nodes in C clusters cost
// about N x 2C distances instead of N(N-1)/2: on 004's Table 4 (88 nodes), 10
// representatives give back its six clusters. The same input checks as
// lowekamp_clusters; a representative outside [0, n) is named.
std::vector<int> next_representatives(const std::vector<std::vector<double>>& distance,
                                      const std::vector<int>& representatives, double rho);

// The order in which Canopy's probe measures pairs of nodes all at once (the links
// between clusters, shim/topology_probe.cpp): every node walks its own pairs in one
// list's order, so a pair starts once both of its nodes are done with their pairs
// before it. In the order pairs are written (cluster a's with b's, a < b) waits chain:
// a node's pair waits for its partner's earlier pair, which waits for that partner's
// partner's, and so on (16 clusters of 4 nodes, 136 links: about 11 pair times where
// no node has more than 5 pairs). So the pairs are dealt into rounds where no node is
// in two pairs, each pair into the first round where both its nodes are free (in list
// order: first fit, at most 2 x the largest number of pairs a node has - 1 rounds),
// and measured round after round. Returns the indices of `pairs` in that order (stable
// within a round). A pair of one node with itself, or a negative node, is named.
std::vector<int> probe_order(const std::vector<std::pair<int, int>>& pairs);

}  // namespace canopy::planner
