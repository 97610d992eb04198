// Scatter-allgather broadcast (van de Geijn; 004_*.txt Table 1, "Scatter/Collection"
// [20]): the root cuts the message into p blocks, a binomial tree scatters them (each
// rank ends with its own block), and a ring allgather circulates them.
//
// 004's cost: (log2 P + P - 1) L + 2 ((P-1)/P) g(m). Its log2 P latency term assumes a
// scatter that sends a whole subtree's blocks as one message. In the IR a message is
// one segment, at most a block, so every block travels alone: the root sends p-1
// scatter messages and p-1 ring messages (unsegmented blocks), and in hockney terms
// (g(x) = alpha + beta x, L = 0, equal blocks of m/p bytes) the bandwidth term is
// exactly 004's, 2 ((p-1)/p) beta m at the root, while the latency grows to about
// 2(p-1) alpha. tests/planner/test_bcast_algorithms.cpp measures both terms.
//
// Decisions:
//  * Blocks: k = min(p, count) blocks of floor or ceil(count / k) elements, block b
//    owned by relative rank b = (rank - root) mod p. count < p leaves ranks k..p-1
//    without a block of their own: they still take part in the ring (they forward
//    what they receive), so any count works; count 0 is an empty schedule.
//  * Segments: each block is cut by the problem's segment size like any message
//    (uniform_segments; 0 keeps a block whole), so a block travels as one message or
//    as a train of segments that a full-duplex rank forwards while it still receives
//    the rest. An explicit layout (problem.segment_counts) is used as given and its
//    segments are grouped into k = min(p, segments) blocks of consecutive segments.
//  * Scatter: the binomial tree of the binomial broadcast (relative ranks, largest
//    subtree first). A rank receives its subtree's blocks in the order it forwards
//    them (its first child's blocks, then the next child's, ..., its own last) and
//    then forwards them: store-and-forward on a half-duplex port, pipelined on a
//    full-duplex one (its receives are posted first, a send waits only for its block).
//  * Ring: in step s = 0..p-2 relative rank v sends block (v - s) mod p to v + 1 and
//    receives block (v - 1 - s) mod p from v - 1. A transfer is skipped when the block
//    does not exist (count < p) or the receiver already has it from the scatter (the
//    blocks of its own subtree): every rank receives every block exactly once and never
//    receives into a buffer it may still be sending from.
//  * Half duplex: with everyone sending first, every port of the ring would wait on
//    the next one. Even relative ranks send first and odd ones receive first; for odd
//    p the two even neighbours p-1 and 0 meet, but 0 first serves its send to the odd
//    rank 1, so no cycle of waits remains (the simulator checks p = 1..33).
//  * Rank views: a rank's steps follow from its relative number, p and the blocks.
//  * Price: the larger of two lower bounds, the simulator's makespan under hockney
//    with full duplex (checked, not proven: the root's port never waits there), an
//    estimate otherwise (then the selector simulates the schedule where it can). The root's send port is the busiest, with every block but its
//    own in the scatter and about every block again in the ring, 004's 2 ((P-1)/P) g(m)
//    bandwidth term; and block 0 crosses p-1 hops of the ring one after the other,
//    004's (P-1) L latency term (tests/planner/test_bcast_algorithms.cpp measures how
//    close the estimate comes).
//
// scatter-allgather-wide is the same broadcast for sites far apart, with every message
// in flight at once (the broadcast's counterpart of reduce-scatter-gather-wide). Over
// links whose latency does not hold the ports (port=, cost_model.h) a binomial scatter
// pays a wide-area latency per level and the ring one per hop (p - 1 of them, 1-15 ms
// each on the generated grids); sent directly, the scatter pays one and the allgather
// one. Decisions:
//  * Blocks: k = min(p - 1, count) blocks (or of the layout's segments), block b owned by
//    relative rank b + 1. The root keeps none, so its card sends the message once: with
//    a block of its own it would send that block to every rank, about twice the bytes.
//  * Scatter: the root sends block b to its owner, b = 0, 1, ...
//  * Allgather: the owner v of a block sends it to every other non-root rank, in rounds
//    s = 1 .. p-2 to the rank s after it among 1 .. p-1 (cyclically), so that no rank
//    is everyone's first destination; it receives the others' blocks in the same
//    rounds, from the rank s before it, the order in which they are sent to it.
//  * Program order: its own block, its sends of it, then the others' blocks. A
//    hierarchy merges a group's broadcast of a segment after the leader's last step on
//    it (merge_after): with the others' receives before its own sends, a leader's group
//    sends of another's block would wait for that block ahead of its own forwarding, and
//    leaders waiting on each other that way deadlock. The price of this order in the
//    executor: the others' receives are posted once the own block has arrived (a send
//    waits for its data), so a block that reaches its owner earlier waits for its
//    receiver's to arrive.
//  * Full duplex only: a port serving sends and receives in program order
//    (duplex=half) would have every rank sending to one that is sending too. Declines
//    there, and without a port= link (as reduce-scatter-gather-wide: where a port
//    serves one message at a time, latency included, nothing is gained).
//  * Priced only by simulation (p x p messages; an estimate would not see ranks sharing
//    a card or a site's link, which busiest_link bounds in the selector).
#include <algorithm>
#include <string>

