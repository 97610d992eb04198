// Greedy reduce on at most K reducing machines: Algorithm 3 of Canon & Antoniu
// (000_*.txt, Section 6.2), optimal under that limit (Theorem 9), and optimal with
// at most K concurrent transfers too when d >= c (Theorem 10).
//
// Cost: the optimal length with at most K machines receiving data, at most
// (floor(log2 K) + 1 + ceil((n - 2^(floor(log2 K)+1)) / K)) (d + c) for
// K <= floor(n/2) (Corollary 11 as its proof's construction counts; see
// canon::limited_bound). Transfer dates follow Proposition 3, as in Algorithm 1.
//
// Algorithm 1 with one change (line 7): only the first K machines inserted (the
// sink among them, since it reduces too) may serve a new one, so only they ever
// receive and reduce; the others just send their element, as mappers do. K = n is Algorithm 1. The limit is a property of the tree,
// so the schedule the executor runs keeps it, and its simulated length is the
// algorithm's. It also never has more than K transfers in flight: every transfer
// has its own receiver, and receivers are reducers.
#include <algorithm>
#include <functional>
#include <queue>
#include <utility>

#include "planner/algorithms/canon.h"

namespace canopy::planner {

namespace canon {

ReductionTree canon_greedy_limited_reducers(int n, double d, double c, int K) {
  check_instance(n, d, c);
  if (K < 1) throw PlanError("at least one machine must reduce");
  using Entry = std::pair<double, int>;  // (s_j, j): smallest date first, then lowest machine
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> soonest;
  std::vector<int> child(n, -1);
  soonest.push({0, 0});  // s_1 = 0
  for (int i = 1; i < n; ++i) {
    const auto [s_M, M] = soonest.top();  // line 7: argmin over the first min(i-1, K) machines
    soonest.pop();
    if (i < K) soonest.push({s_M + c + d, i});  // line 8; later machines never serve
    soonest.push({s_M + std::max(d, c), M});    // line 9
    child[i] = M;                               // line 10
  }
  ReductionTree tree;
  tree.child = std::move(child);
  tree.transfer_time = proposition3_times(tree.child, d, c);
  tree.length = tree.transfer_time[0];
  return tree;
}

}  // namespace canon

Schedule plan_greedy_reducers_reduce(const Problem& problem) {
  const canon::Costs costs = canon::problem_costs(problem);
  const int K = canon::reducer_limit(problem);
  return canon::plan_reduction_tree(
      problem, canon::canon_greedy_limited_reducers(problem.nranks, costs.d, costs.c, K), costs,
      "greedy-reducers");
}

Schedule view_greedy_reducers_reduce(const Problem& problem, int rank) {
  const canon::Costs costs = canon::problem_costs(problem);
  const int K = canon::reducer_limit(problem);
  return canon::view_reduction_tree(problem, canon::canon_greedy_limited_reducers(problem.nranks, costs.d, costs.c, K), costs, "greedy-reducers", rank);
}

Price price_greedy_reducers_reduce(const Problem& problem) {
  const canon::Costs costs = canon::problem_costs(problem);
  const int K = canon::reducer_limit(problem);
  return canon::price_reduction_tree(problem, canon::canon_greedy_limited_reducers(problem.nranks, costs.d, costs.c, K), costs, "greedy-reducers");
}

}  // namespace canopy::planner
