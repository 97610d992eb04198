// Allreduce as a reduce to rank 0 followed by a broadcast from it, merged into one
// schedule: every registered pair of a reduce and a broadcast algorithm becomes an
// allreduce (binomial, binary, chain, greedy, snf, hierarchical, grid-*, shm).
//
// Source: 003_*.txt ("Reduce", binomial tree algorithm): "For an Allreduce-operation
// the result has to be distributed, which can be done by appending a broadcast from
// p_0". Cost: T = T_reduce + T_bcast unpipelined; for binomial trees
//   T = ceil(log2 p) (alpha + n beta + n gamma) + ceil(log2 p) (alpha + n beta)
//     = 2 ceil(log2 p) alpha + 2 ceil(log2 p) n beta + ceil(log2 p) n gamma,
// and for the pipelined chain (q segments of s bytes, full duplex, overlap)
//   T ~ (p-1 + q-1)(alpha + s beta + s gamma) + (p-1)(alpha + s beta):
// the broadcast of segment k runs while the reduce works on k+1.
//
// Decisions:
//  * The parts. The reduce part is the allreduce's problem as a reduce to rank 0 (same
//    count, element size, commutativity, segment size or layout, model, topology and
//    ring); the broadcast part moves the same elements from rank 0, cut exactly as the
//    reduce part cut them (Problem::segment_counts), so that a segment of one is a
//    segment of the other. A broadcast that cuts differently anyway is refused.
//  * The merge, rank by rank (merged below), pipelined: each part is simulated alone
//    under the problem's model, and the broadcast's steps on segment k are shifted to
//    start when the root's reduce of k ends; every step then has a key, its start,
//    raised until keys never decrease along a rank's list and both ends of a message
//    share one (settle), and at least the rank's last reduce step on k for a broadcast
//    step on k. Each rank's two lists are merged by key, reduce first on ties. So the
//    root forwards segment k as soon as it holds its result, while it still reduces
//    k+1, and the other ranks take the broadcast's messages when they should arrive.
//    Decision: not "each broadcast step right after the rank's last reduce step on the
//    segment". The root's steps are then the same, but a rank down the tree waits at its
//    forward of segment k (its data comes back only after the root's reduce of k) before
//    it takes part in the reduce of k+1: a pipelined chain of 8 ranks, 64 segments, was
//    7x slower than its two parts run one after the other; and two ranks merged
//    independently could order their messages to each other differently (the validator
//    pairs them in order, as ports serve them in the simulator). The keys agree at both
//    ends of every message. Where the merged schedule simulates slower than the parts
//    one after the other (a chain: both parts send on every rank, and the separate
//    timings do not see them share the port), the parts one after the other are kept.
//    The cost: rank views are not composed (plan_view projects the whole schedule),
//    since the keys come from simulating every rank, and planning simulates four times.
//  * Staged parts (shm): a rank's stages count 0, 1, 2, ... through the call, so the
//    broadcast's stages on each rank continue after that rank's reduce stages (Stage and
//    each Fetch renumbered by the stager's count of reduce stages), and every rank runs
//    its whole reduce part before its broadcast part: a fetch blocks until its stage is
//    there, and the root stages for the broadcast only after its own reduce stages, so
//    an early fetch deadlocked the reduce (the validator found it). Both parts use the
//    problem's ring.
//  * No direct steps: cross-memory attach serves broadcasts only (validate.cpp), and the
//    broadcast part is planned without it.
//  * Non-commutative operations: the reduce part keeps rank order where its algorithm
//    does; the broadcast only copies, so every rank gets the root's bits.
#include "planner/algorithms/reduce_bcast.h"

#include <algorithm>

#include "planner/registry.h"
#include "planner/segments.h"
#include "planner/simulate.h"
#include "planner/validate.h"

