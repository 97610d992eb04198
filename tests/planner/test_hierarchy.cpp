// Hierarchical and grid-aware schedules (planner/hierarchy.h, algorithms/hierarchical.cpp,
// algorithms/grid.cpp): composition, validity on random multi-cluster topologies, one
// wide-area message per link and segment, the 3-site test bed, agreement with the
// grid heuristics' own model, and the cases they decline.
#include <catch2/catch.hpp>

#include <climits>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>

#include "planner/grid_heuristics.h"
#include "planner/hierarchy.h"
#include "planner/segments.h"
#include "planner/select.h"
#include "planner/simulate.h"
#include "planner/staged.h"
#include "planner/topology.h"
#include "sites.h"
#include "support.h"

using namespace canopy::planner;
using namespace canopy::planner::testing;

namespace {

// ---- Topologies -------------------------------------------------------------------

CostModel link_mbit(double alpha, double mbit) { return hockney_model(alpha, 8.0 / (mbit * 1e6), 0); }

// Between two nodes of one cluster: a fast LAN, far faster than any wide-area link.
CostModel lan() { return link_mbit(20e-6, 10000); }

// Renumbers labels 0..k-1 in order of first appearance (Topology's convention).
int renumber(std::vector<int>& labels) {
  std::map<int, int> index;
  for (int& l : labels) l = index.emplace(l, static_cast<int>(index.size())).first->second;
  return static_cast<int>(index.size());
}

std::uint32_t test_seed() {
  const char* fixed = std::getenv("CANOPYTEST_SEED");
  return fixed ? static_cast<std::uint32_t>(std::strtoul(fixed, nullptr, 10)) : 20240611u;
}

// 2-5 clusters of 1-3 nodes of 1-3 ranks, ranks shuffled (a cluster's ranks need not be
// contiguous), hockney wide-area links of 20-1000 Mbit/s and 0.5-5 ms, different each
// way; between nodes of a cluster 10 Gbit/s; within a node the problem's model.
std::shared_ptr<const Topology> random_topology(std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto real = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  std::vector<std::pair<int, int>> places;  // (cluster, node) of each rank before shuffling
  const int clusters = pick(2, 5);
  int node = 0;
  for (int c = 0; c < clusters; ++c)
    for (int n = pick(1, 3); n > 0; --n, ++node)
      for (int k = pick(1, 3); k > 0; --k) places.push_back({c, node});
  std::shuffle(places.begin(), places.end(), rng);
  Topology t;
  for (const auto& [c, n] : places) {
    t.cluster.push_back(c);
    t.node.push_back(n);
  }
  t.clusters = renumber(t.cluster);
  renumber(t.node);
  for (int a = 0; a < t.clusters; ++a)
    for (int b = 0; b < t.clusters; ++b) t.links.push_back(a == b ? lan() : link_mbit(real(0.5e-3, 5e-3), real(20, 1000)));
  check_topology(t);
  return std::make_shared<const Topology>(t);
}

// The emulated test bed (docs/testbed.md): 3 sites x 2 ranks, one node per site; s0-s1 200,
// s0-s2 50, s1-s2 500 Mbit/s both ways, 50 us per message (veth and a bridge, no
// netem delay); the ranks of a site share memory (the problem's model, 10 GB/s).
std::shared_ptr<const Topology> testbed() {
  Topology t;
  t.node = {0, 0, 1, 1, 2, 2};
  t.cluster = {0, 0, 1, 1, 2, 2};
  t.clusters = 3;
  const double mbit[3][3] = {{10000, 200, 50}, {200, 10000, 500}, {50, 500, 10000}};
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; ++b) t.links.push_back(link_mbit(50e-6, mbit[a][b]));
  t.labels = {"s0", "s1", "s2"};
  return std::make_shared<const Topology>(t);
}

// ---- Problems and algorithms -------------------------------------------------------

// 840 = lcm(1..8) elements of 8 bytes: `segments` equal segments for 1..8.
Problem problem_on(std::shared_ptr<const Topology> t, Collective c, int root, int segments,
                   const CostModel& model = default_model()) {
  const std::int64_t count = 840;
  Problem p = make_problem(c, t->nranks(), root, c == Collective::Bcast ? count * 8 : count,
                           c == Collective::Bcast ? 1 : 8, true, count * 8 / segments, model);
  p.topology = std::move(t);
  return p;
}

// 1 MiB from `root` in `segments` equal segments (as near as bytes allow).
Problem large_bcast_on(std::shared_ptr<const Topology> t, int root, int segments) {
  const std::int64_t bytes = std::int64_t{1} << 20;
  Problem p = make_problem(Collective::Bcast, t->nranks(), root, bytes, 1, true, (bytes + segments - 1) / segments,
                           default_model());
  p.topology = std::move(t);
  return p;
}

std::vector<std::string> topology_aware_names() {
  std::vector<std::string> out{"hierarchical"};
  for (const auto& h : grid_heuristics()) out.push_back("grid-" + std::string(h.name));
  return out;
}

// Messages per segment that cross from one cluster to another.
std::vector<int> wide_area_messages(const Schedule& s, const Topology& t) {
  std::vector<int> out(s.segments.size(), 0);
  for (int r = 0; r < s.nranks; ++r)
    for (const Step& st : s.steps[r])
      if (st.kind == StepKind::Send && t.cluster[r] != t.cluster[st.peer]) ++out[st.segment];
  return out;
}

bool is_topology_aware(const std::string& name, Collective c) {
  const Algorithm* a = find_algorithm(c, name);
  return a != nullptr && a->topology_aware;
}

}  // namespace

// ---- Composition --------------------------------------------------------------------

