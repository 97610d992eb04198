// The algorithm registry: name -> function from a Problem to a Schedule. Names are
// one token everywhere: registry key, CANOPY_*_ALGO value, log field, tool argument.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "planner/problem.h"
#include "planner/schedule.h"

namespace canopy::planner {

using PlanFunction = Schedule (*)(const Problem&);
// One rank's view of the schedule `plan` builds (Schedule::view_rank), step for step
// the same as project(plan(problem), rank), built in time and memory that follow that
// rank's steps (plus O(log p) or, for trees that need a global construction, O(p)).
using ViewFunction = Schedule (*)(const Problem&, int rank);
// The makespan of the schedule `plan` builds, without building it (Price::exact when it
// is simulate()'s under the problem's model). Throws PlanError as plan does.
using PriceFunction = Price (*)(const Problem&);
// The segment size a schedule for `problem` is cut with (Algorithm::cut_segment_bytes).
using SegmentFunction = std::int64_t (*)(const Problem&);
// About how many steps the whole schedule `plan` builds has (Algorithm::whole_steps).
using StepsFunction = std::int64_t (*)(const Problem&);

struct Algorithm {
  std::string_view name;
  Collective collective;
  PlanFunction plan;
  std::string_view summary;  // one line for --help and --list
  // True for algorithms that plan from Problem::topology (hierarchical, grid-*): they
  // decline a problem without one, and a level of a hierarchy plans its own ranks
  // without them (Request::homogeneous_only), which ends the recursion. Last, with a
  // default, so that rows of four fields stay as they are.
  bool topology_aware = false;
  // Builds one rank's view directly; null: plan_view projects the whole schedule.
  ViewFunction view = nullptr;
  // Prices without the schedule; null: only simulating the whole schedule can.
  PriceFunction price = nullptr;
  // Its tree comes from a construction over all ranks (Canon & Antoniu's greedy
  // algorithms, O(p log p); Langou's, O(p x events)): `auto` leaves it out above
  // kGlobalPlanningLimit ranks (select.h), where that alone would outlast the budget of
  // a plan. Forced by name, it still plans at any size.
  bool global = false;
  // It moves data through the node's staging ring (schedule.h): it plans only problems
  // whose ranks all share one (staging_spans_problem, staged.h), and declines the others;
  // a hierarchy gives it its node levels.
  bool staged = false;
  // It may be a level of a hierarchy (compose_hierarchy, hierarchy.h). Over the leaders
  // a leader sends its group's result where it would send its input
  // (group_result_as_input); inside a group, the leader's result for a segment must be
  // complete once the leader's last step on it has run, because the level above is
  // merged in right after that step. reduce-scatter-gather fails the second (its
  // gather receives into the root's accumulator, still pending then); it was kept off
  // both, and its wide form is composable over the leaders only (leaders_only, below;
  // validated on random topologies). Its staged form ends each segment at the root with
  // a fetch, which completes in place, and runs only inside one node (never over
  // leaders), so it is composable.
  bool composable = true;
  // The segment size its schedule is cut with when Problem::segment_bytes asks for
  // one: sizes with the same answer plan the same schedule, so the selector prices
  // only the first of them (a staged reduction takes whole ring entries whatever it is
  // asked; a slice of reduce-scatter-gather is one chunk for any size past it).
  // Null: every size cuts its own.
  SegmentFunction cut_segment_bytes = nullptr;
  // About how many steps its whole schedule has, from the problem alone (nothing
  // built), never fewer: the selector simulates a schedule to price it only within
  // kSimulationBudget steps (select.h). Null: a tree's, tree_steps_estimate. An
  // algorithm whose messages grow with p x p says so here (reduce-scatter-gather's
  // pairwise exchange, scatter-allgather's ring): at 4096 ranks the tree estimate let
  // the selector simulate an exchange of 16.7 million messages (50 million steps, 26 s
  // and 3 GB for one plan).
  StepsFunction whole_steps = nullptr;
  // It copies straight between the ranks' buffers by cross-memory attach (the direct
  // steps, schedule.h) instead of through the ring's entries: a second mechanism on a
  // node, whose price the model knows less well (bring_staged_forward, select.h).
  bool direct = false;
  // It plans only over a topology with links whose latency does not hold the ports
  // (port=, CostModel::port_per_byte; topology.h, keeps_latency_in_flight), and declines
  // elsewhere: reduce-scatter-gather-wide, whose slots buy nothing where a port serves
  // one message at a time.
  bool wide_area = false;
  // Composable over a hierarchy's leaders only (the level plan_upper plans), not inside
  // a group: its gather leaves the root's result pending when its last step has run,
  // which a group's level must not (see composable). reduce-scatter-gather-wide: a
  // leader sends its group's result (group_result_as_input) as it would its input.
  // Not over the leaders of a hierarchy that is itself a group's level either
  // (Problem::inside_group): a group of several nodes inside a site took it over its
  // nodes' leaders, and the site's level above found the result pending (the validator
  // refused 14 composed reduces of random topologies with port= on every link).
  bool leaders_only = false;
};

// A tree's whole schedule: up to four steps per rank and segment (send, receive,
// copy, reduce), with the segments the problem asks for (segments_asked).
std::int64_t tree_steps_estimate(const Problem& problem);

// The algorithm's whole_steps, or tree_steps_estimate where it has none, for the
// segment size it cuts (Algorithm::cut_segment_bytes).
std::int64_t estimated_whole_steps(const Algorithm& algorithm, const Problem& problem);

const std::vector<Algorithm>& algorithms();
const Algorithm* find_algorithm(Collective collective, std::string_view name);
std::vector<std::string> algorithm_names(Collective collective);

// Rank `rank`'s view of `algorithm`'s schedule for `problem`: the algorithm's own view
// function, or the projection of its whole schedule. Throws PlanError as plan does.
Schedule plan_view(const Algorithm& algorithm, const Problem& problem, int rank);

}  // namespace canopy::planner
