// Langou's greedy segmented reduction trees (001_*.txt, "Greedy Trees for MPI
// Reductions"): a different tree for every segment, built by pairing up, whenever
// they become free, the ranks that still hold a partial result of the same segment.
// In the unidirectional construction segments are reduced in order: a rank sends
// segment j before segment j+1.
//
// The constructions work on positions 0..p-1; position 0 ends with the result.
// greedy_schedule() maps position v to rank (root + v) mod p and emits the IR: a
// tree per segment, real Send/Recv/Copy/Reduce steps, one scratch slot per rank.
//
// Rank order. The constructions combine position v with position v + z for z up to
// p/2 (in 001's C code "my_rank sends to my_rank - z"), so the receiver's block and
// the incoming one are not adjacent ranks: for p = 4 rank 0 combines {0} with {2}. No
// relabelling repairs that in general: the trees of different segments differ, and
// an exhaustive search over all p! relabellings of the unidirectional construction
// (gamma = 0, equal segments, p <= 8, q <= 5) finds some for q = 1, for p <= 5 and
// for p = 8, q = 2, but none for p = 6, 7 with q >= 2 nor for p = 8 with q >= 3
// (tests/planner/test_langou.cpp repeats it for p = 6, q = 2 and p = 8, q = 3).
// So 001's remark that reducing segments in order "will work for non-commutative
// operations" does not hold for its own pairing, and the slides' first assumption
// ("we assume the operation is commutative") stands: for a non-commutative operation
// greedy_schedule throws PlanError as soon as a combination would break rank order
// (always for p >= 4; the selector then uses another algorithm).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "planner/cost_model.h"
#include "planner/problem.h"
#include "planner/schedule.h"

namespace canopy::planner {

// What one segment costs: moving it, combining it, and the copy of the input into the
// accumulator before a rank's first combination of that segment.
struct SegmentCost {
  double transfer = 0;
  double reduce = 0;
  double copy = 0;
};

std::vector<SegmentCost> segment_costs(const std::vector<Segment>& segments, std::int64_t element_bytes,
                                       const CostModel& model);

// One message of a construction: position `from` sends its partial result of
// `segment` to position `to`, which then combines it (copying its own input into its
// accumulator first when this is its first operand of that segment).
struct GreedyTransfer {
  int segment = 0;
  int from = 0;
  int to = 0;
  double start = 0;         // the transfer starts
  double end = 0;           // the transfer ends
  double reduce_start = 0;  // `to` starts its copy/combination (>= end)
  double reduce_end = 0;
};

struct GreedyRun {
  int nranks = 0;
  int segments = 0;
  std::vector<GreedyTransfer> transfers;  // in start order
  double makespan = 0;                    // position 0's last combination ends
};

// 001's unidirectional greedy (the slides' C code Reduce_greedy), as an event-driven
// construction so that it also covers computation and segments of different sizes: a
// rank does one thing at a time (send, or receive then combine). Whenever ranks are
// free, the free ranks that hold segment j as their lowest unsent segment (position
// 0 joins segment j once segment j-1 is complete) pair up as in the C code: with f of
// them in increasing order L, z = f/2 and L[f-z+k] sends to L[f-2z+k]. With gamma = 0
// and equal segments every event falls on a multiple of alpha + beta s and the pairs
// are exactly the C code's rounds.
GreedyRun greedy_unidirectional(int nranks, const std::vector<SegmentCost>& costs);

// The bidirectional (full-duplex) greedy of 001; see algorithms/greedy_bidirectional.cpp
// for how the slides' garbled pseudo-code is read.
GreedyRun greedy_bidirectional(int nranks, const std::vector<SegmentCost>& costs);

// The IR of a run for `problem` (whose layout must have run.segments segments).
// Non-commutative problems: throws PlanError when a combination breaks rank order,
// unless enforce_rank_order is false (then the schedule is emitted anyway, for the
// validator to judge).
Schedule greedy_schedule(const Problem& problem, const GreedyRun& run, const std::string& algorithm,
                         bool enforce_rank_order = true);

// The registered algorithms, built with the problem's model costs.
Schedule greedy_segmented_schedule(const Problem& problem, bool enforce_rank_order = true);
Schedule greedy_bidirectional_schedule(const Problem& problem, bool enforce_rank_order = true);

// The uniform layout with q segments (001: "uniform segmentation s_i = s"; its C code
// cuts segments of s elements and a shorter last one): s = ceil(m / q), which gives
// ceil(m / s) segments (q itself, or fewer when no s gives exactly q).
std::vector<std::int64_t> uniform_layout(std::int64_t m, std::int64_t q);

// 001, "Nonuniform Segmentation": fix the message at m elements and try every
// segmentation, i.e. all 2^(m-1) compositions of m, timing each with the
// unidirectional greedy under `model` (its own event times, which simulate()
// reproduces). "Best uniform" is the best of uniform_layout(m, q), q = 1..m: the
// slides' table compares with that (for p = 256, alpha = 5 it names (4,4,2), the
// q = 3 layout, although segments of 6 elements, (6,4), would be faster still in
// this model). Throws PlanError unless 1 <= m <= 24.
struct Segmentation {
  std::vector<std::int64_t> counts;  // elements per segment
  double time = 0;
};
struct SegmentationSearch {
  Segmentation best_uniform;          // fastest uniform layout (fewest segments on a tie)
  std::vector<Segmentation> optimal;  // every composition within 1e-9 of the fastest time
  std::int64_t tried = 0;             // compositions timed: 2^(m-1)
  // The slides' "Percent": how much longer the best uniform layout takes than the
  // optimal one, 100 (T_uniform / T_optimal - 1).
  double percent() const;
};
SegmentationSearch search_greedy_segmentations(int nranks, std::int64_t m, std::int64_t element_bytes,
                                               const CostModel& model);

}  // namespace canopy::planner
