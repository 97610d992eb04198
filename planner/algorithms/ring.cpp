// Ring allreduce: a ring reduce-scatter (p-1 steps: each rank sends a slice to its right
// neighbour, receives the next from its left and combines it), then a ring allgather
// (p-1 steps passing the finished slices on).
//
// Source: Patarasuk and Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
// workstations" (JPDC 2009); MPICH's src/mpi/coll/allreduce/allreduce_intra_ring.c. Cost
// for n bytes:
//   T = 2 (p-1) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma,
// the least bandwidth term any allreduce has, for 2 (p-1) latencies: long messages.
//
// Decisions:
//  * Slices: p balanced slices (allreduce_slices.h), one segment each (several only past
//    an MPI message's int count), whatever segment size is asked
//    (cut_ring_allreduce); it needs at least p elements (PlanError otherwise).
//  * Commutative operations only (PlanError otherwise): slice j's operands meet in the
//    order j+1, j+2, ..., wrapping round past p-1 to 0, which is not rank order. Each
//    slice is still combined on one rank and copied to the others, so every rank ends
//    with the same bits.
//  * In step s of the reduce-scatter rank r sends slice r-s and combines slice r-s-1
//    into its accumulator. Step 0 sends the rank's own input (no copy first), and each
//    combined slice starts as "receive into a slot, copy the input, reduce", which the
//    executor fuses into a receive into the accumulator and one combine with the input
//    (shim/executor.cpp, fusions_for). Rank r ends with slice r+1 and the allgather's
//    step s sends slice r+1-s and receives slice r-s into the accumulator.
#include "planner/algorithms/allreduce_slices.h"

namespace canopy::planner {

namespace {

constexpr const char* kName = "ring";

std::vector<Step> rank_steps(int p, int r, const AllreduceSlices& sl, int& slots) {
  std::vector<Step> steps;
  slots = p > 1 ? sl.pieces : 0;
  if (p == 1) {
    for (int k = 0; k < static_cast<int>(sl.segments.size()); ++k) steps.push_back(Step::copy(k));
    return steps;
  }
  const int next = (r + 1) % p, prev = (r + p - 1) % p;
  const auto slice = [p](int j) { return ((j % p) + p) % p; };
  for (int s = 0; s + 1 < p; ++s) {
    const int out = slice(r - s), in = slice(r - s - 1);
    for (int k = sl.begin(in); k < sl.end(in); ++k) steps.push_back(Step::recv_into_slot(prev, k, k - sl.begin(in)));
    for (int k = sl.begin(out); k < sl.end(out); ++k)
      steps.push_back(Step::send(next, k, s == 0 ? Buffer::Input : Buffer::Accumulator));
    for (int k = sl.begin(in); k < sl.end(in); ++k) {
      steps.push_back(Step::copy(k));
      steps.push_back(Step::reduce(k, k - sl.begin(in), false));
    }
  }
  for (int s = 0; s + 1 < p; ++s) {
    const int out = slice(r + 1 - s), in = slice(r - s);
    for (int k = sl.begin(in); k < sl.end(in); ++k) steps.push_back(Step::recv_into_accumulator(prev, k));
    for (int k = sl.begin(out); k < sl.end(out); ++k) steps.push_back(Step::send(next, k));
  }
  return steps;
}

// What the ring declines (plan and price alike).
void check(const Problem& problem) {
  check_problem(problem);
  if (problem.collective != Collective::Allreduce) throw PlanError(std::string(kName) + " plans allreduces");
  if (!problem.commutative)
    throw PlanError(std::string(kName) + ": the ring combines out of rank order: commutative ops only");
  check_allreduce_slices(problem.count, problem.nranks, kName);
}

Schedule frame(const Problem& problem, int view_rank, AllreduceSlices& sl) {
  check(problem);
  sl = cut_allreduce_slices(problem.count, problem.nranks, kName);
  return empty_schedule(problem, kName, sl.segments, view_rank);
}

}  // namespace

Schedule plan_ring_allreduce(const Problem& problem) { return plan_over_slices(problem, -1, frame, rank_steps); }

Schedule view_ring_allreduce(const Problem& problem, int rank) {
  if (rank < 0) throw PlanError("rank " + std::to_string(rank) + " is outside 0.." + std::to_string(problem.nranks - 1));
  return plan_over_slices(problem, rank, frame, rank_steps);
}

// The slices do not depend on the segment size asked.
std::int64_t cut_ring_allreduce(const Problem&) { return 0; }

// Per rank and segment of a slice: 4 steps in each of the p-1 reduce-scatter steps, 2 in
// each allgather step (one copy each on one rank).
std::int64_t steps_ring_allreduce(const Problem& problem) {
  const std::int64_t p = problem.nranks;
  return p * (6 * p + 1) * slice_pieces(std::max<std::int64_t>(problem.count, p), problem.nranks);
}

// An estimate (the simulator's pipelining of the steps aside): 2(p-1) messages of a
// slice, the largest n/p rounded up, and p-1 combines of one, after a copy of the input.
Price price_ring_allreduce(const Problem& problem) {
  check(problem);
  const std::int64_t p = problem.nranks;
  const std::int64_t slice = (problem.count + p - 1) / p * problem.element_bytes;
  const CostModel& m = problem.model;
  return {m.copy(problem.bytes()) + static_cast<double>(2 * (p - 1)) * m.transfer(slice) +
              static_cast<double>(p - 1) * m.reduce(slice),
          false};
}

}  // namespace canopy::planner
