// Reduce-scatter + gather (Rabenseifner's long-message reduce): every rank reduces a
// slice of the message, then the slices are gathered at the root. Every core reduces,
// where a tree leaves the root (or a few ranks) to do it all.
//
// Source: Rabenseifner's algorithm as MPICH uses it for long messages (named in issue
// 15; 003_*.txt describes the tree and pipeline reduces it competes with). Its cost in
// the alpha-beta-gamma model, recursive-halving form:
//   T = 2 log2(p) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma.
//
// Decisions (written here, tested in tests/planner/test_reduce_scatter_gather.cpp):
//  * The direct (pairwise) exchange rather than recursive halving: rank i sends slice
//    j to rank j itself, for every j, starting with j = i+1 so that no rank is every
//    rank's first destination. It works for any p without the non-power-of-two fix-up,
//    costs (p-1) alpha instead of log2(p) alpha per phase (the same bytes), and each
//    owner combines its slice's operands in rank order: its own first, then ranks i-1
//    down to 0 (each the left operand), then i+1 up to p-1 (each the right one), so
//    non-commutative operations keep rank order with any root. Estimate:
//      T = (p-1) q alpha + (p-1)/p n (beta + gamma) + (q alpha + n/p beta)   [gather]
//    with q chunks per slice (price_reduce_scatter_gather; exact only by simulation).
//  * Slices are cut into chunks of segment_bytes (the pipeline: a chunk's reduction
//    overlaps the next chunk's transfer); an explicit layout (segment_counts) is used as
//    given, each segment owned by the rank whose slice holds its middle element.
//  * Every rank takes its messages in one global order (p2p_steps says which), so the
//    schedule cannot deadlock on a rank's port, and reduces each operand while the
//    next one arrives (two slots).
//
// reduce-scatter-gather-wide is the same exchange with every operand in flight at once:
// each receive of the exchange gets a slot of its own (as many as operands: about the
// message's size in scratch) and is posted before any reduction waits, so that a
// rank's p - 1 messages pay one latency, not p - 1. Decision: it plans only over a
// topology with a link whose latency does not hold the ports (a CANOPY_TOPOLOGY link
// with port=, cost_model.h), and declines elsewhere: where a port serves one message
// at a time, latency included (the model of every link Canopy measures itself), the
// slots buy nothing the simulator can see. What it is for: sites far apart. Measured
// under SMPI (docs/simulation.md, 2026-12-06): 16 sites of one rank, 1-15 ms and
// 56-336 Mbit/s between them, 1 GBit/s cards, 1 MiB: 43.9 ms a reduce, against 194.6
// for reduce-scatter-gather (two slots), 118.9 for grid-ecef-lat-max and 294.8 for
// SMPI's mpich selector. The reductions of a chunk round wait until the round's
// receives are all posted: before the rank's gather send of that round, or at the end.
// Priced only by simulating its schedule (no formula), so it competes only where its
// p x p messages can be simulated: an estimate would not see a node's ranks sharing
// its card or a site's ranks sharing their links (the simulator does not either;
// busiest_link then bounds its price, select.cpp). Over many ranks a site the exchange
// belongs among the sites' leaders: hierarchical may take it as its level over them
// (Algorithm::leaders_only; 1024 ranks over 16 sites under SMPI: 55.3 ms a 1 MiB
// reduce, 5.5x the mpich selector).
//
// reduce-scatter-allgather-wide is the allreduce of the same shape: the wide exchange,
// then every owner sends each reduced chunk to every other rank (all in flight at once,
// in the same global order: the owner's chunk t, then the receiver), which receives it
// straight into its result. Each slice is reduced once, by its owner, in rank order, and
// copied to every rank: every rank holds the same bits. It plans where the reduce's wide
// form does, and hierarchical-leaders may take it over the sites' leaders (an allreduce
// among them, then each site's broadcast).
//
// shm-reduce-scatter-gather is the same exchange through the node's staging ring
// (schedule.h): a rank stages each chunk of its input once for the chunk's owner, the
// owner copies its own input into its accumulator and combines the staged operands
// where they lie (FetchReduce), then stages the reduced chunk for the root, which
// copies it into the receive buffer. Chunks go round by round (chunk t of every slice,
// then chunk t+1), so a ring of at least two rounds' stages (2p entries) never
// deadlocks: a stage of round t waits only for reads of rounds before t, and a read of
// round t only for stages of round t; the validator proves it for every schedule.
// An owner's first staged operand combines with its own input (a FetchReduce from the
// input), so no chunk is copied before it is reduced.
// shm-flat is the same with the root owning the whole message: every other rank stages
// its input once and the root combines them all where they lie. It is what root_share
// gives on two ranks when a reduction costs under two copies; as its own algorithm it
// lets auto's trials measure it beside the model's split when the model (a learned one
// especially: CANOPY_LEARN folds every unpriced cost into gamma and copy) says to split.
// Decision, from the measurement that made it: on 2 ranks here the split a learned model
// chose (segments of 30952..49152 B) reduced 1 MiB in 72-74 us, the root alone in 44.
// The root's slice is sized by the model, because the root also copies every other
// slice out. With per-byte copy c and reduction r (the model's copy_per_byte and
// gamma), a non-root owner of s bytes stages the rest of its input, (n - s) c, and
// builds its slice in the ring entry that stages it (the executor's fusion,
// shim/executor.cpp): (p-1) s r; the root with s0 bytes stages (n - s0) c, reduces its
// own (p-1) s0 r and copies the others' out, (n - s0) c. With s = (n - s0)/(p-1):
//   T_root(s0)  = 2 (n - s0) c + (p-1) s0 r
//   T_other(s0) = (n - s) c + (n - s0) r
// root_share picks s0 in [0, n] minimising the larger (both are linear in s0: the
// minimum is at an end or where they cross). On two ranks where a reduction costs less
// than twice a copy that is s0 = n: the root reduces everything and the other rank only
// stages its input, the fewest bytes moved (1 MiB of doubles here: the root's combines
// at 25 us against 22 us for the other's copies, both at once).
#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "planner/segments.h"
#include "planner/staged.h"

