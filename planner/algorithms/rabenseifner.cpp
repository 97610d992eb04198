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
//    least p' elements (PlanError otherwise). In this IR a message is one segment, so a
//    round sends each of its slices as a message of its own: a rank sends p'-1 messages
//    in each phase, as many as the ring, not log2(p'); the bytes are Rabenseifner's.
//  * Recursive halving at distances 1, 2, 4, ...: in round t, id i keeps the slices
//    whose bit t matches its own (so id i ends with slice i) and its partner i ^ 2^t the
//    others. Each id's contributions then always form a block of consecutive ids, hence
//    of consecutive ranks (fold.h), and the partner's block is the left operand when its
//    ids come first: rank order, for non-commutative operations too. The allgather runs
//    the distances in reverse (p'/2, ..., 2, 1).
//  * Each slice's value is computed on one rank and copied to the others, so every rank
//    ends with the same bits (what recursive-doubling.cpp needs rank order for).
//  * A rank that folds nobody in sends the slices it gives away in the first round from
//    its input and copies only those it keeps (receive, copy and reduce, which the
//    executor fuses: shim/executor.cpp, fusions_for).
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
  std::vector<Step> steps;
  slots = i < 0 ? 0 : nseg;
  if (folds) fold.in(r, nseg, steps);
  if (i >= 0 && fold.p2 == 1 && !folds)
    for (int k = 0; k < nseg; ++k) steps.push_back(Step::copy(k));  // p = 1
  if (i >= 0) {
    const int L = fold.rounds();
    // Reduce-scatter: before round t, id i holds the slices s with s = i in bits 0..t-1.
    for (int t = 0; t < L; ++t) {
      const int m = 1 << t, j = i ^ m, peer = fold.rank_of(j);
      std::vector<int> kept, given;
      for (int s = 0; s < fold.p2; ++s) {
        if ((s & (m - 1)) != (i & (m - 1))) continue;
        for (int k = sl.begin(s); k < sl.end(s); ++k) ((s & m) == (i & m) ? kept : given).push_back(k);
      }
      const bool from_input = t == 0 && !folds;
      for (int k : kept) steps.push_back(Step::recv_into_slot(peer, k, k));
      for (int k : given) steps.push_back(Step::send(peer, k, from_input ? Buffer::Input : Buffer::Accumulator));
      for (int k : kept) {
        if (from_input) steps.push_back(Step::copy(k));
        steps.push_back(Step::reduce(k, k, j < i));
      }
    }
    // Allgather: before round t (from L-1 down), id i holds the slices s with s = i in
    // bits 0..t; it sends them all and receives its partner's.
    for (int t = L - 1; t >= 0; --t) {
      const int m = 1 << t, j = i ^ m, peer = fold.rank_of(j);
      const int mask = 2 * m - 1;
      for (int s = 0; s < fold.p2; ++s)
        if ((s & mask) == (j & mask))
          for (int k = sl.begin(s); k < sl.end(s); ++k) steps.push_back(Step::recv_into_accumulator(peer, k));
      for (int s = 0; s < fold.p2; ++s)
        if ((s & mask) == (i & mask))
          for (int k = sl.begin(s); k < sl.end(s); ++k) steps.push_back(Step::send(peer, k));
    }
  }
  fold.out(r, nseg, steps);
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

// Per rank and segment at most: 3 for the fold in, 3.5 in the reduce-scatter (receive,
// copy, reduce, send, over halving rounds), 2 in the allgather, 1 for the fold out.
std::int64_t steps_rabenseifner_allreduce(const Problem& problem) {
  const int p2 = Fold(problem.nranks).p2;
  return std::int64_t{problem.nranks} * 10 * p2 * slice_pieces(std::max<std::int64_t>(problem.count, 1), p2);
}

// An estimate: the fold (the whole message in, combined, and out again where p != p'),
// then round t of the halving sends p'/2^(t+1) slices and combines as many, and the
// doubling sends them back; a slice is n/p' rounded up.
Price price_rabenseifner_allreduce(const Problem& problem) {
  check(problem);
  const Fold fold(problem.nranks);
  const CostModel& m = problem.model;
  const std::int64_t n = problem.bytes();
  const std::int64_t slice = (problem.count + fold.p2 - 1) / fold.p2 * problem.element_bytes;
  double t = m.copy(n);
  if (fold.rem > 0) t += 2 * m.transfer(n) + m.reduce(n);
  for (int k = fold.p2 / 2; k >= 1; k /= 2)  // slices sent in a round, both phases
    t += static_cast<double>(k) * (2 * m.transfer(slice) + m.reduce(slice));
  return {t, false};
}

}  // namespace canopy::planner