TEST_CASE("Hierarchy: merge_after keeps both lists' order and places a step after the other list's "
          "last step on its segment",
          "[hierarchy]") {
  const std::vector<Step> first = {Step::recv_into_accumulator(9, 0), Step::recv_into_accumulator(9, 1),
                                   Step::send(8, 0), Step::recv_into_accumulator(9, 2), Step::send(8, 1),
                                   Step::send(8, 2)};
  const std::vector<Step> second = {Step::send(1, 0), Step::send(2, 0), Step::send(1, 1), Step::send(2, 1),
                                    Step::send(1, 2), Step::send(2, 2)};
  const std::vector<Step> merged = merge_after(first, second, 3);
  const std::vector<Step> expected = {first[0],  first[1],  first[2],  second[0], second[1], first[3],
                                      first[4],  second[2], second[3], first[5],  second[4], second[5]};
  CHECK(merged == expected);
  // A segment the first list never touches: as early as possible.
  CHECK(merge_after({Step::send(8, 1)}, {Step::send(1, 0)}, 2) == std::vector<Step>{Step::send(1, 0), Step::send(8, 1)});
  CHECK(merge_after({}, second, 3) == second);
  CHECK(merge_after(first, {}, 3) == first);
}

TEST_CASE("Hierarchy: groups in order of first rank, the root leads its group, others their fastest "
          "sender (lowest rank among equals)",
          "[hierarchy]") {
  Topology t;
  t.node = {0, 1, 0, 2, 1, 2};
  t.cluster = {0, 1, 0, 2, 1, 2};
  t.clusters = 3;
  t.links.assign(9, lan());
  t.slowdown = {1, 2, 1, 1.5, 1, 1.5};
  Problem p = make_problem(Collective::Bcast, 6, 2, 100, 1, true, 0, default_model());
  p.topology = std::make_shared<const Topology>(t);
  const Hierarchy h = make_hierarchy(p, t.cluster);
  REQUIRE(h.groups() == 3);
  CHECK(h.members == std::vector<std::vector<int>>{{0, 2}, {1, 4}, {3, 5}});
  CHECK(h.root_group == 0);
  CHECK(h.leader == std::vector<int>{2, 4, 3});  // the root; rank 1 sends slower than 4; a tie
  CHECK(h.leader_index(0) == 1);
  CHECK(h.any_group_shared());
  // Level problems: renumbered ranks, the root's position, the whole layout explicit.
  p.segment_bytes = 30;
  const Problem up = upper_problem(p, h);
  CHECK(up.nranks == 3);
  CHECK(up.root == 0);
  CHECK(up.segment_counts == std::vector<std::int64_t>{30, 30, 30, 10});
  CHECK(up.topology->slowdown == std::vector<double>{1, 1, 1.5});
  const Problem low = lower_problem(p, h, 1);
  CHECK(low.nranks == 2);
  CHECK(low.root == 1);
  CHECK(low.topology->slowdown == std::vector<double>{2, 1});
  CHECK_THROWS_AS(make_hierarchy(p, {0, 1}), PlanError);
}

TEST_CASE("Hierarchy: compose_hierarchy refuses levels that do not fit", "[hierarchy]") {
  const auto t = testbed();
  Problem p = problem_on(t, Collective::Bcast, 0, 4);
  const Hierarchy h = make_hierarchy(p, t->cluster);
  const Plan upper = plan_upper(p, h);
  std::vector<Schedule> lower;
  for (Plan& plan : plan_groups(p, h)) lower.push_back(plan.schedule);
  check_valid(compose_hierarchy(p, h, upper.schedule, lower, "test"));
  SECTION("another segment layout") {
    Problem other = lower_problem(p, h, 1);
    other.segment_counts = {6720};
    lower[1] = plan_with("chain", other);
    CHECK_THROWS_AS(compose_hierarchy(p, h, upper.schedule, lower, "test"), PlanError);
  }
  SECTION("another root") {
    Problem other = lower_problem(p, h, 1);
    other.root = 1;
    lower[1] = plan_with("chain", other);
    CHECK_THROWS_AS(compose_hierarchy(p, h, upper.schedule, lower, "test"), PlanError);
  }
  SECTION("a missing group") {
    lower.pop_back();
    CHECK_THROWS_AS(compose_hierarchy(p, h, upper.schedule, lower, "test"), PlanError);
  }
  SECTION("the other collective") {
    Problem reduce = upper_problem(problem_on(t, Collective::Reduce, 0, 4), h);
    CHECK_THROWS_AS(compose_hierarchy(p, h, plan_with("chain", reduce), lower, "test"), PlanError);
  }
}

// ---- Registry ----------------------------------------------------------------------

TEST_CASE("Hierarchy: hierarchical and one grid-* row per heuristic, for both collectives, all "
          "topology-aware, homogeneous_only leaves them out",
          "[hierarchy]") {
  for (Collective c : {Collective::Reduce, Collective::Bcast}) {
    for (const std::string& name : topology_aware_names()) {
      CAPTURE(name);
      CHECK(is_topology_aware(name, c));
    }
    CHECK_FALSE(is_topology_aware("binomial", c));
    Problem p = problem_on(testbed(), c, 0, 1);
    Request request;
    request.homogeneous_only = true;
    for (const Plan& plan : rank_plans(p, request)) CHECK_FALSE(is_topology_aware(plan.schedule.algorithm, c));
  }
}

// ---- Validity on random topologies ---------------------------------------------------

