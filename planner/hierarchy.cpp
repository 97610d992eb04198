#include "planner/hierarchy.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "planner/segments.h"
#include "planner/simulate.h"
#include "planner/staged.h"
#include "planner/topology.h"
#include "planner/tree.h"
#include "planner/validate.h"

namespace canopy::planner {

// ---- Groups and leaders ---------------------------------------------------------

int Hierarchy::leader_index(int g) const {
  const auto& m = members[g];
  return static_cast<int>(std::find(m.begin(), m.end(), leader[g]) - m.begin());
}

bool Hierarchy::any_group_shared() const {
  return std::any_of(members.begin(), members.end(), [](const std::vector<int>& m) { return m.size() > 1; });
}

namespace {

double slowdown_of(const Problem& problem, int rank) {
  return problem.topology ? problem.topology->slowdown_of(rank) : 1.0;
}

// The fastest sender of a group, ties to the lowest rank (members are increasing).
int fastest_member(const Problem& problem, const std::vector<int>& members) {
  int best = members.front();
  for (int r : members)
    if (slowdown_of(problem, r) < slowdown_of(problem, best)) best = r;
  return best;
}

}  // namespace

Hierarchy make_hierarchy(const Problem& problem, const std::vector<int>& group_of_rank) {
  if (static_cast<int>(group_of_rank.size()) != problem.nranks)
    throw PlanError("hierarchy: " + std::to_string(group_of_rank.size()) + " group labels for " +
                    std::to_string(problem.nranks) + " ranks");
  Hierarchy h;
  std::map<int, int> index;  // label -> group, in order of first rank
  for (int r = 0; r < problem.nranks; ++r) {
    const auto [it, fresh] = index.emplace(group_of_rank[r], h.groups());
    if (fresh) h.members.emplace_back();
    h.members[it->second].push_back(r);
  }
  h.root_group = index.at(group_of_rank[problem.root]);
  for (int g = 0; g < h.groups(); ++g)
    h.leader.push_back(g == h.root_group ? problem.root : fastest_member(problem, h.members[g]));
  return h;
}

std::vector<int> hierarchy_groups(const Topology& t) {
  if (t.clusters > 1) return t.cluster;
  if (t.nodes() > 1 || t.package.empty()) return t.node;
  return t.package;
}

// ---- Level problems -------------------------------------------------------------

Problem level_problem(const Problem& problem, const std::vector<int>& ranks, int root_index) {
  if (root_index < 0 || root_index >= static_cast<int>(ranks.size()))
    throw PlanError("hierarchy: level root " + std::to_string(root_index) + " outside its " +
                    std::to_string(ranks.size()) + " ranks");
  Problem level = problem;
  level.nranks = static_cast<int>(ranks.size());
  level.root = root_index;
  // The composition needs every level cut like the whole message; an explicit layout
  // makes every algorithm (scatter-allgather's blocks included) use exactly it.
  level.segment_counts = segment_counts_of(problem_segments(problem));
  if (problem.topology) level.topology = std::make_shared<const Topology>(restrict_topology(*problem.topology, ranks));
  // A level inside one node keeps the node's ring (every node has one, with the same
  // entries: with_staging_ring), so its shm-* algorithms compete; a level across nodes
  // cannot stage (its ranks share no memory).
  if (!staging_spans_problem(level)) {
    level.staging_entries = 0;
    level.staging_entry_bytes = 0;
    level.direct_access = false;  // nor reach into its ranks' memory
  }
  return level;
}

Problem upper_problem(const Problem& problem, const Hierarchy& h) {
  Problem upper = level_problem(problem, h.leader, h.root_group);
  // The leaders' level never stages. Across nodes it cannot; across the packages of one
  // node (a socket level) it could, but each leader may already stage in its own
  // group's level, and a rank stages in one level only (stage numbers name its ring
  // entries, and compose keeps them). Its messages go point to point.
  upper.staging_entries = 0;
  upper.staging_entry_bytes = 0;
  // Nor exposes: a leader may already expose its buffer in its group's level, and a rank
  // exposes once per call.
  upper.direct_access = false;
  return upper;
}

Problem lower_problem(const Problem& problem, const Hierarchy& h, int group) {
  Problem lower = level_problem(problem, h.members[group], h.leader_index(group));
  lower.inside_group = true;
  return lower;
}

// ---- Remembered level plans -------------------------------------------------------

namespace {

// Exact text of a double (hexadecimal), so equal keys mean equal inputs.
void put(std::string& key, double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%a,", v);
  key += buf;
}

void put(std::string& key, std::int64_t v) { key += std::to_string(v) + ","; }

void put_model(std::string& key, const CostModel& m) {
  // Each field of CostModel::fields(), in its order.
  auto put_field = [&key](const auto& field) {
    using Field = std::decay_t<decltype(field)>;
    if constexpr (std::is_same_v<Field, std::string>) {
      key += field + ":";
    } else if constexpr (std::is_same_v<Field, Duplex>) {
      key += field == Duplex::Full ? "F" : "H";
    } else if constexpr (std::is_same_v<Field, bool>) {
      key += field ? "O" : "-";
    } else if constexpr (std::is_same_v<Field, double>) {
      put(key, field);
    } else {  // the pLogP gaps: (bytes, seconds) pairs, counted
      put(key, static_cast<std::int64_t>(field.size()));
      for (const auto& [bytes, g] : field) {
        put(key, bytes);
        put(key, g);
      }
    }
  };
  std::apply([&](const auto&... field) { (put_field(field), ...); }, m.fields());
}

// Everything make_plan reads: the problem (topology labels aside) and the request.
std::string plan_key(const Problem& p, const Request& r) {
  std::string key = r.algorithm + "|";
  for (std::int64_t v : {static_cast<std::int64_t>(p.collective), std::int64_t{p.nranks},
                         std::int64_t{p.root}, p.count, p.element_bytes, std::int64_t{p.commutative},
                         p.segment_bytes, std::int64_t{p.limit}, r.segment_bytes, std::int64_t{r.homogeneous_only},
                         std::int64_t{r.composable_only}, std::int64_t{p.staging_entries}, p.staging_entry_bytes,
                         std::int64_t{p.direct_access}, std::int64_t{p.inside_group}})
    put(key, v);
  key += "|";
  for (std::int64_t c : p.segment_counts) put(key, c);
  key += "|";
  put_model(key, p.model);
  if (const Topology* t = p.topology.get()) {
    key += "|T";
    for (int v : t->node) put(key, std::int64_t{v});
    key += "/";
    for (int v : t->cluster) put(key, std::int64_t{v});
    key += "/";
    for (const CostModel& link : t->links) put_model(key, link);
    for (double s : t->slowdown) put(key, s);
    key += "/P";
    for (int v : t->package) put(key, std::int64_t{v});
    if (t->package_link) put_model(key, *t->package_link);
  }
  return key;
}

// A bounded memo, one per thread (the shim may plan on several threads), emptied when
// it holds too many plans or too many steps (a level of 256 segments over a few dozen
// ranks is tens of thousands of steps; the budget keeps the memo to a few MB). Emptying
// all at once is simple, and rare: one problem has a handful of distinct levels.
constexpr std::size_t kRememberedLevelPlans = 128;
constexpr std::size_t kRememberedLevelSteps = std::size_t{1} << 18;

struct RememberedPlans {
  std::unordered_map<std::string, Plan> plans;
  std::size_t steps = 0;
};

RememberedPlans& remembered_plans() {
  thread_local RememberedPlans memo;
  return memo;
}

}  // namespace

Plan plan_level(const Problem& level, const Request& request) {
  RememberedPlans& memo = remembered_plans();
  std::string key = plan_key(level, request);
  if (const auto it = memo.plans.find(key); it != memo.plans.end()) return it->second;
  Plan plan = make_plan(level, request);
  const std::size_t steps = plan.schedule.total_steps();
  if (memo.plans.size() >= kRememberedLevelPlans || memo.steps + steps > kRememberedLevelSteps) {
    memo.plans.clear();
    memo.steps = 0;
  }
  if (steps <= kRememberedLevelSteps) {
    memo.plans.emplace(std::move(key), plan);
    memo.steps += steps;
  }
  return plan;
}

namespace {

Request level_request(const Problem& problem, bool homogeneous_only) {
  Request request;
  request.segment_bytes = std::max<std::int64_t>(0, problem.segment_bytes);  // the layout is explicit anyway
  request.homogeneous_only = homogeneous_only;
  request.composable_only = true;  // Algorithm::composable says why
  return request;
}

}  // namespace

Plan plan_upper(const Problem& problem, const Hierarchy& h) {
  return plan_level(upper_problem(problem, h), level_request(problem, true));
}

std::vector<Plan> plan_groups(const Problem& problem, const Hierarchy& h) {
  std::vector<Plan> plans(h.groups());
  for (int g = 0; g < h.groups(); ++g)
    if (h.members[g].size() > 1) plans[g] = plan_level(lower_problem(problem, h, g), level_request(problem, false));
  return plans;
}

std::string topology_aware_declines(const Problem& problem) {
  if (!problem.topology) return "needs a topology (none is known)";
  if (problem.collective != Collective::Bcast && !problem.commutative)
    return "combines operands group by group, not in rank order: commutative ops only";
  return {};
}

void decline_unless_topology_aware_fits(const Problem& problem, const std::string& algorithm) {
  check_problem(problem);
  if (const std::string why = topology_aware_declines(problem); !why.empty()) throw PlanError(algorithm + " " + why);
}

// ---- Composition ------------------------------------------------------------------

std::vector<Step> merge_after(const std::vector<Step>& first, const std::vector<Step>& second, int segments) {
  std::vector<int> last(segments, -1);  // first's last step on each segment
  for (int i = 0; i < static_cast<int>(first.size()); ++i)
    if (first[i].kind != StepKind::Expose)
      for (int k = first[i].segment; k <= first[i].last_segment(); ++k) last[k] = i;
  std::vector<Step> out;
  out.reserve(first.size() + second.size());
  int taken = 0;  // first's steps already placed
  for (const Step& st : second) {
    // An Expose is the whole accumulator's: after every step of first, whose receives
    // would otherwise land in segments that others read after it.
    int after = st.kind == StepKind::Expose ? static_cast<int>(first.size()) - 1 : -1;
    if (st.kind != StepKind::Expose)
      for (int k = st.segment; k <= st.last_segment(); ++k) after = std::max(after, last[k]);
    for (; taken <= after; ++taken) out.push_back(first[taken]);
    out.push_back(st);
  }
  for (; taken < static_cast<int>(first.size()); ++taken) out.push_back(first[taken]);
  return out;
}

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw PlanError("hierarchy: " + what);
}

