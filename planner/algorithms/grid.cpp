// Grid-aware reduce and broadcast: the wide-area tree between clusters chosen by one
// of Steffenel's scheduling heuristics, each cluster's internal plan below it, composed
// into a single schedule (planner/hierarchy.h). One registry row per heuristic and
// collective: "grid-" + the heuristic's token (grid_heuristics.h).
//
// Source: 004_*.txt (Steffenel), sections 4.5 and 5 (Flat, FEF, ECEF, ECEF-LA,
// ECEF-LAt, ECEF-LAT, BottomUp); the heuristics themselves are in grid_heuristics.cpp.
//
// Cost (bcast, one segment): the heuristic's makespan, max over clusters i of
//   done_i = RT_i + T_i,
// RT_i = when cluster i's leader has the message and has sent it on to every cluster it
// serves (each send holding its port for g, arriving g + L after it starts), T_i =
// cluster i's internal time. With pLogP links the simulator times the composed
// schedule exactly so (tests/planner/test_hierarchy.cpp); segments then pipeline
// below that. Reduce: the same tree run backwards (below).
//
// Decisions:
//  * Costs per cluster pair, from the leaders' link (topology.h) for the WHOLE message
//    m: the heuristics reason about store-and-forward of one message, as 004 does, and
//    their T_i are whole-collective times. With segments, the tree chosen for m is kept
//    and pipelined; whether pipelining pays, and at which segment size, the selector
//    decides by simulating the composed schedule (every grid-* row is priced at every
//    candidate segment size like any algorithm).
//  * L and g: g_ij + L_ij is the time to arrival of m (Network::transfer, with the
//    sending leader's slowdown). pLogP links: L_ij = L, g_ij = g(m), exactly the
//    simulator's. Hockney links (alpha + beta m, holding the port throughout): L_ij =
//    alpha, g_ij = beta m. The arrival is exact, the port is counted free alpha early
//    per send, a small optimism (alpha is microseconds to a millisecond against
//    wide-area gaps of many milliseconds) that keeps FEF, which weighs latency alone,
//    meaningful rather than a tie between every pair.
//  * T_i: the predicted time of the plan cluster i's ranks get on their own (make_plan
//    of its sub-problem rooted at its leader, every algorithm), 0 for a one-rank
//    cluster; that plan is the lower schedule composed below.
//  * Reduce = the broadcast reversed in time: the heuristic runs on the transposed
//    costs (cluster j's data travels j -> i where a broadcast goes i -> j, priced on
//    that link with j's leader's slowdown) and T_i = cluster i's internal reduce time;
//    a parent receives its children in the reverse of the broadcast's send order (the
//    child that received last in the broadcast sends first in the reduce: in the
//    reversed timeline it is ready first).
//  * Clusters only (nodes of one cluster are what the hierarchical algorithm groups);
//    declines without a topology, with one cluster, and for non-commutative reduces
//    (hierarchy.h).
#include <algorithm>
#include <stdexcept>
#include <string>

#include "planner/grid_heuristics.h"
#include "planner/hierarchy.h"
#include "planner/tree.h"

