// Hierarchical collectives as ONE schedule (004_*.txt, Steffenel, sections 3 and 4.5):
// the ranks fall into groups (clusters, or the nodes of one cluster), each group has a
// leader, an "upper" schedule runs between the leaders and a "lower" schedule runs
// inside every group. This file composes those schedules into a single Schedule over
// all ranks, so the validator proves the whole and the simulator times the whole,
// pipelining across levels included. Which schedules to compose is the algorithms'
// business (algorithms/hierarchical.cpp, algorithms/grid.cpp).
//
// Numbering. The upper schedule's rank g is group g's leader, its root the root's
// group. A lower schedule's rank k is its group's k-th member in rank order, its root
// the leader's position there. Every sub-schedule must have the problem's segment
// layout (level_problem() passes it down explicitly).
//
// Merging at a leader, which holds one list from each level (each list keeps its own
// order; only the interleaving is chosen):
//   bcast   a lower step on segment s comes after the leader's upper steps up to its
//           last one on s: segment s has arrived from above and has already been
//           forwarded to the other groups (inter-group first, as 004 4.5 does: a
//           cluster "can finally broadcast the message" once it sends no more).
//   reduce  an upper step on segment s comes after the leader's lower steps up to its
//           last one on s: the group's contribution to s is complete.
// Otherwise a step goes as early as possible, so segment s+1 flows through one level
// while segment s flows through the other.
//
// Staging: a group inside one node keeps the problem's staging ring (every node has
// one), so its level may be shm-bcast or shm-reduce-scatter-gather; their Fetch peers
// are renumbered like message peers and their stage numbers kept (a rank stages in one
// level only), and the composed schedule names the ring. The level over the leaders,
// which spans nodes, never stages.
//
// Reduce, groups of more than one rank: for the upper level the leader's "input" is
// its group's partial result, which the lower schedule leaves in its accumulator. So
// its upper Copy steps are dropped and its upper sends of Input become sends of the
// Accumulator. Operands then combine group by group, not in rank order: callers
// compose reduces for commutative operations only.
#pragma once

#include <string>
#include <vector>

#include "planner/problem.h"
#include "planner/schedule.h"
#include "planner/select.h"

namespace canopy::planner {

struct Hierarchy {
  std::vector<std::vector<int>> members;  // members[g]: group g's ranks, increasing
  std::vector<int> leader;                // leader[g]: the rank speaking for group g
  int root_group = 0;                     // the group of problem.root