void check_level(const Schedule& level, const Schedule& whole, int nranks, int root, const std::string& which) {
  require(level.collective == whole.collective, which + " schedule is a " + to_string(level.collective));
  require(level.nranks == nranks && static_cast<int>(level.steps.size()) == nranks &&
              static_cast<int>(level.slots.size()) == nranks,
          which + " schedule has " + std::to_string(level.nranks) + " ranks, want " + std::to_string(nranks));
  require(level.root == root, which + " schedule is rooted at " + std::to_string(level.root) + ", want " +
                                  std::to_string(root));
  require(segment_counts_of(level.segments) == segment_counts_of(whole.segments) && level.count == whole.count,
          which + " schedule cuts the message differently");
}

// A level's steps with its ranks replaced by the problem's and its slots shifted.
// Stage numbers (Step::slot of staging steps) stay: only a level inside one node
// stages, so a rank's stages all come from one level and keep their numbering.
std::vector<Step> relabel(std::vector<Step> steps, const std::vector<int>& ranks, int slot_offset) {
  for (Step& st : steps) {
    const bool names_peer = st.is_message() || st.kind == StepKind::Fetch || st.kind == StepKind::FetchReduce ||
                            st.kind == StepKind::Read || st.kind == StepKind::Write;  // an Expose names none
    if (names_peer) st.peer = ranks[st.peer];
    if (st.slot >= 0 && !st.is_staging()) st.slot += slot_offset;
  }
  return steps;
}

