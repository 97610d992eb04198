// Spanning trees and the schedules that run a reduce or a broadcast over them.
//
// Many algorithms of the papers differ only in the tree (binomial, chain, binary,
// Fibonacci, greedy): they build a Tree and let these emitters turn it into steps,
// pipelined over the segments of the message.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "planner/problem.h"
#include "planner/schedule.h"

namespace canopy::planner {

struct Tree {
  int root = 0;
  std::vector<int> parent;                 // parent[root] == -1
  std::vector<std::vector<int>> children;  // in the order the rank talks to them

  int size() const { return static_cast<int>(parent.size()); }
  // Checks that parent/children agree and every rank reaches the root; throws PlanError.
  void check() const;
};

// The size of the left subtree of a complete binary tree of n nodes (levels filled left
// to right, as a heap): binary.cpp's trees and their prices (tree_price.h).
std::int64_t complete_binary_left_size(std::int64_t n);

// One rank's place in a tree: everything its steps depend on.
struct TreeLinks {
  int parent = -1;            // -1 at the tree's root
  std::vector<int> children;  // in the order the rank talks to them
};
TreeLinks links_of(const Tree& tree, int rank);

// The frame every algorithm fills: the problem's fields, the segment layout of
// problem_segments() (uniform, or the problem's explicit nonuniform layout), and no
// steps or slots yet. Throws PlanError for a problem check_problem rejects.
Schedule blank_schedule(const Problem& problem, const std::string& algorithm);
// The same frame for rank `rank`'s view: one empty step list (Schedule::view_rank).
Schedule blank_view(const Problem& problem, const std::string& algorithm, int rank);

// Builds a tree from parent links; each rank's children are listed in `order`
// (ranks earlier in `order` come first).
Tree tree_from_parents(int root, const std::vector<int>& parent, const std::vector<int>& order);

// Reduce over `tree`. A rank receives segment k from each child in children order,
// combines them into its accumulator and sends the result to its parent. With a
// full-duplex, overlapping model it already receives segment k+1 while combining
// segment k (two slots per child); half duplex, it receives only after forwarding, as
// Langou's pipeline does. Without overlap (Langou's unidirectional and bidirectional
// systems) it receives each child's operand just before combining it; full duplex,
// that receive runs beside the send of the previous segment. A child below the rank's own number
// is the left operand, so a tree whose subtrees are contiguous rank ranges keeps
// canonical order (the validator checks it). If tree.root differs from problem.root, the tree's root forwards the
// result to problem.root: that is how rank-ordered trees serve any root.
Schedule tree_reduce_schedule(const Problem& problem, const Tree& tree, const std::string& algorithm);

// Broadcast over `tree`: each rank receives a segment from its parent and forwards it
// to its children in children order.
Schedule tree_bcast_schedule(const Problem& problem, const Tree& tree, const std::string& algorithm);

// Rank `rank`'s view of tree_reduce_schedule / tree_bcast_schedule, built from that
// rank's links alone (O(its steps)): how tree algorithms plan at any scale. For a
// reduce, `tree_root` is the tree's root (when it is not problem.root, it forwards
// the result there).
Schedule tree_reduce_view(const Problem& problem, const TreeLinks& links, int tree_root, int rank,
                          const std::string& algorithm);
Schedule tree_bcast_view(const Problem& problem, const TreeLinks& links, int rank, const std::string& algorithm);

// The text drawing of a tree (one rank a line, children indented), for logs and tools.
std::string draw_tree(const Tree& tree);

// Recovers the tree a single-segment schedule uses: who sends to whom.
Tree tree_of(const Schedule& schedule);

}  // namespace canopy::planner