  int groups() const { return static_cast<int>(members.size()); }
  // Where group g's leader stands among its members: the lower schedule's root.
  int leader_index(int g) const;
  // True when some group has more than one rank (otherwise the upper level is the
  // whole problem and a hierarchy adds nothing).
  bool any_group_shared() const;
};

// Groups by label: ranks with equal group_of_rank[r] form one group, groups numbered
// in order of their first rank. The root's group is led by the root (it holds the
// message, or must end with the result, so any other leader costs one more message).
// Another group is led by its fastest sender (smallest topology slowdown), ties to the
// lowest rank: the leader sends the group's share over the slow links, and the
// simulator multiplies every send by the sender's slowdown; among equals the lowest
// rank is a choice every rank makes identically without talking. Throws PlanError on
// a label list of the wrong size.
Hierarchy make_hierarchy(const Problem& problem, const std::vector<int>& group_of_rank);

// The groups of the hierarchical algorithms (hierarchical, hierarchical-leaders), as
// labels for make_hierarchy: the clusters when the topology has several, else the nodes
// when there are several, else the packages (a socket level inside one node).
std::vector<int> hierarchy_groups(const Topology& topology);

// The problem a level plans: ranks `ranks` of `problem` renumbered 0..k-1 in that
// order (topology restricted to them), rooted at ranks[root_index], the same message
// and the same segment layout, given explicitly (Problem::segment_counts) so that
// every algorithm cuts the message as the composition needs.
Problem level_problem(const Problem& problem, const std::vector<int>& ranks, int root_index);
Problem upper_problem(const Problem& problem, const Hierarchy& h);
Problem lower_problem(const Problem& problem, const Hierarchy& h, int group);

// make_plan of a level's problem with the given request (its segment layout is
// already fixed by level_problem). Plans of identical level problems are remembered
// for a while on this thread: every topology-aware algorithm, at every segment size
// the selector tries, asks for the same groups' plans.
Plan plan_level(const Problem& level, const Request& request);

// The level over the leaders, planned by the homogeneous algorithms only ("auto" with
// Request::homogeneous_only): that is where a topology-aware algorithm would plan
// itself again.
Plan plan_upper(const Problem& problem, const Hierarchy& h);

// Every group's own plan, by every algorithm, topology-aware ones included: a group of
// several nodes may go hierarchical by node in turn, and a group inside one node may
// stage through its ring (shm-bcast, shm-reduce-scatter-gather). The recursion ends because a
// group of a hierarchy of two or more groups has fewer ranks than the problem. A group
// of one rank gets an empty Plan: it has nothing to do inside.
std::vector<Plan> plan_groups(const Problem& problem, const Hierarchy& h);

// What every topology-aware algorithm declines (PlanError naming `algorithm`):
//  * a problem without a topology: there is nothing to be aware of (and declining at
//    once keeps planning without a topology as fast as before);
//  * a reduce of a non-commutative operation: a leader combines its group's ranks and
//    the level above combines groups in its own order, so operands meet in rank order
//    only when every group is a contiguous rank range and the upper level keeps their
//    order. Clusters and nodes need not be contiguous (a launcher may place ranks
//    round-robin), so rather than keep a rank-ordered variant for the lucky layouts we
//    leave those reduces to the rank-ordered homogeneous algorithms.
void decline_unless_topology_aware_fits(const Problem& problem, const std::string& algorithm);
// The same check without an exception: why every topology-aware algorithm declines
// `problem`, or empty. The selector asks it once per algorithm, before pricing any
// segment size: an exception per size and algorithm was most of a 2-rank plan's time.
std::string topology_aware_declines(const Problem& problem);

// One schedule over all of problem's ranks from the upper schedule (over the leaders)
// and one lower schedule per group (lower[g] is ignored for a group of one rank: it
// has nothing to do inside). Throws PlanError when a sub-schedule does not fit: wrong
// collective, rank count, root or segment layout.
Schedule compose_hierarchy(const Problem& problem, const Hierarchy& h, const Schedule& upper,
                           const std::vector<Schedule>& lower, const std::string& algorithm);

// An allreduce over the groups (hierarchical-leaders, algorithms/hierarchical_leaders.cpp):
// every group reduces to its leader (`lower_reduce[g]`, rooted at the leader), the
// leaders allreduce (`upper`, an allreduce over the leaders whose segments every level
// shares), and every leader broadcasts the result inside its group (`lower_bcast[g]`).
// A leader's upper steps take its group's result for its input, as in a reduce (Copy
// dropped, sends of Input read the Accumulator), which is right because no valid
// allreduce reads a segment of its input after writing its accumulator's (the
// validator's rule for MPI_IN_PLACE); an upper schedule that does throws PlanError. A rank's lists are merged per segment with
// merge_after (reduce, then upper, then broadcast on each segment) where no level
// stages, else run one after the other (a fetch waits for its stage, so an early one
// could hold a level up); the merge is kept only where it validates and simulates
// faster. Stage numbers of the broadcast follow the rank's reduce stages.
Schedule compose_allreduce_hierarchy(const Problem& problem, const Hierarchy& h, const std::vector<Schedule>& lower_reduce,
                                     const Schedule& upper, const std::vector<Schedule>& lower_bcast,
                                     const std::string& algorithm);

// Merges two step lists of one rank, each kept in order: a step of `second` on
// segment s is placed after `first`'s steps up to and including `first`'s last step
// on s, and otherwise as early as possible; an Expose of `second` (the whole
// accumulator's) after all of `first`. (Exposed for tests.)
std::vector<Step> merge_after(const std::vector<Step>& first, const std::vector<Step>& second, int segments);

}  // namespace canopy::planner