TEST_CASE("Hierarchy: on random multi-cluster topologies every hierarchical and grid-* schedule "
          "validates, simulates, and crosses each wide-area link once per segment",
          "[hierarchy]") {
  const std::uint32_t seed = test_seed();
  INFO("seed " << seed << " (replay with CANOPYTEST_SEED=" << seed << ")");
  std::mt19937 rng(seed);
  // Full duplex with overlap (the default) and Langou's unidirectional system: the two
  // shapes of reduce tree schedules (prefetching, and one receive per reduction).
  const CostModel unidirectional = hockney_model(2e-6, 1e-10, 1e-10);
  int schedules = 0;
  for (int trial = 0; trial < 6; ++trial) {
    const auto t = random_topology(rng);
    const CostModel& model = trial % 2 ? unidirectional : default_model();
    CAPTURE(trial, describe_topology(*t), model.spec());
    for (int root = 0; root < t->nranks(); ++root)
      for (int segments = 1; segments <= 8; ++segments)
        for (Collective c : {Collective::Reduce, Collective::Bcast}) {
          const Problem p = problem_on(t, c, root, segments, model);
          for (const std::string& name : topology_aware_names()) {
            CAPTURE(root, segments, to_string(c), name);
            const Schedule s = plan_with(name.c_str(), p);
            ++schedules;
            REQUIRE(s.segments.size() == static_cast<std::size_t>(segments));
            CHECK(s.algorithm == name);
            check_valid(s);
            const Simulation sim = simulate(s, model, t.get());
            INFO(sim.error);
            REQUIRE(sim.ok);
            CHECK(std::isfinite(sim.makespan));
            CHECK(sim.makespan > 0);
            CHECK(wide_area_messages(s, *t) == std::vector<int>(segments, t->clusters - 1));
          }
        }
  }
  CHECK(schedules > 0);
}

TEST_CASE("Hierarchy: over links whose latency is in flight (port=), the level over the leaders may be "
          "reduce-scatter-gather-wide or scatter-allgather-wide, every such reduce and bcast validates, and over 16 "
          "sites of 4 ranks it is the wide form",
          "[hierarchy]") {
  // Random topologies with port= on every link, inside the clusters too: the exchange is
  // composable over the leaders (a leader sends its group's result,
  // group_result_as_input), so hierarchical may take it there, and not inside a group of
  // several nodes (Algorithm::leaders_only: its gather's result is pending there, which
  // the validator refused), nor over the leaders of a hierarchy inside a group
  // (Problem::inside_group: 14 of these reduces failed validation before it); the wide
  // broadcast may be either level. Whatever it takes must validate and simulate.
  std::mt19937 rng(test_seed() + 7);
  std::map<Collective, int> schedules, wide;
  for (int trial = 0; trial < 6; ++trial) {
    Topology apart = *random_topology(rng);
    for (int a = 0; a < apart.clusters; ++a)
      for (int b = 0; b < apart.clusters; ++b)
        apart.links[static_cast<std::size_t>(a) * apart.clusters + b].port_per_byte = 1e-9;
    const auto t = std::make_shared<const Topology>(apart);
    CAPTURE(trial, describe_topology(*t));
    for (int root = 0; root < t->nranks(); ++root)
      for (int segments = 1; segments <= 8; ++segments)
        for (Collective c : {Collective::Reduce, Collective::Bcast}) {
          Problem p = problem_on(t, c, root, segments);
          // Broadcasts of 840 bytes go flat over the leaders (one latency); at 1 MiB the
          // wide form's two latencies and a block a leader compete.
          if (c == Collective::Bcast) p = large_bcast_on(t, root, segments);
          CAPTURE(root, segments, to_string(c));
          const Schedule s = plan_with("hierarchical", p);
          check_valid(s);
          const Simulation sim = simulate(s, p.model, t.get());
          INFO(sim.error);
          REQUIRE(sim.ok);
          ++schedules[c];
          const std::string upper = plan_upper(p, make_hierarchy(p, hierarchy_groups(*t))).schedule.algorithm;
          wide[c] += upper == "reduce-scatter-gather-wide" || upper == "scatter-allgather-wide";
        }
  }
  for (Collective c : {Collective::Reduce, Collective::Bcast}) {
    INFO(wide[c] << " of " << schedules[c] << " " << to_string(c) << "s took a wide form over the leaders");
    CHECK(wide[c] > 0);
  }

  // 16 sites, one node of 4 ranks each, 1-15 ms and 56-336 Mbit/s apart behind 1 Gbit/s
  // cards (gridgen.py's ranges, spread evenly); 1 MiB of doubles to rank 0 in 16
  // segments, a slice a leader, or from it in 15, a block a leader other than the root
  // (simulated 56 ms; grid-ecef-lat-max 144). SMPI measured auto's reduce there
  // (hierarchical) at 46.0 ms a call, grid-ecef-lat-max at 109.8 and its mpich selector
  // at 294.9 (docs/simulation.md).
  const auto t = sixteen_sites_apart(4, 4);
  for (Collective c : {Collective::Reduce, Collective::Bcast}) {
    const std::int64_t segment_bytes = c == Collective::Reduce ? (1 << 20) / 16 : 8739 * 8;
    Problem p = make_problem(c, 64, 0, (1 << 20) / 8, 8, true, segment_bytes, default_model());
    p.topology = t;
    CAPTURE(to_string(c));
    const Plan upper = plan_upper(p, make_hierarchy(p, hierarchy_groups(*t)));
    CHECK(upper.schedule.algorithm ==
          (c == Collective::Reduce ? "reduce-scatter-gather-wide" : "scatter-allgather-wide"));
    const Schedule composed = plan_with("hierarchical", p);
    check_valid(composed);
    const double hierarchical = simulate(composed, p.model, t.get()).makespan;
    const double ecef = simulate(plan_with("grid-ecef-lat-max", p), p.model, t.get()).makespan;
    INFO("hierarchical " << hierarchical << " s, grid-ecef-lat-max " << ecef << " s");
    CHECK(hierarchical * 1.5 < ecef);
  }
}

