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

// The contiguous rank range a partial result covers, or lo > hi once it is not one.
struct Range {
  int lo = 0;
  int hi = 0;
};

// What a transfer's steps need from the transfers before it: whether the sender sends
// its accumulator (it has combined this segment before) or its input, whether the
// receiver first copies its input into its accumulator, and which operand is left.
struct TransferFacts {
  bool send_accumulator = false;
  bool copy_first = false;
  bool incoming_is_left = false;
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

  // A rank runs its steps in the order the construction starts them: sends and
  // receives at a transfer's start, the copy and the combination at its reduce_start,
  // ties in creation order (transfer by transfer: send, receive, copy, combine). The
  // transfers come in start order, so the steps are emitted by merging them with the
  // transfers in reduce_start order, straight into each rank's reserved list: this
  // builder runs for every segment size the selector prices (a 64-rank, 64-segment
  // schedule has 15,000 steps), and sorting a timed copy of every step per rank made
  // its memory, and the page faults of taking it afresh each time, most of its cost.
  const std::size_t n = run.transfers.size();
  const auto at = [nseg](int rank, int j) { return static_cast<std::size_t>(rank) * nseg + j; };
  std::vector<char> has_acc(static_cast<std::size_t>(p) * nseg, 0);  // [rank][segment]
  std::vector<Range> range(static_cast<std::size_t>(nseg) * p);      // [segment][rank]
  for (int j = 0; j < nseg; ++j)
    for (int r = 0; r < p; ++r) range[static_cast<std::size_t>(j) * p + r] = {r, r};
  std::vector<TransferFacts> facts(n);
  std::vector<std::size_t> steps_of(p, 0);
  for (std::size_t k = 0; k < n; ++k) {
    const GreedyTransfer& t = run.transfers[k];
    const int from = rank_of(t.from), to = rank_of(t.to), j = t.segment;
    Range& mine = range[static_cast<std::size_t>(j) * p + to];
    const Range& theirs = range[static_cast<std::size_t>(j) * p + from];
    const bool left = theirs.hi + 1 == mine.lo, right = mine.hi + 1 == theirs.lo;
    const bool contiguous = mine.lo <= mine.hi && theirs.lo <= theirs.hi;
    if (!problem.commutative && enforce_rank_order && !(contiguous && (left || right)))
      throw PlanError(algorithm + " combines ranks " + std::to_string(theirs.lo) + ".." + std::to_string(theirs.hi) +
                      " into " + std::to_string(mine.lo) + ".." + std::to_string(mine.hi) +
                      " on rank " + std::to_string(to) +
                      ": out of rank order, so it needs a commutative operation");
    facts[k] = {has_acc[at(from, j)] != 0, !has_acc[at(to, j)], theirs.lo < mine.lo};
    if (contiguous && (left || right)) mine = {std::min(mine.lo, theirs.lo), std::max(mine.hi, theirs.hi)};
    else mine = {1, 0};  // no longer a range; only an unenforced non-commutative run gets here
    has_acc[at(to, j)] = 1;
    ++steps_of[from];
    steps_of[to] += facts[k].copy_first ? 3 : 2;
    s.slots[to] = 1;
  }
  // The root holds its own contribution to every segment (p = 1: it only copies); those
  // copies start at the makespan, after everything else.
  std::vector<int> final_copies;
  for (int j = 0; j < nseg; ++j)
    if (!has_acc[at(problem.root, j)]) final_copies.push_back(j);
  steps_of[problem.root] += final_copies.size();
  for (int r = 0; r < p; ++r) s.steps[r].reserve(steps_of[r]);

  std::vector<std::size_t> by_reduce(n);
  for (std::size_t k = 0; k < n; ++k) by_reduce[k] = k;
  std::stable_sort(by_reduce.begin(), by_reduce.end(), [&](std::size_t a, std::size_t b) {
    return run.transfers[a].reduce_start < run.transfers[b].reduce_start;
  });
  for (std::size_t k = 0, i = 0; k < n || i < n;) {
    // Transfer k's start against transfer by_reduce[i]'s reduce_start: the earlier
    // first, and at the same time the earlier transfer (a transfer's own start first).
    const bool start_next =
        i == n || (k < n && (run.transfers[k].start < run.transfers[by_reduce[i]].reduce_start ||
                             (run.transfers[k].start == run.transfers[by_reduce[i]].reduce_start && k <= by_reduce[i])));
    if (start_next) {
      const GreedyTransfer& t = run.transfers[k];
      const int from = rank_of(t.from), to = rank_of(t.to);
      s.steps[from].push_back(Step::send(to, t.segment, facts[k].send_accumulator ? Buffer::Accumulator : Buffer::Input));
      s.steps[to].push_back(Step::recv_into_slot(from, t.segment, 0));
      ++k;
    } else {
      const std::size_t c = by_reduce[i++];
      const GreedyTransfer& t = run.transfers[c];
      std::vector<Step>& steps = s.steps[rank_of(t.to)];
      if (facts[c].copy_first) steps.push_back(Step::copy(t.segment));
      steps.push_back(Step::reduce(t.segment, 0, facts[c].incoming_is_left));
    }
  }
  for (int j : final_copies) s.steps[problem.root].push_back(Step::copy(j));
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
