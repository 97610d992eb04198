// Binary tree: the complete binary tree (levels filled left to right, as a heap), each
// inner rank combining or forwarding for two children.
//
// Reduce. 001_*.txt (Langou), "Binary Tree", unidirectional model:
//   (2(N-1) + 4(q-1))(alpha + beta s + gamma s),   N = ceil(log2(p+1))
// (the slide's text also prints "ceil(log2 p + 1)"; the table's footnote defines N as
// ceil(log2(p+1)), the number of levels, which is the one used here). Each level costs
// two steps (two children send to one parent). The 4(q-1) pipelined term charges four
// steps per segment, but an inner rank only receives twice, reduces twice and sends
// once per segment (3T + 2G with T = alpha + beta s, G = gamma s), so the formula is
// exact only for q = 1 on a perfect tree (p = 2^N - 1) and an upper bound otherwise
// (measured for p = 1..40). On a perfect tree of N >= 3 levels the schedule takes
// exactly 2(N-1)(T + G) + (q-1)(3T + 2G); tests/planner/test_baselines.cpp checks both.
//
// Bcast. 004_*.txt Table 1, "Binary Tree": <= ceil(log2 P)(2 g(m) + L), an upper bound
// (a rank forwards to two children one after the other). In hockney terms, L = 0 and
// g = alpha + beta m: at most 2 floor(log2 p) g, exactly that on perfect trees, where
// the last rank is reached through second children only. Segmented, a perfect tree
// of N >= 3 levels takes (2(N-1) + 3(q-1)) g(s) half duplex (an inner rank receives
// once and sends twice per segment on one port) and (2(N-1) + 2(q-1)) g(s) full duplex.
//
// Numbering. Ranks are numbered in pre-order (a node, then its left subtree, then its
// right subtree), so every subtree is a contiguous range and the node is its lowest
// rank: combining the left child first and then the right keeps rank order. A
// commutative reduce and a broadcast number relative to the root (any root, the same
// cost). A non-commutative reduce keeps absolute ranks: root 0 is the pre-order tree;
// root p-1 its mirror (post-order, combining from the left); another root r gets the
// post-order complete tree of 0..r-1 as its left child and the pre-order complete tree
// of r+1..p-1 as its right child, so every rank order is kept with no extra message.
//
// Rank views: a rank finds its parent and children by descending the layout from the
// top to its own slot (layout_links), O(log p), without laying out the tree. Prices:
// a complete tree has O(log p) different subtrees (tree_price.h).
#include <algorithm>

#include "planner/tree.h"
#include "planner/tree_price.h"