namespace canopy::planner {

// The chunk both staged reductions cut (whole entries' worth, whatever they are asked):
// their plan and Algorithm::cut_segment_bytes, from this one place.
std::int64_t cut_staged_reduce(const Problem& problem) {
  return staged_chunk_bytes(problem, problem.staging_entry_bytes);
}

namespace {


struct Slices {
  std::vector<Segment> segments;
  std::vector<std::vector<int>> of;  // of[rank]: the segments that rank owns, in order
};

// Elements per owner: the root weighted by root_share (its fraction of the message),
// the rest equal; remainders to the lowest ranks. Slices come in at most three sizes,
// so the price and the cut read them from here without making p of them.
struct SliceSizes {
  std::int64_t root = 0;    // the root's
  std::int64_t base = 0;    // every other rank's, or one more for ...
  std::int64_t larger = 0;  // ... this many of them, the lowest
  std::int64_t largest() const { return std::max(root, base + (larger > 0 ? 1 : 0)); }
};

SliceSizes slice_sizes(const Problem& problem, double root_share) {
  const std::int64_t n = problem.count;
  SliceSizes out;
  out.root = problem.nranks == 1
                 ? n
                 : std::clamp<std::int64_t>(static_cast<std::int64_t>(std::floor(root_share * static_cast<double>(n))), 0, n);
  if (problem.nranks > 1) {
    const std::int64_t rest = n - out.root, others = problem.nranks - 1;
    out.base = rest / others;
    out.larger = rest % others;
  }
  return out;
}

std::vector<std::int64_t> slice_counts(const Problem& problem, double root_share) {
  const SliceSizes sizes = slice_sizes(problem, root_share);
  std::vector<std::int64_t> counts(problem.nranks, 0);
  counts[problem.root] = sizes.root;
  std::int64_t k = 0;
  for (int r = 0; r < problem.nranks; ++r) {
    if (r == problem.root) continue;
    counts[r] = sizes.base + (k < sizes.larger ? 1 : 0);
    ++k;
  }
  return counts;
}

Slices cut_slices(const Problem& problem, double root_share, std::int64_t chunk_bytes) {
  const int p = problem.nranks;
  Slices out;
  out.of.resize(p);
  const std::vector<std::int64_t> counts = slice_counts(problem, root_share);
  if (!problem.segment_counts.empty()) {
    // An explicit layout (a hierarchy's level): each segment goes to the rank whose
    // slice, cut as below, holds its middle element, so the root's share holds here too
    // (on two ranks usually every segment: the root reduces, the other rank stages).
    out.segments = problem_segments(problem);
    std::int64_t end = 0;  // of rank `owner`'s slice
    int owner = -1;
    for (int g = 0; g < static_cast<int>(out.segments.size()); ++g) {
      const Segment& seg = out.segments[g];
      const std::int64_t middle = seg.first + seg.count / 2;
      while (owner < p - 1 && end <= middle) end += counts[++owner];
      out.of[std::max(owner, 0)].push_back(g);
    }
    return out;
  }
  std::int64_t first = 0;
  for (int r = 0; r < p; ++r) {
    for (const Segment& piece : uniform_segments(counts[r], problem.element_bytes, chunk_bytes)) {
      out.of[r].push_back(static_cast<int>(out.segments.size()));
      out.segments.push_back({first + piece.first, piece.count});
    }
    first += counts[r];
  }
  if (static_cast<std::int64_t>(out.segments.size()) > kMaxSegments)
    throw PlanError("reduce-scatter-gather: " + std::to_string(out.segments.size()) + " chunks exceed the " +
                    std::to_string(kMaxSegments) + " segments a schedule may have");
  return out;
}

// The root's fraction of the message in shm-reduce-scatter-gather (see the top).
double root_share(int p, double c, double r) {
  if (p <= 1) return 1.0;
  auto slowest = [&](double x) {  // per byte of the message, x = s0 / n
    const double root = 2 * (1 - x) * c + (p - 1) * x * r;
    const double other = (1 - (1 - x) / (p - 1)) * c + (1 - x) * r;
    return std::max(root, other);
  };
  // root - other = a + b x: they cross at x = -a / b.
  const double a = 2 * c - (c - c / (p - 1)) - r;
  const double b = -2 * c + (p - 1) * r - c / (p - 1) + r;
  double best = 1.0 / p, best_time = slowest(best);
  for (double x : {0.0, 1.0, b != 0 ? -a / b : 0.0}) {
    if (x < 0 || x > 1 || slowest(x) >= best_time) continue;
    best = x;
    best_time = slowest(x);
  }
  return best;
}

// The order in which owner i combines the other ranks' operands: i-1 down to 0 (each
// on the left), then i+1 up to p-1 (each on the right).
std::vector<int> combine_order(int p, int i) {
  std::vector<int> order;
  for (int q = i - 1; q >= 0; --q) order.push_back(q);
  for (int q = i + 1; q < p; ++q) order.push_back(q);
  return order;
}

// Where rank `src` stands in owner `dst`'s combine order (combine_order).
int combine_position(int dst, int src) { return src < dst ? dst - 1 - src : src - 1; }

// One message of the exchange or the gather, with its place in one global order.
struct Transfer {
  // (chunk index in its slice, position, owner or sender, receiver): the receiver tells
  // apart an allgather's sends of one chunk to every rank.
  std::tuple<std::size_t, int, int, int> key;
  int peer;
  int segment;
  bool send;
  bool gather;
};

// Rank i's steps of the pairwise exchange and the gather. Every rank takes its
// messages in one global order, (chunk t, the sender's place in the owner's combine
// order, owner), the gather's chunk t after the exchange's: then a rank only ever waits
// for a message that comes earlier in that order, so the schedule cannot deadlock even
// where a rank's one port serves sends and receives in program order (duplex=half). A
// reduction is placed one receive later, so that the next operand's transfer overlaps
// it (two slots, alternating); `wide`: every operand in a slot of its own, the
// reductions after the round's receives (reduce-scatter-gather-wide, above).
std::vector<Step> p2p_steps(const Problem& problem, const Slices& sl, int i, int& slots, bool wide = false) {
  const int p = problem.nranks;
  // An allreduce's "gather" is an allgather: every rank is a root.
  const bool all = problem.collective == Collective::Allreduce;
  std::vector<Transfer> transfers;
  for (int j = 0; j < p; ++j) {
    if (j == i) continue;
    for (std::size_t t = 0; t < sl.of[j].size(); ++t)  // my input's chunk t of j's slice, to j
      transfers.push_back({{t, combine_position(j, i), j, j}, j, sl.of[j][t], true, false});
    for (std::size_t t = 0; t < sl.of[i].size(); ++t)  // j's operand for my chunk t
      transfers.push_back({{t, combine_position(i, j), i, i}, j, sl.of[i][t], false, false});
    if (all || i == problem.root)
      for (std::size_t t = 0; t < sl.of[j].size(); ++t)  // j's reduced chunk t, into my receive buffer
        transfers.push_back({{t, p, j, i}, j, sl.of[j][t], false, true});
    if (all)
      for (std::size_t t = 0; t < sl.of[i].size(); ++t)  // my reduced chunk t, to j
        transfers.push_back({{t, p, i, j}, j, sl.of[i][t], true, true});
  }
  if (!all && i != problem.root)
    for (std::size_t t = 0; t < sl.of[i].size(); ++t)
      transfers.push_back({{t, p, i, problem.root}, problem.root, sl.of[i][t], true, true});
  std::sort(transfers.begin(), transfers.end(), [](const Transfer& a, const Transfer& b) { return a.key < b.key; });

  std::vector<Step> out;
  std::vector<bool> copied(sl.segments.size(), false);
  int received = 0;
  Step pending;  // the reduction waiting for the next receive to be posted
  bool has_pending = false;
  auto flush = [&] {
    if (!has_pending) return;
    if (!copied[pending.segment]) {  // my own input starts the chunk's accumulator
      out.push_back(Step::copy(pending.segment));
      copied[pending.segment] = true;
    }
    out.push_back(pending);
    has_pending = false;
  };
  std::vector<Step> waiting;  // wide: the reductions of the receives posted so far
  auto flush_waiting = [&] {
    for (const Step& reduction : waiting) {
      pending = reduction;
      has_pending = true;
      flush();
    }
    waiting.clear();
  };
  for (const Transfer& tr : transfers) {
    if (tr.send) {
      if (tr.gather) {  // the reduced chunk, once its last operand is in
        flush_waiting();
        flush();
      }
      out.push_back(Step::send(tr.peer, tr.segment, tr.gather ? Buffer::Accumulator : Buffer::Input));
    } else if (tr.gather) {
      out.push_back(Step::recv_into_accumulator(tr.peer, tr.segment));
    } else if (wide) {
      const int slot = received++;
      out.push_back(Step::recv_into_slot(tr.peer, tr.segment, slot));
      waiting.push_back(Step::reduce(tr.segment, slot, tr.peer < i));
    } else {
      const int slot = received++ % 2;
      // The slot's previous operand must be reduced before the receive reuses it.
      if (has_pending && pending.slot == slot) flush();
      out.push_back(Step::recv_into_slot(tr.peer, tr.segment, slot));
      flush();
      pending = Step::reduce(tr.segment, slot, tr.peer < i);
      has_pending = true;
    }
  }
  flush_waiting();
  flush();
  for (int g : sl.of[i])  // one rank alone: its input is the result
    if (!copied[g]) out.push_back(Step::copy(g));
  slots = received == 0 ? 0 : wide ? received : std::min(received, 2);
  return out;
}

constexpr const char* kWide = "reduce-scatter-gather-wide";
constexpr const char* kWideAll = "reduce-scatter-allgather-wide";

// The exchange's name for `problem`'s collective (an allreduce's is only wide).
const char* p2p_name(const Problem& problem, bool wide) {
  if (!wide) return "reduce-scatter-gather";
  return problem.collective == Collective::Allreduce ? kWideAll : kWide;
}

Slices p2p_slices(const Problem& problem, bool wide) {
  check_problem(problem);
  const bool allreduce = problem.collective == Collective::Allreduce && wide;
  if (problem.collective != Collective::Reduce && !allreduce)
    throw PlanError(std::string(p2p_name(problem, wide)) + " plans " + (wide ? "reductions" : "reduces"));
  return cut_slices(problem, 1.0 / problem.nranks, problem.segment_bytes);
}

// The wide forms' decline (see the top).
void require_ports_apart(const Problem& problem) {
  if (std::string why = wide_area_declines(problem.topology.get(), p2p_name(problem, true)); !why.empty())
    throw PlanError(why);
}

Schedule plan_p2p(const Problem& problem, bool wide) {
  if (wide) require_ports_apart(problem);
  Slices sl = p2p_slices(problem, wide);
  Schedule s = empty_schedule(problem, p2p_name(problem, wide), sl.segments);
  for (int i = 0; i < problem.nranks; ++i) s.steps[i] = p2p_steps(problem, sl, i, s.slots[i], wide);
  return s;
}

// Stage numbers are assigned as each writer's Stage steps are appended; a fetch names
// its stage by what it holds: (writer, segment, whether it is the reduced result).
using StageKey = std::tuple<int, int, bool>;

// shm-reduce-scatter-gather with the root owning `share` of the message (root_share's,
// or all of it for shm-flat), named `kName`. For an allreduce
// (shm-reduce-scatter-allgather) every owner stages its reduced chunk once for all the
// other ranks, and every rank copies the others' chunks out, a round after they were
// reduced, as the root does in a reduce: each byte is copied in once, reduced once where
// it lies, and copied out once per rank, on every core at once (the node level).
Schedule plan_staged(const Problem& problem, const char* kName, double share) {
  check_problem(problem);
  const bool all = problem.collective == Collective::Allreduce;
  if (problem.collective != (all ? Collective::Allreduce : Collective::Reduce))
    throw PlanError(std::string(kName) + " plans reductions");
  if (!staging_spans_problem(problem))
    throw PlanError(std::string(kName) + " needs a staging ring over all its ranks (one node, CANOPY_SHM not off)");
  const int p = problem.nranks;
  if (problem.staging_entries < 2 * p)
    throw PlanError(std::string(kName) + ": a ring of " + std::to_string(problem.staging_entries) +
                    " entries is less than two rounds of " + std::to_string(p) + " stages");
  const std::int64_t chunk = cut_staged_reduce(problem);
  if (chunk < problem.element_bytes)
    throw PlanError(std::string(kName) + ": an element is larger than a staging entry");
  Slices sl = cut_slices(problem, share, chunk);
  Schedule s = empty_schedule(problem, kName, sl.segments);
  s.staging_entries = problem.staging_entries;
  s.staging_entry_bytes = problem.staging_entry_bytes;
  for (const Segment& seg : s.segments)
    if (seg.count * problem.element_bytes > problem.staging_entry_bytes)
      throw PlanError(std::string(kName) + ": a segment of the layout is larger than a staging entry");

  std::size_t rounds = 0;
  for (const auto& mine : sl.of) rounds = std::max(rounds, mine.size());
  std::map<StageKey, int> stage_number;
  std::vector<int> stages(p, 0);
  auto stage = [&](int writer, int g, bool result, Buffer from, int readers = 1) {
    stage_number[{writer, g, result}] = stages[writer];
    s.steps[writer].push_back(Step::stage(g, stages[writer]++, readers, from));
  };
  // Fetches name stages that may be appended later in the writer's program: resolved
  // once every program is built.
  struct PendingRead {
    int rank;
    std::size_t index;
    StageKey key;
  };
  std::vector<PendingRead> reads;
  auto read = [&](int reader, Step step, bool result) {
    reads.push_back({reader, s.steps[reader].size(), {step.peer, step.segment, result}});
    s.steps[reader].push_back(step);
  };
  auto root_fetches = [&](std::size_t t) {
    for (int r = 0; r < p; ++r) {
      if (!all && r != problem.root) continue;
      for (int k = 1; k < p; ++k) {  // the owners after r first: readers of one chunk spread out
        const int j = (r + k) % p;
        if (t < sl.of[j].size()) read(r, Step::fetch(j, sl.of[j][t], -1), true);
      }
    }
  };
  for (std::size_t t = 0; t < rounds; ++t) {
    for (int i = 0; i < p; ++i) {
      for (int k = 1; k < p; ++k) {
        const int j = (i + k) % p;
        if (t < sl.of[j].size()) stage(i, sl.of[j][t], false, Buffer::Input);
      }
      if (t >= sl.of[i].size()) continue;
      const int g = sl.of[i][t];
      // The first staged operand combines with the input itself (no copy first).
      bool first = true;
      for (int q : combine_order(p, i)) {
        read(i, Step::fetch_reduce(q, g, -1, q < i, first ? Buffer::Input : Buffer::Accumulator), false);
        first = false;
      }
      if (first) s.steps[i].push_back(Step::copy(g));  // one rank alone
      if (all && p > 1) stage(i, g, true, Buffer::Accumulator, p - 1);
      else if (!all && i != problem.root) stage(i, g, true, Buffer::Accumulator);
    }
    // The root copies out the reduced chunks of the round before: those of this round
    // are still being reduced while it reduces its own.
    if (t > 0) root_fetches(t - 1);
  }
  if (rounds > 0) root_fetches(rounds - 1);
  for (const PendingRead& pending : reads) s.steps[pending.rank][pending.index].slot = stage_number.at(pending.key);
  return s;
}

}  // namespace

Schedule plan_reduce_scatter_gather_reduce(const Problem& problem) { return plan_p2p(problem, false); }
Schedule plan_reduce_scatter_gather_wide_reduce(const Problem& problem) { return plan_p2p(problem, true); }
Schedule plan_reduce_scatter_allgather_wide_allreduce(const Problem& problem) { return plan_p2p(problem, true); }
Schedule plan_shm_reduce_scatter_gather_reduce(const Problem& problem) {
  return plan_staged(problem, "shm-reduce-scatter-gather",
                     root_share(problem.nranks, problem.model.copy_per_byte, problem.model.gamma));
}
Schedule plan_shm_flat_reduce(const Problem& problem) { return plan_staged(problem, "shm-flat", 1.0); }
// Slices of equal size: every rank copies every other slice out, so none has more to do.
Schedule plan_shm_reduce_scatter_allgather_allreduce(const Problem& problem) {
  return plan_staged(problem, "shm-reduce-scatter-allgather", 1.0 / problem.nranks);
}

namespace {

// O(p + segments): the slices are cut for every rank, the steps for this one.
Schedule view_p2p(const Problem& problem, int rank, bool wide) {
  if (wide) require_ports_apart(problem);
  Slices sl = p2p_slices(problem, wide);
  if (rank < 0 || rank >= problem.nranks) throw PlanError("rank " + std::to_string(rank) + " outside the communicator");
  Schedule s = empty_schedule(problem, p2p_name(problem, wide), sl.segments, rank);
  s.steps[0] = p2p_steps(problem, sl, rank, s.slots[0], wide);
  return s;
}

}  // namespace

Schedule view_reduce_scatter_gather_reduce(const Problem& problem, int rank) { return view_p2p(problem, rank, false); }
Schedule view_reduce_scatter_gather_wide_reduce(const Problem& problem, int rank) {
  return view_p2p(problem, rank, true);
}
Schedule view_reduce_scatter_allgather_wide_allreduce(const Problem& problem, int rank) {
  return view_p2p(problem, rank, true);
}

std::int64_t cut_reduce_scatter_gather_reduce(const Problem& problem) {
  if (problem.segment_bytes <= 0 || !problem.segment_counts.empty() || problem.element_bytes <= 0)
    return problem.segment_bytes;
  const std::int64_t largest = slice_sizes(problem, 1.0 / problem.nranks).largest();
  // At least a whole slice per chunk: every slice is one chunk, as with no segments.
  return problem.segment_bytes / problem.element_bytes >= largest ? 0 : problem.segment_bytes;
}

// The whole schedule, staged or not: each of the p slices is cut into its own chunks
// (at least one, so at most segments_asked + p in all), and a chunk takes 3 p steps at
// most: p - 1 sends (or stages), the owner's copy and p - 1 receives and reductions (or
// fetches), and the gather's send and receive. p x p even for one segment.
std::int64_t steps_reduce_scatter_gather_reduce(const Problem& problem) {
  const std::int64_t p = problem.nranks;
  return 3 * p * (segments_asked(problem) + p);
}

// The allreduce adds an allgather: p - 1 sends and p - 1 receives more a chunk.
std::int64_t steps_reduce_scatter_allgather_wide_allreduce(const Problem& problem) {
  const std::int64_t p = problem.nranks;
  return 5 * p * (segments_asked(problem) + p);
}

namespace {

// The chunks of the longest slice and of all slices, as cut_slices cuts them, without
// cutting them: slices come in at most three sizes (the root's, and the others' n/p and
// one more), so this is O(1) at any p. At 65,536 ranks cutting p slices for each of the
// selector's segment sizes took 150 ms to find they exceed kMaxSegments.
struct ChunkCounts {
  std::int64_t longest = 0;
  std::int64_t total = 0;
};

ChunkCounts count_chunks(const Problem& problem, std::int64_t chunk_bytes) {
  ChunkCounts out;
  if (!problem.segment_counts.empty()) {
    const Slices sl = cut_slices(problem, 1.0 / problem.nranks, chunk_bytes);
    for (const auto& mine : sl.of) out.longest = std::max<std::int64_t>(out.longest, mine.size());
    out.total = static_cast<std::int64_t>(sl.segments.size());
    return out;
  }
  const SliceSizes sizes = slice_sizes(problem, 1.0 / problem.nranks);
  auto chunks = [&](std::int64_t c) { return uniform_segment_count(c, problem.element_bytes, chunk_bytes); };
  const std::int64_t others = problem.nranks - 1;
  const std::int64_t root = chunks(sizes.root), base = chunks(sizes.base), above = chunks(sizes.base + 1);
  out.longest = std::max({root, others > sizes.larger ? base : 0, sizes.larger > 0 ? above : 0});
  out.total = root + (others - sizes.larger) * base + sizes.larger * above;
  return out;
}

}  // namespace

Price price_reduce_scatter_gather_reduce(const Problem& problem) {
  check_problem(problem);
  const ChunkCounts chunks = count_chunks(problem, problem.segment_bytes);
  if (chunks.total > kMaxSegments)
    throw PlanError("reduce-scatter-gather: " + std::to_string(chunks.total) + " chunks exceed the " +
                    std::to_string(kMaxSegments) + " segments a schedule may have");
  const int p = problem.nranks;
  const auto q = static_cast<double>(chunks.longest);
  const CostModel& m = problem.model;
  const double n = static_cast<double>(problem.bytes());
  const double slice = n / p;
  const double phase = (p - 1) * (q * m.alpha + slice * (m.beta + m.gamma));
  const double gather = p > 1 ? q * m.alpha + slice * m.beta : 0.0;
  return {phase + gather, false};
}

}  // namespace canopy::planner
