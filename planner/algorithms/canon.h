// Canon & Antoniu (000_*.txt), "Scheduling Associative Reductions with Homogeneous
// Costs when Overlapping Communications and Computations", as pure functions over
// plain data: the greedy algorithms of Sections 5 and 6, the binomial and Fibonacci
// trees and strategies of Section 7, and the schedule length of Proposition 3.
//
// The (d, c) model (Section 3): n machines hold one element each; a transfer costs
// d, a reduction c; a machine takes part in one transfer at a time and transfers
// overlap computation, so a machine reducing k received elements takes
// d + (k-1) max(d, c) + c once its first element starts arriving.
//
// Machines are numbered in the order the algorithms insert them: the paper's
// machine i is machine i-1 here, so machine 0 is the sink and every other machine
// sends to one inserted before it (child[i] < i). Which MPI rank plays which
// machine is decided last, by rank_tree(), so that a non-commutative operation
// keeps rank order (Section 4.1, Lemma 1: machines are interchangeable).
#pragma once

#include <string>
#include <vector>

#include "planner/problem.h"
#include "planner/schedule.h"
#include "planner/tree.h"

namespace canopy::planner::canon {

// A spanning tree in the paper's terms. Note the paper's "child" c_i is the machine
// i sends to, i.e. what planner::Tree calls the parent.
struct ReductionTree {
  std::vector<int> child;  // c_i: the machine i sends its data to; -1 for the sink
  // t_i: the date from which i sends (for the sink: when it is done). As in the
  // paper, a transfer still queues behind earlier ones into the same receiver:
  // Proposition 3's dates are "optimistic" in that sense (transfer_starts() gives
  // the real ones), Algorithm 2's dates never queue.
  std::vector<double> transfer_time;
  double length = 0;  // the schedule length the algorithm computed