TEST_CASE("Hierarchy: at 1024 ranks over 16 sites the selector simulates the hierarchy in enough segments for "
          "a slice a leader (kTopologySimulationBudget)",
          "[hierarchy]") {
  // 16 sites of 4 nodes of 16 ranks (sixteen_sites_apart). Within kSimulationBudget the
  // hierarchy could be cut in at most 4 segments, and 4 slices leave 12 of the 16
  // leaders nothing to reduce.
  Problem p = make_problem(Collective::Reduce, 1024, 0, (1 << 20) / 8, 8, true, -1, default_model());
  p.topology = sixteen_sites_apart(64, 16);
  Request request;
  request.algorithm = "hierarchical";
  const std::vector<Choice> ranked = rank_choices(p, request);
  REQUIRE(ranked.size() == 1);
  CHECK(ranked.front().exact);
  const std::int64_t segments = (std::int64_t{1} << 20) / ranked.front().segment_bytes;
  INFO(segments << " segments, " << ranked.front().predicted << " s");
  CHECK(segments >= 8);
  CHECK(ranked.front().predicted < 0.1);  // 69.8 ms at 13 segments; 159 ms at 4
}

TEST_CASE("Hierarchy: a single cluster of several nodes goes hierarchical by node (one message "
          "between nodes per node and segment), grid-* needs several clusters",
          "[hierarchy]") {
  // Ranks round-robin over 3 nodes: 0,3,6 | 1,4,7 | 2,5,8.
  Topology one;
  for (int r = 0; r < 9; ++r) one.node.push_back(r % 3);
  one.cluster.assign(9, 0);
  one.links = {link_mbit(1e-3, 100)};
  const auto t = std::make_shared<const Topology>(one);
  for (Collective c : {Collective::Reduce, Collective::Bcast})
    for (int segments : {1, 4}) {
      const Problem p = problem_on(t, c, 4, segments);
      const Schedule s = plan_with("hierarchical", p);
      check_valid(s);
      // Between nodes: one message per segment and per node other than the root's.
      int between = 0;
      for (int r = 0; r < 9; ++r)
        for (const Step& st : s.steps[r])
          if (st.kind == StepKind::Send && !one.same_node(r, st.peer)) ++between;
      CHECK(between == 2 * segments);
      for (const char* grid : {"grid-ecef", "grid-flat"}) CHECK_THROWS_AS(plan_with(grid, p), PlanError);
    }
}

TEST_CASE("Hierarchy: a cluster of several nodes plans itself with every algorithm, so inside a "
          "grid it may go hierarchical by node in turn",
          "[hierarchy]") {
  // Cluster 0: ranks 0-5 round-robin over two nodes joined by 100 Mbit/s; cluster 1:
  // ranks 6-7 on one node, 20 Mbit/s away. A reduce of 1 MiB in 8 segments: crossing
  // between cluster 0's nodes once per segment is that cluster's fastest plan.
  Topology t;
  t.node = {0, 1, 0, 1, 0, 1, 2, 2};
  t.cluster = {0, 0, 0, 0, 0, 0, 1, 1};
  t.clusters = 2;
  t.links = {link_mbit(1e-4, 100), link_mbit(1e-3, 20), link_mbit(1e-3, 20), lan()};
  const auto topology = std::make_shared<const Topology>(t);
  for (Collective c : {Collective::Reduce, Collective::Bcast}) {
    Problem p = problem_on(topology, c, 7, 8);
    p.count = (std::int64_t{1} << 20) / p.element_bytes;
    p.segment_bytes = std::int64_t{1} << 17;
    const Hierarchy h = make_hierarchy(p, t.cluster);
    CAPTURE(to_string(c));
    const Plan inside = plan_groups(p, h)[0];
    Request every_algorithm;
    every_algorithm.segment_bytes = p.segment_bytes;
    CHECK(inside.predicted == make_plan(lower_problem(p, h, 0), every_algorithm).predicted);
    if (c == Collective::Reduce) CHECK(inside.schedule.algorithm == "hierarchical");
    for (const std::string& name : topology_aware_names()) {
      const Schedule s = plan_with(name.c_str(), p);
      check_valid(s);
      CHECK(wide_area_messages(s, t) == std::vector<int>(8, 1));
    }
  }
}

TEST_CASE("Hierarchy: empty and one-element messages compose into valid schedules", "[hierarchy]") {
  std::mt19937 rng(test_seed() + 2);
  const auto t = random_topology(rng);
  for (std::int64_t count : {0, 1})
    for (Collective c : {Collective::Reduce, Collective::Bcast})
      for (const std::string& name : topology_aware_names()) {
        Problem p = problem_on(t, c, t->nranks() - 1, 1);
        p.count = count;
        CAPTURE(count, to_string(c), name, describe_topology(*t));
        const Schedule s = plan_with(name.c_str(), p);
        CHECK(s.segments.size() == static_cast<std::size_t>(count));
        check_valid(s);
        CHECK(simulate(s, p.model, t.get()).ok);
      }
}

// ---- The 3-site test bed --------------------------------------------------------------

