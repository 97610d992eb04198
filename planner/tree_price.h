// Pricing tree schedules without building or simulating them.
//
// tree_reduce_schedule and tree_bcast_schedule (tree.h) give every rank the same
// pattern of steps around its parent and children. Under a full-duplex model with
// overlapping computation (the shim's default and measured models, and pLogP) a rank's
// times depend only on its own subtree (reduce: its children's sends) or only on what
// its parent does (bcast), never on its siblings' internals. So the simulator's
// makespan follows from a recurrence over the tree, and equal subtrees need computing
// once: a binomial or binary tree of p ranks has O(log p) different subtrees, a chain
// is one path. The recurrence is the simulator's own rules restated for these step
// patterns (simulate.h); tests/planner/test_tree_price.cpp holds it to simulate() on
// thousands of trees, random ones included.
//
// Reduce (per rank r with children c_1..c_k, segments j with transfer t_j, port
// occupancy o_j, reduction G_j, copy C_j; A_x[j] = when rank x posts its send of
// segment j; a leaf posts every send at 0):
//   receives of segment j are posted at R[j] = 0 (j <= 1), A_r[j-2] (j >= 2);
//   r's receive port takes (c_1, 0), ..., (c_k, 0), (c_1, 1), ... in that order, a
//   transfer starting at max(A_c[j], R[j], c's port free, r's port free) and arriving
//   t_j later; both ports are free o_j after the start;
//   copy(j) runs from A_r[j-1] (0 for j = 0) for C_j; then each child's operand in
//   order: x = max(x, arrival) + G_j; A_r[j] = x. The root's A[q-1] is the makespan
//   (plus the forwarding to the root when the tree is rooted elsewhere).
// Bcast (D_x[j] = when segment j has arrived at x; the root has it at 0): r sends
// segment j to c_1..c_k in order from max(D_r[j], c's receive post, r's port free,
// c's port free); a child that forwards posts its receive of segment j at D_c[j-2]
// (j >= 2), a leaf posts every receive at 0.
//
// Runs of equal children are priced at once where their transfers provably follow
// each other without a gap (runs of leaves; for a reduce, any run of equal subtrees).
// A path (a chain of single-child ranks) is priced level by level until one more
// level only shifts every time by the same amount, and that shift is then applied
// for the remaining levels: exact, because with every time shifted by c >= 0 the
// recurrence's constants (posts at time 0) stop mattering, except a reduce's first
// copy, which the shift is only taken once the first transfer outlasts.
//
// Under other models (half duplex, or no overlap) the same recurrence is an estimate:
// there a rank's port also serves its parent, which couples siblings.
#pragma once

#include <cstdint>
#include <vector>

#include "planner/cost_model.h"
#include "planner/problem.h"
#include "planner/schedule.h"
#include "planner/tree.h"

namespace canopy::planner {

// A tree as the shapes of its subtrees. Shape 0 is a leaf. Every other shape is a rank
// whose children (in the order it talks to them) are runs of equal subtrees, or a
// path: `path` ranks in a chain above one subtree `below`. Shapes refer only to
// shapes with smaller ids.
struct ShapeTree {
  struct Run {
    int shape = 0;
    std::int64_t count = 1;
  };
  struct Shape {
    std::vector<Run> children;  // a rank's children, as runs (path == 0)
    std::int64_t path = 0;      // > 0: a chain of this many ranks above `below`
    int below = 0;
  };
  std::vector<Shape> shapes{Shape{}};  // shapes[0]: the leaf
  int root = 0;                        // the shape of the whole tree
  // A reduce whose tree is rooted at another rank than the problem's root: the tree's
  // root forwards every segment to the root at the end (tree_reduce_schedule).
  bool forwards = false;

  int add(Shape shape);                           // appends, returns its id
  int node(std::vector<Run> children);            // a rank with these children (none: the leaf)
  int path(std::int64_t ranks, int below);        // `ranks` ranks chained above `below`
  std::int64_t size(int shape) const;             // ranks in a subtree (recomputes; for tests)
};

// The shapes of an explicit tree (O(p)): equal subtrees, found by interning each
// rank's ordered list of child shapes, share a shape; chains of single children become
// paths.
ShapeTree shapes_of(const Tree& tree, bool forwards);

// Shape trees of the fixed families, built in O(log p) without the tree.
ShapeTree binomial_shapes(std::int64_t p, bool largest_first);  // binomial.cpp's tree
ShapeTree binary_shapes(std::int64_t p);                        // a complete binary tree
// Ranks 0..p-1 with the root at `root` and a complete binary tree on each side (the
// rank-ordered binary reduce), or the whole complete tree when root is 0 or p-1.
ShapeTree binary_two_sided_shapes(std::int64_t p, std::int64_t root);
ShapeTree chain_shapes(std::int64_t p);                          // one path
ShapeTree two_arm_chain_shapes(std::int64_t p, std::int64_t root);  // chain.cpp's rank-ordered chain
ShapeTree flat_shapes(std::int64_t p);                           // the root and p-1 leaves

// The makespan simulate() gives tree_reduce_schedule / tree_bcast_schedule of such a
// tree over `segments` (element counts) of `element_bytes` bytes, under `model`:
// exact when model is full duplex with overlap (and no port=), an estimate otherwise.
double price_tree_reduce(const ShapeTree& tree, const std::vector<Segment>& segments, std::int64_t element_bytes,
                         const CostModel& model);
double price_tree_bcast(const ShapeTree& tree, const std::vector<Segment>& segments, std::int64_t element_bytes,
                        const CostModel& model);

// Whether the recurrence is the simulator's makespan under `model`.
bool tree_price_is_exact(const CostModel& model);

// The price of the tree schedule of `problem` (its collective, segment layout and
// model): exact when the model is full duplex with overlap and there is no topology
// (links between nodes would price each edge differently).
Price price_tree(const Problem& problem, const ShapeTree& tree);

// Langou's unidirectional system (001: hockney, half duplex, no overlap), where the
// recurrence above does not hold: the tree families are priced by the papers' closed
// forms instead, as estimates (the selector simulates where it can; the forms are
// exact only in the cases tests/planner/test_baselines.cpp and test_bcast_algorithms.cpp
// name). The message's q segments are taken as equal, of m/q bytes.
bool unidirectional(const CostModel& model);
struct UnidirectionalTerms {
  double q = 0;  // segments
  double T = 0;  // one segment's transfer, alpha + beta s
  double G = 0;  // one segment's reduction, gamma s
};
UnidirectionalTerms unidirectional_terms(const Problem& problem);

}  // namespace canopy::planner
