// The non-power-of-two fold of recursive doubling and Rabenseifner's allreduce, the
// MPICH way (src/mpi/coll/allreduce/allreduce_intra_recursive_doubling.c): with p' the
// largest power of two <= p and rem = p - p', each odd rank r < 2 rem hands its input to
// r - 1, which combines the two (r - 1's on the left); the p' remaining ranks exchange
// under ids 0..p'-1, and at the end each even rank r < 2 rem sends the result to r + 1.
// Id i < rem is rank 2i (holding ranks 2i and 2i+1), id i >= rem is rank i + rem, so a
// block of consecutive ids holds consecutive ranks: rank order survives the fold.
#pragma once

#include <vector>

#include "planner/schedule.h"
#include "planner/segments.h"

namespace canopy::planner {

struct Fold {
  int p2 = 1;   // p': the ranks that exchange
  int rem = 0;  // p - p': the ranks folded into their left neighbour

  explicit Fold(int p) {
    while (2 * p2 <= p) p2 *= 2;
    rem = p - p2;
  }
  // Rank r's id among the p' exchanging ranks, -1 for a rank folded away.
  int id(int r) const {
    if (r < 2 * rem) return r % 2 == 0 ? r / 2 : -1;
    return r - rem;
  }
  int rank_of(int id) const { return id < rem ? 2 * id : id + rem; }
  int rounds() const {
    int k = 0;
    while ((1 << k) < p2) ++k;
    return k;
  }

  // Rank r's steps before the exchange over `runs` (every segment of the message, as
  // messages: one a segment, or spans of several, schedule.h): its accumulator
  // initialised with its input (Copy), combined with its right neighbour's input where
  // it folds one in (slot = segment), or, folded away, its input sent to its left
  // neighbour.
  void in(int r, const std::vector<SegmentRun>& runs, std::vector<Step>& steps) const {
    if (id(r) < 0) {
      for (const SegmentRun& m : runs) steps.push_back(Step::send(r - 1, m.first, Buffer::Input).spanning(m.span));
      return;
    }
    const bool folds = r < 2 * rem;
    // Receive, copy, reduce: the executor fuses the three into a receive into the
    // accumulator and one combine with the input (shim/executor.cpp, fusions_for).
    if (folds)
      for (const SegmentRun& m : runs) steps.push_back(Step::recv_into_slot(r + 1, m.first, m.first).spanning(m.span));
    for (const SegmentRun& m : runs) {
      steps.push_back(Step::copy(m.first).spanning(m.span));
      if (folds) steps.push_back(Step::reduce(m.first, m.first, false).spanning(m.span));  // r's input, then r+1's
    }
  }
  void in(int r, int segments, std::vector<Step>& steps) const { in(r, one_run_each(segments), steps); }

  // Rank r's steps after the exchange: the result to (or from) the folded neighbour.
  void out(int r, const std::vector<SegmentRun>& runs, std::vector<Step>& steps) const {
    if (r >= 2 * rem) return;
    for (const SegmentRun& m : runs)
      steps.push_back((id(r) < 0 ? Step::recv_into_accumulator(r - 1, m.first) : Step::send(r + 1, m.first))
                          .spanning(m.span));
  }
  void out(int r, int segments, std::vector<Step>& steps) const { out(r, one_run_each(segments), steps); }

 private:
  static std::vector<SegmentRun> one_run_each(int segments) {
    std::vector<SegmentRun> runs(segments);
    for (int k = 0; k < segments; ++k) runs[k].first = k;
    return runs;
  }
};

}  // namespace canopy::planner