// (3x before rabenseifner planned reduces: its halving splits the message over every
// link, so the best homogeneous reduce is 2.41x the grid's here, not 3x; the trees that
// were best before it send the whole message over the slowest link.)
TEST_CASE("Hierarchy: on the 3-site test bed, auto picks a topology-aware schedule at least 2x "
          "faster than the best homogeneous one when the root sits behind the slowest link",
          "[hierarchy]") {
  const auto t = testbed();
  for (Collective c : {Collective::Reduce, Collective::Bcast})
    for (int root : {4, 5}) {  // site s2: its 50 Mbit/s link to s0 is the one to avoid
      Problem p = problem_on(t, c, root, 1);
      p.count = (std::int64_t{1} << 20) / p.element_bytes;  // 1 MiB
      p.segment_bytes = 0;
      const Plan chosen = make_plan(p, Request{});
      Request homogeneous;
      homogeneous.homogeneous_only = true;
      const Plan best_homogeneous = make_plan(p, homogeneous);
      CAPTURE(to_string(c), root, chosen.schedule.algorithm, chosen.predicted, best_homogeneous.schedule.algorithm,
              best_homogeneous.predicted);
      CHECK(is_topology_aware(chosen.schedule.algorithm, c));
      CHECK(chosen.predicted * 2 <= best_homogeneous.predicted);
      // The wide-area level avoids s2 -> s0 (or s0 -> s2): it relays through s1.
      for (int r = 0; r < 6; ++r)
        for (const Step& st : chosen.schedule.steps[r])
          if (st.kind == StepKind::Send) CHECK(std::abs(t->cluster[r] - t->cluster[st.peer]) < 2);
    }
}

TEST_CASE("Hierarchy: on the 3-site test bed from s0, the rank order already follows the good path, so "
          "the topology-aware schedules only match the chain",
          "[hierarchy]") {
  // Ranks are numbered site by site, and the chain 0 -> 1 -> ... -> 5 crosses s0 -> s1
  // (200 Mbit/s) and s1 -> s2 (500), never the 50 Mbit/s s0 - s2 link: pipelined, it
  // moves 1 MiB at the 200 Mbit/s of s0's fastest link, about 42 ms, as fast as any
  // schedule with one wide-area sender per site can (the reduce mirrors it). A 3x gain
  // needs a root whose rank order leads onto the slow link (the test above).
  const auto t = testbed();
  for (Collective c : {Collective::Reduce, Collective::Bcast}) {
    Problem p = problem_on(t, c, 0, 1);
    p.count = (std::int64_t{1} << 20) / p.element_bytes;
    p.segment_bytes = 0;
    Request homogeneous;
    homogeneous.homogeneous_only = true;
    const Plan best_homogeneous = make_plan(p, homogeneous);
    const Plan chosen = make_plan(p, Request{});
    CAPTURE(to_string(c), best_homogeneous.schedule.algorithm, chosen.schedule.algorithm);
    CHECK(best_homogeneous.schedule.algorithm == "chain");
    CHECK(best_homogeneous.predicted < 1.1 * (std::int64_t{1} << 20) * 8 / 200e6);
    Request hierarchical;
    hierarchical.algorithm = "hierarchical";
    CHECK(make_plan(p, hierarchical).predicted <= 1.01 * best_homogeneous.predicted);
  }
}

// ---- Agreement with the grid heuristics' model -------------------------------------------

namespace {

// The heuristics' costs as grid.cpp derives them, recomputed here from the links:
// pLogP L and g(m) of the leaders' link, T_i = the cluster's own predicted time.
ClusterCosts expected_costs(const Problem& p, const Hierarchy& h) {
  const Topology& t = *p.topology;
  const std::vector<Plan> internal = plan_groups(p, h);
  ClusterCosts costs;
  costs.clusters = h.groups();
  for (int i = 0; i < costs.clusters; ++i)
    for (int j = 0; j < costs.clusters; ++j) {
      const CostModel& link = t.link(t.cluster[h.leader[i]], t.cluster[h.leader[j]]);
      const bool hockney = link.gap.empty();
      costs.latency.push_back(i == j ? 0 : link.alpha);
      costs.gap.push_back(i == j ? 0 : hockney ? link.beta * p.bytes() : link.gap_at(p.bytes()));
    }
  for (int i = 0; i < costs.clusters; ++i) costs.internal.push_back(h.members[i].size() > 1 ? internal[i].predicted : 0);
  return costs;
}

// Random topology with pLogP wide-area links: L 1-15 ms, g(m) 100-600 ms for m = 1 MiB
// (004's Table 3), linear in between from a small g(1).
std::shared_ptr<const Topology> with_plogp_links(const Topology& base, std::mt19937& rng) {
  auto real = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  Topology t = base;
  for (int a = 0; a < t.clusters; ++a)
    for (int b = 0; b < t.clusters; ++b)
      if (a != b) t.links[a * t.clusters + b] = plogp_model(real(1e-3, 15e-3), {{1, 20e-6}, {1 << 20, real(0.1, 0.6)}});
  return std::make_shared<const Topology>(t);
}

}  // namespace