namespace canopy::planner {

namespace {

struct LinkCost {
  double latency = 0, gap = 0;
};

// L and g of one message from rank `from` to rank `to`, the sender's slowdown
// included (see Decisions above): pLogP's L and g(m); Hockney's alpha and beta m; a
// Hockney link whose ports are held at their own rate (port=) the ports' time as g and
// the rest of the transfer as L, as pLogP.
LinkCost link_cost(const Network& net, int from, int to, std::int64_t bytes) {
  const double arrival = net.transfer(from, to, bytes);
  const bool gap_apart = !net.link(from, to).ports_held_for_transfer();
  LinkCost out;
  out.latency = gap_apart ? arrival - net.occupancy(from, to, bytes) : net.transfer(from, to, 0);
  out.gap = arrival - out.latency;
  return out;
}

// The heuristics' view of the clusters: broadcast direction, or transposed for a reduce.
ClusterCosts cluster_costs(const Problem& problem, const Hierarchy& h, const std::vector<Plan>& internal) {
  const Network net(problem.model, problem.topology.get());
  const bool reduce = problem.collective == Collective::Reduce;
  ClusterCosts costs;
  costs.clusters = h.groups();
  for (int i = 0; i < costs.clusters; ++i)
    for (int j = 0; j < costs.clusters; ++j) {
      LinkCost link;
      if (i != j) {
        const int from = reduce ? h.leader[j] : h.leader[i];
        const int to = reduce ? h.leader[i] : h.leader[j];
        link = link_cost(net, from, to, problem.bytes());
      }
      costs.latency.push_back(link.latency);
      costs.gap.push_back(link.gap);
    }
  for (int i = 0; i < costs.clusters; ++i) costs.internal.push_back(h.members[i].size() > 1 ? internal[i].predicted : 0.0);
  return costs;
}

// The heuristic's broadcast as a tree over the clusters, children in send order (a
// reduce receives them in the reverse order).
Tree cluster_tree(const GridSchedule& gs, int clusters, int root, bool reverse_children) {
  Tree t;
  t.root = root;
  t.parent = grid_parents(gs, clusters);
  t.children = grid_children(gs, clusters);
  if (reverse_children)
    for (auto& kids : t.children) std::reverse(kids.begin(), kids.end());
  t.check();
  return t;
}

// The heuristic's choice; its argument errors (costs that are not finite numbers)
// become a decline, the only failure the selector and the shim expect.
GridSchedule run_heuristic(GridHeuristic heuristic, const ClusterCosts& costs, int root, const std::string& name) {
  try {
    return grid_broadcast(heuristic, costs, root);
  } catch (const std::invalid_argument& e) {
    throw PlanError(name + ": " + e.what());
  }
}

Schedule plan_grid(const Problem& problem, GridHeuristic heuristic) {
  const std::string name = "grid-" + std::string(grid_heuristic_info(heuristic).name);
  decline_unless_topology_aware_fits(problem, name);
  if (problem.topology->clusters < 2) throw PlanError(name + ": one cluster, no wide-area level to schedule");
  const Hierarchy h = make_hierarchy(problem, problem.topology->cluster);
  const std::vector<Plan> internal = plan_groups(problem, h);
  const ClusterCosts costs = cluster_costs(problem, h, internal);
  const bool reduce = problem.collective == Collective::Reduce;
  const GridSchedule chosen = run_heuristic(heuristic, costs, h.root_group, name);
  const Tree tree = cluster_tree(chosen, h.groups(), h.root_group, reduce);
  const Problem leaders = upper_problem(problem, h);
  const Schedule upper = reduce ? tree_reduce_schedule(leaders, tree, name) : tree_bcast_schedule(leaders, tree, name);
  std::vector<Schedule> lower;
  for (const Plan& plan : internal) lower.push_back(plan.schedule);
  return compose_hierarchy(problem, h, upper, lower, name);
}

}  // namespace

Schedule plan_grid_flat_reduce(const Problem& p) { return plan_grid(p, GridHeuristic::Flat); }
Schedule plan_grid_fef_reduce(const Problem& p) { return plan_grid(p, GridHeuristic::Fef); }
Schedule plan_grid_ecef_reduce(const Problem& p) { return plan_grid(p, GridHeuristic::Ecef); }
Schedule plan_grid_ecef_la_reduce(const Problem& p) { return plan_grid(p, GridHeuristic::EcefLa); }
Schedule plan_grid_ecef_lat_reduce(const Problem& p) { return plan_grid(p, GridHeuristic::EcefLaMin); }
Schedule plan_grid_ecef_lat_max_reduce(const Problem& p) { return plan_grid(p, GridHeuristic::EcefLaMax); }
Schedule plan_grid_bottomup_reduce(const Problem& p) { return plan_grid(p, GridHeuristic::BottomUp); }
Schedule plan_grid_flat_bcast(const Problem& p) { return plan_grid(p, GridHeuristic::Flat); }
Schedule plan_grid_fef_bcast(const Problem& p) { return plan_grid(p, GridHeuristic::Fef); }
Schedule plan_grid_ecef_bcast(const Problem& p) { return plan_grid(p, GridHeuristic::Ecef); }
Schedule plan_grid_ecef_la_bcast(const Problem& p) { return plan_grid(p, GridHeuristic::EcefLa); }
Schedule plan_grid_ecef_lat_bcast(const Problem& p) { return plan_grid(p, GridHeuristic::EcefLaMin); }
Schedule plan_grid_ecef_lat_max_bcast(const Problem& p) { return plan_grid(p, GridHeuristic::EcefLaMax); }
Schedule plan_grid_bottomup_bcast(const Problem& p) { return plan_grid(p, GridHeuristic::BottomUp); }

}  // namespace canopy::planner
