// Flat tree: the root talks to every other rank itself.
//
// Reduce. 001_*.txt (Langou) has no flat tree; derived here for its unidirectional
// model (hockney, duplex half, overlap off). The root receives and combines the p-1
// operands one after the other, every sender is ready at time 0, and nothing but the
// root's port is on the critical path, so with q segments of s_j elements (bytes)
//   T_flat = (p-1) sum_j (alpha + beta s_j + gamma s_j) = (p-1)(q alpha + (beta + gamma) m).
// Segmenting only adds latency here; the selector may still try it.
//
// Bcast. 004_*.txt Table 1: "Flat Tree" L + (P-1) g(m), "Segmented Flat Tree"
// L + (P-1) g(s) k. In hockney terms (either duplex; the root's one send port is the
// bottleneck): (p-1)(q alpha + beta m), i.e. pLogP with L = 0, g(s) = alpha + beta s.
//
// Non-commutative operations: the root combines the operands outward from itself,
// r-1, r-2, ..., 0 (each the left operand) and then r+1, ..., p-1 (each the right
// one), so its accumulator always holds a contiguous rank range: any root, no extra
// message. A commutative reduce uses the same order (it costs the same).
//
// Rank views: a rank other than the root has the root as parent and no children; the
// root's children are every other rank (its own O(p) steps). Prices: the root's p-1
// operands arrive back to back, O(segments) (tree_price.h).
#include "planner/tree.h"
#include "planner/tree_price.h"

namespace canopy::planner {

namespace {

Tree flat_tree(int p, int root) {
  std::vector<int> parent(p, root), order;
  parent[root] = -1;
  for (int r = root - 1; r >= 0; --r) order.push_back(r);
  for (int r = root + 1; r < p; ++r) order.push_back(r);
  return tree_from_parents(root, parent, order);
}

TreeLinks flat_links(int p, int root, int r) {
  TreeLinks out;
  if (r != root) {
    out.parent = root;
    return out;
  }
  for (int c = root - 1; c >= 0; --c) out.children.push_back(c);
  for (int c = root + 1; c < p; ++c) out.children.push_back(c);
  return out;
}

}  // namespace

Schedule view_flat_reduce(const Problem& problem, int rank) {
  check_problem(problem);
  return tree_reduce_view(problem, flat_links(problem.nranks, problem.root, rank), problem.root, rank, "flat");
}

Schedule view_flat_bcast(const Problem& problem, int rank) {
  check_problem(problem);
  return tree_bcast_view(problem, flat_links(problem.nranks, problem.root, rank), rank, "flat");
}

Price price_flat_reduce(const Problem& problem) {
  check_problem(problem);
  if (unidirectional(problem.model)) {  // (p-1)(q alpha + (beta + gamma) m), above
    const auto [q, T, G] = unidirectional_terms(problem);
    return {(problem.nranks - 1) * q * (T + G), false};
  }
  return price_tree(problem, flat_shapes(problem.nranks));
}

Price price_flat_bcast(const Problem& problem) {
  check_problem(problem);
  if (unidirectional(problem.model)) {  // (p-1) q g: the root's port serves every transfer
    const auto [q, T, G] = unidirectional_terms(problem);
    return {(problem.nranks - 1) * q * T, false};
  }
  return price_tree(problem, flat_shapes(problem.nranks));
}

Schedule plan_flat_reduce(const Problem& problem) {
  check_problem(problem);
  return tree_reduce_schedule(problem, flat_tree(problem.nranks, problem.root), "flat");
}

Schedule plan_flat_bcast(const Problem& problem) {
  check_problem(problem);
  return tree_bcast_schedule(problem, flat_tree(problem.nranks, problem.root), "flat");
}

}  // namespace canopy::planner
