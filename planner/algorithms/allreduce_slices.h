// The message cut into slices, one per rank of a reduce-scatter (ring.cpp,
// rabenseifner.cpp): balanced (sizes differ by at most one element), each slice one
// segment, or several where it holds more elements than one MPI message can
// (kMaxSegmentCount).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "planner/problem.h"
#include "planner/segments.h"

namespace canopy::planner {

struct AllreduceSlices {
  std::vector<Segment> segments;
  std::vector<int> first;  // slice j is segments first[j] .. first[j+1]-1
  int pieces = 1;          // the most segments one slice has

  int begin(int slice) const { return first[slice]; }
  int end(int slice) const { return first[slice + 1]; }
};

// How many segments the largest of `parts` slices of `count` elements needs.
inline std::int64_t slice_pieces(std::int64_t count, int parts) {
  const std::int64_t largest = count / parts + (count % parts != 0);
  return std::max<std::int64_t>(1, (largest + kMaxSegmentCount - 1) / kMaxSegmentCount);
}

// Throws PlanError (naming `algorithm`) when the message has fewer elements than slices
// or the slices need more segments than messages can be told apart (kMaxSegments).
inline void check_allreduce_slices(std::int64_t count, int parts, const std::string& algorithm) {
  if (count < parts)
    throw PlanError(algorithm + ": fewer elements than ranks (" + std::to_string(count) + " < " +
                    std::to_string(parts) + ")");
  const std::int64_t pieces = slice_pieces(count, parts);
  if (pieces * parts > kMaxSegments)
    throw PlanError(algorithm + ": " + std::to_string(parts) + " slices of " + std::to_string(pieces) +
                    " segments exceed the " + std::to_string(kMaxSegments) + " distinct message tags");
}

inline AllreduceSlices cut_allreduce_slices(std::int64_t count, int parts, const std::string& algorithm) {
  check_allreduce_slices(count, parts, algorithm);
  const std::int64_t pieces = slice_pieces(count, parts);
  AllreduceSlices out;
  out.pieces = static_cast<int>(pieces);
  const std::int64_t base = count / parts, extra = count % parts;
  std::int64_t at = 0;
  for (int j = 0; j < parts; ++j) {
    out.first.push_back(static_cast<int>(out.segments.size()));
    const std::int64_t size = base + (j < extra ? 1 : 0);
    const std::int64_t n = (size + kMaxSegmentCount - 1) / kMaxSegmentCount;
    for (std::int64_t q = 0; q < n; ++q) {
      const std::int64_t piece = size / n + (q < size % n ? 1 : 0);
      out.segments.push_back({at, piece});
      at += piece;
    }
  }
  out.first.push_back(static_cast<int>(out.segments.size()));
  return out;
}

// The whole schedule (view_rank -1) or one rank's view of an algorithm over slices:
// `frame(problem, view_rank, slices)` checks the problem, cuts the slices and returns the
// empty schedule; `rank_steps(nranks, rank, slices, slots)` lists one rank's steps.
template <typename Frame, typename RankSteps>
Schedule plan_over_slices(const Problem& problem, int view_rank, Frame frame, RankSteps rank_steps) {
  if (view_rank >= problem.nranks)
    throw PlanError("rank " + std::to_string(view_rank) + " is outside 0.." + std::to_string(problem.nranks - 1));
  AllreduceSlices sl;
  Schedule s = frame(problem, view_rank, sl);
  if (view_rank >= 0) {
    s.steps[0] = rank_steps(problem.nranks, view_rank, sl, s.slots[0]);
  } else {
    for (int r = 0; r < problem.nranks; ++r) s.steps[r] = rank_steps(problem.nranks, r, sl, s.slots[r]);
  }
  return s;
}

}  // namespace canopy::planner
