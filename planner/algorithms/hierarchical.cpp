// Hierarchical reduce and broadcast: one level between groups, one inside each group,
// composed into a single schedule (planner/hierarchy.h).
//
// Source: 004_*.txt (Steffenel), section 3: partition the network into homogeneous
// logical clusters, choose for each cluster the algorithm its own performance model
// predicts best, and schedule the wide-area level on top; section 4.4 on ECO and
// MagPIe, whose two levels keep wide-area messages to one per cluster.
//
// Cost: about T_upper + max over groups of T_lower(group), where T_upper is the best
// homogeneous schedule over the leaders under their links and T_lower(g) the best
// schedule inside group g; pipelining across the levels (the schedule is one, cut into
// the same segments) brings it down towards max(T_upper, T_lower) for long messages.
// Each wide-area link carries every segment once: leaders - 1 messages per segment.
// The simulator prices the composed schedule exactly; this is only the shape.
//
// Decisions:
//  * Groups: the clusters when the topology has more than one, else the nodes (a
//    single cluster of several nodes still gains from crossing between nodes once per
//    node), else, on one node whose ranks lie on several packages, the packages (a
//    socket level: each package's data crosses to another package once, where
//    Topology::package_link prices it). A group plans itself with every algorithm, so
//    a group of several nodes may go hierarchical by node in turn, and a node by
//    package; inside a package its levels may stage through the node's ring, the
//    level over the packages' leaders goes point to point (hierarchy.h).
//  * The level over the leaders is chosen among the homogeneous algorithms by its own
//    predicted time: the leaders' links differ, and the grid-* algorithms are the ones
//    that choose that tree knowing the clusters' internal times (grid.cpp).
//  * Declines: no topology, a non-commutative reduce (hierarchy.h says why), a single
//    group (the lower level would be the whole problem), and groups of one rank each
//    (the upper level would be the whole problem: the homogeneous algorithms already
//    plan exactly that).
#include "planner/hierarchy.h"

namespace canopy::planner {

namespace {

constexpr const char* kName = "hierarchical";

Schedule plan_hierarchical(const Problem& problem) {
  decline_unless_topology_aware_fits(problem, kName);
  const Hierarchy h = make_hierarchy(problem, hierarchy_groups(*problem.topology));
  if (h.groups() < 2) throw PlanError(std::string(kName) + ": all ranks share one node and one package");
  if (!h.any_group_shared()) throw PlanError(std::string(kName) + ": every group has one rank, nothing to gain");
  const Plan upper = plan_upper(problem, h);
  std::vector<Schedule> lower;
  for (Plan& plan : plan_groups(problem, h)) lower.push_back(std::move(plan.schedule));
  return compose_hierarchy(problem, h, upper.schedule, lower, kName);
}

}  // namespace

Schedule plan_hierarchical_reduce(const Problem& problem) { return plan_hierarchical(problem); }
Schedule plan_hierarchical_bcast(const Problem& problem) { return plan_hierarchical(problem); }

}  // namespace canopy::planner
