// shm-recursive-doubling: recursive doubling (recursive_doubling.cpp) through the node's
// staging ring. In round t every exchanging rank stages its whole partial result once
// for its partner (the rank whose id differs in bit t) and combines the partner's
// staged partial result into its own where it lies (FetchReduce); MPICH's fold handles
// other p (fold.h): a folded-away rank stages its input for its left neighbour, which
// combines it first, and at the end copies the result out of that neighbour's stage.
//
// Why a staged recursive doubling: on two ranks every other staged allreduce hands a
// chunk over twice before the last rank has its result (shm reduces at rank 0, which
// stages the result for rank 1; shm-reduce-scatter-allgather's owner of a
// one-element message does the same), where MPI's own short allreduce exchanges once.
// Measured (2 ranks, Open MPI 4.1.4, OSU-style calls of 8 B with a barrier after each,
// blocks of MPI_Allreduce through Canopy against PMPI_Allreduce in one process, 3
// runs): shm forced 0.57-0.63x native (about 1 us against 0.6). Here a two-rank call is
// one hand-over each way at once, as native's: rank i's result is staged_j (op) input_i
// in rank order, the same two operands in the same order on both ranks.
//
// Decisions:
//  * Identical bits on every rank (as recursive-doubling): both partners of a round
//    combine the same two partial results in the same order, the lower ids on the left
//    (incoming_is_left), and the fold's blocks keep consecutive ranks, so the order is
//    rank order; the schedule is marked non-commutative so the executor honours it.
//  * Chunks as the other staged reductions cut them (cut_staged_reduce: whole entries'
//    worth); round by round, in each round chunk by chunk: stage chunk k, then combine
//    the partner's chunk k. A stage waits only for the reader of its entry's previous
//    use, which reads it in the same or an earlier round before anything it needs from
//    this rank's later stages, so a ring of any size never deadlocks (the validator
//    proves it for each schedule).
//  * Stage numbers in closed form (a rank view needs no other rank's steps): an
//    exchanging rank's stage of round t, chunk k is t S + k (S chunks), its stage of
//    the result for a folded-away neighbour R S + k (R rounds); a folded-away rank
//    stages chunk k of its input as stage k.
//  * The first combine of a chunk reads the rank's input itself (no copy first), as
//    the other staged reductions do; a rank alone copies its input.
//  * Every round moves and combines the whole message on every rank: log2 p passes, so
//    it is for short messages and few ranks; the selector prices it by simulation.
#include "planner/algorithms/fold.h"
#include "planner/segments.h"
#include "planner/staged.h"

namespace canopy::planner {

std::int64_t cut_staged_reduce(const Problem&);

namespace {

constexpr const char* kName = "shm-recursive-doubling";

std::vector<Step> rank_steps(int p, int r, int segments) {
  const Fold fold(p);
  const int rounds = fold.rounds();
  std::vector<Step> steps;
  const int i = fold.id(r);
  if (i < 0) {  // folded away: input to the left neighbour, the result back from it
    for (int k = 0; k < segments; ++k) steps.push_back(Step::stage(k, k, 1, Buffer::Input));
    for (int k = 0; k < segments; ++k) steps.push_back(Step::fetch(r - 1, k, rounds * segments + k));
    return steps;
  }
  bool written = false;  // whether the accumulator holds this rank's partial result yet
  if (r < 2 * fold.rem) {  // folds its right neighbour's input in: its own on the left
    for (int k = 0; k < segments; ++k) steps.push_back(Step::fetch_reduce(r + 1, k, k, false, Buffer::Input));
    written = true;
  }
  for (int t = 0; t < rounds; ++t) {
    const int j = i ^ (1 << t);
    const int peer = fold.rank_of(j);
    const Buffer mine = written ? Buffer::Accumulator : Buffer::Input;
    for (int k = 0; k < segments; ++k) {
      steps.push_back(Step::stage(k, t * segments + k, 1, mine));
      // The partner's block is the left operand when its ids come first.
      steps.push_back(Step::fetch_reduce(peer, k, t * segments + k, j < i, mine));
    }
    written = true;
  }
  if (!written)  // one rank alone
    for (int k = 0; k < segments; ++k) steps.push_back(Step::copy(k));
  if (r < 2 * fold.rem)
    for (int k = 0; k < segments; ++k) steps.push_back(Step::stage(k, rounds * segments + k, 1, Buffer::Accumulator));
  return steps;
}

Schedule frame(const Problem& problem, int view_rank) {
  check_problem(problem);
  if (problem.collective != Collective::Allreduce) throw PlanError(std::string(kName) + " plans allreduces");
  if (!staging_spans_problem(problem))
    throw PlanError(std::string(kName) + " needs a staging ring over all its ranks (one node, CANOPY_SHM not off)");
  if (view_rank >= problem.nranks)
    throw PlanError("rank " + std::to_string(view_rank) + " is outside 0.." + std::to_string(problem.nranks - 1));
  const std::int64_t chunk = cut_staged_reduce(problem);
  if (chunk < problem.element_bytes) throw PlanError(std::string(kName) + ": an element is larger than a staging entry");
  Schedule s = empty_schedule(problem, kName,
                              problem.segment_counts.empty()
                                  ? uniform_segments(problem.count, problem.element_bytes, chunk)
                                  : problem_segments(problem),
                              view_rank);
  for (const Segment& seg : s.segments)
    if (seg.count * problem.element_bytes > problem.staging_entry_bytes)
      throw PlanError(std::string(kName) + ": a segment of the layout is larger than a staging entry");
  s.commutative = false;  // rank order always: identical bits on every rank (above)
  s.staging_entries = problem.staging_entries;
  s.staging_entry_bytes = problem.staging_entry_bytes;
  return s;
}

}  // namespace

Schedule plan_shm_recursive_doubling_allreduce(const Problem& problem) {
  Schedule s = frame(problem, -1);
  const int segments = static_cast<int>(s.segments.size());
  for (int r = 0; r < problem.nranks; ++r) s.steps[r] = rank_steps(problem.nranks, r, segments);
  return s;
}

Schedule view_shm_recursive_doubling_allreduce(const Problem& problem, int rank) {
  if (rank < 0) throw PlanError("rank " + std::to_string(rank) + " is outside the communicator");
  Schedule s = frame(problem, rank);
  s.steps[0] = rank_steps(problem.nranks, rank, static_cast<int>(s.segments.size()));
  return s;
}

// Per rank and chunk: a stage and a combine per round, and the fold's stage and combine
// (or copy) before and after.
std::int64_t steps_shm_recursive_doubling_allreduce(const Problem& problem) {
  Problem cut = problem;
  cut.segment_bytes = cut_staged_reduce(problem);
  const Fold fold(problem.nranks);
  return std::int64_t{problem.nranks} * segments_asked(cut) * (3 + 2 * fold.rounds());
}

}  // namespace canopy::planner
