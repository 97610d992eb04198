// The grid-aware broadcast heuristics of 004 (Steffenel) section 5 over clusters, and
// the simulation of section 6 (planner/grid_heuristics.h). Small cases are worked out
// by hand in the comments; times are in arbitrary units (seconds in the model).
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "planner/grid_heuristics.h"

using namespace canopy::planner;

namespace {

using Sends = std::vector<std::pair<int, int>>;

// Symmetric costs from the upper triangle: `pairs` lists {i, j, g_ij, L_ij} for i < j.
struct Pair {
  int i, j;
  double g, L;
};
ClusterCosts symmetric(const std::vector<Pair>& pairs, const std::vector<double>& internal) {
  ClusterCosts c;
  c.clusters = static_cast<int>(internal.size());
  c.latency.assign(internal.size() * internal.size(), 0.0);
  c.gap.assign(internal.size() * internal.size(), 0.0);
  c.internal = internal;
  for (const Pair& p : pairs) {
    c.gap[p.i * c.clusters + p.j] = c.gap[p.j * c.clusters + p.i] = p.g;
    c.latency[p.i * c.clusters + p.j] = c.latency[p.j * c.clusters + p.i] = p.L;
  }
  return c;
}

Sends sends_of(const GridSchedule& s) {
  Sends out;
  for (const GridStep& step : s.steps) out.emplace_back(step.from, step.to);
  return out;
}

std::string name(GridHeuristic h) { return std::string(grid_heuristic_info(h).name); }

// Checks the timing rules independently of the implementation: a sender's first send
// starts when it holds the message, each later one when the gap of the previous one
// ends; arrival = start + g + L; ready = arrival of the one incoming send; done = end
// of the last send's gap (or ready) + T; makespan = max done. And the schedule is a
// broadcast: C-1 steps, every other cluster received exactly once, from a cluster
// that already held the message.
void check_rules(const GridSchedule& s, const ClusterCosts& c, int root) {
  const int n = c.clusters;
  REQUIRE(s.steps.size() == static_cast<std::size_t>(n - 1));
  REQUIRE(s.ready.size() == static_cast<std::size_t>(n));
  REQUIRE(s.done.size() == static_cast<std::size_t>(n));
  std::vector<int> received(n, 0);
  std::vector<char> holds(n, 0);
  holds[root] = 1;
  std::vector<double> port(n, -1);  // end of the gap of each cluster's last send; -1: none yet
  CHECK(s.ready[root] == 0);
  for (const GridStep& step : s.steps) {
    INFO("send " << step.from << " -> " << step.to);
    REQUIRE(holds[step.from]);
    REQUIRE_FALSE(holds[step.to]);
    const double expected_start = port[step.from] < 0 ? s.ready[step.from] : port[step.from];
    CHECK(step.start == Approx(expected_start));
    CHECK(step.arrival == Approx(step.start + c.g(step.from, step.to) + c.L(step.from, step.to)));
    CHECK(s.ready[step.to] == Approx(step.arrival));
    port[step.from] = step.start + c.g(step.from, step.to);
    holds[step.to] = 1;
    ++received[step.to];
  }
  double makespan = 0;
  for (int k = 0; k < n; ++k) {
    INFO("cluster " << k);
    CHECK(received[k] == (k == root ? 0 : 1));
    CHECK(s.done[k] == Approx((port[k] < 0 ? s.ready[k] : port[k]) + c.internal[k]));
    makespan = std::max(makespan, s.done[k]);
  }
  CHECK(s.makespan == Approx(makespan));
}

}  // namespace

TEST_CASE("grid heuristics: names in the paper's order, distinct tokens", "[grid]") {
  std::vector<std::string> names;
  for (const auto& info : grid_heuristics()) {
    names.emplace_back(info.name);
    CHECK(grid_heuristic_from_name(info.name) == info.heuristic);
    CHECK_FALSE(info.summary.empty());
  }
  CHECK(names == std::vector<std::string>{"flat", "fef", "ecef", "ecef-la", "ecef-lat", "ecef-lat-max", "bottomup"});
  CHECK_THROWS_WITH(grid_heuristic_from_name("ecef-LAT"), Catch::Contains("no grid heuristic named 'ecef-LAT'"));
}

