// Rabenseifner's allreduce: a reduce-scatter by recursive halving (each rank ends with
// one slice of the result), then an allgather by recursive doubling; and his reduce,
// the same reduce-scatter, then a gather to the root.
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
//    asked (a size asked caps the messages instead, below); it needs at least p'
//    elements (PlanError otherwise).
//  * Messages: one a round (below) unless a segment size is asked (Problem::
//    segment_bytes > 0: CANOPY_SEGMENT_BYTES, a rule, or the selector's m/2^i search,
//    cut_rabenseifner); then it caps a message, in whole slices (at least
//    one): a round's range goes as several messages, and a rank combines the first
//    while the next arrive, Langou's pipelining (001) within a round. The selector
//    prices the sizes as it prices any pipelined algorithm's. Measured under SMPI
//    (cluster-edr, 1 MiB of doubles, 10 calls after one, forced): 64 ranks 406 us a
//    call with one message a round, 259 with CANOPY_SEGMENT_BYTES=65440 (3 slices of
//    16 KiB a message; 278 with 4, 64 KiB); 1024 ranks 482 and 350 (Open MPI's
//    selector 480, MPICH's 1098). SimGrid 3.32 prices a message of 65472 bytes or more
//    at 11.64 times the link's latency (its default smpi/lat-factor), 3.49 under, and
//    computation was not simulated there; the default model prices capped messages
//    near whole ones (64 ranks: 330.6 us at 128 KiB against 333.7), so auto sends one
//    message a round there. What made the capped ones faster there is SimGrid's
//    loopback, not the network: it does not share its bandwidth between messages in
//    flight at once (tools/sim/concurrent-messages.c: between two ranks of one host, 512
//    KiB as one message 50.0 us, as 16 of 32 KiB 5.0; between two hosts 56.2 and 63.6),
//    so the rounds inside a node move a range's pieces all at once. No memory system
//    copies that way (one core copies a pair's messages one after the other), so the
//    model is left as it is: the measured model's loopback holds the ports, and capped
//    messages are priced as the machine would run them, not as SMPI does (64 ranks,
//    2026-12-06: 347 us whole, 346 at 128 KiB, 371 at 32 KiB; SMPI 394, 313, 244).
//  * Recursive halving at distances 1, 2, 4, ..., over halves of the slices: before
//    round t, ids that agree in bits 0..t-1 hold the same range of consecutive slices;
//    in round t id i keeps the lower half when its bit t is 0, the upper half when it is
//    1, and its partner i ^ 2^t the other. So id i ends with slice bitreverse(i), and
//    each round's exchange is one range of consecutive segments, sent as one message
//    (Step::span), the way MPICH sends it: a rank sends log2(p') messages in each phase,
//    not p'-1 (one message a slice, as this file did before: 2046 messages a rank at
//    1024 ranks, estimated at 4.5 ms for 1 MiB over the simulated cluster-edr, where
//    Open MPI's algorithm takes 480 us; a forced 256-rank simulation of it did not
//    finish in 6 minutes of wall time).
//    Distances from 1 up keep each id's contributions a block of consecutive ids,
//    hence of consecutive ranks (fold.h), and the partner's block is the left operand
//    when its ids come first: rank order, for non-commutative operations too. The
//    allgather runs the distances in reverse (p'/2, ..., 2, 1), each id sending the
//    range it holds and receiving its partner's, which together make the range of the
//    round before.
//  * MPI_Reduce (MPICH's long-message reduce, src/mpi/coll/reduce/
//    reduce_intra_reduce_scatter_gather.c; Thakur, Rabenseifner and Gropp, section 4.2):
//    the same fold and halving, then a gather by recursive doubling to the root's id
//    instead of the allgather: in round t (from L-1 down) the pairs meet as in the
//    allgather, but only the id whose bit t matches the target's receives, and the other
//    sends its range and is done, so the target ends with every slice and each other id
//    sends one message (or its capped pieces). Where the root is folded away the target
//    is its left neighbour, which sends it the whole result (MPICH's "newroot"). The
//    ids do not move with the root, so the combines keep rank order for any root.
//    T = 2 log2(p) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma, as the allreduce: the
//    root receives in the gather what it would in the allgather. Not composable in a
//    hierarchy (registry.h: the gather leaves the root's result pending), like
//    reduce-scatter-gather, whose pairwise exchange sends p-1 messages a phase where
//    this sends log2 p (1024 ranks: 1023 against 10).
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

