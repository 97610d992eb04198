// Hierarchical allreduce over the groups' leaders: every cluster (or node) reduces to
// its leader, the leaders allreduce among themselves, and every leader broadcasts the
// result inside its cluster; one schedule (planner/hierarchy.h,
// compose_allreduce_hierarchy).
//
// Source: 004_*.txt (Steffenel), sections 3 and 4.4: partition the network into
// homogeneous logical clusters (Lowekamp), keep the wide-area level to messages between
// one representative per cluster, and choose each level's algorithm by its own model;
// 003_*.txt for the reduce and broadcast inside a group; the leaders' level is an
// allreduce (recursive doubling, Rabenseifner, ring, or a reduce + broadcast composition
// over the leaders), where the other topology-aware allreduces (hierarchical, grid-*:
// reduce_bcast.cpp) reduce to one rank and broadcast back, crossing the wide area twice.
//
// Cost: about T_reduce(largest group) + T_allreduce(leaders) + T_bcast(largest group),
// less where segments pipeline across the levels. Over L leaders a reduce to one of
// them and a broadcast back take two wide-area latencies and move the whole message
// through the root leader's link twice; Rabenseifner or a ring over the leaders moves
// 2 (L-1)/L of it through each leader's link, in parallel. The simulator prices the
// composed schedule; which wins depends on L and the links.
//
// Decisions:
//  * Groups as for `hierarchical` (hierarchical.cpp): clusters when the topology has
//    several, else nodes, else packages; a group's leader its fastest sender, rank 0's
//    group led by rank 0.
//  * The leaders' allreduce is planned first, by the homogeneous allreduce algorithms
//    (Request::homogeneous_only: no recursion), and fixes the segment layout every
//    level shares: a ring or Rabenseifner cuts the message into one slice per leader,
//    and the groups' reduces and broadcasts then move those slices. The groups' levels
//    are planned by every composable reduce and broadcast (a group inside one node may
//    stage through its ring).
//  * A leader's allreduce input is its group's partial result, in its accumulator
//    (compose_allreduce_hierarchy refuses a leaders' schedule that would read its input
//    after writing its accumulator there).
//  * Declines as every topology-aware algorithm does (no topology; non-commutative
//    operations: groups combine in group order), and where it would add nothing: one
//    group, or groups of one rank each (the leaders' allreduce is then the whole).
#include <algorithm>

#include "planner/algorithms/allreduce_slices.h"
#include "planner/hierarchy.h"
#include "planner/registry.h"
#include "planner/segments.h"
#include "planner/topology.h"

namespace canopy::planner {

namespace {

constexpr const char* kName = "hierarchical-leaders";

}  // namespace

Schedule plan_hierarchical_leaders_allreduce(const Problem& problem) {
  decline_unless_topology_aware_fits(problem, kName);
  if (problem.collective != Collective::Allreduce) throw PlanError(std::string(kName) + " plans allreduces");
  const Hierarchy h = make_hierarchy(problem, hierarchy_groups(*problem.topology));
  if (h.groups() < 2) throw PlanError(std::string(kName) + ": all ranks share one node and one package");
  if (!h.any_group_shared()) throw PlanError(std::string(kName) + ": every group has one rank, nothing to gain");
  Request over_leaders;
  over_leaders.segment_bytes = std::max<std::int64_t>(0, problem.segment_bytes);
  over_leaders.homogeneous_only = true;
  const Plan upper = plan_level(upper_problem(problem, h), over_leaders);
  // The groups' reduce and broadcast, cut as the leaders' allreduce cut the message.
  Problem reduce = problem;
  reduce.collective = Collective::Reduce;
  reduce.segment_counts = segment_counts_of(upper.schedule.segments);
  Problem bcast = reduce;
  bcast.collective = Collective::Bcast;
  std::vector<Schedule> lower_reduce, lower_bcast;
  for (Plan& plan : plan_groups(reduce, h)) lower_reduce.push_back(std::move(plan.schedule));
  for (Plan& plan : plan_groups(bcast, h)) lower_bcast.push_back(std::move(plan.schedule));
  return compose_allreduce_hierarchy(problem, h, lower_reduce, upper.schedule, lower_bcast, kName);
}

// The estimate the selector reads before building it (Algorithm::whole_steps), never
// fewer than the schedule's steps: over the segments asked for or the leaders' slices,
// whichever are more (a ring over L leaders cuts L slices, more where one slice
// outgrows a message), the groups' reduce at most four steps per rank and segment (a
// copy, a receive and a reduction per operand, a send), their broadcast two (every rank
// but a group's leader receives each segment once, from one send), and the leaders'
// allreduce at most what its dearest candidate estimates. (Four each for both had put
// 1024 ranks over 16 sites past kTopologySimulationBudget at any segment size: 8 x 1024
// x 16 slices is the budget itself.)
std::int64_t steps_hierarchical_leaders_allreduce(const Problem& problem) {
  const std::int64_t asked = segments_asked(problem);
  if (!problem.topology) return tree_steps_estimate(problem);
  const Hierarchy h = make_hierarchy(problem, hierarchy_groups(*problem.topology));
  const int leaders = h.groups();
  const std::int64_t slices = leaders * slice_pieces(std::max<std::int64_t>(problem.count, 1), leaders);
  const std::int64_t segments = std::max(asked, slices);
  const Problem upper = upper_problem(problem, h);
  std::int64_t over_leaders = 0;
  for (const Algorithm& a : algorithms())
    if (a.collective == Collective::Allreduce && !a.topology_aware && !a.staged)
      over_leaders = std::max(over_leaders, estimated_whole_steps(a, upper));
  return 6 * problem.nranks * segments + over_leaders;
}

}  // namespace canopy::planner