#include "planner/segments.h"
#include "planner/topology.h"
#include "planner/tree.h"

namespace canopy::planner {

namespace {

constexpr const char* kName = "scatter-allgather";
constexpr const char* kWide = "scatter-allgather-wide";

int lowbit(int v) { return v & -v; }

// Relative rank v's binomial subtree is v .. v + subtree_size(v) - 1.
int subtree_size(int p, int v) { return v == 0 ? p : std::min(lowbit(v), p - v); }

// Children of relative rank v, largest subtree first.
std::vector<int> children(int p, int v) {
  std::vector<int> out;
  const int limit = v == 0 ? p : lowbit(v);
  for (int mask = 1; mask < limit && v + mask < p; mask <<= 1) out.push_back(v + mask);
  std::reverse(out.begin(), out.end());
  return out;
}

// The existing blocks (< k) of v's subtree in the order v forwards them.
void bundle(int p, int k, int v, std::vector<int>& out) {
  for (int c : children(p, v)) bundle(p, k, c, out);
  if (v < k) out.push_back(v);
}

bool in_subtree(int p, int v, int block) { return block >= v && block < v + subtree_size(p, v); }

// The layout and which segments make up each block: block b is segments
// first[b] .. first[b+1]-1.
struct Blocks {
  std::vector<Segment> segments;
  std::vector<int> first;
  int count() const { return static_cast<int>(first.size()) - 1; }
};

// `owners` blocks at most (p for scatter-allgather, p - 1 for the wide form).
Blocks block_layout(const Problem& problem, std::int64_t owners, const char* name) {
  Blocks out;
  const std::int64_t p = owners;
  if (!problem.segment_counts.empty()) {
    out.segments = problem_segments(problem);
    const std::int64_t n = static_cast<std::int64_t>(out.segments.size()), k = std::min(p, n);
    for (std::int64_t b = 0; b <= k; ++b) out.first.push_back(static_cast<int>(b * n / k));
    return out;
  }
  const std::int64_t k = std::min(p, problem.count);
  // Every block is at least one segment, each a message with its own tag.
  if (k > kMaxSegments) throw PlanError(std::string(name) + ": " + std::to_string(k) + " blocks, more than " +
                                        std::to_string(kMaxSegments) + " segments");
  out.first.push_back(0);
  std::int64_t offset = 0;
  for (std::int64_t b = 0; b < k; ++b) {
    const std::int64_t size = problem.count / k + (b < problem.count % k ? 1 : 0);
    for (Segment seg : uniform_segments(size, problem.element_bytes, problem.segment_bytes)) {
      seg.first += offset;
      out.segments.push_back(seg);
    }
    offset += size;
    if (static_cast<std::int64_t>(out.segments.size()) > kMaxSegments)
      throw PlanError(std::string(name) + ": more than " + std::to_string(kMaxSegments) + " segments");
    out.first.push_back(static_cast<int>(out.segments.size()));
  }
  return out;
}

// A block's segments sent to `to`, or received from `from` into the accumulator.
void send_block(const Blocks& blocks, int to, int b, std::vector<Step>& out) {
  for (int j = blocks.first[b]; j < blocks.first[b + 1]; ++j) out.push_back(Step::send(to, j));
}

void recv_block(const Blocks& blocks, int from, int b, std::vector<Step>& out) {
  for (int j = blocks.first[b]; j < blocks.first[b + 1]; ++j) out.push_back(Step::recv_into_accumulator(from, j));
}

// Relative rank v's steps: its part of the scatter, then of the ring. Depends on v,
// p and the block layout only, so a rank view is O(its steps) = O(p + segments).
void emit_rank(const Problem& problem, const Blocks& blocks, int v, std::vector<Step>& out) {
  const int p = problem.nranks, k = blocks.count();
  if (k == 0) return;
  auto rank = [&](int u) { return (problem.root + u) % p; };
  // Scatter.
  if (v != 0) {
    std::vector<int> mine;
    bundle(p, k, v, mine);
    const int parent = v & (v - 1);
    for (int b : mine) recv_block(blocks, rank(parent), b, out);
  }
  for (int c : children(p, v)) {
    std::vector<int> theirs;
    bundle(p, k, c, theirs);
    for (int b : theirs) send_block(blocks, rank(c), b, out);
  }
  // Ring allgather.
  const int next = (v + 1) % p, prev = (v + p - 1) % p;
  for (int step = 0; step + 1 < p; ++step) {
    const int out_block = ((v - step) % p + p) % p;
    const int in_block = ((v - 1 - step) % p + p) % p;
    const bool sends = out_block < k && !in_subtree(p, next, out_block);
    const bool receives = in_block < k && !in_subtree(p, v, in_block);
    if (v % 2 == 0) {
      if (sends) send_block(blocks, rank(next), out_block, out);
      if (receives) recv_block(blocks, rank(prev), in_block, out);
    } else {
      if (receives) recv_block(blocks, rank(prev), in_block, out);
      if (sends) send_block(blocks, rank(next), out_block, out);
    }
  }
}

// scatter-allgather-wide's refusals (see the top).
void require_wide_fits(const Problem& problem) {
  check_problem(problem);
  if (std::string why = wide_area_declines(problem.topology.get(), kWide); !why.empty()) throw PlanError(why);
  if (problem.model.duplex != Duplex::Full)
    throw PlanError(std::string(kWide) + ": every message in flight at once needs full-duplex ports (duplex=full)");
}

// Relative rank v's steps of the wide form: block b is relative rank b + 1's.
void emit_wide_rank(const Problem& problem, const Blocks& blocks, int v, std::vector<Step>& out) {
  const int p = problem.nranks, k = blocks.count();
  if (k == 0) return;
  auto rank = [&](int u) { return (problem.root + u) % p; };
  if (v == 0) {
    for (int b = 0; b < k; ++b) send_block(blocks, rank(b + 1), b, out);
    return;
  }
  // The non-root ranks 1 .. p-1 in a cycle: the one s after v, and s before it.
  auto after = [&](int s) { return (v - 1 + s) % (p - 1) + 1; };
  auto before = [&](int s) { return ((v - 1 - s) % (p - 1) + (p - 1)) % (p - 1) + 1; };
  const int own = v - 1;
  if (own < k) {
    recv_block(blocks, rank(0), own, out);
    for (int s = 1; s + 1 < p; ++s) send_block(blocks, rank(after(s)), own, out);
  }
  for (int s = 1; s + 1 < p; ++s)
    if (before(s) - 1 < k) recv_block(blocks, rank(before(s)), before(s) - 1, out);
}

}  // namespace

Schedule plan_scatter_allgather_bcast(const Problem& problem) {
  Schedule s = blank_schedule(problem, kName);
  const Blocks blocks = block_layout(problem, problem.nranks, kName);
  s.segments = blocks.segments;
  for (int v = 0; v < problem.nranks; ++v) emit_rank(problem, blocks, v, s.steps[(problem.root + v) % problem.nranks]);
  return s;
}

// Every block goes round a ring of p ranks (the allgather) after the scatter: about
// 2 p (p + segments) steps.
std::int64_t steps_scatter_allgather_bcast(const Problem& problem) {
  const std::int64_t p = problem.nranks;
  return 2 * p * (p + segments_asked(problem));
}

Price price_scatter_allgather_bcast(const Problem& problem) {
  check_problem(problem);
  const Blocks blocks = block_layout(problem, problem.nranks, kName);
  const int k = blocks.count(), p = problem.nranks;
  if (k == 0 || p == 1) return {0, false};
  // An estimate, the larger of two lower bounds of the makespan:
  //  * the root's send port, the busiest, never idle: it sends every block but its own
  //    in the scatter and, in the ring, its own block and blocks 2..k-1 (rank 1 holds
  //    block 1 from the scatter); the last message then takes its full transfer;
  //  * block 0 travels the whole ring, root -> 1 -> ... -> p-1, each rank forwarding
  //    it after it has arrived (its first segment: a full transfer per hop), and the
  //    root starts it after its scatter sends.
  auto bytes = [&](int j) { return blocks.segments[j].count * problem.element_bytes; };
  std::vector<double> busy(k, 0.0);
  for (int b = 0; b < k; ++b)
    for (int j = blocks.first[b]; j < blocks.first[b + 1]; ++j) busy[b] += problem.model.occupancy(bytes(j));
  const int last = blocks.first[k] - 1, first = blocks.first[0];
  double root_scatter = 0;
  for (int b = 1; b < k; ++b) root_scatter += busy[b];
  double root = root_scatter + busy[0];
  for (int b = 2; b < k; ++b) root += busy[b];
  root += problem.model.transfer(bytes(last)) - problem.model.occupancy(bytes(last));
  const double hop = problem.model.transfer(bytes(first));
  const double ring = root_scatter + (p - 1) * hop + busy[0] - problem.model.occupancy(bytes(first));
  // Under hockney with full duplex (occupancy = transfer) the root never waits: the
  // bound is the simulator's makespan (tests/planner/test_bcast_algorithms.cpp checks
  // it on random instances); under pLogP, or with a topology, it is an estimate.
  const bool exact = problem.model.ports_held_for_transfer() && problem.model.duplex == Duplex::Full && problem.model.overlap &&
                     !problem.topology;
  return {std::max(root, ring), exact};
}

Schedule view_scatter_allgather_bcast(const Problem& problem, int rank) {
  Schedule s = blank_view(problem, kName, rank);
  const Blocks blocks = block_layout(problem, problem.nranks, kName);
  s.segments = blocks.segments;
  const int p = problem.nranks;
  emit_rank(problem, blocks, ((rank - problem.root) % p + p) % p, s.steps[0]);
  return s;
}

}  // namespace canopy::planner

namespace canopy::planner {

Schedule plan_scatter_allgather_wide_bcast(const Problem& problem) {
  require_wide_fits(problem);
  Schedule s = blank_schedule(problem, kWide);
  if (problem.nranks == 1) return s;
  const Blocks blocks = block_layout(problem, problem.nranks - 1, kWide);
  s.segments = blocks.segments;
  for (int v = 0; v < problem.nranks; ++v)
    emit_wide_rank(problem, blocks, v, s.steps[(problem.root + v) % problem.nranks]);
  return s;
}

Schedule view_scatter_allgather_wide_bcast(const Problem& problem, int rank) {
  require_wide_fits(problem);
  Schedule s = blank_view(problem, kWide, rank);
  if (problem.nranks == 1) return s;
  const Blocks blocks = block_layout(problem, problem.nranks - 1, kWide);
  s.segments = blocks.segments;
  const int p = problem.nranks;
  emit_wide_rank(problem, blocks, ((rank - problem.root) % p + p) % p, s.steps[0]);
  return s;
}

}  // namespace canopy::planner