// A reducing leader's upper steps once its group's result stands in for its input.
std::vector<Step> group_result_as_input(std::vector<Step> steps) {
  std::vector<Step> out;
  for (Step st : steps) {
    if (st.kind == StepKind::Copy) continue;  // the accumulator already holds the group's result
    if (st.kind == StepKind::Send && st.buffer == Buffer::Input) st.buffer = Buffer::Accumulator;
    out.push_back(st);
  }
  return out;
}

}  // namespace

Schedule compose_hierarchy(const Problem& problem, const Hierarchy& h, const Schedule& upper,
                           const std::vector<Schedule>& lower, const std::string& algorithm) {
  Schedule out = blank_schedule(problem, algorithm);
  const int nseg = static_cast<int>(out.segments.size());
  require(static_cast<int>(lower.size()) == h.groups(), "one lower schedule per group");
  check_level(upper, out, h.groups(), h.root_group, "the upper");
  const bool reduce = problem.collective == Collective::Reduce;
  for (int g = 0; g < h.groups(); ++g) {
    const auto& members = h.members[g];
    const int leader = h.leader[g];
    const int k = h.leader_index(g);
    std::vector<Step> up = upper.steps[g];
    if (members.size() == 1) {  // nothing to do inside: the leader is the group
      out.steps[leader] = relabel(std::move(up), h.leader, 0);
      out.slots[leader] = upper.slots[g];
      continue;
    }
    const Schedule& low = lower[g];
    check_level(low, out, static_cast<int>(members.size()), k, "group " + std::to_string(g) + "'s lower");
    if (low.uses_staging()) {
      require(low.staging_entries == problem.staging_entries && low.staging_entry_bytes == problem.staging_entry_bytes,
              "group " + std::to_string(g) + "'s lower schedule stages through another ring than the problem's");
      out.staging_entries = low.staging_entries;
      out.staging_entry_bytes = low.staging_entry_bytes;
    }
    out.direct = out.direct || low.direct;
    for (int i = 0; i < static_cast<int>(members.size()); ++i)
      if (i != k) {
        out.steps[members[i]] = relabel(low.steps[i], members, 0);
        out.slots[members[i]] = low.slots[i];
      }
    // The leader: bcast upper then lower, reduce lower then upper; the second list's
    // slots follow the first's.
    if (reduce) {
      const int offset = low.slots[k];
      out.steps[leader] = merge_after(relabel(low.steps[k], members, 0),
                                      relabel(group_result_as_input(std::move(up)), h.leader, offset), nseg);
    } else {
      const int offset = upper.slots[g];
      out.steps[leader] = merge_after(relabel(std::move(up), h.leader, 0), relabel(low.steps[k], members, offset), nseg);
    }
    out.slots[leader] = upper.slots[g] + low.slots[k];
  }
  return out;
}