namespace canopy::planner {

Problem reduce_part(const Problem& problem) {
  Problem q = problem;
  q.collective = Collective::Reduce;
  q.root = 0;
  q.direct_access = false;
  return q;
}

Problem bcast_part(const Problem& problem, const std::vector<Segment>& layout) {
  Problem q = problem;
  q.collective = Collective::Bcast;
  q.root = 0;
  q.commutative = true;
  q.direct_access = false;
  q.segment_counts = segment_counts_of(layout);
  return q;
}

namespace {

const Algorithm& part_algorithm(Collective collective, const std::string& name) {
  const Algorithm* a = find_algorithm(collective, name);
  if (!a) throw PlanError(std::string("allreduce: no ") + to_string(collective) + " algorithm named '" + name + "'");
  return *a;
}

void require_allreduce(const Problem& problem, const std::string& name) {
  check_problem(problem);
  if (problem.collective != Collective::Allreduce) throw PlanError(name + " (reduce + bcast) plans allreduces");
}

// Rank r's broadcast steps made to follow its reduce steps: slots after the reduce's
// `slot_offset`, and stage numbers after the reduce's stages (`stages_of[w]`: how many
// stages rank w's reduce part has).
std::vector<Step> shifted(std::vector<Step> steps, int slot_offset, int r, const std::vector<int>& stages_of) {
  for (Step& st : steps) {
    if (st.kind == StepKind::Stage) st.slot += stages_of[r];
    else if (st.kind == StepKind::Fetch || st.kind == StepKind::FetchReduce) st.slot += stages_of[st.peer];
    else if (st.slot >= 0) st.slot += slot_offset;
  }
  return steps;
}

// Step keys of one part: when each step starts in its simulation, then raised until
// they never decrease along a rank's list and both ends of a message (or a stage and its
// reads) have the same key. Merging the parts rank by rank by key then puts two messages
// between the same ranks in the same order at both ends (the validator pairs them in
// order) and orders every rank's steps as one clock would.
void settle(const Schedule& s, std::vector<std::vector<double>>& key) {
  Matching match;
  std::vector<std::string> errors;
  if (!match_messages(s, match, errors)) throw PlanError("allreduce: a part's messages do not pair: " + errors.front());
  for (bool changed = true; changed;) {
    changed = false;
    for (int r = 0; r < s.nranks; ++r)
      for (std::size_t i = 0; i < key[r].size(); ++i) {
        double k = key[r][i];
        if (i > 0) k = std::max(k, key[r][i - 1]);
        const StepRef other = match.partner[r][i];
        if (s.steps[r][i].is_message() && other.rank >= 0) k = std::max(k, key[other.rank][other.index]);
        if (k != key[r][i]) {
          key[r][i] = k;
          changed = true;
        }
        if (s.steps[r][i].is_message() && other.rank >= 0 && key[other.rank][other.index] < k) {
          key[other.rank][other.index] = k;
          changed = true;
        }
      }
  }
}

std::vector<std::vector<double>> start_times(const Simulation& sim) {
  std::vector<std::vector<double>> out(sim.timing.size());
  for (std::size_t r = 0; r < sim.timing.size(); ++r)
    for (const StepTiming& t : sim.timing[r]) out[r].push_back(t.start);
  return out;
}

// The two parts merged rank by rank (the decisions above): `reduce_key` and `bcast_key`
// the settled keys; a broadcast step after the rank's reduce steps of lower or equal key.
std::vector<Step> merged(const std::vector<Step>& reduce, const std::vector<double>& reduce_key,
                         const std::vector<Step>& bcast, const std::vector<double>& bcast_key) {
  std::vector<Step> out;
  out.reserve(reduce.size() + bcast.size());
  std::size_t taken = 0;
  for (std::size_t j = 0; j < bcast.size(); ++j) {
    if (bcast[j].is_direct()) throw PlanError("allreduce: a part reaches into other ranks' memory");
    for (; taken < reduce.size() && reduce_key[taken] <= bcast_key[j]; ++taken) out.push_back(reduce[taken]);
    out.push_back(bcast[j]);
  }
  for (; taken < reduce.size(); ++taken) out.push_back(reduce[taken]);
  return out;
}

void check_parts(const Schedule& reduce, const Schedule& bcast) {
  if (segment_counts_of(reduce.segments) != segment_counts_of(bcast.segments))
    throw PlanError("allreduce: the " + bcast.algorithm + " broadcast cuts the message differently from the " +
                    reduce.algorithm + " reduce");
  if (reduce.uses_direct() || bcast.uses_direct()) throw PlanError("allreduce: a part is direct (cross-memory attach)");
  if (reduce.uses_staging() && bcast.uses_staging() &&
      (reduce.staging_entries != bcast.staging_entries || reduce.staging_entry_bytes != bcast.staging_entry_bytes))
    throw PlanError("allreduce: the reduce and the broadcast stage through different rings");
}

}  // namespace

Schedule compose_reduce_bcast(const Problem& problem, const std::string& reduce_algorithm,
                              const std::string& bcast_algorithm, const std::string& name) {
  require_allreduce(problem, name);
  const Schedule reduce = part_algorithm(Collective::Reduce, reduce_algorithm).plan(reduce_part(problem));
  const Schedule bcast =
      part_algorithm(Collective::Bcast, bcast_algorithm).plan(bcast_part(problem, reduce.segments));
  check_parts(reduce, bcast);
  Schedule out = empty_schedule(problem, name, reduce.segments);
  out.commutative = reduce.commutative;
  const Schedule& staged = reduce.uses_staging() ? reduce : bcast;
  out.staging_entries = staged.staging_entries;
  out.staging_entry_bytes = staged.staging_entry_bytes;
  const int p = problem.nranks;
  std::vector<int> stages_of(p, 0);
  for (int r = 0; r < p; ++r)
    stages_of[r] = static_cast<int>(std::count_if(reduce.steps[r].begin(), reduce.steps[r].end(),
                                                  [](const Step& st) { return st.kind == StepKind::Stage; }));
  const int nseg = static_cast<int>(out.segments.size());
  std::vector<std::vector<double>> reduce_key(p), bcast_key(p);
  const Simulation rs = simulate(reduce, problem.model, problem.topology.get());
  const Simulation bs = simulate(bcast, problem.model, problem.topology.get());
  if (reduce.uses_staging() || bcast.uses_staging() || !rs.ok || !bs.ok) {
    // Broadcast after reduce on every rank: a fetch blocks its rank until the stage it
    // reads is there, and the root stages a segment for the broadcast only after all its
    // reduce stages, so a reader fetching early could hold back the reduce (the
    // validator found that deadlock).
    for (int r = 0; r < p; ++r) {
      reduce_key[r].assign(reduce.steps[r].size(), 0);
      bcast_key[r].assign(bcast.steps[r].size(), 1);
    }
  } else {
    reduce_key = start_times(rs);
    settle(reduce, reduce_key);
    // Segment k's broadcast starts when the root's reduce of k ends, not when the
    // broadcast alone would have started it.
    std::vector<double> ready(nseg, 0), began(nseg, -1);
    for (std::size_t i = 0; i < reduce.steps[0].size(); ++i) {
      const Step& st = reduce.steps[0][i];
      if (st.kind != StepKind::Expose)
        for (int k = st.segment; k <= st.last_segment(); ++k) ready[k] = std::max(ready[k], rs.timing[0][i].end);
    }
    for (std::size_t i = 0; i < bcast.steps[0].size(); ++i) {
      const int k = bcast.steps[0][i].segment;
      if (began[k] < 0 || bs.timing[0][i].start < began[k]) began[k] = bs.timing[0][i].start;
    }
    for (int r = 0; r < p; ++r) {
      // And on every rank after the rank's own reduce steps on the segment.
      std::vector<double> last(nseg, 0);
      for (std::size_t i = 0; i < reduce.steps[r].size(); ++i)
        for (int k = reduce.steps[r][i].segment; k <= reduce.steps[r][i].last_segment(); ++k) last[k] = reduce_key[r][i];
      for (std::size_t i = 0; i < bcast.steps[r].size(); ++i) {
        const int k = bcast.steps[r][i].segment;
        const double shifted_start = ready[k] + bs.timing[r][i].start - std::max(began[k], 0.0);
        bcast_key[r].push_back(std::max(shifted_start, last[k]));
      }
    }
    settle(bcast, bcast_key);
  }
  for (int r = 0; r < p; ++r) {
    out.steps[r] =
        merged(reduce.steps[r], reduce_key[r], shifted(bcast.steps[r], reduce.slots[r], r, stages_of), bcast_key[r]);
    out.slots[r] = reduce.slots[r] + bcast.slots[r];
  }
  if (reduce.uses_staging() || bcast.uses_staging() || !rs.ok || !bs.ok) return out;
  // The merge follows the parts' separate timings; together they share each rank's
  // ports, and where that makes the merged schedule slower than the parts one after the
  // other (a chain's reduce and broadcast send on every rank, in opposite directions),
  // the parts one after the other it is.
  Schedule after = out;
  for (int r = 0; r < p; ++r)
    after.steps[r] = merged(reduce.steps[r], std::vector<double>(reduce.steps[r].size(), 0),
                            shifted(bcast.steps[r], reduce.slots[r], r, stages_of),
                            std::vector<double>(bcast.steps[r].size(), 1));
  const Simulation pipelined = simulate(out, problem.model, problem.topology.get());
  const Simulation sequential = simulate(after, problem.model, problem.topology.get());
  if (!pipelined.ok || (sequential.ok && sequential.makespan < pipelined.makespan)) return after;
  return out;
}

Price price_reduce_bcast(const Problem& problem, const std::string& reduce_algorithm,
                         const std::string& bcast_algorithm) {
  check_problem(problem);
  const Algorithm& r = part_algorithm(Collective::Reduce, reduce_algorithm);
  const Algorithm& b = part_algorithm(Collective::Bcast, bcast_algorithm);
  if (!r.price || !b.price) throw PlanError("allreduce: a part has no price function");
  // The broadcast priced on the reduce's segments: a tree reduce cuts the layout the
  // problem asks for (problem_segments), which the broadcast then follows.
  const Problem reduce = reduce_part(problem);
  Problem bcast = reduce;
  bcast.collective = Collective::Bcast;
  bcast.commutative = true;
  const Price reduce_price = r.price(reduce), bcast_price = b.price(bcast);
  // The estimate: the parts one after the other, which the merge keeps where pipelining
  // them simulates slower (above). The bound, where both parts' prices are exact: the
  // merged schedule holds each part's steps in the part's order on every rank, with the
  // other part's steps between them, and a step starts only once its rank's step before
  // it and its message are done, so neither part ends sooner than it does alone.
  Price out{reduce_price.makespan + bcast_price.makespan, false};
  if (reduce_price.exact && bcast_price.exact) out.lower_bound = std::max(reduce_price.makespan, bcast_price.makespan);
  return out;
}

std::int64_t steps_reduce_bcast(const Problem& problem, const std::string& reduce_algorithm,
                                const std::string& bcast_algorithm) {
  const Algorithm& r = part_algorithm(Collective::Reduce, reduce_algorithm);
  const Algorithm& b = part_algorithm(Collective::Bcast, bcast_algorithm);
  const Problem reduce = reduce_part(problem);
  // The broadcast follows the reduce's cut, not its own (a staged broadcast cuts larger
  // chunks than a staged reduce): its estimate for the reduce's segment size.
  Problem bcast = reduce;
  bcast.collective = Collective::Bcast;
  bcast.commutative = true;
  if (r.cut_segment_bytes) bcast.segment_bytes = r.cut_segment_bytes(reduce);
  return estimated_whole_steps(r, reduce) + (b.whole_steps ? b.whole_steps(bcast) : tree_steps_estimate(bcast));
}

// ---- The registry's rows (registry.cpp): one line each ---------------------------------

Schedule plan_binomial_allreduce(const Problem& p) { return compose_reduce_bcast(p, "binomial", "binomial", "binomial"); }
Schedule plan_binary_allreduce(const Problem& p) { return compose_reduce_bcast(p, "binary", "binary", "binary"); }
Schedule plan_chain_allreduce(const Problem& p) { return compose_reduce_bcast(p, "chain", "chain", "chain"); }
Schedule plan_greedy_allreduce(const Problem& p) { return compose_reduce_bcast(p, "greedy", "binomial", "greedy"); }
Schedule plan_snf_allreduce(const Problem& p) { return compose_reduce_bcast(p, "snf", "binomial", "snf"); }
Schedule plan_hierarchical_allreduce(const Problem& p) {
  return compose_reduce_bcast(p, "hierarchical", "hierarchical", "hierarchical");
}
Schedule plan_grid_ecef_allreduce(const Problem& p) { return compose_reduce_bcast(p, "grid-ecef", "grid-ecef", "grid-ecef"); }
Schedule plan_grid_ecef_la_allreduce(const Problem& p) {
  return compose_reduce_bcast(p, "grid-ecef-la", "grid-ecef-la", "grid-ecef-la");
}
Schedule plan_grid_bottomup_allreduce(const Problem& p) {
  return compose_reduce_bcast(p, "grid-bottomup", "grid-bottomup", "grid-bottomup");
}
Schedule plan_shm_allreduce(const Problem& p) { return compose_reduce_bcast(p, "shm-reduce-scatter-gather", "shm-bcast", "shm"); }

Price price_binomial_allreduce(const Problem& p) { return price_reduce_bcast(p, "binomial", "binomial"); }
Price price_binary_allreduce(const Problem& p) { return price_reduce_bcast(p, "binary", "binary"); }
Price price_chain_allreduce(const Problem& p) { return price_reduce_bcast(p, "chain", "chain"); }
Price price_greedy_allreduce(const Problem& p) { return price_reduce_bcast(p, "greedy", "binomial"); }

std::int64_t steps_binomial_allreduce(const Problem& p) { return steps_reduce_bcast(p, "binomial", "binomial"); }
std::int64_t steps_binary_allreduce(const Problem& p) { return steps_reduce_bcast(p, "binary", "binary"); }
std::int64_t steps_chain_allreduce(const Problem& p) { return steps_reduce_bcast(p, "chain", "chain"); }
std::int64_t steps_greedy_allreduce(const Problem& p) { return steps_reduce_bcast(p, "greedy", "binomial"); }
std::int64_t steps_snf_allreduce(const Problem& p) { return steps_reduce_bcast(p, "snf", "binomial"); }
std::int64_t steps_hierarchical_allreduce(const Problem& p) { return steps_reduce_bcast(p, "hierarchical", "hierarchical"); }
std::int64_t steps_grid_ecef_allreduce(const Problem& p) { return steps_reduce_bcast(p, "grid-ecef", "grid-ecef"); }
std::int64_t steps_grid_ecef_la_allreduce(const Problem& p) { return steps_reduce_bcast(p, "grid-ecef-la", "grid-ecef-la"); }
std::int64_t steps_grid_bottomup_allreduce(const Problem& p) { return steps_reduce_bcast(p, "grid-bottomup", "grid-bottomup"); }
std::int64_t steps_shm_allreduce(const Problem& p) { return steps_reduce_bcast(p, "shm-reduce-scatter-gather", "shm-bcast"); }

}  // namespace canopy::planner
