// Rabenseifner's allreduce: a reduce-scatter by recursive halving (each rank ends with
// one slice of the result), then an allgather by recursive doubling.
//
// Source: Rabenseifner, "Optimization of Collective Reduction Operations" (ICCS 2004),
// as MPICH runs it for long messages (src/mpi/coll/allreduce/
// allreduce_intra_reduce_scatter_allgather.c; Thakur, Rabenseifner and Gropp, IJHPCA
// 2005, section 4.4). Cost for p a power of two, n bytes:
//   T = 2 log2(p) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma;
// otherwise the fold of the extra ranks before and after (fold.h, with p' the largest
// power of two <= p) adds 2 (alpha + n beta) + n gamma. Its bandwidth term is about half
// recursive doubling's log2(p) n beta, so it wins for long messages.
//
// Decisions:
//  * Slices: the message cut into p' balanced slices (allreduce_slices.h), one segment
//    each (several only past an MPI message's int count), whatever segment size is
//    asked (cut_rabenseifner_allreduce: every size plans the same schedule); it needs at
//    least p' elements (PlanError otherwise).
//  * Recursive halving at distances 1, 2, 4, ..., over halves of the slices: before
//    round t, ids that agree in bits 0..t-1 hold the same range of consecutive slices;
//    in round t id i keeps the lower half when its bit t is 0, the upper half when it is
//    1, and its partner i ^ 2^t the other. So id i ends with slice bitreverse(i), and
//    each round's exchange is one range of consecutive segments, sent as one message
//    (Step::span), the way MPICH sends it: a rank sends log2(p') messages in each phase,
//    not p'-1 (stop 66 measured the cost of the one-message-a-slice version at 1024
//    simulated ranks: 2046 messages a rank, 0.44x Open MPI's algorithm at 1 MiB).
//    Distances from 1 up keep each id's contributions a block of consecutive ids,
//    hence of consecutive ranks (fold.h), and the partner's block is the left operand
//    when its ids come first: rank order, for non-commutative operations too. The
//    allgather runs the distances in reverse (p'/2, ..., 2, 1), each id sending the
//    range it holds and receiving its partner's, which together make the range of the
//    round before.
//  * A range received for a combine lands packed from the slot of its first segment
//    (slot = segment, one slot per segment): the slots of the range are free, since
//    the ranges one rank keeps shrink round by round.
//  * Each slice's value is computed on one rank and copied to the others, so every rank
//    ends with the same bits (what recursive-doubling.cpp needs rank order for).
//  * A rank that folds nobody in sends the range it gives away in the first round from
//    its input and copies only the one it keeps (receive, copy and reduce, which the
//    executor fuses: shim/executor.cpp, fusions_for). The fold in and out move the whole
//    message as one message too (as few as int counts allow: message_runs).
#include "planner/algorithms/allreduce_slices.h"
#include "planner/algorithms/fold.h"
#include "planner/tree.h"