// ---- Allreduce over groups ----------------------------------------------------------

namespace {

void check_allreduce_level(const Schedule& level, Collective collective, int nranks, int root,
                           const std::vector<Segment>& segments, const std::string& which) {
  require(level.collective == collective, which + " schedule is a " + to_string(level.collective) + ", want a " +
                                              to_string(collective));
  require(level.nranks == nranks && static_cast<int>(level.steps.size()) == nranks,
          which + " schedule has " + std::to_string(level.nranks) + " ranks, want " + std::to_string(nranks));
  require(level.root == root, which + " schedule is rooted at " + std::to_string(level.root) + ", want " +
                                  std::to_string(root));
  require(segment_counts_of(level.segments) == segment_counts_of(segments), which + " schedule cuts the message differently");
  require(!level.direct, which + " schedule reaches into other ranks' memory");
}

// A leader's upper allreduce steps once its group's result stands in for its input
// (group_result_as_input), refused where the substitution would be wrong: a segment of
// the input sent (or copied) after the accumulator's copy of it was written, which the
// plain allreduce reads as its own contribution but here would be a partial result. No
// valid allreduce does that (validate.h: with MPI_IN_PLACE the input is the
// accumulator); checked here because the substitution relies on it.
std::vector<Step> group_result_as_allreduce_input(const std::vector<Step>& steps, int segments) {
  std::vector<bool> written(segments, false);
  for (const Step& st : steps) {
    const bool reads_input = (st.kind == StepKind::Send || st.kind == StepKind::Stage || st.kind == StepKind::Copy ||
                              st.kind == StepKind::FetchReduce) &&
                             (st.buffer == Buffer::Input || st.kind == StepKind::Copy);
    for (int k = st.segment; k <= st.last_segment(); ++k)
      if (reads_input && written[k])
        throw PlanError("hierarchy: the leaders' allreduce reads a segment of its input after writing it");
    if (st.kind == StepKind::Stage || st.kind == StepKind::FetchReduce || st.is_direct())
      throw PlanError("hierarchy: the leaders' allreduce stages or reaches into memory");
    const bool writes = st.kind == StepKind::Reduce || st.kind == StepKind::Copy || st.kind == StepKind::Fetch ||
                        (st.kind == StepKind::Recv && st.buffer == Buffer::Accumulator);
    if (writes)
      for (int k = st.segment; k <= st.last_segment(); ++k) written[k] = true;
  }
  return group_result_as_input(steps);
}

// A broadcast's steps inside an allreduce: the leader's data is its accumulator (in a
// broadcast input and accumulator are one buffer; here the input is the send buffer).
std::vector<Step> broadcast_from_accumulator(std::vector<Step> steps) {
  for (Step& st : steps)
    if ((st.kind == StepKind::Send || st.kind == StepKind::Stage) && st.buffer == Buffer::Input)
      st.buffer = Buffer::Accumulator;
  return steps;
}

int stages_in(const std::vector<Step>& steps) {
  return static_cast<int>(
      std::count_if(steps.begin(), steps.end(), [](const Step& st) { return st.kind == StepKind::Stage; }));
}

}  // namespace

