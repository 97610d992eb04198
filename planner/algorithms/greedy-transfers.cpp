// Greedy reduce with at most K concurrent transfers: Algorithm 2 of Canon & Antoniu
// (000_*.txt, Section 6.1), optimal under that limit (Theorem 7).
//
// Cost: the optimal length with at most K transfers in flight, at most
// (floor(log2 K) + 1 + ceil((n - 2^(floor(log2 K)+1)) / K)) (d + c) for
// K <= floor(n/2) (Proposition 8 as its proof's construction counts; see
// canon::limited_bound). K = floor(n/2) never binds (one port per machine) and the
// algorithm is then Algorithm 1.
//
// As in Algorithm 1 time runs backwards from the sink, but transfer dates are kept:
// t_i is the reversed date at which the transfer to machine i ends. Line 8 delays
// it until the transfer K places earlier has ended; the dates never decrease, so
// that keeps at most K in flight. Line 10: M computes again once this computation
// is over, and late enough that the transfer following that computation starts
// after this one has ended (s_M + c >= t_i).
//
// Readings of the printed algorithm, each checked by the tests:
//  * Line 8's t_{i-K} is 0 when i - K <= 1: there is no such transfer (the text's
//    "t_i = 0 for i >= n" is garbled; only i <= 1 makes sense).
//  * Lines 13-15 print t_i <- t_n - t_i + c. The reversed clock starts when the sink
//    starts its last reduction, so the reversed end of a transfer is, forward, its
//    start measured back from the length t_n: t_i <- t_n - t_i. With the "+ c"
//    machine n would wait c before its first transfer, and two machines would take
//    d + 2c instead of d + c.
//
// The executor cannot hold transfers back for a global limit: the schedule it runs
// is this tree with every transfer as early as Proposition 3 allows, which is never
// longer than the algorithm's length (equal when the limit does not bind) but may
// have more than K transfers in flight. The algorithm's own dates are in
// canon::canon_greedy_limited_transfers for tools and tests.
#include <algorithm>
#include <functional>
#include <queue>
#include <utility>

#include "planner/algorithms/canon.h"

namespace canopy::planner {

namespace canon {

ReductionTree canon_greedy_limited_transfers(int n, double d, double c, int K) {
  check_instance(n, d, c);
  if (K < 1) throw PlanError("at least one transfer must be allowed at a time");
  using Entry = std::pair<double, int>;  // (s_j, j): smallest date first, then lowest machine
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> soonest;
  std::vector<int> child(n, -1);
  std::vector<double> t(n, 0);  // reversed dates until the end
  soonest.push({0, 0});         // s_1 = 0
  for (int i = 1; i < n; ++i) {
    const auto [s_M, M] = soonest.top();  // line 7
    soonest.pop();
    const double earlier = i - K >= 1 ? t[i - K] : 0;
    t[i] = std::max(s_M + c, earlier) + d;              // line 8
    soonest.push({t[i], i});                            // line 9: s_i <- t_i
    soonest.push({std::max(s_M + c, t[i] - c), M});     // line 10
    child[i] = M;                                       // line 11
  }
  ReductionTree tree;
  tree.child = std::move(child);
  tree.length = n > 1 ? t[n - 1] : 0;
  tree.transfer_time.assign(n, tree.length);
  for (int i = 1; i < n; ++i) tree.transfer_time[i] = tree.length - t[i];  // lines 13-15
  return tree;
}

}  // namespace canon

Schedule plan_greedy_transfers_reduce(const Problem& problem) {
  const canon::Costs costs = canon::problem_costs(problem);
  const int K = canon::transfer_limit(problem);
  return canon::plan_reduction_tree(
      problem, canon::canon_greedy_limited_transfers(problem.nranks, costs.d, costs.c, K), costs,
      "greedy-transfers");
}

Schedule view_greedy_transfers_reduce(const Problem& problem, int rank) {
  const canon::Costs costs = canon::problem_costs(problem);
  const int K = canon::transfer_limit(problem);
  return canon::view_reduction_tree(problem, canon::canon_greedy_limited_transfers(problem.nranks, costs.d, costs.c, K), costs, "greedy-transfers", rank);
}

Price price_greedy_transfers_reduce(const Problem& problem) {
  const canon::Costs costs = canon::problem_costs(problem);
  const int K = canon::transfer_limit(problem);
  return canon::price_reduction_tree(problem, canon::canon_greedy_limited_transfers(problem.nranks, costs.d, costs.c, K), costs, "greedy-transfers");
}

}  // namespace canopy::planner