TEST_CASE("Hierarchy: for one segment, simulate() of a grid-* broadcast gives the makespan "
          "grid_broadcast predicts",
          "[hierarchy]") {
  // Where the assumptions coincide -- pLogP links (a message holds both ports for g and
  // arrives L + g after it starts), one segment, each leader receiving once and
  // broadcasting inside once its wide-area sends are done -- the simulator replays the
  // heuristic's timeline: a leader's internal broadcast starts when its port is free,
  // and nothing else in its cluster moves before. The two differ only by rounding in
  // sums taken in another order: relative 1e-9. With Hockney links the heuristics count
  // a sender's port free alpha before the simulator does (grid.cpp), so the simulator
  // is later by at most alpha per wide-area message on the way.
  std::mt19937 rng(test_seed() + 1);
  for (int trial = 0; trial < 6; ++trial) {
    const auto hockney = random_topology(rng);
    const auto plogp = with_plogp_links(*hockney, rng);
    for (int root : {0, hockney->nranks() - 1})
      for (const auto& info : grid_heuristics()) {
        const std::string name = "grid-" + std::string(info.name);
        CAPTURE(trial, root, name, describe_topology(*hockney));
        {
          Problem p = problem_on(plogp, Collective::Bcast, root, 1);
          p.count = std::int64_t{1} << 20;
          p.segment_bytes = 0;
          const Hierarchy h = make_hierarchy(p, plogp->cluster);
          const GridSchedule predicted = grid_broadcast(info.heuristic, expected_costs(p, h), h.root_group);
          const Simulation sim = simulate(plan_with(name.c_str(), p), p.model, plogp.get());
          REQUIRE(sim.ok);
          CHECK(sim.makespan == Approx(predicted.makespan).epsilon(1e-9));
        }
        {
          Problem p = problem_on(hockney, Collective::Bcast, root, 1);
          const Hierarchy h = make_hierarchy(p, hockney->cluster);
          const GridSchedule predicted = grid_broadcast(info.heuristic, expected_costs(p, h), h.root_group);
          const Simulation sim = simulate(plan_with(name.c_str(), p), p.model, hockney.get());
          REQUIRE(sim.ok);
          double alpha = 0;
          for (const CostModel& link : hockney->links) alpha = std::max(alpha, link.alpha);
          CHECK(sim.makespan >= predicted.makespan * (1 - 1e-9));
          CHECK(sim.makespan <= predicted.makespan + (h.groups() - 1) * alpha + 1e-12);
        }
      }
  }
}

// ---- Node levels through the staging ring ---------------------------------------------

namespace {

// Staging steps whose writer is on another node than the reader (must be none), and
// staging steps in all.
std::pair<int, int> staging_reads(const Schedule& s, const Topology& t) {
  int across = 0, all = 0;
  for (int r = 0; r < s.nranks; ++r)
    for (const Step& st : s.steps[r])
      if (st.is_staging()) {
        ++all;
        if (st.kind != StepKind::Stage && !t.same_node(r, st.peer)) ++across;
      }
  return {across, all};
}

}  // namespace

TEST_CASE("Hierarchy: with a ring on each node, the node levels stage, every schedule validates, "
          "simulates, reads staged data only on its own node, and still crosses each wide-area link once",
          "[hierarchy][staging]") {
  std::mt19937 rng(test_seed() + 7);
  int staged = 0;
  for (int trial = 0; trial < 6; ++trial) {
    const auto t = random_topology(rng);
    CAPTURE(trial, describe_topology(*t));
    for (int root : {0, t->nranks() - 1})
      for (int segments : {1, 3})
        for (Collective c : {Collective::Reduce, Collective::Bcast}) {
          const Problem p = with_staging_ring(problem_on(t, c, root, segments));
          REQUIRE(p.staging_entries == staging_entries_for(largest_node(*t)));
          // The shm-* algorithms plan one node's ranks only.
          if (t->nodes() > 1)
            CHECK_THROWS_AS(plan_with(c == Collective::Bcast ? "shm-bcast" : "shm-reduce-scatter-gather", p),
                            PlanError);
          for (const std::string& name : topology_aware_names()) {
            CAPTURE(root, segments, to_string(c), name);
            const Schedule s = plan_with(name.c_str(), p);
            check_valid(s);
            const Simulation sim = simulate(s, p.model, t.get());
            INFO(sim.error);
            REQUIRE(sim.ok);
            const auto [across, all] = staging_reads(s, *t);
            CHECK(across == 0);
            CHECK(s.uses_staging() == (all > 0));
            if (all > 0) {
              ++staged;
              CHECK(s.staging_entries == p.staging_entries);
            }
            CHECK(wide_area_messages(s, *t) == std::vector<int>(segments, t->clusters - 1));
          }
        }
  }
  // Inside a node a staged copy costs no per-message alpha: the node levels take it.
  CHECK(staged > 0);
}

TEST_CASE("Hierarchy: two nodes of two ranks, one segment, ring on each: the makespan is the level "
          "between the leaders plus the staged level inside the far node",
          "[hierarchy][staging]") {
  // Leaders 0 and 2. Bcast: the segment crosses (T_up), then node 1 stages it and its
  // other rank copies it out (T_node), while node 0 did the same from the start. Reduce:
  // node 1 reduces through its ring (T_node), then its leader's result crosses and the
  // root combines it (T_up); node 0's own level runs meanwhile. Either way
  // T = T_up + T_node, with both levels priced on their own by the simulator.
  Topology t;
  t.node = {0, 0, 1, 1};
  t.cluster = {0, 0, 0, 0};
  t.clusters = 1;
  t.links = {link_mbit(50e-6, 1000)};
  const auto topo = std::make_shared<const Topology>(t);
  for (Collective c : {Collective::Bcast, Collective::Reduce}) {
    CAPTURE(to_string(c));
    Problem p = with_staging_ring(problem_on(topo, c, 0, 1));
    p.segment_bytes = 0;
    const Schedule s = plan_with("hierarchical", p);
    check_valid(s);
    REQUIRE(s.uses_staging());
    const Hierarchy h = make_hierarchy(p, t.node);
    REQUIRE(h.leader == std::vector<int>{0, 2});
    const Simulation upper = simulate(plan_upper(p, h).schedule, p.model, upper_problem(p, h).topology.get());
    const Problem node = lower_problem(p, h, 1);
    REQUIRE(node.staging_entries == p.staging_entries);  // one node: the ring stays
    const Schedule node_level = plan_groups(p, h)[1].schedule;
    CHECK(node_level.algorithm == (c == Collective::Bcast ? "shm-bcast" : "shm-reduce-scatter-gather"));
    const Simulation inside = simulate(node_level, p.model, node.topology.get());
    const Simulation whole = simulate(s, p.model, topo.get());
    REQUIRE((upper.ok && inside.ok && whole.ok));
    CHECK(whole.makespan == Approx(upper.makespan + inside.makespan).epsilon(1e-9));
    // And the node levels chose the ring over point-to-point messages.
    const Schedule p2p = plan_with("hierarchical", problem_on(topo, c, 0, 1));
    CHECK_FALSE(p2p.uses_staging());
    CHECK(whole.makespan < simulate(p2p, p.model, topo.get()).makespan);
  }
}

