// The planner's front door: from a problem and what the user asked for, the schedule
// to run, priced. Every input is identical on all ranks, so every rank makes the same
// choice without talking to the others.
//
// Choosing does not build schedules. Each candidate (algorithm x segment size) is
// priced, cheapest way first:
//   1. by the algorithm's own price function (Algorithm::price) when that price is
//      exact under the problem's model (the tree families and Canon & Antoniu's trees
//      under full duplex with overlap: planner/tree_price.h);
//   2. else by simulating its whole schedule, when that schedule is small enough
//      (kSimulationBudget steps: the price is then exact by definition);
//   3. else by the algorithm's price as an estimate (half-duplex models, topologies);
//   4. else it is left out (Langou's greedy constructions and the topology-aware
//      algorithms beyond the budget).
// An exact price always ranks before an estimate (an estimate comes from a simpler
// model, often an optimistic one); among equals the lower price wins, and ties keep
// the registry's order.
// Above kGlobalPlanningLimit ranks `auto` also leaves out the algorithms whose trees
// need a construction over every rank (Algorithm::global): the others price in
// O(polylog p) and build a view in O(the rank's steps + log p).
// Only the winner is then built: as one rank's view for the shim (build_view: time and
// memory follow that rank's steps), or whole for the tools, the validator and the
// simulator (build_schedule).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "planner/problem.h"
#include "planner/registry.h"
#include "planner/schedule.h"

