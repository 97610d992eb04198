// Binomial tree reduce and broadcast, any root, any number of ranks.
//
// Cost (001_*.txt, Langou, "Binomial Tree"): ceil(log2 p) (alpha + beta m + gamma m)
// for a reduce; ceil(log2 p) (alpha + beta m) for a broadcast. In the (d, c) model of
// 000_*.txt, Proposition 13: a binomial tree of order k reduces 2^k elements in k(d+c).
//
// Ranks are numbered relative to the root, v = (r - root) mod p. Rank v's parent is v
// with its lowest set bit cleared; its children are v + 2^j for every 2^j below that
// bit. A reduce receives from the smallest subtree first (it is ready first); a
// broadcast sends to the largest subtree first (it has the longest way to go).
//
// Non-commutative operations: relative numbering breaks rank order when root != 0,
// so the tree is built over absolute ranks rooted at rank 0, every subtree is then a
// contiguous rank range with the children to the right, and rank 0 forwards the
// result to the root (one more message, as MPICH does).
//
// Rank views: a rank's parent and children follow from its relative number alone
// (binomial_links), O(log p), so a rank plans its part at any p without the tree.
// Prices: tree_price.h's recurrence over binomial_shapes (a subtree of n ranks is the
// binomial tree of n ranks), O(log^2 p x segments).
#include <algorithm>

#include "planner/tree.h"
#include "planner/tree_price.h"

namespace canopy::planner {

namespace {

Tree binomial_tree(int p, int root, bool largest_first) {
  Tree t;
  t.root = root;
  t.parent.assign(p, -1);
  t.children.assign(p, {});
  for (int v = 0; v < p; ++v) {
    const int r = (v + root) % p;
    if (v != 0) t.parent[r] = ((v & (v - 1)) + root) % p;
    const int limit = v == 0 ? p : (v & -v);  // children use the bits below v's lowest set bit
    for (int mask = 1; mask < limit && v + mask < p; mask <<= 1) t.children[r].push_back((v + mask + root) % p);
    if (largest_first) std::reverse(t.children[r].begin(), t.children[r].end());
  }
  return t;
}

// Rank r's place in binomial_tree(p, root, largest_first), from r alone.
TreeLinks binomial_links(int p, int root, int r, bool largest_first) {
  TreeLinks out;
  const int v = ((r - root) % p + p) % p;
  if (v != 0) out.parent = ((v & (v - 1)) + root) % p;
  const int limit = v == 0 ? p : (v & -v);
  for (int mask = 1; mask < limit && v + mask < p; mask <<= 1) out.children.push_back((v + mask + root) % p);
  if (largest_first) std::reverse(out.children.begin(), out.children.end());
  return out;
}

}  // namespace

Schedule view_binomial_reduce(const Problem& problem, int rank) {
  check_problem(problem);
  const int tree_root = problem.commutative ? problem.root : 0;
  return tree_reduce_view(problem, binomial_links(problem.nranks, tree_root, rank, false), tree_root, rank,
                          "binomial");
}

Schedule view_binomial_bcast(const Problem& problem, int rank) {
  check_problem(problem);
  return tree_bcast_view(problem, binomial_links(problem.nranks, problem.root, rank, true), rank, "binomial");
}

namespace {

// ceil(log2 p): the rounds of a binomial tree, and the root's children.
double rounds(int p) {
  int k = 0;
  while ((std::int64_t{1} << k) < p) ++k;
  return k;
}

}  // namespace

Price price_binomial_reduce(const Problem& problem) {
  check_problem(problem);
  if (unidirectional(problem.model)) {
    // 001: ceil(log2 p)(alpha + beta m + gamma m) unsegmented; segmented, the root still
    // receives and combines q segments from each of its ceil(log2 p) children in turn.
    const auto [q, T, G] = unidirectional_terms(problem);
    return {rounds(problem.nranks) * q * (T + G), false};
  }
  ShapeTree shapes = binomial_shapes(problem.nranks, false);
  shapes.forwards = !problem.commutative && problem.root != 0;  // rooted at 0, forwarded to the root
  return price_tree(problem, shapes);
}

Price price_binomial_bcast(const Problem& problem) {
  check_problem(problem);
  if (unidirectional(problem.model)) {  // 004: ceil(log2 P) L + floor(log2 P) g(s) k, L = 0 (the root's sends)
    const auto [q, T, G] = unidirectional_terms(problem);
    return {rounds(problem.nranks) * q * T, false};
  }
  return price_tree(problem, binomial_shapes(problem.nranks, true));
}

Schedule plan_binomial_reduce(const Problem& problem) {
  const int tree_root = problem.commutative ? problem.root : 0;
  return tree_reduce_schedule(problem, binomial_tree(problem.nranks, tree_root, false), "binomial");
}

Schedule plan_binomial_bcast(const Problem& problem) {
  return tree_bcast_schedule(problem, binomial_tree(problem.nranks, problem.root, true), "binomial");
}

}  // namespace canopy::planner