// ---- Declines -----------------------------------------------------------------------------

TEST_CASE("Hierarchy: topology-aware algorithms decline without a topology, for non-commutative "
          "reduces, and where a hierarchy has nothing to gain",
          "[hierarchy]") {
  const auto names = topology_aware_names();
  auto declines = [](const std::string& name, const Problem& p) {
    CAPTURE(name, to_string(p.collective));
    CHECK_THROWS_AS(plan_with(name.c_str(), p), PlanError);
  };
  for (Collective c : {Collective::Reduce, Collective::Bcast}) {
    // No topology.
    Problem bare = make_problem(c, 6, 0, 1000, 1, true, 0, default_model());
    for (const auto& name : names) declines(name, bare);
    // One node holds every rank: no group to form.
    Topology node;
    node.node.assign(4, 0);
    node.cluster.assign(4, 0);
    node.links = {lan()};
    Problem one_node = problem_on(std::make_shared<const Topology>(node), c, 1, 2);
    for (const auto& name : names) declines(name, one_node);
    // Clusters of one rank each: hierarchical has nothing to gain; the grid trees
    // still choose the wide-area tree, so they plan.
    Topology singles;
    singles.node = {0, 1, 2};
    singles.cluster = {0, 1, 2};
    singles.clusters = 3;
    for (int i = 0; i < 9; ++i) singles.links.push_back(link_mbit(1e-3, 100 + 50 * i));
    Problem single_ranks = problem_on(std::make_shared<const Topology>(singles), c, 2, 3);
    declines("hierarchical", single_ranks);
    check_valid(plan_with("grid-ecef", single_ranks));
  }
  // Non-commutative reduce, on a topology every one of them plans commutatively.
  Problem p = problem_on(testbed(), Collective::Reduce, 3, 2);
  for (const auto& name : names) check_valid(plan_with(name.c_str(), p));
  p.commutative = false;
  for (const auto& name : names) declines(name, p);
  // auto then picks a rank-ordered homogeneous schedule.
  const Plan plan = make_plan(p, Request{});
  CHECK_FALSE(is_topology_aware(plan.schedule.algorithm, Collective::Reduce));
}

TEST_CASE("Hierarchy: topology-aware algorithms plan INT_MAX-element reduces and 3 GiB broadcasts, "
          "every level cut into messages the executor can send",
          "[hierarchy][large]") {
  for (const std::string& name : topology_aware_names())
    for (Collective c : {Collective::Reduce, Collective::Bcast})
      for (std::int64_t seg : {std::int64_t{-1}, std::int64_t{0}}) {
        Problem p = problem_on(testbed(), c, 5, 1);
        p.count = c == Collective::Reduce ? INT_MAX : std::int64_t{3} << 30;
        p.element_bytes = c == Collective::Reduce ? 8 : 1;
        p.segment_bytes = 0;
        Request request;
        request.algorithm = name;
        request.segment_bytes = seg;
        CAPTURE(name, to_string(c), seg);
        const Plan plan = make_plan(p, request);  // validated
        CHECK(plan.schedule.algorithm == name);
        CHECK(plan.schedule.count == p.count);
        for (const Segment& s : plan.schedule.segments) CHECK(s.count <= kMaxSegmentCount);
        CHECK(plan.predicted > 0);
      }
}

// ---- The socket level: packages of one node ----------------------------------------------

namespace {

// One node of `ranks` ranks bound round-robin to two packages (0,1,0,1,...), as a
// launcher binding ranks to cores in order does on a two-socket machine with cores
// numbered alternately; between packages `link`.
std::shared_ptr<const Topology> two_packages(int ranks, const CostModel& link) {
  Topology t;
  t.node.assign(ranks, 0);
  t.cluster.assign(ranks, 0);
  t.links = {default_model()};
  for (int r = 0; r < ranks; ++r) t.package.push_back(r % 2);
  t.package_link = link;
  return std::make_shared<const Topology>(t);
}

// `name`'s schedule of `p` and its simulated makespan (what the selector predicts).
Plan plan_with_prediction(const char* name, const Problem& p) {
  Plan plan;
  plan.schedule = plan_with(name, p);
  const Simulation sim = simulate(plan.schedule, p.model, p.topology.get());
  REQUIRE(sim.ok);
  plan.predicted = sim.makespan;
  return plan;
}

// Messages between packages of one node, and staged reads across packages.
std::pair<int, int> across_packages(const Schedule& s, const Topology& t) {
  int sends = 0, reads = 0;
  for (int r = 0; r < s.nranks; ++r)
    for (const Step& st : s.steps[r]) {
      if (st.kind == StepKind::Send && !t.same_package(r, st.peer)) ++sends;
      if ((st.kind == StepKind::Fetch || st.kind == StepKind::FetchReduce) && !t.same_package(r, st.peer)) ++reads;
    }
  return {sends, reads};
}

}  // namespace

