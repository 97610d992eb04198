#include "planner/greedy.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "planner/segments.h"
#include "planner/tree.h"

namespace canopy::planner {

std::vector<SegmentCost> segment_costs(const std::vector<Segment>& segments, std::int64_t element_bytes,
                                       const CostModel& model) {
  std::vector<SegmentCost> out;
  out.reserve(segments.size());
  for (const Segment& s : segments) {
    const std::int64_t bytes = s.count * element_bytes;
    out.push_back({model.transfer(bytes), model.reduce(bytes), model.copy(bytes)});
  }
  return out;
}

namespace {

// A step and when the construction starts it; a rank's steps run in that order.
struct Timed {
  double time;
  std::size_t seq;  // creation order breaks ties: a combination before what follows it
  Step step;
};

// The contiguous rank range a partial result covers, or lo > hi once it is not one.
struct Range {
  int lo = 0;
  int hi = 0;
};

}  // namespace

Schedule greedy_schedule(const Problem& problem, const GreedyRun& run, const std::string& algorithm,
                         bool enforce_rank_order) {
  Schedule s = blank_schedule(problem, algorithm);
  const int p = problem.nranks;
  const int nseg = static_cast<int>(s.segments.size());
  if (run.nranks != p || run.segments != nseg)
    throw PlanError(algorithm + ": the construction is for another communicator or layout");
  auto rank_of = [&](int v) { return (problem.root + v) % p; };

  std::vector<std::vector<Timed>> timed(p);
  std::size_t seq = 0;
  auto add = [&](int rank, double time, const Step& step) { timed[rank].push_back({time, seq++, step}); };
  std::vector<std::vector<char>> has_acc(p, std::vector<char>(nseg, 0));  // [rank][segment]
  std::vector<std::vector<Range>> range(nseg, std::vector<Range>(p));
  for (int j = 0; j < nseg; ++j)
    for (int r = 0; r < p; ++r) range[j][r] = {r, r};

  for (const GreedyTransfer& t : run.transfers) {
    const int from = rank_of(t.from), to = rank_of(t.to), j = t.segment;
    Range& mine = range[j][to];
    const Range& theirs = range[j][from];
    const bool left = theirs.hi + 1 == mine.lo, right = mine.hi + 1 == theirs.lo;
    const bool contiguous = mine.lo <= mine.hi && theirs.lo <= theirs.hi;
    if (!problem.commutative && enforce_rank_order && !(contiguous && (left || right)))
      throw PlanError(algorithm + " combines ranks " + std::to_string(theirs.lo) + ".." + std::to_string(theirs.hi) +
                      " into " + std::to_string(mine.lo) + ".." + std::to_string(mine.hi) +
                      " on rank " + std::to_string(to) +
                      ": out of rank order, so it needs a commutative operation");
    const bool incoming_is_left = theirs.lo < mine.lo;
    if (contiguous && (left || right)) mine = {std::min(mine.lo, theirs.lo), std::max(mine.hi, theirs.hi)};
    else mine = {1, 0};  // no longer a range; only an unenforced non-commutative run gets here

    add(from, t.start, Step::send(to, j, has_acc[from][j] ? Buffer::Accumulator : Buffer::Input));
    add(to, t.start, Step::recv_into_slot(from, j, 0));
    if (!has_acc[to][j]) {
      add(to, t.reduce_start, Step::copy(j));
      has_acc[to][j] = 1;
    }
    add(to, t.reduce_start, Step::reduce(j, 0, incoming_is_left));
    s.slots[to] = 1;
  }
  // The root holds its own contribution to every segment (p = 1: it only copies).
  for (int j = 0; j < nseg; ++j)
    if (!has_acc[problem.root][j]) add(problem.root, run.makespan, Step::copy(j));

  for (int r = 0; r < p; ++r) {
    auto& list = timed[r];
    std::sort(list.begin(), list.end(), [](const Timed& a, const Timed& b) {
      return a.time < b.time || (a.time == b.time && a.seq < b.seq);
    });
    for (const Timed& t : list) s.steps[r].push_back(t.step);
  }
  return s;
}

double SegmentationSearch::percent() const {
  if (optimal.empty() || optimal.front().time <= 0) return 0;
  return 100 * (best_uniform.time / optimal.front().time - 1);
}

std::vector<std::int64_t> uniform_layout(std::int64_t m, std::int64_t q) {
  if (m < 1 || q < 1 || q > m) throw PlanError("uniform_layout needs 1 <= q <= m");
  const std::int64_t size = (m + q - 1) / q;
  std::vector<std::int64_t> counts(static_cast<std::size_t>((m + size - 1) / size), size);
  counts.back() = m - size * (static_cast<std::int64_t>(counts.size()) - 1);
  return counts;
}

SegmentationSearch search_greedy_segmentations(int nranks, std::int64_t m, std::int64_t element_bytes,
                                               const CostModel& model) {
  if (m < 1 || m > 24) throw PlanError("the segmentation search enumerates 2^(m-1) layouts: m must be 1..24");
  if (nranks < 1) throw PlanError("nranks must be at least 1");
  auto time_of = [&](const std::vector<std::int64_t>& counts) {
    return greedy_unidirectional(nranks, segment_costs(segments_from_counts(counts), element_bytes, model))
        .makespan;
  };
  // Two times are the same when they differ by rounding only.
  auto same = [](double a, double b) { return std::abs(a - b) <= 1e-9 * std::max({1.0, std::abs(a), std::abs(b)}); };

  SegmentationSearch out;
  for (std::int64_t q = 1; q <= m; ++q) {  // fewest segments first: they win ties
    const std::vector<std::int64_t> counts = uniform_layout(m, q);
    const double t = time_of(counts);
    if (out.best_uniform.counts.empty() || (t < out.best_uniform.time && !same(t, out.best_uniform.time)))
      out.best_uniform = {counts, t};
  }
  // Composition k: bit i set means a cut after element i + 1.
  const std::int64_t total = std::int64_t{1} << (m - 1);
  for (std::int64_t mask = 0; mask < total; ++mask) {
    std::vector<std::int64_t> counts;
    std::int64_t run = 0;
    for (std::int64_t i = 0; i < m; ++i) {
      ++run;
      if (i == m - 1 || (mask >> i & 1)) {
        counts.push_back(run);
        run = 0;
      }
    }
    const double t = time_of(counts);
    ++out.tried;
    if (out.optimal.empty() || (t < out.optimal.front().time && !same(t, out.optimal.front().time))) {
      out.optimal.assign(1, {counts, t});
    } else if (same(t, out.optimal.front().time)) {
      out.optimal.push_back({counts, t});
    }
  }
  // Report the optimal layouts fewest segments first, then in lexicographic order.
  std::sort(out.optimal.begin(), out.optimal.end(), [](const Segmentation& a, const Segmentation& b) {
    return a.counts.size() != b.counts.size() ? a.counts.size() < b.counts.size() : a.counts > b.counts;
  });
  return out;
}

}  // namespace canopy::planner
