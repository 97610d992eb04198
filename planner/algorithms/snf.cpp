// Slowest node first (SNF): Liu & Wang (002_*.txt, Sections 3-4), a reduce for ranks
// that send at different speeds.
//
// Cost: the makespan of the earliest-possible schedule (Figure 2) of the non-root
// ranks sorted by non-increasing transmission time t(r), in the paper's model (a
// message from r holds both ends for t(r), reductions are free): at most twice the
// optimum (Theorem 2), optimal when every t(r) is a power of two (Theorem 1) or when
// there are two speeds at least a factor 2 apart (Theorem 3). Under such a model and
// with one segment the simulator reproduces the EP makespan; with more segments the
// same tree is pipelined.
//
// t(r) is what one segment costs r to send, averaged over its possible receivers:
// the mean over the other ranks q of the network's transfer time from r to q (for a
// slowdown_topology, slowdown(r) times the link's time). SNF's model has one time per
// sender, whoever receives, so links that differ by receiver are only averaged.
//
// The root. In the paper the final receiver is the slowest processor: it never
// sends, and a slow processor that never sends costs nothing. MPI fixes the root, so
// here the root is the final receiver whatever its speed, and the other n-1 ranks
// form the SNF sequence; with a slowest root this is exactly the paper's schedule.
// (Letting the slowest rank collect and then forward to a faster root would add a
// whole transfer from the slowest rank, or from the root's side a reduction the
// paper does not model.)
//
// It declines (PlanError) what it is not for: without a topology or with equal t(r)
// every rank has the same speed and the homogeneous algorithms cover that case; a
// non-commutative operation cannot be served, since SNF pairs ranks by speed, not by
// rank order.
//
// Lemma 1's destinations give each rank a parent; a rank's children are listed in the
// order it receives from them, which tree_reduce_schedule keeps.
#include <algorithm>
#include <cmath>

#include "planner/segments.h"
#include "planner/snf.h"
#include "planner/tree.h"

namespace canopy::planner {

namespace {

// Bytes of the largest segment the schedule will send (0 for an empty message).
std::int64_t largest_segment_bytes(const Problem& problem) {
  std::int64_t largest = 0;
  for (const Segment& s : problem_segments(problem)) largest = std::max(largest, s.count);
  return largest * problem.element_bytes;
}

// t(r): the mean over the other ranks of r's transfer time for one segment.
std::vector<double> transmission_times(const Problem& problem) {
  const Network network(problem.model, problem.topology.get());
  const std::int64_t bytes = largest_segment_bytes(problem);
  const int n = problem.nranks;
  std::vector<double> times(n, 0);
  for (int r = 0; r < n; ++r) {
    double sum = 0;
    for (int q = 0; q < n; ++q)
      if (q != r) sum += network.transfer(r, q, bytes);
    times[r] = n > 1 ? sum / (n - 1) : 0;
  }
  return times;
}

// Equal up to rounding: means over different sets of equal links may differ in the
// last bits, and such ranks are still of one speed.
bool one_speed(const std::vector<double>& times) {
  const auto [lo, hi] = std::minmax_element(times.begin(), times.end());
  return *hi - *lo <= 1e-9 * std::fabs(*hi);
}

}  // namespace

Schedule plan_snf_reduce(const Problem& problem) {
  check_problem(problem);
  if (!problem.commutative)
    throw PlanError("snf: needs a commutative operation (it pairs ranks by speed, not in rank order)");
  if (!problem.topology) throw PlanError("snf: needs ranks of different speeds, and without a topology all have one");
  const std::vector<double> times = transmission_times(problem);
  if (one_speed(times)) throw PlanError("snf: needs ranks of different speeds, and every rank sends in the same time");
  const snf::Reduction reduction = snf::snf_reduction(times, problem.root);
  // The sequence is in start order, so listing children in it lists each rank's
  // children in the order it receives from them.
  return tree_reduce_schedule(problem, tree_from_parents(problem.root, reduction.parent, reduction.sequence), "snf");
}

}  // namespace canopy::planner
