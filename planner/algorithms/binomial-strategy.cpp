// Binomial strategy: Canon & Antoniu (000_*.txt, Section 7.3), Algorithm 1 run as if
// min(d, c) were 0, timed with the real costs.
//
// Cost: at most ceil(log2 n) (d + c), exactly k (d + c) for n = 2^k, where the tree
// is the binomial tree of order k (Proposition 13, Theorem 14); so within a factor
// 1 + min(d, c) / max(d, c) <= 2 of the optimum (Theorem 18).
//
// "One of the costs (d or c) is systematically set to zero": which one does not
// matter. With one cost zero, lines 7 and 8 of Algorithm 1 both add the other one,
// so (d, 0) and (0, c) build the same tree as (1, 0), which is what runs here (in
// exact arithmetic, so ties break the same way on every rank). The existing
// `binomial` algorithm numbers ranks differently and never pipelines; this one
// lists each rank's senders in the order their data arrives under the real costs.
#include "planner/algorithms/canon.h"

namespace canopy::planner {

namespace canon {

ReductionTree binomial_strategy(int n, double d, double c) {
  check_instance(n, d, c);
  ReductionTree tree;
  tree.child = canon_greedy(n, 1, 0).child;
  tree.transfer_time = proposition3_times(tree.child, d, c);
  tree.length = tree.transfer_time[0];
  return tree;
}

}  // namespace canon

Schedule plan_binomial_strategy_reduce(const Problem& problem) {
  const canon::Costs costs = canon::problem_costs(problem);
  return canon::plan_reduction_tree(problem, canon::binomial_strategy(problem.nranks, costs.d, costs.c), costs,
                                    "binomial-strategy");
}

Schedule view_binomial_strategy_reduce(const Problem& problem, int rank) {
  const canon::Costs costs = canon::problem_costs(problem);
  return canon::view_reduction_tree(problem, canon::binomial_strategy(problem.nranks, costs.d, costs.c), costs, "binomial-strategy", rank);
}

Price price_binomial_strategy_reduce(const Problem& problem) {
  const canon::Costs costs = canon::problem_costs(problem);
  return canon::price_reduction_tree(problem, canon::binomial_strategy(problem.nranks, costs.d, costs.c), costs, "binomial-strategy");
}

}  // namespace canopy::planner