  int size() const { return static_cast<int>(child.size()); }
};

// ---- The algorithms -----------------------------------------------------------

// Throws PlanError unless n >= 1 and d, c are finite and non-negative.
void check_instance(int n, double d, double c);

// Algorithm 1 (Section 5): optimal (Theorem 4). Transfer times by Proposition 3.
ReductionTree canon_greedy(int n, double d, double c);

// Algorithm 1's optimal length for every n in 1..n_max (out[n-1]), in one
// O(n_max log n_max) pass: the algorithm never looks at n, so the tree for n is the
// first n machines of the tree for n_max. Computed from the algorithm's own
// reversed-time dates s_i, not from Proposition 3 (the tests check they agree).
std::vector<double> canon_greedy_lengths(int n_max, double d, double c);

// Algorithm 2 (Section 6.1): optimal with at most K concurrent transfers (Theorem 7).
// transfer_time holds the algorithm's own (delayed) dates, which keep the limit.
ReductionTree canon_greedy_limited_transfers(int n, double d, double c, int K);

// Algorithm 3 (Section 6.2): optimal with at most K reducing machines (Theorem 9);
// also optimal with at most K concurrent transfers when d >= c (Theorem 10).
ReductionTree canon_greedy_limited_reducers(int n, double d, double c, int K);

// Section 7.3: Algorithm 1 run with min(d, c) = 0 (binomial strategy) or d = c
// (Fibonacci strategy) to build the tree, then timed with the real (d, c).
ReductionTree binomial_strategy(int n, double d, double c);
ReductionTree fibonacci_strategy(int n, double d, double c);

// ---- Timing any tree (Propositions 2 and 3) -----------------------------------

// Proposition 3: every machine sends as soon as its reductions end,
//   t_i = max_j (t_i^j + d + (m_i - j) max(d, c) + c),
// its m_i incoming transfers taken in the order they start (t_i^1 earliest); a
// leaf sends at 0. The sink's entry is the schedule length. Any tree, any numbering.
std::vector<double> proposition3_times(const std::vector<int>& child, double d, double c);
double schedule_length(const std::vector<int>& child, double d, double c);
double schedule_length(const ReductionTree& tree, double d, double c);

// The Proposition 3 length of every prefix of a tree built by insertion
// (child[i] < i): out[k-1] is the length of machines 0..k-1. Incremental, so a whole
// curve costs about n log^2 n for trees of logarithmic depth (Figure 2).
std::vector<double> prefix_lengths(const std::vector<int>& child, double d, double c);

// ---- Specific trees (Section 7) ------------------------------------------------

// Definition 12: order k has 2^k machines.
std::vector<int> binomial_tree(int k);
// Definition 15 as Proposition 16's proof uses it (k >= -1): a Fibonacci tree of
// order k-1 whose sink receives from the sink of one of order k-2; F(k+2) machines.
std::vector<int> fibonacci_tree(int k);
// F(0) = 0, F(1) = F(2) = 1.
long long fibonacci(int k);

// ---- Bounds and counts ---------------------------------------------------------

// Lemma 5, in the form its proof establishes: ceil(log2 n) max(d, c) (0 for n = 1).
double lemma5_lower_bound(int n, double d, double c);
// Proposition 6: ceil(log2 n) (d + c).
double proposition6_upper_bound(int n, double d, double c);
// Proposition 8 / Corollary 11 with the step count their proof's construction takes
// (1 <= K <= floor(n/2)): (floor(log2 K) + 1 + ceil((n - 2^(floor(log2 K)+1)) / K)) (d + c).
double limited_bound(int n, int K, double d, double c);

// When each transfer really starts: a receiver takes its senders in the order of
// their dates, one at a time, each at max(t_i, end of the previous one). For the
// sink, its date. Replaying these dates gives the same length (Proposition 2).
std::vector<double> transfer_starts(const ReductionTree& tree, double d);
// The most transfers in flight at once, each i != sink sending during
// [start_i, start_i + d) by transfer_starts.
int max_concurrent_transfers(const ReductionTree& tree, double d);
// Machines that receive (and so reduce) at least one element.
int reducer_count(const std::vector<int>& child);

// ---- From a tree to ranks and a schedule ---------------------------------------

// The (d, c) a problem's message gives: one segment's transfer and reduction under
// problem.model (a single segment is the whole message).
struct Costs {
  double d = 0;
  double c = 0;
};
Costs problem_costs(const Problem& problem);

// The K of Problem::limit for each limited algorithm (0 = the model's own limit).
int transfer_limit(const Problem& problem);
int reducer_limit(const Problem& problem);

// Assigns ranks to machines. Each machine's senders are listed in the order their
// data arrives (`arrival`, e.g. proposition3_times; ties by machine number).
// Non-commutative: every subtree gets a contiguous rank range and each sender's
// range lands next to what its receiver holds, on the left or the right, so the
// validator's order check passes; the sink gets rank `root` when some of its
// senders' subtree sizes add up to `root`, else rank 0 (tree_reduce_schedule then
// forwards the result to the root: one more transfer). Commutative: the same
// numbering rotated so that the sink is `root`.
Tree rank_tree(const std::vector<int>& child, const std::vector<double>& arrival, int root, bool commutative);

// The schedule that runs `tree` for `problem`: ranks by rank_tree with Proposition 3
// arrival order under `costs`, steps by tree_reduce_schedule.
Schedule plan_reduction_tree(const Problem& problem, const ReductionTree& tree, const Costs& costs,
                             const std::string& algorithm);
// The price of the same schedule (tree_price.h over the ranked tree's shapes).
Price price_reduction_tree(const Problem& problem, const ReductionTree& tree, const Costs& costs,
                           const std::string& algorithm);
// Rank `rank`'s view of the same schedule. The tree is global (O(n log n) to build, as
// Algorithms 1-3 are); only the rank's steps are kept.
Schedule view_reduction_tree(const Problem& problem, const ReductionTree& tree, const Costs& costs,
                             const std::string& algorithm, int rank);

}  // namespace canopy::planner::canon