TEST_CASE("grid heuristics: sends are sequential, arrive after g + L, clusters broadcast last", "[grid]") {
  // 3 clusters: g01 = 10, L01 = 1; g02 = 3, L02 = 5; g12 = 10, L12 = 2; T = 4, 7, 2.
  const ClusterCosts c = symmetric({{0, 1, 10, 1}, {0, 2, 3, 5}, {1, 2, 10, 2}}, {4, 7, 2});
  // The root sends to 1 from 0 to 10 (arrives 11), then to 2 from 10 to 13 (arrives 18).
  // done: root 13 + 4 = 17; 1: 11 + 7 = 18; 2: 18 + 2 = 20.
  const GridSchedule s = time_grid_steps(c, 0, {{0, 1}, {0, 2}});
  REQUIRE(s.steps.size() == 2);
  CHECK(s.steps[0].start == 0);
  CHECK(s.steps[0].arrival == 11);
  CHECK(s.steps[1].start == 10);
  CHECK(s.steps[1].arrival == 18);
  CHECK(s.ready == std::vector<double>{0, 11, 18});
  CHECK(s.done == std::vector<double>{17, 18, 20});
  CHECK(s.makespan == 20);
  // A relay: 0 -> 1 arrives at 11; 1 sends at once, 11 to 21, arriving 23; 1 then
  // broadcasts inside: 21 + 7 = 28. The root is done at 10 + 4, 2 at 23 + 2.
  const GridSchedule relay = time_grid_steps(c, 0, {{0, 1}, {1, 2}});
  CHECK(relay.steps[1].start == 11);
  CHECK(relay.ready == std::vector<double>{0, 11, 23});
  CHECK(relay.done == std::vector<double>{14, 28, 25});
  CHECK(relay.makespan == 28);
  CHECK(grid_parents(relay, 3) == std::vector<int>{-1, 0, 1});
  CHECK(grid_children(s, 3) == std::vector<std::vector<int>>{{1, 2}, {}, {}});
  // Another root: every index is relative to it.
  const GridSchedule from2 = time_grid_steps(c, 2, {{2, 0}, {2, 1}});
  // 2 -> 0 from 0 to 3 (arrives 3 + 5 = 8), 2 -> 1 from 3 to 13 (arrives 15).
  CHECK(from2.ready == std::vector<double>{8, 15, 0});
  CHECK(from2.done[2] == 13 + 2);

  CHECK_THROWS_WITH(time_grid_steps(c, 0, {{1, 2}, {0, 1}}), Catch::Contains("sends before it holds"));
  CHECK_THROWS_WITH(time_grid_steps(c, 0, {{0, 1}, {0, 1}}), Catch::Contains("receives twice"));
  CHECK_THROWS_WITH(time_grid_steps(c, 0, {{0, 1}}), Catch::Contains("has 2 inter-cluster sends"));
  CHECK_THROWS_WITH(grid_broadcast(GridHeuristic::Ecef, c, 3), Catch::Contains("root cluster 3"));
  ClusterCosts bad = c;
  bad.gap.pop_back();
  CHECK_THROWS_WITH(grid_broadcast(GridHeuristic::Ecef, bad, 0), Catch::Contains("need 9 latencies"));
  bad = c;
  bad.internal[1] = -1;
  CHECK_THROWS_WITH(grid_broadcast(GridHeuristic::Ecef, bad, 0), Catch::Contains("internal time of cluster 1"));
}