namespace canopy::planner {

namespace {

constexpr const char* kName = "rabenseifner";

// Rank r's steps (and its slots: one per segment of the message).
std::vector<Step> rank_steps(int p, int r, const AllreduceSlices& sl, int& slots) {
  const Fold fold(p);
  const int nseg = static_cast<int>(sl.segments.size());
  const int i = fold.id(r);
  const bool folds = r < 2 * fold.rem;
  const std::vector<SegmentRun> whole = message_runs(sl.segments, 0, nseg);
  std::vector<Step> steps;
  slots = i < 0 ? 0 : nseg;
  if (folds) fold.in(r, whole, steps);
  if (i >= 0 && fold.p2 == 1 && !folds)
    for (const SegmentRun& m : whole) steps.push_back(Step::copy(m.first).spanning(m.span));  // p = 1
  // The messages for slices lo .. hi-1.
  const auto runs = [&](int lo, int hi) { return message_runs(sl.segments, sl.begin(lo), sl.begin(hi)); };
  if (i >= 0) {
    const int L = fold.rounds();
    int lo = 0, hi = fold.p2;  // the slices id i holds (a partial result of, in the halving)
    std::vector<int> range_lo(L), range_hi(L);  // before round t, for the allgather
    // Reduce-scatter.
    for (int t = 0; t < L; ++t) {
      const int m = 1 << t, j = i ^ m, peer = fold.rank_of(j);
      range_lo[t] = lo;
      range_hi[t] = hi;
      const int mid = lo + (hi - lo) / 2;
      const bool upper = (i & m) != 0;
      const int keep_lo = upper ? mid : lo, keep_hi = upper ? hi : mid;
      const int give_lo = upper ? lo : mid, give_hi = upper ? mid : hi;
      const std::vector<SegmentRun> kept = runs(keep_lo, keep_hi), given = runs(give_lo, give_hi);
      const bool from_input = t == 0 && !folds;
      for (const SegmentRun& k : kept) steps.push_back(Step::recv_into_slot(peer, k.first, k.first).spanning(k.span));
      for (const SegmentRun& k : given)
        steps.push_back(Step::send(peer, k.first, from_input ? Buffer::Input : Buffer::Accumulator).spanning(k.span));
      for (const SegmentRun& k : kept) {
        if (from_input) steps.push_back(Step::copy(k.first).spanning(k.span));
        steps.push_back(Step::reduce(k.first, k.first, j < i).spanning(k.span));
      }
      lo = keep_lo;
      hi = keep_hi;
    }
    // Allgather: before round t (from L-1 down), id i holds lo .. hi-1 and its partner
    // the rest of range t; both send theirs.
    for (int t = L - 1; t >= 0; --t) {
      const int m = 1 << t, peer = fold.rank_of(i ^ m);
      const bool upper = (i & m) != 0;
      const int their_lo = upper ? range_lo[t] : hi, their_hi = upper ? lo : range_hi[t];
      for (const SegmentRun& k : runs(their_lo, their_hi))
        steps.push_back(Step::recv_into_accumulator(peer, k.first).spanning(k.span));
      for (const SegmentRun& k : runs(lo, hi)) steps.push_back(Step::send(peer, k.first).spanning(k.span));
      lo = range_lo[t];
      hi = range_hi[t];
    }
  }
  fold.out(r, whole, steps);
  return steps;
}

// What it declines (plan and price alike).
void check(const Problem& problem) {
  check_problem(problem);
  if (problem.collective != Collective::Allreduce) throw PlanError(std::string(kName) + " plans allreduces");
  check_allreduce_slices(problem.count, Fold(problem.nranks).p2, kName);
}

Schedule frame(const Problem& problem, int view_rank, AllreduceSlices& sl) {
  check(problem);
  sl = cut_allreduce_slices(problem.count, Fold(problem.nranks).p2, kName);
  return empty_schedule(problem, kName, sl.segments, view_rank);
}

}  // namespace

Schedule plan_rabenseifner_allreduce(const Problem& problem) { return plan_over_slices(problem, -1, frame, rank_steps); }

Schedule view_rabenseifner_allreduce(const Problem& problem, int rank) {
  if (rank < 0) throw PlanError("rank " + std::to_string(rank) + " is outside 0.." + std::to_string(problem.nranks - 1));
  return plan_over_slices(problem, rank, frame, rank_steps);
}

// The slices do not depend on the segment size asked.
std::int64_t cut_rabenseifner_allreduce(const Problem&) { return 0; }

// Per rank at most: 3 steps a message for the fold in, 4 a message in each halving
// round (receive, copy, reduce, send), 2 in each doubling round, 1 for the fold out.
// A range is one message unless it holds more elements than an int count: runs break
// only past kMaxSegmentCount elements, so a range of slices under that each is at most
// 2 count / kMaxSegmentCount + 1 messages; past it, at most every segment.
std::int64_t steps_rabenseifner_allreduce(const Problem& problem) {
  const Fold fold(problem.nranks);
  const std::int64_t count = std::max<std::int64_t>(problem.count, 1);
  const std::int64_t pieces = slice_pieces(count, fold.p2);
  const std::int64_t messages = pieces == 1 ? 2 * (count / kMaxSegmentCount) + 1 : pieces * fold.p2;
  return std::int64_t{problem.nranks} * (4 + 6 * fold.rounds()) * messages;
}

// An estimate: the fold (the whole message in, combined, and out again where p != p'),
// then round t of the halving sends half of what the rank holds and combines as much,
// as one message, and the doubling sends it back; a slice is n/p' rounded up.
Price price_rabenseifner_allreduce(const Problem& problem) {
  check(problem);
  const Fold fold(problem.nranks);
  const CostModel& m = problem.model;
  const std::int64_t n = problem.bytes();
  const std::int64_t slice = (problem.count + fold.p2 - 1) / fold.p2 * problem.element_bytes;
  double t = m.copy(n);
  if (fold.rem > 0) t += 2 * m.transfer(n) + m.reduce(n);
  for (int k = fold.p2 / 2; k >= 1; k /= 2)  // slices sent in a round, both phases
    t += 2 * m.transfer(k * slice) + m.reduce(k * slice);
  return {t, false};
}

}  // namespace canopy::planner
