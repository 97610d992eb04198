// Fibonacci strategy: Canon & Antoniu (000_*.txt, Section 7.3), Algorithm 1 run as if
// d = c, timed with the real costs.
//
// Cost: d + (k-1) max(d, c) + c for n = F(k+2), where the tree is the Fibonacci tree
// of order k (Proposition 16, Theorem 17); within a factor 2 of the optimum for
// every n (Theorem 19). Where the binomial strategy sends everything at once and
// then reduces, this tree keeps every receiver's pipeline full: the next element
// arrives while the previous one is reduced.
//
// Algorithm 1 with d = c = 1 (exact arithmetic, so ties break the same way on
// every rank) builds the tree; each rank's senders are listed in the order their
// data arrives under the real costs.
#include "planner/algorithms/canon.h"

namespace canopy::planner {

namespace canon {

ReductionTree fibonacci_strategy(int n, double d, double c) {
  check_instance(n, d, c);
  ReductionTree tree;
  tree.child = canon_greedy(n, 1, 1).child;
  tree.transfer_time = proposition3_times(tree.child, d, c);
  tree.length = tree.transfer_time[0];
  return tree;
}

}  // namespace canon

Schedule plan_fibonacci_strategy_reduce(const Problem& problem) {
  const canon::Costs costs = canon::problem_costs(problem);
  return canon::plan_reduction_tree(problem, canon::fibonacci_strategy(problem.nranks, costs.d, costs.c), costs,
                                    "fibonacci-strategy");
}

Schedule view_fibonacci_strategy_reduce(const Problem& problem, int rank) {
  const canon::Costs costs = canon::problem_costs(problem);
  return canon::view_reduction_tree(problem, canon::fibonacci_strategy(problem.nranks, costs.d, costs.c), costs, "fibonacci-strategy", rank);
}

Price price_fibonacci_strategy_reduce(const Problem& problem) {
  const canon::Costs costs = canon::problem_costs(problem);
  return canon::price_reduction_tree(problem, canon::fibonacci_strategy(problem.nranks, costs.d, costs.c), costs, "fibonacci-strategy");
}

}  // namespace canopy::planner