TEST_CASE("grid heuristics: flat, FEF and ECEF on 3 clusters", "[grid]") {
  // The costs above with T = 0: 0-1 is the lowest latency but a long gap; 0-2 is the
  // fastest message (3 + 5 = 8 against 10 + 1 = 11).
  const ClusterCosts c = symmetric({{0, 1, 10, 1}, {0, 2, 3, 5}, {1, 2, 10, 2}}, {0, 0, 0});
  // Flat: 0 -> 1 (0..10, arrives 11), 0 -> 2 (10..13, arrives 18). Makespan 18.
  const GridSchedule flat = grid_broadcast(GridHeuristic::Flat, c, 0);
  CHECK(sends_of(flat) == Sends{{0, 1}, {0, 2}});
  CHECK(flat.makespan == 18);
  // FEF weighs edges by latency: L01 = 1 first; then L12 = 2 < L02 = 5, so 1 relays,
  // starting when it has the message, 11, arriving 11 + 10 + 2 = 23. Makespan 23 (1
  // is done sending at 21).
  const GridSchedule fef = grid_broadcast(GridHeuristic::Fef, c, 0);
  CHECK(sends_of(fef) == Sends{{0, 1}, {1, 2}});
  CHECK(fef.ready == std::vector<double>{0, 11, 23});
  CHECK(fef.makespan == 23);
  // ECEF: 0 -> 2 completes first (8 < 11); then the root, free at 3, reaches 1 at
  // 3 + 11 = 14, earlier than 2 could (8 + 12 = 20). Makespan 14.
  const GridSchedule ecef = grid_broadcast(GridHeuristic::Ecef, c, 0);
  CHECK(sends_of(ecef) == Sends{{0, 2}, {0, 1}});
  CHECK(ecef.ready == std::vector<double>{0, 14, 8});
  CHECK(ecef.done == std::vector<double>{13, 14, 8});
  CHECK(ecef.makespan == 14);
}

TEST_CASE("grid heuristics: the lookaheads and BottomUp choose differently on 4 clusters", "[grid]") {
  // L = 1 except L23 = 0.5; g01 = 2, g02 = 3, g03 = 4, g12 = g13 = 10, g23 = 1; only
  // cluster 3 has an internal broadcast, T3 = 20. Message times g + L:
  // m01 = 3, m02 = 4, m03 = 5, m12 = m13 = 11, m23 = 1.5.
  const ClusterCosts c =
      symmetric({{0, 1, 2, 1}, {0, 2, 3, 1}, {0, 3, 4, 1}, {1, 2, 10, 1}, {1, 3, 10, 1}, {2, 3, 1, 0.5}}, {0, 0, 0, 20});
  struct Expected {
    GridHeuristic h;
    Sends sends;
    std::vector<double> ready, done;
    double makespan;
  };
  const Expected cases[] = {
      // Flat: 0 -> 1 (0, arrives 3), 0 -> 2 (2, arrives 6), 0 -> 3 (5, arrives 10);
      // 3 is done at 10 + 20.
      {GridHeuristic::Flat, {{0, 1}, {0, 2}, {0, 3}}, {0, 3, 6, 10}, {9, 3, 6, 30}, 30},
      // FEF: all latencies 1 but L23: ties go to the lowest sender, then receiver:
      // 0 -> 1, 0 -> 2 (A = {0, 1}: four ties), then L23 = 0.5: 2 -> 3 at 6, arrives 7.5.
      {GridHeuristic::Fef, {{0, 1}, {0, 2}, {2, 3}}, {0, 3, 6, 7.5}, {5, 3, 7, 27.5}, 27.5},
      // ECEF: 0 -> 1 (3 < 4 < 5); then 0 -> 2 (2 + 4 = 6, before 0 -> 3 at 7 and 1's
      // 14); then 2 -> 3 (6 + 1.5 = 7.5, before 0 -> 3 at 5 + 5 = 10). Same as FEF.
      {GridHeuristic::Ecef, {{0, 1}, {0, 2}, {2, 3}}, {0, 3, 6, 7.5}, {5, 3, 7, 27.5}, 27.5},
      // ECEF-LA, F_j = fastest message from j to another waiting cluster: round 1
      // F = 11, 1.5, 1.5: 0 -> 1 costs 3 + 11, 0 -> 2 4 + 1.5, 0 -> 3 5 + 1.5: 0 -> 2
      // (arrives 4, root free at 3). Round 2, F1 = F3 = 11: 0 -> 1 3 + 3 + 11 = 17,
      // 0 -> 3 19, 2 -> 1 26, 2 -> 3 4 + 1.5 + 11 = 16.5: 2 -> 3 (arrives 5.5). Round
      // 3, F1 = 0 (none left): 0 -> 1 at 3 + 3 = 6, before 2 (5 + 11) and 3.
      {GridHeuristic::EcefLa, {{0, 2}, {2, 3}, {0, 1}}, {0, 6, 4, 5.5}, {5, 6, 5, 25.5}, 25.5},
      // ECEF-LAt, F_j = min over waiting k of m_jk + T_k: round 1 F1 = min(11, 31) =
      // 11, F2 = min(11, 21.5) = 11, F3 = min(11, 1.5) = 1.5: 0 -> 3 (5 + 1.5 = 6.5)
      // first, unlike ECEF-LA. Round 2, F1 = m12 + T2 = 11, F2 = m21 + T1 = 11: 0 -> 1
      // 4 + 3 + 11 = 18, 0 -> 2 19, 3 -> 2 5 + 1.5 + 11 = 17.5: 3 -> 2 (arrives 6.5).
      // Round 3: 0 -> 1 at 4 + 3 = 7. 3 is done at 6 + 20 = 26.
      {GridHeuristic::EcefLaMin, {{0, 3}, {3, 2}, {0, 1}}, {0, 7, 6.5, 5}, {6, 7, 6.5, 26}, 26},
      // ECEF-LAT, F_j = max: round 1 F1 = 31, F2 = 21.5, F3 = 11: 0 -> 3 (5 + 11);
      // then, with one k left each, as ECEF-LAt.
      {GridHeuristic::EcefLaMax, {{0, 3}, {3, 2}, {0, 1}}, {0, 7, 6.5, 5}, {6, 7, 6.5, 26}, 26},
      // BottomUp: round 1 the latest finish is 3's (5 + 20, against 3 and 4): 0 -> 3.
      // Round 2: 1 can finish at 4 + 3 = 7 (from the root, free at 4), 2 at 6.5 (from
      // 3, ready at 5): the later one, 1, first: 0 -> 1 at 4. Round 3: 2 from 3 at 5,
      // arriving 6.5 (the root, free at 6, would take until 10).
      {GridHeuristic::BottomUp, {{0, 3}, {0, 1}, {3, 2}}, {0, 7, 6.5, 5}, {6, 7, 6.5, 26}, 26},
  };
  for (const Expected& e : cases) {
    INFO(name(e.h));
    const GridSchedule s = grid_broadcast(e.h, c, 0);
    CHECK(sends_of(s) == e.sends);
    CHECK(s.ready == e.ready);
    CHECK(s.done == e.done);
    CHECK(s.makespan == e.makespan);
    check_rules(s, c, 0);
  }
}