// The most elements one message carries: the segment size asked in whole slices (at
// least one), or everything one MPI count holds where none is asked.
std::int64_t message_elements(const Problem& problem, int p2) {
  if (problem.segment_bytes <= 0) return kMaxSegmentCount;
  const std::int64_t slice = std::max<std::int64_t>(1, problem.count / p2);
  const std::int64_t asked = std::max<std::int64_t>(1, problem.segment_bytes / problem.element_bytes);
  return std::min(kMaxSegmentCount, std::max<std::int64_t>(1, asked / slice) * slice);
}

// Slices one message holds (at least one).
std::int64_t slices_per_message(const Problem& problem, int p2) {
  return std::max<std::int64_t>(1, message_elements(problem, p2) / std::max<std::int64_t>(1, problem.count / p2));
}

// One exchange between partners: the upper id receives first, the lower one sends
// first, so that ranks whose port does one transfer at a time (a half-duplex model)
// meet rather than both wait on a receive.
template <typename Receive, typename Send>
void exchange(bool upper, Receive receive, Send send) {
  if (upper) {
    receive();
    send();
  } else {
    send();
    receive();
  }
}

// Rank r's steps (and its slots: one per segment of the message); `root` -1 for the
// allreduce, else the reduce's root.
std::vector<Step> rank_steps(int p, int r, int root, const AllreduceSlices& sl, std::int64_t cap, int& slots) {
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
  const auto runs = [&](int lo, int hi) { return message_runs(sl.segments, sl.begin(lo), sl.begin(hi), cap); };
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
      const auto receive = [&] {
        for (const SegmentRun& k : kept) steps.push_back(Step::recv_into_slot(peer, k.first, k.first).spanning(k.span));
      };
      const auto send = [&] {
        for (const SegmentRun& k : given)
          steps.push_back(Step::send(peer, k.first, from_input ? Buffer::Input : Buffer::Accumulator).spanning(k.span));
      };
      exchange(upper, receive, send);
      for (const SegmentRun& k : kept) {
        if (from_input) steps.push_back(Step::copy(k.first).spanning(k.span));
        steps.push_back(Step::reduce(k.first, k.first, j < i).spanning(k.span));
      }
      lo = keep_lo;
      hi = keep_hi;
    }
    // Allgather: before round t (from L-1 down), id i holds lo .. hi-1 and its partner
    // the rest of range t; both send theirs. Or, for the reduce, a gather to the root's
    // id (its left neighbour's where the root is folded away): the ids still gathering
    // agree with it in bits t+1.., and of each pair the one whose bit t differs from the
    // target's sends its range and is done.
    const int target = root < 0 ? -1 : fold.id(fold.id(root) >= 0 ? root : root - 1);
    for (int t = L - 1; t >= 0; --t) {
      const int m = 1 << t, peer = fold.rank_of(i ^ m);
      const bool upper = (i & m) != 0;
      const int their_lo = upper ? range_lo[t] : hi, their_hi = upper ? lo : range_hi[t];
      const auto receive = [&] {
        for (const SegmentRun& k : runs(their_lo, their_hi))
          steps.push_back(Step::recv_into_accumulator(peer, k.first).spanning(k.span));
      };
      const auto send = [&] {
        for (const SegmentRun& k : runs(lo, hi)) steps.push_back(Step::send(peer, k.first).spanning(k.span));
      };
      if (target < 0) {
        exchange(upper, receive, send);
      } else if ((i & m) != (target & m)) {
        send();
        break;
      } else {
        receive();
      }
      lo = range_lo[t];
      hi = range_hi[t];
    }
  }
  // The fold out: to every rank folded away for the allreduce; for the reduce only to a
  // root folded away, from its left neighbour.
  if (root < 0 || (fold.id(root) < 0 && (r == root || r == root - 1))) fold.out(r, whole, steps);
  return steps;
}

// What it declines (plan and price alike).
void check(const Problem& problem, Collective collective) {
  check_problem(problem);
  if (problem.collective != collective)
    throw PlanError(std::string(kName) + " plans " + to_string(collective) + "s here");
  check_allreduce_slices(problem.count, Fold(problem.nranks).p2, kName);
}

