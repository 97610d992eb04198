// Langou's bidirectional greedy reduction (001_*.txt, "Bidirectional", Algorithm 2).
//
// Cost: 001 conjectures that it matches the optimal broadcast scheduled in reverse
// [Traff and Ripke '08, Bar-Noy and Kipnis '94]:
//   (ceil(log2 p) + q - 1)(t_comm + t_comp),  t_comm = alpha + beta s, t_comp = gamma s.
// The construction below attains it exactly on every equal-segment case measured
// (p = 2..40, q = 1..12, gamma = 0 and gamma > 0; tests/planner/test_langou.cpp).
//
// The model: full duplex, no overlap. A rank may send one message and receive another
// at the same time; combining holds the rank (both ports), as Algorithm 2's COMP set
// excludes computing ranks from sending and receiving. In the simulator that is
// hockney with duplex=full, overlap=0.
//
// What the slides give and what is decided here. Algorithm 2 is too garbled to run as
// printed ("freeProc = sendProc U recvProc" followed by removing freeProc from both,
// "t + t_comm(j) > C(i)" against a two-column C, "max{M(i,j) | 1 <= i <= stop}", a
// unit time step t = t + 1 whatever the costs). Its intent is clear and is what this
// file implements, event-driven like the unidirectional construction:
//  * at every event, segments are served in order, lowest first, and a port taken by
//    one segment is unavailable to the later ones;
//  * for segment j, a rank can send if it is not position 0, still holds segment j,
//    its send port is free, it is not receiving segment j and has no combination
//    pending; it can receive if it still holds segment j, its receive port is free and
//    it has no combination pending. As in Algorithm 2 (I = {i | M(i,j) = 0}) a rank
//    may send a later segment before an earlier one. Requiring in-order sends was
//    tried: it loses a step per few segments (p = 4, q = 2: 4 steps instead of 3),
//    because the reversed optimal broadcast sends segments out of order;
//  * Algorithm 2's balancing: with s ranks that can only send, r that can only
//    receive and f that can do both, x = clamp(floor((r + f - s) / 2), 0, f) of the f
//    become senders (the highest positions) and the rest receivers (the lowest), which
//    maximises the number of pairs min(s + x, r + f - x); then the lowest receivers
//    (position 0 first) and the highest senders are paired, k-th with k-th in
//    increasing order;
//  * a receiver combines when the transfer has ended and its send port is free (the
//    executor runs a rank's steps in order, so a send started while the operand was
//    arriving delays the combination); meanwhile it starts nothing new.
// Non-commutative operations are declined as for the unidirectional greedy (greedy.h).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>

#include "planner/greedy.h"
#include "planner/segments.h"

