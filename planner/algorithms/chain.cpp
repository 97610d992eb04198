// Chain (pipeline): every rank forwards to its neighbour, segment after segment.
//
// Reduce. 001_*.txt (Langou), "Pipeline Tree", unidirectional model:
//   ((p-1) + 2(q-1))(alpha + beta s + gamma s)
// for q segments of s bytes. With gamma = 0 it is exact for p >= 3 (tests/planner/
// test_baselines.cpp). With gamma > 0 it is an upper bound: it charges a reduction on
// both sides of every pipelined step, while the schedule's exact critical path is
//   (p-1)(T + G) + (q-1)(2T + G),   T = alpha + beta s, G = gamma s
// (the intermediate rank next to the root receives, reduces and sends every segment).
// p = 2: q(T + G) (the leaf streams into the root, which reduces each segment).
// 003_*.txt (Reduce, pipelined): (T_start + n/m T_byte)(p + m - 2) in a full-duplex
// model, i.e. (p-1) + (q-1) steps.
//
// Bcast. 004_*.txt Table 1, "Segmented Chain (Pipeline)":
//   (P-1)(g(s) + L) + g(s)(k-1).
// In hockney terms with g(s) = alpha + beta s, L = 0: full duplex (p-1 + q-1)(alpha + beta s);
// half duplex a forwarding rank receives and sends on one port: ((p-1) + 2(q-1))(alpha + beta s)
// for p >= 3. Unsegmented (q = 1) both give 004's "Chain" (P-1)(g(m) + L).
//
// Which chain. Commutative reduce and every bcast: the ranks in order starting at the
// root, root, root+1, ..., wrapping (relative numbering; every root costs the same).
// Non-commutative reduce: relative numbering would combine p-1 with 0, so the chain
// runs in absolute rank order towards the root from both sides, p-1 -> ... -> r+1 -> r
// (each operand from the right) and 0 -> 1 -> ... -> r-1 -> r (from the left): rank
// order with no extra message. For r = 0 or p-1 it is one chain; otherwise the root
// receives from two neighbours, the shorter arm first (its data is ready first).
//
// Rank views: a rank's neighbours follow from its number, O(1) (chain_links). Prices:
// a path, priced level by level until each level only adds a constant (tree_price.h).
#include <utility>

#include "planner/tree.h"
#include "planner/tree_price.h"

namespace canopy::planner {

namespace {

Tree relative_chain(int p, int root) {
  std::vector<int> parent(p, -1), order(p);
  for (int v = 0; v < p; ++v) {
    const int r = (root + v) % p;
    order[v] = r;
    if (v > 0) parent[r] = (root + v - 1) % p;
  }
  return tree_from_parents(root, parent, order);
}

Tree two_arm_chain(int p, int root) {
  std::vector<int> parent(p, -1), order;
  for (int r = root + 1; r < p; ++r) parent[r] = r - 1;
  for (int r = 0; r < root; ++r) parent[r] = r + 1;
  if (root > 0) order.push_back(root - 1);
  if (root + 1 < p) order.push_back(root + 1);
  if (order.size() == 2 && root > p - 1 - root) std::swap(order[0], order[1]);  // shorter arm first
  for (int r = 0; r < p; ++r)
    if (r != root - 1 && r != root + 1) order.push_back(r);
  return tree_from_parents(root, parent, order);
}

// Rank r's place in relative_chain(p, root) or two_arm_chain(p, root), from r alone.
TreeLinks chain_links(int p, int root, int r, bool two_arms) {
  TreeLinks out;
  if (!two_arms) {
    const int v = ((r - root) % p + p) % p;
    if (v > 0) out.parent = (root + v - 1) % p;
    if (v + 1 < p) out.children.push_back((root + v + 1) % p);
    return out;
  }
  if (r > root) {
    out.parent = r - 1;
    if (r + 1 < p) out.children.push_back(r + 1);
  } else if (r < root) {
    out.parent = r + 1;
    if (r > 0) out.children.push_back(r - 1);
  } else {
    if (root > 0) out.children.push_back(root - 1);
    if (root + 1 < p) out.children.push_back(root + 1);
    if (out.children.size() == 2 && root > p - 1 - root) std::swap(out.children[0], out.children[1]);
  }
  return out;
}

}  // namespace

Schedule view_chain_reduce(const Problem& problem, int rank) {
  check_problem(problem);
  return tree_reduce_view(problem, chain_links(problem.nranks, problem.root, rank, !problem.commutative),
                          problem.root, rank, "chain");
}

Schedule view_chain_bcast(const Problem& problem, int rank) {
  check_problem(problem);
  return tree_bcast_view(problem, chain_links(problem.nranks, problem.root, rank, false), rank, "chain");
}

Price price_chain_reduce(const Problem& problem) {
  check_problem(problem);
  const int p = problem.nranks;
  if (unidirectional(problem.model)) {  // the exact critical path above (Langou's pipeline)
    const auto [q, T, G] = unidirectional_terms(problem);
    if (p == 1 || q == 0) return {0, false};
    return {p == 2 ? q * (T + G) : (p - 1) * (T + G) + (q - 1) * (2 * T + G), false};
  }
  return price_tree(problem, problem.commutative ? chain_shapes(p) : two_arm_chain_shapes(p, problem.root));
}

Price price_chain_bcast(const Problem& problem) {
  check_problem(problem);
  if (unidirectional(problem.model)) {  // half duplex: ((p-1) + 2(q-1)) g, above
    const auto [q, T, G] = unidirectional_terms(problem);
    const int p = problem.nranks;
    if (p == 1 || q == 0) return {0, false};
    return {p == 2 ? q * T : ((p - 1) + 2 * (q - 1)) * T, false};
  }
  return price_tree(problem, chain_shapes(problem.nranks));
}

Schedule plan_chain_reduce(const Problem& problem) {
  check_problem(problem);
  const int p = problem.nranks, root = problem.root;
  return tree_reduce_schedule(problem, problem.commutative ? relative_chain(p, root) : two_arm_chain(p, root),
                              "chain");
}

Schedule plan_chain_bcast(const Problem& problem) {
  check_problem(problem);
  return tree_bcast_schedule(problem, relative_chain(problem.nranks, problem.root), "chain");
}

}  // namespace canopy::planner