TEST_CASE("grid heuristics: ECEF-LAt and ECEF-LAT part ways", "[grid]") {
  // L = 0; g01 = g02 = 1, g03 = 1.5, g12 = g23 = 2, g13 = 2.2; T = 0, 0, 4, 8.
  const ClusterCosts c =
      symmetric({{0, 1, 1, 0}, {0, 2, 1, 0}, {0, 3, 1.5, 0}, {1, 2, 2, 0}, {1, 3, 2.2, 0}, {2, 3, 2, 0}}, {0, 0, 4, 8});
  // Round 1 lookaheads over the two other waiting clusters, g_jk + T_k:
  //   1: {2 + 4, 2.2 + 8} = {6, 10.2};  2: {2 + 0, 2 + 8} = {2, 10};  3: {2.2 + 0, 2 + 4} = {2.2, 6}.
  // ECEF-LAt (min): 1 + 6, 1 + 2, 1.5 + 2.2: 0 -> 2. Round 2, F1 = 2.2 + 8, F3 = 2.2:
  // 0 -> 3 costs 1 + 1.5 + 2.2 = 4.7, the least (2 -> 3: 1 + 2 + 2.2). Round 3: 2 -> 1
  // at 1, arriving 3, before the root (2.5 + 1). 3 is done at 2.5 + 8.
  const GridSchedule lat = grid_broadcast(GridHeuristic::EcefLaMin, c, 0);
  CHECK(sends_of(lat) == Sends{{0, 2}, {0, 3}, {2, 1}});
  CHECK(lat.done == std::vector<double>{2.5, 3, 7, 10.5});
  CHECK(lat.makespan == 10.5);
  // ECEF-LAT (max): 1 + 10.2, 1 + 10, 1.5 + 6: the slow cluster 3 first. Round 2,
  // F1 = 2 + 4, F2 = 2 + 0: 0 -> 2 at 1.5 costs 1.5 + 1 + 2 = 4.5, the least. Round 3:
  // 0 -> 1 at 2.5 arrives 3.5, before 3 -> 1 (1.5 + 2.2 = 3.7). 3 is done at 1.5 + 8.
  const GridSchedule lat_max = grid_broadcast(GridHeuristic::EcefLaMax, c, 0);
  CHECK(sends_of(lat_max) == Sends{{0, 3}, {0, 2}, {0, 1}});
  CHECK(lat_max.done == std::vector<double>{3.5, 3.5, 6.5, 9.5});
  CHECK(lat_max.makespan == 9.5);
  check_rules(lat, c, 0);
  check_rules(lat_max, c, 0);
}