namespace canopy::planner {

namespace {

bool at_or_before(double a, double t) { return a <= t + 1e-12 * std::max(1.0, std::abs(t)); }

// How many segments past the lowest unfinished one a free rank looks at for work.
// Without a bound, ranks that run ahead of position 0 touch every segment and each
// event scans them all (quadratic in q); the bound keeps an event at O(p) segments.
// It is far beyond what the pipeline needs (about log2 p segments are in flight in
// the reversed optimal broadcast), so it does not change the trees of small cases.
// (Measured: p <= 64, q <= 256 give the same makespans with and without it.)
int lookahead(int p) { return 2 * p + 16; }

}  // namespace

GreedyRun greedy_bidirectional(int p, const std::vector<SegmentCost>& costs) {
  GreedyRun run;
  run.nranks = p;
  const int q = static_cast<int>(costs.size());
  run.segments = q;
  if (p < 1) throw PlanError("greedy: nranks must be at least 1");
  if (p == 1 || q == 0) return run;

  std::vector<double> send_free(p, 0.0), recv_free(p, 0.0);
  std::vector<int> pending(p, -1);  // receive whose combination has not started: index in run.transfers
  std::vector<int> holders(q, p);
  // A plan runs this construction for every segment size it prices, and each event
  // asks, for up to lookahead(p) segments, which free ranks hold each one: the ranks
  // are bit sets of `words` words, and a segment that cannot be paired costs a few
  // word operations instead of a pass over the ranks.
  const int words = (p + 63) / 64;
  const auto bit = [](int v) { return std::uint64_t{1} << (v % 64); };
  const auto row = [words](std::vector<std::uint64_t>& table, int j) { return table.data() + static_cast<std::size_t>(j) * words; };
  std::vector<std::uint64_t> holds(static_cast<std::size_t>(q) * words, ~std::uint64_t{0});  // [segment]: ranks holding it
  if (p % 64 != 0)
    for (int j = 0; j < q; ++j) row(holds, j)[words - 1] = (std::uint64_t{1} << (p % 64)) - 1;
  std::vector<std::uint64_t> send_mask(words), recv_mask(words), receiving_mask;
  const auto at = [q](int v, int j) { return static_cast<std::size_t>(v) * q + j; };
  std::vector<char> received(static_cast<std::size_t>(p) * q, 0);  // [position][segment]
  run.transfers.reserve(static_cast<std::size_t>(p - 1) * q);  // p - 1 combinations per segment
  int lowest = 0;  // lowest segment still held by more than position 0
  double t = 0;
  std::vector<int> only_send, only_recv, both, senders, receivers;
  while (true) {
    // Combinations whose operand has arrived start once the send port is free.
    for (int v = 0; v < p; ++v) {
      if (pending[v] < 0) continue;
      GreedyTransfer& tr = run.transfers[pending[v]];
      if (!at_or_before(tr.end, t) || !at_or_before(send_free[v], t)) continue;
      const SegmentCost& c = costs[tr.segment];
      tr.reduce_start = std::max(tr.end, send_free[v]);
      char& first = received[at(v, tr.segment)];
      tr.reduce_end = tr.reduce_start + c.reduce + (first ? 0.0 : c.copy);
      first = 1;
      send_free[v] = recv_free[v] = tr.reduce_end;
      run.makespan = std::max(run.makespan, tr.reduce_end);
      pending[v] = -1;
    }
    while (lowest < q && holders[lowest] == 1) ++lowest;
    if (lowest == q && pending[0] < 0) break;

    // Who has a free port now. A rank whose operand has arrived but whose combination
    // waits for its send port starts nothing else (its steps run in order).
    int free_senders = 0, free_receivers = 0;
    std::fill(send_mask.begin(), send_mask.end(), 0);
    std::fill(recv_mask.begin(), recv_mask.end(), 0);
    const int horizon = std::min(q, lowest + lookahead(p));
    // [segment - lowest]: the ranks whose pending receive is of that segment (they
    // cannot send it).
    receiving_mask.assign(static_cast<std::size_t>(std::max(horizon - lowest, 0)) * words, 0);
    for (int v = 0; v < p; ++v) {
      const bool blocked = pending[v] >= 0 && at_or_before(run.transfers[pending[v]].end, t);
      const bool can_send = v != 0 && at_or_before(send_free[v], t) && !blocked;
      const bool can_recv = pending[v] < 0 && at_or_before(recv_free[v], t);
      free_senders += can_send;
      free_receivers += can_recv;
      if (can_send) send_mask[v / 64] |= bit(v);
      if (can_recv) recv_mask[v / 64] |= bit(v);
      if (pending[v] >= 0) {
        const int j = run.transfers[pending[v]].segment;
        if (j >= lowest && j < horizon) row(receiving_mask, j - lowest)[v / 64] |= bit(v);
      }
    }
    bool paired = false;
    for (int j = lowest; j < horizon && free_senders > 0 && free_receivers > 0; ++j) {
      if (holders[j] == 1) continue;
      // An untouched segment (every position holds it) that cannot be paired means no
      // later one can: they are all untouched and offer the same ranks.
      const bool untouched = holders[j] == p;
      // The ranks that hold segment j and can send it, or receive it.
      const std::uint64_t* held = row(holds, j);
      const std::uint64_t* receiving_j = row(receiving_mask, j - lowest);
      // No pair is possible when no rank can send it, none can receive it, or only one
      // rank can do either (and otherwise there is one: see x below).
      std::uint64_t any_send = 0, any_recv = 0;
      int ranks = 0;
      for (int w = 0; w < words; ++w) {
        const std::uint64_t can_send = held[w] & send_mask[w] & ~receiving_j[w], can_recv = held[w] & recv_mask[w];
        const std::uint64_t either = can_send | can_recv;
        any_send |= can_send;
        any_recv |= can_recv;
        ranks += either == 0 ? 0 : (either & (either - 1)) == 0 ? 1 : 2;  // 2: two or more
      }
      if (any_send == 0 || any_recv == 0 || ranks < 2) {
        if (untouched) break;
        continue;
      }
      only_send.clear();
      only_recv.clear();
      both.clear();
      for (int w = 0; w < words; ++w) {
        const std::uint64_t can_send = held[w] & send_mask[w] & ~receiving_j[w], can_recv = held[w] & recv_mask[w];
        for (std::uint64_t m = can_send | can_recv; m != 0; m &= m - 1) {
          const int v = w * 64 + __builtin_ctzll(m);
          const std::uint64_t b = bit(v);
          if ((can_send & b) && (can_recv & b)) both.push_back(v);
          else if (can_send & b) only_send.push_back(v);
          else only_recv.push_back(v);
        }
      }
      const int s = static_cast<int>(only_send.size()), r = static_cast<int>(only_recv.size());
      const int f = static_cast<int>(both.size());
      const int x = std::clamp((r + f - s) / 2, 0, f);
      const int pairs = std::min(s + x, r + f - x);  // at least 1 here
      // The three lists are in increasing position order (read off the bit sets), so merging
      // gives the senders and the receivers sorted.
      senders.clear();
      std::merge(only_send.begin(), only_send.end(), both.end() - x, both.end(), std::back_inserter(senders));
      receivers.clear();
      std::merge(only_recv.begin(), only_recv.end(), both.begin(), both.end() - x, std::back_inserter(receivers));
      for (int k = 0; k < pairs; ++k) {
        const int from = senders[senders.size() - pairs + k], to = receivers[k];
        GreedyTransfer tr;
        tr.segment = j;
        tr.from = from;
        tr.to = to;
        tr.start = std::max({t, send_free[from], recv_free[to]});
        tr.end = tr.start + costs[j].transfer;
        tr.reduce_start = tr.reduce_end = tr.end;  // set when the combination starts
        send_free[from] = tr.end;
        row(holds, j)[from / 64] &= ~bit(from);
        --holders[j];
        recv_free[to] = tr.end;
        pending[to] = static_cast<int>(run.transfers.size());
        run.transfers.push_back(tr);
        send_mask[from / 64] &= ~bit(from);
        recv_mask[to / 64] &= ~bit(to);
        --free_senders;
        --free_receivers;
        paired = true;
      }
    }

    double next = std::numeric_limits<double>::infinity();
    auto consider = [&](double when) {
      if (!at_or_before(when, t)) next = std::min(next, when);
    };
    for (int v = 0; v < p; ++v) {
      consider(send_free[v]);
      consider(recv_free[v]);
      if (pending[v] >= 0) consider(run.transfers[pending[v]].end);
    }
    if (next == std::numeric_limits<double>::infinity()) {
      if (!paired && std::none_of(pending.begin(), pending.end(), [](int i) { return i >= 0; }))
        throw PlanError("greedy-bidirectional: no rank can make progress (internal error)");
      continue;  // zero-cost steps: act again at the same time
    }
    t = next;
  }
  std::stable_sort(run.transfers.begin(), run.transfers.end(),
                   [](const GreedyTransfer& a, const GreedyTransfer& b) { return a.start < b.start; });
  return run;
}

Schedule greedy_bidirectional_schedule(const Problem& problem, bool enforce_rank_order) {
  check_problem(problem);
  const auto costs = segment_costs(problem_segments(problem), problem.element_bytes, problem.model);
  return greedy_schedule(problem, greedy_bidirectional(problem.nranks, costs), "greedy-bidirectional",
                         enforce_rank_order);
}

Schedule plan_greedy_bidirectional_reduce(const Problem& problem) {
  return greedy_bidirectional_schedule(problem);
}

}  // namespace canopy::planner