Schedule compose_allreduce_hierarchy(const Problem& problem, const Hierarchy& h, const std::vector<Schedule>& lower_reduce,
                                     const Schedule& upper, const std::vector<Schedule>& lower_bcast,
                                     const std::string& algorithm) {
  require(problem.collective == Collective::Allreduce, "an allreduce over groups composes allreduces");
  require(static_cast<int>(lower_reduce.size()) == h.groups() && static_cast<int>(lower_bcast.size()) == h.groups(),
          "one lower reduce and one lower broadcast per group");
  Schedule out = empty_schedule(problem, algorithm, upper.segments);
  const int nseg = static_cast<int>(out.segments.size());
  check_allreduce_level(upper, Collective::Allreduce, h.groups(), upper.root, out.segments, "the leaders'");
  require(!upper.uses_staging(), "the leaders' allreduce stages");
  out.commutative = problem.commutative;
  // Each rank's three lists, relabelled to the problem's ranks, slots one after another.
  const int p = problem.nranks;
  std::vector<std::vector<Step>> reduce_steps(p), upper_steps(p), bcast_steps(p);
  std::vector<int> slots_reduce(p, 0), slots_upper(p, 0), slots_bcast(p, 0);
  bool staged = false;
  for (int g = 0; g < h.groups(); ++g) {
    const auto& members = h.members[g];
    const int leader = h.leader[g];
    const int k = h.leader_index(g);
    const bool alone = members.size() == 1;
    if (!alone) {
      const std::string which = "group " + std::to_string(g) + "'s lower";
      check_allreduce_level(lower_reduce[g], Collective::Reduce, static_cast<int>(members.size()), k, out.segments,
                            which + " reduce");
      check_allreduce_level(lower_bcast[g], Collective::Bcast, static_cast<int>(members.size()), k, out.segments,
                            which + " broadcast");
      for (const Schedule* low : {&lower_reduce[g], &lower_bcast[g]})
        if (low->uses_staging()) {
          require(low->staging_entries == problem.staging_entries &&
                      low->staging_entry_bytes == problem.staging_entry_bytes,
                  which + " schedule stages through another ring than the problem's");
          out.staging_entries = low->staging_entries;
          out.staging_entry_bytes = low->staging_entry_bytes;
          staged = true;
        }
      for (int i = 0; i < static_cast<int>(members.size()); ++i) {
        const int r = members[i];
        reduce_steps[r] = relabel(lower_reduce[g].steps[i], members, 0);
        slots_reduce[r] = lower_reduce[g].slots[i];
      }
    }
    upper_steps[leader] = relabel(alone ? upper.steps[g] : group_result_as_allreduce_input(upper.steps[g], nseg),
                                  h.leader, slots_reduce[leader]);
    slots_upper[leader] = upper.slots[g];
    if (!alone)
      for (int i = 0; i < static_cast<int>(members.size()); ++i) {
        const int r = members[i];
        bcast_steps[r] = relabel(broadcast_from_accumulator(lower_bcast[g].steps[i]), members,
                                 slots_reduce[r] + slots_upper[r]);
        slots_bcast[r] = lower_bcast[g].slots[i];
      }
  }
  // The broadcast's stage numbers continue after the reduce's, on each rank (a Fetch
  // names the stager's number).
  std::vector<int> reduce_stages(p);
  for (int r = 0; r < p; ++r) reduce_stages[r] = stages_in(reduce_steps[r]);
  for (int r = 0; r < p; ++r)
    for (Step& st : bcast_steps[r]) {
      if (st.kind == StepKind::Stage) st.slot += reduce_stages[r];
      else if (st.kind == StepKind::Fetch || st.kind == StepKind::FetchReduce) st.slot += reduce_stages[st.peer];
    }
  Schedule sequential = out;
  for (int r = 0; r < p; ++r) {
    sequential.slots[r] = slots_reduce[r] + slots_upper[r] + slots_bcast[r];
    auto& list = sequential.steps[r];
    for (const auto* part : {&reduce_steps[r], &upper_steps[r], &bcast_steps[r]})
      list.insert(list.end(), part->begin(), part->end());
  }
  if (staged) return sequential;
  // Pipelined: a leader's upper steps on segment s after its group's reduce of s, and
  // every rank's broadcast steps on s after its last earlier step on s.
  Schedule pipelined = sequential;
  for (int r = 0; r < p; ++r)
    pipelined.steps[r] = merge_after(merge_after(reduce_steps[r], upper_steps[r], nseg), bcast_steps[r], nseg);
  if (!validate(pipelined)) return sequential;
  const Simulation fast = simulate(pipelined, problem.model, problem.topology.get());
  const Simulation slow = simulate(sequential, problem.model, problem.topology.get());
  return fast.ok && (!slow.ok || fast.makespan <= slow.makespan) ? pipelined : sequential;
}

}  // namespace canopy::planner