TEST_CASE("grid heuristics: ties go to the lowest sender, then the lowest receiver", "[grid]") {
  // Every message takes 1 and no cluster has an internal broadcast.
  const ClusterCosts c = symmetric({{0, 1, 1, 0}, {0, 2, 1, 0}, {1, 2, 1, 0}}, {0, 0, 0});
  // Round 1: 0 -> 1 and 0 -> 2 tie: 0 -> 1. Round 2: 0 -> 2 and 1 -> 2 both arrive at 2.
  for (GridHeuristic h : {GridHeuristic::Fef, GridHeuristic::Ecef, GridHeuristic::EcefLa, GridHeuristic::EcefLaMin,
                          GridHeuristic::EcefLaMax}) {
    INFO(name(h));
    CHECK(sends_of(grid_broadcast(h, c, 0)) == Sends{{0, 1}, {0, 2}});
  }
  // BottomUp: 1 and 2 would both finish at 1: the lowest, 1; then 2 from the root.
  CHECK(sends_of(grid_broadcast(GridHeuristic::BottomUp, c, 0)) == Sends{{0, 1}, {0, 2}});
}

TEST_CASE("grid heuristics: BottomUp counts when a sender is free", "[grid]") {
  // L = 0; g01 = g02 = g03 = 1, g12 = g13 = 5, g23 = 1.5; T = 0, 5, 0, 10.
  const ClusterCosts c =
      symmetric({{0, 1, 1, 0}, {0, 2, 1, 0}, {0, 3, 1, 0}, {1, 2, 5, 0}, {1, 3, 5, 0}, {2, 3, 1.5, 0}}, {0, 5, 0, 10});
  // Round 1: the latest finishes: 1 + 5, 1 + 0, 1 + 10: 0 -> 3. Round 2: 1 at
  // min(1 + 1, 1 + 5) + 5 = 7, 2 at min(1 + 1, 1 + 1.5) + 0 = 2: 0 -> 1 (root free at 2).
  // Round 3: 2 from the root at 2 + 1 = 3, from 3 at 1 + 1.5 = 2.5: 3 -> 2. (Without
  // RT_i, the formula as printed, the root's g02 = 1 would beat g32 = 1.5.)
  const GridSchedule s = grid_broadcast(GridHeuristic::BottomUp, c, 0);
  CHECK(sends_of(s) == Sends{{0, 3}, {0, 1}, {3, 2}});
  CHECK(s.done == std::vector<double>{2, 7, 2.5, 12.5});
  check_rules(s, c, 0);
}

TEST_CASE("grid heuristics: every heuristic reaches every cluster once, under the timing rules", "[grid]") {
  std::mt19937_64 rng(7);
  for (int n = 1; n <= 12; ++n)
    for (int draw = 0; draw < 5; ++draw) {
      const ClusterCosts c = draw_grid_costs(n, rng);
      const int root = static_cast<int>(rng() % static_cast<unsigned>(n));
      for (const auto& info : grid_heuristics()) {
        INFO(info.name << ", " << n << " clusters, root " << root);
        const GridSchedule s = grid_broadcast(info.heuristic, c, root);
        check_rules(s, c, root);
        // Timing the same sends again gives the same schedule.
        const GridSchedule again = time_grid_steps(c, root, sends_of(s));
        CHECK(again.done == s.done);
        CHECK(again.makespan == s.makespan);
        const std::vector<int> parent = grid_parents(s, n);
        CHECK(parent[root] == -1);
        CHECK(std::count(parent.begin(), parent.end(), -1) == 1);
      }
    }
}

