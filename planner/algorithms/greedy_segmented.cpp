// Langou's unidirectional greedy segmented reduction (001_*.txt, "Greedy Tree -
// Unidirectional", the C code Reduce_greedy, and "Theoretical Results").
//
// Cost: no closed form; 001's theorem: "in an unidirectional system assuming that
// segments are reduced in order the time complexity of the greedy algorithm is no
// worse than any reduction algorithm", for any segmentation, uniform or not. With
// gamma = 0 and one segment it takes ceil(log2 p)(alpha + beta m), the binomial time.
// tests/planner/test_langou.cpp checks the theorem against binomial, chain and binary
// at their best uniform segmentations, under simulate().
//
// The C code in rounds: hist[i] ranks (a prefix of the positions) still hold segment
// i; the ones in [hist[i-1], hist[i]) are done with segment i-1 and free for segment
// i (for i = 0 all hist[0] of them); z = (number free) / 2, and the top z send to the
// z below them. A segment is done when one rank, position 0, is left; position 0
// joins the next segment in the following round. Here the rounds become events (see
// greedy.h): a rank is free when its last send, or its last receive and combination,
// has ended, so a receiver is busy alpha + beta s + gamma s and a sender alpha + beta s.
// The paper's slides with computation (t_comm = 2, t_comp = 1) are a figure only;
// this event reading is the natural one and reduces to the C code when gamma = 0.
//
// Decisions: the root is position 0 and positions are numbered from it (position v is
// rank root + v mod p), so any root costs the same. Non-commutative operations are
// declined (PlanError): see greedy.h for why the greedy pairing breaks rank order.
// The registered plan uses the problem's cost model to time the construction; the
// tree it builds is meant for a half-duplex, non-overlapping machine, but its
// schedule is valid under any model.
#include <algorithm>
#include <cmath>
#include <limits>

#include "planner/greedy.h"
#include "planner/segments.h"

namespace canopy::planner {

namespace {

// Times are sums of model costs; two of them are the same event when they differ by
// rounding only.
bool at_or_before(double a, double t) { return a <= t + 1e-12 * std::max(1.0, std::abs(t)); }

}  // namespace

GreedyRun greedy_unidirectional(int p, const std::vector<SegmentCost>& costs) {
  GreedyRun run;
  run.nranks = p;
  const int q = static_cast<int>(costs.size());
  run.segments = q;
  if (p < 1) throw PlanError("greedy: nranks must be at least 1");
  if (p == 1 || q == 0) return run;

  std::vector<double> free_at(p, 0.0);
  std::vector<int> cur(p, 0);              // lowest segment the position has not sent (root: not complete)
  std::vector<int> holders(q, p);          // positions still holding a partial result of the segment
  std::vector<char> received(static_cast<std::size_t>(p) * q, 0);  // [position][segment]
  run.transfers.reserve(static_cast<std::size_t>(p - 1) * q);  // p - 1 combinations per segment
  double t = 0;
  std::vector<int> ready;  // free positions, by lowest unsent segment, then position
  while (true) {
    // Position 0 moves on once only it holds its segment and its last combination ended.
    if (at_or_before(free_at[0], t))
      while (cur[0] < q && holders[cur[0]] == 1) ++cur[0];
    if (cur[0] == q) break;

    ready.clear();
    for (int v = 0; v < p; ++v)
      if (cur[v] < q && at_or_before(free_at[v], t)) ready.push_back(v);
    std::stable_sort(ready.begin(), ready.end(), [&](int a, int b) { return cur[a] < cur[b]; });
    bool paired = false;
    for (std::size_t lo = 0, hi = 0; lo < ready.size(); lo = hi) {
      const int j = cur[ready[lo]];
      while (hi < ready.size() && cur[ready[hi]] == j) ++hi;
      const int* L = ready.data() + lo;  // the free positions of segment j, increasing
      const int f = static_cast<int>(hi - lo), z = f / 2;
      for (int k = 0; k < z; ++k) {
        const int from = L[f - z + k], to = L[f - 2 * z + k];
        GreedyTransfer tr;
        tr.segment = j;
        tr.from = from;
        tr.to = to;
        tr.start = std::max({t, free_at[from], free_at[to]});
        tr.end = tr.start + costs[j].transfer;
        tr.reduce_start = tr.end;
        char& first = received[static_cast<std::size_t>(to) * q + j];
        tr.reduce_end = tr.reduce_start + costs[j].reduce + (first ? 0.0 : costs[j].copy);
        first = 1;
        free_at[from] = tr.end;
        free_at[to] = tr.reduce_end;
        --holders[j];
        run.transfers.push_back(tr);
        run.makespan = std::max(run.makespan, tr.reduce_end);
        paired = true;
      }
      // Senders move on after the whole group is paired: cur[] orders `ready`.
      for (int k = 0; k < z; ++k) ++cur[L[f - z + k]];
    }
    double next = std::numeric_limits<double>::infinity();
    for (int v = 0; v < p; ++v)
      if (!at_or_before(free_at[v], t)) next = std::min(next, free_at[v]);
    if (next == std::numeric_limits<double>::infinity()) {
      if (!paired) throw PlanError("greedy: no rank can make progress (internal error)");
      continue;  // zero-cost steps: everything ended at t, pair again at t
    }
    t = next;
  }
  std::stable_sort(run.transfers.begin(), run.transfers.end(),
                   [](const GreedyTransfer& a, const GreedyTransfer& b) { return a.start < b.start; });
  return run;
}

Schedule greedy_segmented_schedule(const Problem& problem, bool enforce_rank_order) {
  check_problem(problem);
  const auto costs = segment_costs(problem_segments(problem), problem.element_bytes, problem.model);
  return greedy_schedule(problem, greedy_unidirectional(problem.nranks, costs), "greedy-segmented",
                         enforce_rank_order);
}

Schedule plan_greedy_segmented_reduce(const Problem& problem) { return greedy_segmented_schedule(problem); }

}  // namespace canopy::planner
