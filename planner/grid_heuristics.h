// Grid-aware broadcast heuristics over clusters (004_*.txt, Steffenel, sections 4.5,
// 5 and 6): the inter-cluster stage of a hierarchical broadcast, where one
// coordinator per cluster receives the message over the wide area and then
// broadcasts it inside its cluster. Pure functions over plain numbers; no MPI.
//
// Timing model (004 section 2.2, 1-port full duplex; section 4.5):
//   - A coordinator sends at most one message at a time and may receive while it
//     sends. A transfer i -> j that starts at s holds i's send port for g_ij and
//     arrives at j at s + g_ij + L_ij.
//   - A coordinator first sends all its inter-cluster messages, one after the other,
//     and only then broadcasts inside its cluster ("When a cluster does not
//     participate in any other inter-cluster communication, it can finally broadcast
//     the message", 4.5). So done_i = (end of the gap of its last send, or ready_i if
//     it sends none) + T_i.
//   - ready_i is when i's coordinator holds the message: 0 for the root cluster, the
//     arrival of its one incoming transfer otherwise. RT_i, "ready time" of a sender,
//     is when i holds the message and its send port is free: ready_i, pushed back by
//     each send it already made.
//   - A transfer starts at RT_i of its sender when the heuristic picks it (the port
//     is never left idle while a chosen send waits).
// The makespan is max_i done_i.
//
// Each heuristic grows the set A of clusters that hold the message from {root},
// picking one (sender i in A, receiver j in B = the rest) pair per round and
// scheduling that transfer at RT_i. The choices (grid_heuristics.cpp gives reasons):
//   flat          the root, to the lowest index in B
//   fef           min L_ij (latency only, as 004 describes Bhat's FEF; no RT_i, no g)
//   ecef          min RT_i + g_ij + L_ij
//   ecef-la       min RT_i + g_ij + L_ij + F_j, F_j = min_{k in B\{j}} g_jk + L_jk (0 if none)
//   ecef-lat      ... F_j = min_{k in B\{j}} g_jk + L_jk + T_k (T_j if none)
//   ecef-lat-max  ... F_j = max_{k in B\{j}} g_jk + L_jk + T_k (T_j if none)
//   bottomup      j = argmax_{j in B} min_{i in A} (RT_i + g_ij + L_ij + T_j), from that
//                 argmin i (the paper's formula has no RT_i; we add it)
// Ties (exactly equal costs): the lowest sender index, then the lowest receiver
// (bottomup: the lowest receiver, then the lowest sender).
#pragma once

#include <cstdint>
#include <random>
#include <string_view>
#include <utility>
#include <vector>

namespace canopy::planner {

// What the inter-cluster heuristics see (004 section 4.5): for clusters i, j the
// latency L_ij and gap g_ij(m) of one message between their coordinators, and T_i,
// the time of cluster i's internal broadcast. Seconds; row-major C x C (the diagonal
// is not used).
struct ClusterCosts {
  int clusters = 0;
  std::vector<double> latency;   // L_ij
  std::vector<double> gap;       // g_ij(m)
  std::vector<double> internal;  // T_i
  double L(int i, int j) const { return latency[i * clusters + j]; }
  double g(int i, int j) const { return gap[i * clusters + j]; }
  double T(int i) const { return internal[i]; }
};

// Throws std::invalid_argument unless clusters >= 1, the vectors have C*C, C*C and C
// entries, and every value is finite and >= 0.
void check_cluster_costs(const ClusterCosts& costs);

enum class GridHeuristic { Flat, Fef, Ecef, EcefLa, EcefLaMin, EcefLaMax, BottomUp };

struct GridHeuristicInfo {
  GridHeuristic heuristic;
  std::string_view name;
  std::string_view summary;
};

// In the paper's order; names: "flat", "fef", "ecef", "ecef-la", "ecef-lat",
// "ecef-lat-max", "bottomup" (ECEF-LAt and ECEF-LAT differ only in the case of one
// letter in the paper; the tokens here do not).
const std::vector<GridHeuristicInfo>& grid_heuristics();
const GridHeuristicInfo& grid_heuristic_info(GridHeuristic h);
// The heuristic called `name` (one of the tokens above); throws
// std::invalid_argument naming the valid tokens otherwise.
GridHeuristic grid_heuristic_from_name(std::string_view name);

struct GridStep {
  int from = 0, to = 0;
  double start = 0, arrival = 0;
};

struct GridSchedule {
  std::vector<GridStep> steps;  // in the order the heuristic chose them
  std::vector<double> ready;    // per cluster: when its coordinator has the message
  std::vector<double> done;     // per cluster: when its internal broadcast ends
  double makespan = 0;          // max of done
};

// The inter-cluster broadcast from `root_cluster` chosen by heuristic h, timed by the
// model above. Every cluster other than the root receives exactly once (C-1 steps).
// Throws std::invalid_argument on bad costs or root.
GridSchedule grid_broadcast(GridHeuristic h, const ClusterCosts& costs, int root_cluster);

// Times a given sequence of transfers under the model above (each starts when its
// sender holds the message and its port is free, in the order given); fills ready,
// done and makespan. Throws std::invalid_argument unless the steps form a broadcast
// tree from root_cluster reaching every cluster once, each sender already reached.
GridSchedule time_grid_steps(const ClusterCosts& costs, int root_cluster, const std::vector<std::pair<int, int>>& sends);

// The schedule as a tree over clusters: parent[c] is the cluster that sent to c, -1
// for the root (and for clusters never reached).
std::vector<int> grid_parents(const GridSchedule& schedule, int clusters);
// children[c]: the clusters c sends to, in send order.
std::vector<std::vector<int>> grid_children(const GridSchedule& schedule, int clusters);

// The simulation of 004 section 6 (Table 3): per draw, for every unordered pair of
// clusters L uniform in [1, 15] ms and g uniform in [100, 600] ms, the same both ways
// (the paper draws one value per link; we make links symmetric), and per cluster T
// uniform in [20, 3000] ms; root cluster 0. Values are in seconds.
struct GridSimulationResult {
  int clusters = 0;
  int draws = 0;
  std::vector<GridHeuristic> heuristics;  // grid_heuristics() order
  std::vector<double> mean_makespan;      // seconds, one per heuristic
};

// The costs of one draw (exposed for tests and tools); advances `rng`. Uniforms are
// computed here from the engine's raw 64-bit output (not std::uniform_real_distribution),
// so results are the same with every standard library.
ClusterCosts draw_grid_costs(int clusters, std::mt19937_64& rng);

GridSimulationResult simulate_grid_heuristics(int clusters, int draws, std::uint64_t seed);

}  // namespace canopy::planner