namespace canopy::planner {

namespace {

int left_size(int n) { return static_cast<int>(complete_binary_left_size(n)); }

// Lays out a complete binary tree of n nodes on the slots lo..lo+n-1: pre-order (node
// first, children to its right) or post-order (node last, mirrored: children to its
// left). parent and order are over slot indices. Returns the subtree's root slot.
int lay_out(int lo, int n, bool pre, std::vector<int>& parent, std::vector<int>& order) {
  if (n <= 0) return -1;
  const int left = left_size(n), right = n - 1 - left;
  if (pre) {
    const int node = lo;
    const int a = lay_out(lo + 1, left, true, parent, order);
    const int b = lay_out(lo + 1 + left, right, true, parent, order);
    for (int c : {a, b})
      if (c >= 0) parent[c] = node;
    // Combine the left child first: node, then its left range, then its right range.
    if (a >= 0) order.push_back(a);
    if (b >= 0) order.push_back(b);
    return node;
  }
  const int node = lo + n - 1;  // mirror: the "left" subtree sits just below the node
  const int a = lay_out(node - left, left, false, parent, order);
  const int b = lay_out(lo, right, false, parent, order);
  for (int c : {a, b})
    if (c >= 0) parent[c] = node;
  if (a >= 0) order.push_back(a);
  if (b >= 0) order.push_back(b);
  return node;
}

// Complete pre-order tree over relative ranks, mapped to root + v.
Tree relative_binary(int p, int root) {
  std::vector<int> vparent(p, -1), vorder;
  lay_out(0, p, true, vparent, vorder);
  std::vector<int> parent(p, -1), order;
  for (int v = 0; v < p; ++v)
    if (vparent[v] >= 0) parent[(root + v) % p] = (root + vparent[v]) % p;
  for (int v : vorder) order.push_back((root + v) % p);
  return tree_from_parents(root, parent, order);
}

Tree ordered_binary(int p, int root) {
  std::vector<int> parent(p, -1), order;
  if (root == 0 || root == p - 1) {
    lay_out(0, p, root == 0, parent, order);
    return tree_from_parents(root, parent, order);
  }
  const int a = lay_out(0, root, false, parent, order);             // 0..r-1, root r-1
  const int b = lay_out(root + 1, p - 1 - root, true, parent, order);  // r+1..p-1, root r+1
  parent[a] = parent[b] = root;
  order.push_back(a);
  order.push_back(b);
  return tree_from_parents(root, parent, order);
}

// The links of slot v in lay_out(lo, n, pre, ...), whose root's parent is `parent`:
// the same descent lay_out makes, following only the subtree that holds v.
TreeLinks layout_links(int lo, int n, bool pre, int v, int parent) {
  auto root_of = [pre](int start, int count) { return pre ? start : start + count - 1; };
  while (true) {
    const int left = left_size(n), right = n - 1 - left;
    const int node = pre ? lo : lo + n - 1;
    const int a_lo = pre ? lo + 1 : node - left;  // the subtree combined first
    const int b_lo = pre ? lo + 1 + left : lo;
    if (v == node) {
      TreeLinks out;
      out.parent = parent;
      if (left > 0) out.children.push_back(root_of(a_lo, left));
      if (right > 0) out.children.push_back(root_of(b_lo, right));
      return out;
    }
    parent = node;
    if (v >= a_lo && v < a_lo + left) {
      lo = a_lo;
      n = left;
    } else {
      lo = b_lo;
      n = right;
    }
  }
}

// Rank r's place in relative_binary(p, root) (commutative) or ordered_binary(p, root).
TreeLinks binary_links(int p, int root, int r, bool ordered) {
  if (!ordered) {
    TreeLinks out = layout_links(0, p, true, ((r - root) % p + p) % p, -1);
    auto absolute = [&](int v) { return v < 0 ? v : (root + v) % p; };
    out.parent = absolute(out.parent);
    for (int& c : out.children) c = absolute(c);
    return out;
  }
  if (root == 0 || root == p - 1) return layout_links(0, p, root == 0, r, -1);
  if (r == root) return TreeLinks{-1, {root - 1, root + 1}};
  return r < root ? layout_links(0, root, false, r, root) : layout_links(root + 1, p - 1 - root, true, r, root);
}

}  // namespace

Schedule view_binary_reduce(const Problem& problem, int rank) {
  check_problem(problem);
  return tree_reduce_view(problem, binary_links(problem.nranks, problem.root, rank, !problem.commutative),
                          problem.root, rank, "binary");
}

Schedule view_binary_bcast(const Problem& problem, int rank) {
  check_problem(problem);
  return tree_bcast_view(problem, binary_links(problem.nranks, problem.root, rank, false), rank, "binary");
}

namespace {

// N = ceil(log2(p+1)), the levels of a complete binary tree of p ranks.
double binary_levels(int p) {
  int n = 0;
  while ((std::int64_t{1} << n) < static_cast<std::int64_t>(p) + 1) ++n;
  return n;
}

}  // namespace

Price price_binary_reduce(const Problem& problem) {
  check_problem(problem);
  const int p = problem.nranks;
  if (unidirectional(problem.model)) {  // 2(N-1)(T+G) + (q-1)(3T+2G): exact on perfect trees, above
    const auto [q, T, G] = unidirectional_terms(problem);
    if (p == 1 || q == 0) return {0, false};
    return {2 * (binary_levels(p) - 1) * (T + G) + (q - 1) * (3 * T + 2 * G), false};
  }
  return price_tree(problem, problem.commutative ? binary_shapes(p) : binary_two_sided_shapes(p, problem.root));
}

Price price_binary_bcast(const Problem& problem) {
  check_problem(problem);
  if (unidirectional(problem.model)) {  // (2(N-1) + 3(q-1)) g(s) half duplex on perfect trees, above
    const auto [q, T, G] = unidirectional_terms(problem);
    if (problem.nranks == 1 || q == 0) return {0, false};
    return {(2 * (binary_levels(problem.nranks) - 1) + 3 * (q - 1)) * T, false};
  }
  return price_tree(problem, binary_shapes(problem.nranks));
}

Schedule plan_binary_reduce(const Problem& problem) {
  check_problem(problem);
  const int p = problem.nranks, root = problem.root;
  return tree_reduce_schedule(problem, problem.commutative ? relative_binary(p, root) : ordered_binary(p, root),
                              "binary");
}

Schedule plan_binary_bcast(const Problem& problem) {
  check_problem(problem);
  return tree_bcast_schedule(problem, relative_binary(problem.nranks, problem.root), "binary");
}

}  // namespace canopy::planner
