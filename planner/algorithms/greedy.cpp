// Greedy reduce: Algorithm 1 of Canon & Antoniu (000_*.txt, Section 5), optimal in
// the (d, c) model (Theorem 4).
//
// Cost: the optimal length L(n), with ceil(log2 n) max(d, c) <= L(n) <=
// ceil(log2 n) (d + c) (Lemma 5, Proposition 6). A machine whose k senders' data
// start arriving at t^1 <= ... <= t^k is done at max_j (t^j + d + (k-j) max(d,c) + c)
// (Proposition 3). Binomial trees come out when min(d, c) = 0 and n = 2^k
// (Theorem 14), Fibonacci trees when d = c and n = F(k+2) (Theorem 17).
//
// The algorithm runs time backwards from the sink, like a broadcast that computes:
// s_j is the soonest reversed date at which machine j can compute an element and
// then send it. Each new machine i is served by the machine M with the smallest
// s_M (line 6), has its element at s_M + c + d (line 7), and M can compute again
// max(d, c) later (line 8): its next computation waits for this one, its next
// transfer for this one. Ties go to the lowest machine, so every rank builds the
// same tree. A real message is mapped onto (d, c) by one segment's transfer and
// reduction under the problem's model; the tree's machines get ranks by
// canon::rank_tree, senders listed in the order their data arrives, so the
// simulator replays the algorithm's schedule.
#include <algorithm>
#include <functional>
#include <queue>
#include <utility>

#include "planner/algorithms/canon.h"

namespace canopy::planner {

namespace canon {

namespace {

// Lines 4-10: each machine's receiver, and the reversed date at which it got its
// element (the transfer to it ends then; for a leaf that is when, forward in time,
// it starts sending, so the largest of them is the schedule length).
struct Insertion {
  std::vector<int> child;
  std::vector<double> inserted;
};

Insertion algorithm1(int n, double d, double c) {
  check_instance(n, d, c);
  using Entry = std::pair<double, int>;  // (s_j, j): smallest date first, then lowest machine
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> soonest;
  Insertion out{std::vector<int>(n, -1), std::vector<double>(n, 0)};
  soonest.push({0, 0});  // s_1 = 0
  for (int i = 1; i < n; ++i) {
    const auto [s_M, M] = soonest.top();  // line 6
    soonest.pop();
    out.inserted[i] = s_M + c + d;            // line 7
    soonest.push({out.inserted[i], i});
    soonest.push({s_M + std::max(d, c), M});  // line 8
    out.child[i] = M;                         // line 9
  }
  return out;
}

}  // namespace

ReductionTree canon_greedy(int n, double d, double c) {
  ReductionTree tree;
  tree.child = algorithm1(n, d, c).child;
  tree.transfer_time = proposition3_times(tree.child, d, c);
  tree.length = tree.transfer_time[0];
  return tree;
}

std::vector<double> canon_greedy_lengths(int n_max, double d, double c) {
  const Insertion ins = algorithm1(n_max, d, c);
  std::vector<double> out(n_max, 0);
  for (int i = 1; i < n_max; ++i) out[i] = std::max(out[i - 1], ins.inserted[i]);
  return out;
}

}  // namespace canon

Schedule plan_greedy_reduce(const Problem& problem) {
  const canon::Costs costs = canon::problem_costs(problem);
  return canon::plan_reduction_tree(problem, canon::canon_greedy(problem.nranks, costs.d, costs.c), costs,
                                    "greedy");
}

Schedule view_greedy_reduce(const Problem& problem, int rank) {
  const canon::Costs costs = canon::problem_costs(problem);
  return canon::view_reduction_tree(problem, canon::canon_greedy(problem.nranks, costs.d, costs.c), costs, "greedy", rank);
}

Price price_greedy_reduce(const Problem& problem) {
  const canon::Costs costs = canon::problem_costs(problem);
  return canon::price_reduction_tree(problem, canon::canon_greedy(problem.nranks, costs.d, costs.c), costs, "greedy");
}

}  // namespace canopy::planner