TEST_CASE("grid heuristics: with 2 clusters they all do the same", "[grid]") {
  std::mt19937_64 rng(11);
  for (int draw = 0; draw < 50; ++draw) {
    const ClusterCosts c = draw_grid_costs(2, rng);
    for (int root : {0, 1}) {
      const double flat = grid_broadcast(GridHeuristic::Flat, c, root).makespan;
      CHECK(flat == std::max(c.g(root, 1 - root) + c.internal[root],
                             c.g(root, 1 - root) + c.L(root, 1 - root) + c.internal[1 - root]));
      for (const auto& info : grid_heuristics()) CHECK(grid_broadcast(info.heuristic, c, root).makespan == flat);
    }
  }
}

TEST_CASE("grid simulation: Table 3's ranges, symmetric links, reproducible", "[grid]") {
  std::mt19937_64 rng(3);
  const ClusterCosts c = draw_grid_costs(6, rng);
  for (int i = 0; i < 6; ++i) {
    CHECK(c.internal[i] >= 20e-3);
    CHECK(c.internal[i] < 3000e-3);
    for (int j = 0; j < 6; ++j) {
      if (i == j) continue;
      CHECK(c.L(i, j) >= 1e-3);
      CHECK(c.L(i, j) < 15e-3);
      CHECK(c.g(i, j) >= 100e-3);
      CHECK(c.g(i, j) < 600e-3);
      CHECK(c.L(i, j) == c.L(j, i));
      CHECK(c.g(i, j) == c.g(j, i));
    }
  }
  const GridSimulationResult a = simulate_grid_heuristics(5, 50, 42), b = simulate_grid_heuristics(5, 50, 42);
  CHECK(a.mean_makespan == b.mean_makespan);
  CHECK(a.mean_makespan != simulate_grid_heuristics(5, 50, 43).mean_makespan);
  REQUIRE(a.heuristics.size() == grid_heuristics().size());
}

// 004 section 6 (Figure 7): Flat is the worst; the ECEF family beats FEF (and Flat);
// BottomUp beats FEF. 2000 draws per cluster count (a tenth of a second): the
// closest margin, Flat over FEF with 4 clusters (0.022 s at 10000 draws), is then
// several standard errors wide.
TEST_CASE("grid simulation: the paper's ordering for 3 to 10 clusters", "[grid]") {
  for (int n = 3; n <= 10; ++n) {
    const GridSimulationResult r = simulate_grid_heuristics(n, 2000, 2024);
    auto mean = [&](GridHeuristic h) {
      for (std::size_t k = 0; k < r.heuristics.size(); ++k)
        if (r.heuristics[k] == h) return r.mean_makespan[k];
      FAIL("missing heuristic");
      return 0.0;
    };
    INFO(n << " clusters: flat " << mean(GridHeuristic::Flat) << ", fef " << mean(GridHeuristic::Fef) << ", ecef "
            << mean(GridHeuristic::Ecef) << ", ecef-la " << mean(GridHeuristic::EcefLa) << ", ecef-lat "
            << mean(GridHeuristic::EcefLaMin) << ", ecef-lat-max " << mean(GridHeuristic::EcefLaMax)
            << ", bottomup " << mean(GridHeuristic::BottomUp));
    const double flat = mean(GridHeuristic::Flat), fef = mean(GridHeuristic::Fef);
    for (const auto& info : grid_heuristics()) {
      if (info.heuristic == GridHeuristic::Flat) continue;
      // With 3 clusters FEF's latency-only choice is no better informed than the flat
      // tree's index order (it relays through the cluster with the lower latency,
      // whatever the gaps and T): the two tie in expectation (200000 draws: FEF
      // 2.8659 s, Flat 2.8650 s, difference 0.0009 +- 0.0006). So there FEF may come
      // out on either side of Flat, within 1%.
      if (n == 3 && info.heuristic == GridHeuristic::Fef) CHECK(fef == Approx(flat).epsilon(0.01));
      else CHECK(mean(info.heuristic) < flat);
    }
    for (GridHeuristic h : {GridHeuristic::Ecef, GridHeuristic::EcefLa, GridHeuristic::EcefLaMin,
                            GridHeuristic::EcefLaMax, GridHeuristic::BottomUp}) {
      INFO(name(h));
      CHECK(mean(h) < fef);
    }
  }
}