TEST_CASE("Hierarchy: one node of two packages goes hierarchical by package: one message between the "
          "packages per segment, staged reads only inside a package, the leaders' level point to point",
          "[hierarchy][staging]") {
  const auto t = two_packages(6, link_mbit(2e-6, 8000));
  for (Collective c : {Collective::Reduce, Collective::Bcast})
    for (int root : {0, 5})
      for (int segments : {1, 4}) {
        CAPTURE(to_string(c), root, segments);
        for (bool ring : {false, true}) {
          const Problem p = ring ? with_staging_ring(problem_on(t, c, root, segments)) : problem_on(t, c, root, segments);
          const Schedule s = plan_with("hierarchical", p);
          check_valid(s);
          const Simulation sim = simulate(s, p.model, t.get());
          INFO(sim.error);
          REQUIRE(sim.ok);
          const auto [sends, reads] = across_packages(s, *t);
          CHECK(sends == segments);
          CHECK(reads == 0);
          if (ring) CHECK(s.uses_staging());
          const Hierarchy h = make_hierarchy(p, t->package);
          CHECK(upper_problem(p, h).staging_entries == 0);
        }
      }
  // Without packages the node is one group: nothing to be hierarchical about.
  Topology flat = *two_packages(6, default_model());
  flat.package.clear();
  CHECK_THROWS_AS(plan_with("hierarchical", problem_on(std::make_shared<const Topology>(flat), Collective::Bcast, 0, 1)),
                  PlanError);
}

TEST_CASE("Hierarchy: two packages of two ranks, one segment, ring on the node: the makespan is the "
          "leaders' level between the packages plus the staged level inside the far package",
          "[hierarchy][staging]") {
  // As the two-node case above, one level down: the packages' levels stage through the
  // node's ring, the level between the packages' leaders (0 and 1) goes point to point
  // over package_link.
  const auto t = two_packages(4, link_mbit(3e-6, 16000));
  for (Collective c : {Collective::Bcast, Collective::Reduce}) {
    CAPTURE(to_string(c));
    Problem p = with_staging_ring(problem_on(t, c, 0, 1));
    p.segment_bytes = 0;
    const Schedule s = plan_with("hierarchical", p);
    check_valid(s);
    const Hierarchy h = make_hierarchy(p, t->package);
    REQUIRE(h.leader == std::vector<int>{0, 1});
    const Problem upper_level = upper_problem(p, h);
    const Simulation upper = simulate(plan_upper(p, h).schedule, p.model, upper_level.topology.get());
    const Schedule far = plan_groups(p, h)[1].schedule;
    CHECK(far.uses_staging());
    const Simulation inside = simulate(far, p.model, lower_problem(p, h, 1).topology.get());
    const Simulation whole = simulate(s, p.model, t.get());
    REQUIRE((upper.ok && inside.ok && whole.ok));
    CHECK(whole.makespan == Approx(upper.makespan + inside.makespan).epsilon(1e-9));
    // The leaders' message is priced by the link between packages, not the node's model.
    const CostModel& between = *t->package_link;
    CHECK(upper.makespan >= between.transfer(p.count * p.element_bytes));
  }
}

TEST_CASE("Hierarchy: a staged read from another package costs at least that link's bytes (not its "
          "per-message alpha), from the same package, the copy",
          "[hierarchy][staging]") {
  const CostModel slow = link_mbit(5e-6, 4000);
  const auto t = two_packages(2, slow);
  Topology same = *t;
  same.package = {0, 0};
  Problem p = with_staging_ring(problem_on(t, Collective::Bcast, 0, 1));
  p.segment_bytes = 0;
  const Schedule s = plan_with("shm-bcast", p);
  const Simulation across = simulate(s, p.model, t.get()), inside = simulate(s, p.model, &same);
  REQUIRE((across.ok && inside.ok));
  // One segment: the root stages it, rank 1 fetches it; only the fetch changes.
  const std::int64_t bytes = s.segment_bytes(0);
  CHECK(across.makespan - inside.makespan ==
        Approx(std::max(slow.transfer(bytes) - slow.alpha, p.model.copy(bytes)) - p.model.copy(bytes)).epsilon(1e-9));
  CHECK(across.makespan > inside.makespan);
}

TEST_CASE("Hierarchy: two nodes of two packages each: hierarchical by node, and each node by package "
          "where the link between packages is slow",
          "[hierarchy]") {
  Topology t;
  t.node = {0, 0, 0, 0, 1, 1, 1, 1};
  t.cluster.assign(8, 0);
  t.links = {link_mbit(50e-6, 1000)};
  t.package = {0, 1, 0, 1, 2, 3, 2, 3};
  t.package_link = link_mbit(20e-6, 200);  // slow: scatter-allgather would cross it 3 times per segment
  check_topology(t);
  const auto topo = std::make_shared<const Topology>(t);
  for (Collective c : {Collective::Reduce, Collective::Bcast}) {
    CAPTURE(to_string(c));
    const Problem p = problem_on(topo, c, 0, 4);
    const Schedule s = plan_with("hierarchical", p);
    check_valid(s);
    const Hierarchy h = make_hierarchy(p, t.node);
    const std::vector<Plan> nodes = plan_groups(p, h);
    for (int g = 0; g < 2; ++g) {
      // Each node chose by its own predicted time among every algorithm, by package included.
      const Plan by_package = plan_with_prediction("hierarchical", lower_problem(p, h, g));
      CHECK(nodes[g].predicted <= by_package.predicted);
      // A reduce's packages meet once per segment at their leaders; a broadcast may
      // instead scatter across both pairs of packages at once (the model has no
      // contention on the link between packages), so only the reduce is pinned.
      if (c == Collective::Reduce) CHECK(nodes[g].schedule.algorithm == "hierarchical");
    }
    // Reduce, every segment: one message between the nodes, one between the packages of each node.
    if (c == Collective::Reduce) CHECK(across_packages(s, t).first == 4 * 3);
  }
}