namespace canopy::planner {

struct Request {
  std::string algorithm = "auto";   // a registered name, or "auto": the cheapest predicted
  std::int64_t segment_bytes = -1;  // >= 0 forces a segment size (0: one segment); -1: choose
  // "auto" leaves out topology-aware algorithms (Algorithm::topology_aware): how a
  // hierarchical algorithm plans the level above its groups without planning itself
  // again (planner/hierarchy.h).
  bool homogeneous_only = false;
  // Leaves out algorithms that cannot be a level of a hierarchy (Algorithm::composable).
  bool composable_only = false;
  // Skips simulating a choice whose price's lower bound (Price::lower_bound) is above
  // the kBoundedPlaces-th best exact price found so far: it keeps its estimate, and the
  // first kBoundedPlaces of the ranking are the same as with every choice simulated.
  // False: every choice that can be simulated is (tests compare the two).
  bool bounded = true;
};

// The places of rank_choices' ranking that bounding never changes: the best schedule
// and the runner-up, which auto trials (shim/plan_cache.cpp; its coarser cut of the best
// is priced apart). Decision: 2, not 3: with 3, 16 ranks' 1 MiB allreduce still
// simulated most of its composed candidates (15 ms a plan against 23); where the first
// two build the same schedule (on 2 ranks every tree is one message) the shim trials
// the next one the ranking holds, which may then be an estimate.
constexpr int kBoundedPlaces = 2;

// A candidate priced but not built: which algorithm, asked for which segment size.
struct Choice {
  std::string algorithm;
  std::int64_t segment_bytes = 0;  // Problem::segment_bytes to build it with (0: one segment)
  double predicted = 0;            // its price, in the model's units
  bool exact = true;               // simulate()'s makespan, or over a topology the busiest link's time
                                   // where that is longer (busiest_link); else an estimate, see above
};

struct Plan {
  Schedule schedule;
  double predicted = 0;  // simulated makespan under problem.model, in its units
};

// The most steps a whole schedule may have for the selector to simulate it (an
// estimate from nranks and segments, made before building it): at 2^14 steps, building
// and simulating one of Langou's greedy schedules takes a few milliseconds, and a
// plan prices up to 15 segment sizes per algorithm.
constexpr std::int64_t kSimulationBudget = std::int64_t{1} << 14;
// The same for a topology-aware algorithm (hierarchical, grid-*), which has no formula
// and no view: beyond its budget it cannot be priced at all. At 1024 ranks over 16
// sites of 64 the hierarchy fitted kSimulationBudget only up to 4 segments, too few
// for its level over the 16 leaders to be reduce-scatter-gather-wide (a slice a
// leader): priced 159 ms there, 69.8 ms at 13 segments within 8 times the budget.
// canopy-plan --compare of that reduce took 0.41 s against 0.18 (2026-12-06).
constexpr std::int64_t kTopologySimulationBudget = 8 * kSimulationBudget;

// Whether pricing `algorithm` on `problem` (its segment size as asked) may simulate
// its whole schedule where no formula is exact: within kSimulationBudget steps
// (kTopologySimulationBudget for a topology-aware one) as the algorithm estimates them (estimated_whole_steps, registry.h). A staged algorithm
// always: its ring spans at most kMaxStagingRanks ranks, and it cuts whole ring entries
// whatever it is asked, so a plan simulates it once (a 16 MiB reduce on 32 ranks,
// about 22,000 steps). It has no formula, so it would otherwise not compete there.
bool simulation_affordable(const Algorithm& algorithm, const Problem& problem);

// Above this many ranks `auto` leaves out Algorithm::global algorithms: Canon &
// Antoniu's trees take about 1.5 ms each to build and rank at 4096 ranks and 45 ms at
// 65,536 (canopy-bench-planner), and five of them are priced at up to 15 segment sizes.
constexpr int kGlobalPlanningLimit = 1024;

// Segment sizes worth trying for a message (004): the whole message (0) and
// s = ceil(m / 2^i) for i = 1..8 (at most 256 segments) down to 1 KiB. The selector tries
// them in order until two in a row price more than 10% above the best (rank_choices),
// then refines the best by local hill-climbing.
std::vector<std::int64_t> segment_candidates(std::int64_t bytes);

// Every candidate that can be priced, best first (exact prices before estimates, then
// cheapest; ties keep the registry's order), keeping for each algorithm only its best
// segment size. Throws PlanError when none is
// left, naming the last reason.
std::vector<Choice> rank_choices(const Problem& problem, const Request& request);

// Moves the best choice of a staged algorithm (Algorithm::staged) of `collective` to
// position `first` of `ranked` (a rank_choices list) where it is there or further down,
// the others keeping their order, and then likewise the best choice of the other node
// mechanism (ring entries or cross-memory attach, Algorithm::direct) to the position
// after it; returns how many it placed (the caller trials that many more): 0 where
// there is none or each is already before `first`. auto trials the first few choices, and
// the model, whose copy rate is not measured unless CANOPY_MODEL=measure, can rank
// point-to-point schedules above the ring's best where the ring runs faster (2 ranks,
// 1 MiB bcast: shm-bcast 55-59 us, binomial 105, MPICH's own 84-101; AMD EPYC, KVM).
// The two mechanisms can swap places the same way: a direct copy's price comes from
// constants measured on one machine (kDirectCopyFactor, cost_model.h), and on the AMD
// EPYC VM a 64 KiB broadcast ran through the ring in 1.7-3.1 us and by cross-memory
// attach in 5.5-5.6, the model ranking cma-bcast first (docs/performance/issue15/
// cma-2026-11-28.txt, lines B).
std::size_t bring_staged_forward(std::vector<Choice>& ranked, std::size_t first, Collective collective);

// Removes from `ranked` (a rank_choices list) every choice of a point-to-point algorithm
// (one that is not Algorithm::staged) ranked after the first staged one, the rest in
// order; returns how many it removed. For auto on a communicator that one node holds
// whole, with its staging ring offered: there a point-to-point schedule is trialled only
// where the model ranks it above every schedule of the node's own mechanisms.
// Decision: the model ranked them second within twice the best, and their trials cost
// more than their price. On the AMD EPYC VM, 2 and 4 ranks, MPICH and Open MPI, every
// trial since the ring's schedules were tuned measured them 2-4x the ring's best
// (tools/demo.sh on 4 ranks, 1 MiB: `rabenseifner` 1.75 ms and `ring` 0.90 a call
// against `shm-reduce-scatter-allgather`'s 0.40; `reduce-scatter-gather` 3.37 against
// `shm-reduce-scatter-gather`'s 0.90; 2 ranks, 64 KiB, Open MPI: 21.2 us against 6.2),
// and so did every one logged on the lent 16-core machine, 16 ranks (reduces of 64 KiB
// to 4 MiB: `greedy-bidirectional` 89-230 us a call against `shm-reduce-scatter-gather`'s
// 33-104, `chain` 0.76-6.09 ms against 0.39-1.77; docs/performance/sixteen/),
// and a point-to-point candidate's first call is the process's first large exchange,
// which MPI pays for once (Open MPI, 2 ranks, 256 KiB reduce: `reduce-scatter-gather`'s
// first call 849 us, then 85 and 45): inside a row of 100 OSU calls, 0.76x native
// (docs/performance-history.md, sections 32 and 34). Where the model ranks one first
// it is still trialled against the ring's best (bring_staged_forward brings that in).
std::size_t drop_point_to_point_behind_ring(std::vector<Choice>& ranked, Collective collective);

// Moves the best choice priced by an estimate (Choice::exact false: rank_choices ranks
// every exact price before it) to position `first` of `ranked` where it is there or
// further down and its estimate is under the best exact price; returns 1 where it
// placed it (the caller trials one more), 0 otherwise. An estimate comes from a simpler
// model than the exact prices and is often optimistic, so it does not outrank them; but
// where it says a schedule is the fastest by far, a trial is what can tell. Decision:
// 1024 ranks on the simulated EDR cluster (64 nodes found in 4 clusters), an 8 B
// allreduce: recursive-doubling, too large to simulate there, estimated at 20 us, ranked
// after hierarchical and binomial (exact, 48 us), which the trials measured at 37 us
// against native's 21 (docs/simulation.md).
std::size_t bring_estimate_forward(std::vector<Choice>& ranked, std::size_t first);

// Whether `best` (priced under `problem.model`, maybe a learnt one) is a call short
// enough that auto keeps native MPI untried (CANOPY_AUTO_NATIVE_BELOW, `threshold`
// seconds): its price under `problem.model` and under `prior`, the starting model, are
// both under the threshold. Such calls are latency, MPI's own short path; whether a call
// is that short is the starting model's to say. Decision: a model that has learnt from
// the ring's calls prices them as fast as they run (2 ranks: a 64 KiB reduce at about
// 3 us) and sent 64 KiB reduces to MPICH's own, 35 us a call, untried (its 2-rank reduce
// is slow up to megabytes: 32 KiB 25 us a call over its first 110 calls).
bool below_trial_threshold(const Problem& problem, const Choice& best, const CostModel& prior, double threshold);

// One candidate priced as rank_choices prices it (under problem.model, which may differ
// from the model it was chosen with). False when it cannot be priced.
bool price_choice(const Problem& problem, const Choice& choice, Price& out);

// About how many steps build_schedule's whole schedule has (estimated_whole_steps),
// without building it: what the shim and canopy-plan check before building it whole.
std::int64_t whole_steps_of(const Problem& problem, const Choice& choice);

// The chosen candidate built: whole, or rank `rank`'s view (Schedule::view_rank).
// Throws PlanError as the algorithm does.
Schedule build_schedule(const Problem& problem, const Choice& choice);
Schedule build_view(const Problem& problem, const Choice& choice, int rank);

// rank_choices, each built whole (for the tools and tests that look at every rank).
std::vector<Plan> rank_plans(const Problem& problem, const Request& request);

// The cheapest candidate, built whole and validated. Throws PlanError when no
// candidate is left or the winner fails validation.
Plan make_plan(const Problem& problem, const Request& request);

}  // namespace canopy::planner