Schedule plan(const Problem& problem, Collective collective, int view_rank) {
  check(problem, collective);
  const std::int64_t cap = message_elements(problem, Fold(problem.nranks).p2);
  const int root = collective == Collective::Reduce ? problem.root : -1;
  const auto frame = [](const Problem& pr, int view, AllreduceSlices& sl) {
    sl = cut_allreduce_slices(pr.count, Fold(pr.nranks).p2, kName);
    return empty_schedule(pr, kName, sl.segments, view);
  };
  return plan_over_slices(problem, view_rank, frame, [cap, root](int p, int r, const AllreduceSlices& sl, int& slots) {
    return rank_steps(p, r, root, sl, cap, slots);
  });
}

Schedule view(const Problem& problem, Collective collective, int rank) {
  if (rank < 0) throw PlanError("rank " + std::to_string(rank) + " is outside 0.." + std::to_string(problem.nranks - 1));
  return plan(problem, collective, rank);
}

// An estimate: the fold (the whole message in and combined where p != p'; out again to
// the rank folded away, every one for the allreduce, the root only for the reduce where
// it is one), then round t of the halving sends half of what the rank holds and combines
// as much, and the doubling (or the gather, whose target receives as much) sends it
// back; a slice is n/p' rounded up.
Price price(const Problem& problem, Collective collective) {
  check(problem, collective);
  const Fold fold(problem.nranks);
  const CostModel& m = problem.model;
  const std::int64_t n = problem.bytes();
  const std::int64_t slice = (problem.count + fold.p2 - 1) / fold.p2 * problem.element_bytes;
  double t = m.copy(n);
  if (fold.rem > 0) t += m.transfer(n) + m.reduce(n);
  if (fold.rem > 0 && (collective == Collective::Allreduce || fold.id(problem.root) < 0)) t += m.transfer(n);
  // A round's k slices go as q messages of `per` slices: the halving's combines follow
  // the messages (overlapping the next ones where the model overlaps), the doubling's
  // messages follow each other.
  const std::int64_t per = slices_per_message(problem, fold.p2);
  for (std::int64_t k = fold.p2 / 2; k >= 1; k /= 2) {
    const std::int64_t q = (k + per - 1) / per, chunk = std::min(k, per) * slice;
    const double send = m.transfer(chunk), combine = m.reduce(chunk);
    const double halving = m.overlap ? send + combine + (q - 1) * std::max(send, combine) : q * (send + combine);
    t += halving + q * send;
  }
  return {t, false};
}

}  // namespace

Schedule plan_rabenseifner_allreduce(const Problem& problem) { return plan(problem, Collective::Allreduce, -1); }
Schedule view_rabenseifner_allreduce(const Problem& problem, int rank) { return view(problem, Collective::Allreduce, rank); }
Price price_rabenseifner_allreduce(const Problem& problem) { return price(problem, Collective::Allreduce); }
Schedule plan_rabenseifner_reduce(const Problem& problem) { return plan(problem, Collective::Reduce, -1); }
Schedule view_rabenseifner_reduce(const Problem& problem, int rank) { return view(problem, Collective::Reduce, rank); }
Price price_rabenseifner_reduce(const Problem& problem) { return price(problem, Collective::Reduce); }

// The slices do not depend on the segment size asked; the messages do, in whole slices
// (0: one a round).
std::int64_t cut_rabenseifner(const Problem& problem) {
  const std::int64_t cap = message_elements(problem, Fold(problem.nranks).p2);
  return cap >= problem.count ? 0 : cap * problem.element_bytes;
}

// Per rank at most: 4 steps a message in each halving round (receive, copy, reduce,
// send) and 2 in each doubling round, 3 a message for the fold in and 1 for the fold
// out. Round t's range of k slices goes as at most k / per + 1 messages (per: slices a
// message holds), so a phase is at most (p' - 1) / per + log2 p' messages; the fold's
// whole message one per int count (and one more). A slice past an int count is
// `pieces` segments, each its own message at worst.
std::int64_t steps_rabenseifner(const Problem& problem) {
  const Fold fold(problem.nranks);
  const std::int64_t count = std::max<std::int64_t>(problem.count, 1);
  const std::int64_t pieces = slice_pieces(count, fold.p2);
  const std::int64_t per = slices_per_message(problem, fold.p2);
  const std::int64_t phase = (fold.p2 - 1) / per + fold.rounds();
  const std::int64_t fold_messages = count / kMaxSegmentCount + 2;
  return std::int64_t{problem.nranks} * pieces * (6 * phase + 4 * fold_messages);
}


}  // namespace canopy::planner
