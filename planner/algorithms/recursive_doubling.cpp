// Recursive doubling allreduce: in round t every rank exchanges its whole partial result
// with the rank whose id differs in bit t, and both combine the two.
//
// Source: MPICH, src/mpi/coll/allreduce/allreduce_intra_recursive_doubling.c (Thakur,
// Rabenseifner and Gropp, "Optimization of Collective Communication Operations in
// MPICH", IJHPCA 2005, section 4.4), its short-message allreduce. Cost for p a power
// of two, n bytes:
//   T = log2(p) (alpha + n beta + n gamma);
// otherwise, with p' the largest power of two <= p, the fold before and after
// (fold.h) adds 2 (alpha + n beta) + n gamma:
//   T = (log2(p') + 2) alpha + (log2(p') + 2) n beta + (log2(p') + 1) n gamma.
// The latency term is the least of the allreduces here (the composition of a binomial
// reduce and broadcast pays 2 ceil(log2 p) alpha), so it wins for short messages; every
// round moves the whole message, so it loses for long ones.
//
// Decisions:
//  * Segments as the problem asks (problem_segments), one slot per segment; a round
//    posts every receive, then every send, then combines segment by segment.
//  * Bitwise-identical results on every rank: the two partners of a round must combine
//    the same two operands in the same order, or a rank's result may differ from its
//    partner's in the last bits (and ranks that disagree about a value can take
//    different branches). So the schedule always combines in rank order, the lower
//    block on the left: its `commutative` is false even for a commutative operation,
//    and the executor then honours incoming_is_left. Commutative in MPI's sense is not
//    bitwise commutative: floating-point addition is, but MPI_MAX and MPI_MIN with a
//    NaN (which NaN payload, or whether the NaN survives) and user operations marked
//    commutative need not be. The ids keep blocks of consecutive ranks (fold.h), so rank
//    order is also what a non-commutative operation needs.
#include "planner/algorithms/fold.h"
#include "planner/segments.h"
#include "planner/tree.h"

namespace canopy::planner {

namespace {

constexpr const char* kName = "recursive-doubling";

// Rank r's steps over `segments` segments (and how many slots it needs).
std::vector<Step> rank_steps(int p, int r, int segments, int& slots) {
  const Fold fold(p);
  std::vector<Step> steps;
  fold.in(r, segments, steps);
  const int i = fold.id(r);
  slots = i < 0 ? 0 : segments;
  if (i >= 0)
    for (int mask = 1; mask < fold.p2; mask <<= 1) {
      const int j = i ^ mask;
      const int peer = fold.rank_of(j);
      for (int k = 0; k < segments; ++k) steps.push_back(Step::recv_into_slot(peer, k, k));
      for (int k = 0; k < segments; ++k) steps.push_back(Step::send(peer, k));
      // The partner's block is the left operand when its ids come first.
      for (int k = 0; k < segments; ++k) steps.push_back(Step::reduce(k, k, j < i));
    }
  fold.out(r, segments, steps);
  return steps;
}

Schedule frame(const Problem& problem, int view_rank) {
  check_problem(problem);
  if (problem.collective != Collective::Allreduce) throw PlanError(std::string(kName) + " plans allreduces");
  Schedule s = empty_schedule(problem, kName, problem_segments(problem), view_rank);
  s.commutative = false;  // rank order always: bitwise-identical results (above)
  return s;
}

}  // namespace

Schedule plan_recursive_doubling_allreduce(const Problem& problem) {
  Schedule s = frame(problem, -1);
  const int nseg = static_cast<int>(s.segments.size());
  for (int r = 0; r < problem.nranks; ++r) s.steps[r] = rank_steps(problem.nranks, r, nseg, s.slots[r]);
  return s;
}

Schedule view_recursive_doubling_allreduce(const Problem& problem, int rank) {
  if (rank < 0 || rank >= problem.nranks)
    throw PlanError("rank " + std::to_string(rank) + " is outside 0.." + std::to_string(problem.nranks - 1));
  Schedule s = frame(problem, rank);
  s.steps[0] = rank_steps(problem.nranks, rank, static_cast<int>(s.segments.size()), s.slots[0]);
  return s;
}

// Per rank and segment at most: receive, copy, reduce and send of the fold, and three
// steps per round.
std::int64_t steps_recursive_doubling_allreduce(const Problem& problem) {
  const Fold fold(problem.nranks);
  return std::int64_t{problem.nranks} * segments_asked(problem) * (4 + 3 * fold.rounds());
}

// An estimate: a copy of the input, the fold where p != p' (the message in, combined,
// and out again), and log2 p' rounds that each send every segment and combine them.
Price price_recursive_doubling_allreduce(const Problem& problem) {
  check_problem(problem);
  if (problem.collective != Collective::Allreduce) throw PlanError(std::string(kName) + " plans allreduces");
  const Fold fold(problem.nranks);
  const CostModel& m = problem.model;
  const std::int64_t n = problem.bytes(), segments = std::max<std::int64_t>(1, segments_asked(problem));
  const double exchange = static_cast<double>(segments) * m.transfer((n + segments - 1) / segments);
  double t = m.copy(n) + fold.rounds() * (exchange + m.reduce(n));
  if (fold.rem > 0) t += 2 * exchange + m.reduce(n);
  return {t, false};
}

}  // namespace canopy::planner
