// Broadcast algorithms against 004_*.txt Table 1 (pLogP models of the broadcast):
// flat tree, chain and segmented chain (pipeline), binary tree, segmented binomial tree
// and scatter/collection (van de Geijn's scatter-allgather). In hockney terms a
// message of x bytes costs g(x) = alpha + beta x and L = 0; half duplex a rank sends or
// receives, full duplex both at once.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include <algorithm>
#include <functional>
#include <numeric>
#include <set>

#include "planner/cost_model.h"
#include "planner/grid_heuristics.h"
#include "planner/segments.h"
#include "planner/select.h"
#include "planner/tree.h"
#include "sites.h"
#include "support.h"

using namespace canopy::planner;
using namespace canopy::planner::testing;

namespace {

CostModel with_duplex(CostModel m, Duplex d) {
  m.duplex = d;
  return m;
}

int floor_log2(int p) {
  int k = 0;
  while ((2 << k) <= p) ++k;
  return k;
}

int count_steps(const std::vector<Step>& steps, StepKind kind) {
  return static_cast<int>(std::count_if(steps.begin(), steps.end(), [&](const Step& s) { return s.kind == kind; }));
}

}  // namespace

TEST_CASE("flat, chain, binary and scatter-allgather bcast validate and simulate (half and full "
          "duplex: no port deadlock) for p = 1..33, several roots, counts 0, 1, 7, 100 and several "
          "segment sizes",
          "[bcast][validate]") {
  const std::int64_t element_bytes = 8;
  const CostModel half = hockney_model(1, 0.5, 0);
  for (const char* algorithm : {"flat", "chain", "binary", "scatter-allgather"})
    for (const CostModel& model : {default_model(), half})
      for (int p = 1; p <= 33; ++p)
        for (int root : roots_for(p))
          for (std::int64_t count : {0, 1, 7, 100})
            for (std::int64_t seg : {std::int64_t{0}, element_bytes, 3 * element_bytes, 16 * element_bytes}) {
              if (count == 100 && seg == element_bytes) continue;  // 100 segments: slow, adds nothing
              const Problem problem = make_problem(Collective::Bcast, p, root, count, element_bytes, true, seg, model);
              const Schedule s = plan_with(algorithm, problem);
              CHECK(s.algorithm == algorithm);
              check_valid(s);
              if (model.duplex == Duplex::Half) simulate_ok(s, model);
            }
}

TEST_CASE("Flat tree bcast (004 Table 1: L + (P-1) g(m), segmented: L + (P-1) g(s) k): "
          "(p-1)(q alpha + beta m) in either duplex mode",
          "[bcast][closed-form]") {
  const double alpha = 3, beta = 0.25;
  for (Duplex d : {Duplex::Half, Duplex::Full})
    for (int p = 1; p <= 20; ++p)
      for (int q : {1, 3})
        for (int root : {0, p - 1}) {
          CAPTURE(p, q, root);
          const CostModel model = with_duplex(hockney_model(alpha, beta, 0), d);
          const std::int64_t per = 4;
          const Problem problem = make_problem(Collective::Bcast, p, root, q * per, 1, true, per, model);
          CHECK(simulate_ok(plan_with("flat", problem), model).makespan == (p - 1) * (q * alpha + beta * q * per));
        }
}

TEST_CASE("Segmented chain bcast (004 Table 1: (P-1)(g(s) + L) + g(s)(k-1)): full duplex "
          "(p-1 + q-1)(alpha + beta s), half duplex a forwarding rank's one port carries both "
          "directions: ((p-1) + 2(q-1))(alpha + beta s)",
          "[bcast][closed-form][pipeline]") {
  const double alpha = 3, beta = 0.25;
  for (Duplex d : {Duplex::Half, Duplex::Full})
    for (int p = 1; p <= 20; ++p)
      for (int q : {1, 2, 5, 9})
        for (int root : {0, p / 3, p - 1}) {
          CAPTURE(p, q, root, d == Duplex::Full);
          const CostModel model = with_duplex(hockney_model(alpha, beta, 0), d);
          const std::int64_t per = 8;
          const Problem problem = make_problem(Collective::Bcast, p, root, q * per, 1, true, per, model);
          const double g = alpha + beta * per;
          const double makespan = simulate_ok(plan_with("chain", problem), model).makespan;
          if (p == 1) CHECK(makespan == 0);
          else if (d == Duplex::Full || p == 2) CHECK(makespan == ((p - 1) + (q - 1)) * g);  // 004, L = 0
          else CHECK(makespan == ((p - 1) + 2 * (q - 1)) * g);
          if (q == 1 && p > 1) CHECK(makespan == (p - 1) * g);  // 004 "Chain": (P-1)(g(m) + L)
        }
}

TEST_CASE("Binary tree bcast (004 Table 1: <= ceil(log2 P)(2 g(m) + L)): the rank reached through "
          "second children waits most, exact on perfect trees, 2 floor(log2 p) g(m), segmented "
          "perfect trees: 2(N-1) + 3(q-1) steps half duplex, 2(N-1) + 2(q-1) full duplex",
          "[bcast][closed-form][binary]") {
  const double alpha = 3, beta = 0.25;
  const std::int64_t per = 8;
  const double g = alpha + beta * per;
  for (int p = 1; p <= 64; ++p)
    for (int root : {0, p - 1}) {
      CAPTURE(p, root);
      const CostModel model = hockney_model(alpha, beta, 0);
      const Schedule s = plan_with("binary", make_problem(Collective::Bcast, p, root, per, 1, true, 0, model));
      // A rank sends to its children one after the other: child i of a rank waits i+1
      // transfers after its parent has the message.
      const Tree t = tree_of(s);
      std::function<double(int)> finish = [&](int r) {
        double worst = 0;
        for (std::size_t i = 0; i < t.children[r].size(); ++i)
          worst = std::max(worst, (i + 1) * g + finish(t.children[r][i]));
        return worst;
      };
      const double makespan = simulate_ok(s, model).makespan;
      CHECK(makespan == finish(t.root));
      CHECK(makespan <= 2 * floor_log2(p) * g);
      CHECK(makespan <= ceil_log2(p) * 2 * g);  // 004's bound, L = 0
      if (p == (2 << floor_log2(p)) - 1) CHECK(makespan == 2 * floor_log2(p) * g);
    }
  for (Duplex d : {Duplex::Half, Duplex::Full})
    for (int N : {2, 3, 4, 5})
      for (int q : {1, 2, 3, 6}) {
        const int p = (1 << N) - 1;
        CAPTURE(p, q, d == Duplex::Full);
        const CostModel model = with_duplex(hockney_model(alpha, beta, 0), d);
        const double makespan =
            simulate_ok(plan_with("binary", make_problem(Collective::Bcast, p, 0, q * per, 1, true, per, model)), model)
                .makespan;
        // Per segment the root sends twice; an inner rank receives once and sends twice,
        // which costs 3 transfers on one half-duplex port and 2 on a full-duplex send port.
        const int per_segment = (d == Duplex::Half && N >= 3) ? 3 : 2;
        CHECK(makespan == (2 * (N - 1) + per_segment * (q - 1)) * g);
      }
}

TEST_CASE("Segmented binomial bcast (004 Table 1: ceil(log2 P) L + floor(log2 P) g(s) k): the root "
          "sends every segment ceil(log2 p) times, ceil(log2 p) q g(s) in either duplex mode, 004's "
          "floor agrees for powers of two",
          "[bcast][closed-form][binomial]") {
  const double alpha = 1, beta = 0.5;
  for (Duplex d : {Duplex::Half, Duplex::Full})
    for (int p = 1; p <= 33; ++p)
      for (int q : {1, 2, 5}) {
        CAPTURE(p, q, d == Duplex::Full);
        const CostModel model = with_duplex(hockney_model(alpha, beta, 0), d);
        const std::int64_t per = 4;
        const double g = alpha + beta * per;
        const double makespan =
            simulate_ok(plan_with("binomial", make_problem(Collective::Bcast, p, p / 2, q * per, 1, true, per, model)),
                        model)
                .makespan;
        CHECK(makespan == ceil_log2(p) * q * g);
        if ((p & (p - 1)) == 0) CHECK(makespan == floor_log2(p) * q * g);
      }
}

TEST_CASE("Scatter-allgather (004 Table 1, Scatter/Collection: (log2 P + P - 1) L + 2 ((P-1)/P) "
          "g(m)): full duplex, equal blocks, exactly 2(p-1)(alpha + beta m/p): 004's bandwidth "
          "term exactly, and 2(p-1) alpha latency since every block is its own message",
          "[bcast][closed-form][scatter-allgather]") {
  for (int p = 1; p <= 33; ++p)
    for (int root : {0, p / 2, p - 1}) {
      CAPTURE(p, root);
      const std::int64_t block = 6, m = block * p;
      const CostModel model = with_duplex(hockney_model(3, 0.25, 0), Duplex::Full);
      const Schedule s = plan_with("scatter-allgather", make_problem(Collective::Bcast, p, root, m, 1, true, 0, model));
      REQUIRE(static_cast<int>(s.segments.size()) == p);
      const double makespan = simulate_ok(s, model).makespan;
      CHECK(makespan == 2 * (p - 1) * (3 + 0.25 * block));
      // The two terms apart: beta only gives 004's bandwidth term exactly; alpha only
      // gives 2(p-1) alpha, at least 004's (log2 P + P - 1) alpha.
      const CostModel bandwidth = with_duplex(hockney_model(0, 1, 0), Duplex::Full);
      CHECK(simulate_ok(s, bandwidth).makespan == Approx(2.0 * (p - 1) / p * m).epsilon(1e-12));
      const CostModel latency = with_duplex(hockney_model(1, 0, 0), Duplex::Full);
      const double lat = simulate_ok(s, latency).makespan;
      CHECK(lat == 2 * (p - 1));
      if (p > 1) CHECK(lat >= std::log2(p) + p - 1);
      // The root sends each block twice (scatter, then ring); nobody sends to it.
      if (p > 1) CHECK(count_steps(s.steps[root], StepKind::Send) == 2 * (p - 1));
      CHECK(count_steps(s.steps[root], StepKind::Recv) == 0);
    }
}

TEST_CASE("Scatter-allgather, half duplex: between the root's 2(p-1) block transfers and "
          "3(p-1) of them, every rank receives every block once",
          "[bcast][scatter-allgather]") {
  for (int p = 1; p <= 33; ++p) {
    CAPTURE(p);
    const std::int64_t block = 4, m = block * p;
    const CostModel model = hockney_model(2, 0.5, 0);
    const Schedule s = plan_with("scatter-allgather", make_problem(Collective::Bcast, p, p / 3, m, 1, true, 0, model));
    const double g = 2 + 0.5 * block;
    const double makespan = simulate_ok(s, model).makespan;
    CHECK(makespan >= 2 * (p - 1) * g);
    CHECK(makespan <= 3 * (p - 1) * g);
    for (int r = 0; r < p; ++r) {
      std::vector<int> got(s.segments.size(), 0);
      for (const Step& st : s.steps[r])
        if (st.kind == StepKind::Recv) ++got[st.segment];
      for (std::size_t j = 0; j < got.size(); ++j) CHECK(got[j] == (r == p / 3 ? 0 : 1));
    }
  }
}

TEST_CASE("Scatter-allgather with fewer elements than ranks uses count blocks, segment sizes cut "
          "each block, an explicit layout is grouped into blocks",
          "[bcast][scatter-allgather]") {
  const CostModel model = hockney_model(1, 0.5, 0);
  for (int p : {2, 5, 16, 33})
    for (std::int64_t count : {1, 2, 7}) {
      CAPTURE(p, count);
      const Schedule s = plan_with("scatter-allgather", make_problem(Collective::Bcast, p, 1 % p, count, 4, true, 0, model));
      CHECK(static_cast<std::int64_t>(s.segments.size()) == std::min<std::int64_t>(p, count));
      check_valid(s);
    }
  CHECK(plan_with("scatter-allgather", make_problem(Collective::Bcast, 8, 0, 0, 4, true, 0, model)).total_steps() == 0);
  // 8 ranks, 100 elements: blocks of 13 or 12 elements, cut into segments of 5.
  const Schedule cut = plan_with("scatter-allgather", make_problem(Collective::Bcast, 8, 0, 100, 4, true, 20, model));
  check_valid(cut);
  CHECK(cut.segments.size() == 4 * 3 + 4 * 3u);  // 13 -> 5,5,3 and 12 -> 5,5,2
  for (const Segment& seg : cut.segments) CHECK(seg.count <= 5);
  Problem explicit_layout = make_problem(Collective::Bcast, 4, 2, 10, 4, true, 0, model);
  explicit_layout.segment_counts = {1, 2, 3, 4};
  const Schedule grouped = plan_with("scatter-allgather", explicit_layout);
  check_valid(grouped);
  CHECK(segment_counts_of(grouped.segments) == explicit_layout.segment_counts);
}

TEST_CASE("Scatter-allgather's price: under pLogP a lower bound within 25% of the simulated makespan, "
          "under hockney with full duplex the simulated makespan itself, on random instances",
          "[bcast][scatter-allgather][price]") {
  const Algorithm* a = find_algorithm(Collective::Bcast, "scatter-allgather");
  REQUIRE(a != nullptr);
  REQUIRE(a->price != nullptr);
  double worst = 1;
  const CostModel plogp = plogp_model(5e-6, {{1, 2e-6}, {65536, 2e-5}});
  for (int p = 2; p <= 40; ++p)
    for (std::int64_t count : {std::int64_t{1}, std::int64_t{p}, std::int64_t{1000}, std::int64_t{1} << 20})
      for (std::int64_t seg : {std::int64_t{0}, std::int64_t{8192}}) {
        const Problem problem = make_problem(Collective::Bcast, p, p / 3, count, 1, true, seg, plogp);
        const Price price = a->price(problem);
        const double simulated = simulate_ok(a->plan(problem), plogp).makespan;
        CAPTURE(p, count, seg, price.makespan, simulated);
        CHECK_FALSE(price.exact);
        CHECK(price.makespan <= simulated * (1 + 1e-9));
        worst = std::min(worst, price.makespan / simulated);
      }
  INFO("worst price / simulated under pLogP: " << worst);
  CHECK(worst >= 0.75);

  std::mt19937_64 rng(20261124);
  std::uniform_real_distribution<double> u(0, 1);
  auto pick = [&](double lo, double hi) { return lo * std::pow(hi / lo, u(rng)); };
  Sweep sweep;
  for (int trial = 0; trial < 2000; ++trial) {
    const int p = 2 + static_cast<int>(rng() % 60);
    CostModel model = hockney_model(pick(1e-7, 1e-4), pick(1e-11, 1e-8), 0);
    model.duplex = Duplex::Full;
    model.overlap = true;
    const std::int64_t seg = u(rng) < 0.5 ? 0 : static_cast<std::int64_t>(pick(64, 1e5));
    const Problem problem = make_problem(Collective::Bcast, p, static_cast<int>(rng() % p),
                                         static_cast<std::int64_t>(pick(1, 1e6)), 1, true, seg, model);
    const Price price = a->price(problem);
    const double simulated = simulate_ok(a->plan(problem), model).makespan;
    sweep.check(price.exact && std::abs(price.makespan - simulated) <= 1e-9 * simulated,
                "p=" + std::to_string(p) + " count=" + std::to_string(problem.count) + " " + model.spec() +
                    ": price " + std::to_string(price.makespan) + ", simulated " + std::to_string(simulated));
  }
  INFO(sweep.first);
  CHECK(sweep.failures == 0);
}

// ---- scatter-allgather-wide -------------------------------------------------------

TEST_CASE("scatter-allgather-wide validates and simulates over sites far apart: p = 1..12, every root, counts "
          "below and above p, several segment sizes, the root sends the message once, every other rank receives "
          "every segment once and sends only its own block, to every rank but the root",
          "[bcast][scatter-allgather]") {
  Sweep sweep;
  int checked = 0;
  for (int p = 1; p <= 12; ++p) {
    const auto topology = sites_apart(p, [](int, int) { return "hockney:alpha=1e-3,beta=1e-8,port=1e-9"; });
    for (int root = 0; root < p; ++root)
      for (std::int64_t count : {std::int64_t{0}, std::int64_t{1}, std::int64_t{std::max(p - 2, 1)},
                                 std::int64_t{1000}, std::int64_t{7777}})
        for (std::int64_t seg : {std::int64_t{0}, std::int64_t{512}, std::int64_t{8192}}) {
          Problem problem = make_problem(Collective::Bcast, p, root, count, 4, true, seg, default_model());
          problem.topology = topology;
          const std::string what = "p=" + std::to_string(p) + " root=" + std::to_string(root) +
                                   " count=" + std::to_string(count) + " seg=" + std::to_string(seg);
          if (p == 1) {  // no topology of one site keeps a latency in flight: it declines
            sweep.check(!problem.topology || !keeps_latency_in_flight(*problem.topology), what);
            continue;
          }
          const Schedule s = plan_with("scatter-allgather-wide", problem);
          const Validation v = validate(s);
          sweep.check(v.ok, what + ": " + v.summary());
          const Simulation sim = simulate(s, problem.model, topology.get());
          sweep.check(sim.ok, what + ": " + sim.error);
          const auto nseg = static_cast<int>(s.segments.size());
          std::vector<int> root_sent(nseg, 0);
          for (const Step& st : s.steps[root])
            if (st.kind == StepKind::Send) ++root_sent[st.segment];
          sweep.check(std::all_of(root_sent.begin(), root_sent.end(), [](int n) { return n == 1; }),
                      what + ": the root sends some segment other than once");
          for (int r = 0; r < p; ++r) {
            if (r == root) continue;
            std::vector<int> got(nseg, 0);
            std::set<int> forwarded;
            int sends = 0;
            for (const Step& st : s.steps[r]) {
              if (st.kind == StepKind::Recv) ++got[st.segment];
              if (st.kind != StepKind::Send) continue;
              ++sends;
              forwarded.insert(st.segment);
              sweep.check(st.peer != root, what + ": rank " + std::to_string(r) + " sends to the root");
            }
            sweep.check(std::all_of(got.begin(), got.end(), [](int n) { return n == 1; }),
                        what + ": rank " + std::to_string(r) + " does not receive every segment once");
            // Its block, consecutive segments, to each of the p - 2 others.
            const bool one_block =
                forwarded.empty() || *forwarded.rbegin() - *forwarded.begin() + 1 == static_cast<int>(forwarded.size());
            sweep.check(one_block && sends == static_cast<int>(forwarded.size()) * (p - 2),
                        what + ": rank " + std::to_string(r) + " sends " + std::to_string(sends) + " messages of " +
                            std::to_string(forwarded.size()) + " segments");
          }
          ++checked;
        }
  }
  INFO(sweep.first);
  CHECK(sweep.failures == 0);
  CHECK(checked > 900);
}

TEST_CASE("scatter-allgather-wide declines without links whose latency is in flight, and with half-duplex ports",
          "[bcast][scatter-allgather]") {
  Problem problem = make_problem(Collective::Bcast, 4, 0, 1000, 8, true, 0, default_model());
  CHECK_THROWS_WITH(plan_with("scatter-allgather-wide", problem), Catch::Contains("port="));  // no topology
  problem.topology = sites_apart(4, [](int, int) { return "hockney:alpha=1e-3,beta=1e-8"; });
  CHECK_THROWS_WITH(plan_with("scatter-allgather-wide", problem), Catch::Contains("port="));
  problem.topology = sites_apart(4, [](int, int) { return "hockney:alpha=1e-3,beta=1e-8,port=1e-9"; });
  CHECK_NOTHROW(plan_with("scatter-allgather-wide", problem));
  problem.model.duplex = Duplex::Half;
  CHECK_THROWS_WITH(plan_with("scatter-allgather-wide", problem), Catch::Contains("duplex"));
  const Algorithm* wide = find_algorithm(Collective::Bcast, "scatter-allgather-wide");
  REQUIRE(wide);
  CHECK(wide->price == nullptr);  // priced by simulating it alone
  CHECK(wide->wide_area);
  CHECK_THROWS_AS(plan_view(*wide, problem, 1), PlanError);
}

TEST_CASE("scatter-allgather-wide over sixteen sites far apart: two latencies, where the binomial scatter and the "
          "ring pay one a level and a hop, auto takes it",
          "[bcast][scatter-allgather]") {
  // 16 sites of one rank (sixteen_sites_apart: 1-15 ms and 56-336 Mbit/s apart, 1 Gbit/s
  // cards), 1 MiB from rank 0: 15 blocks of 69,905 or 69,906 bytes.
  constexpr int p = 16;
  const std::int64_t bytes = std::int64_t{1} << 20, block = bytes / (p - 1) + 1;
  const auto topology = sixteen_sites_apart(1, 1);
  Problem problem = make_problem(Collective::Bcast, p, 0, bytes, 1, true, 0, default_model());
  problem.topology = topology;
  const double slowest = slowest_link(*topology, block);  // its latency and one block
  const double card = 8e-9;                                // port=: a second a byte through a card
  const Simulation wide = simulate(plan_with("scatter-allgather-wide", problem), problem.model, topology.get());
  const Simulation ring = simulate(plan_with("scatter-allgather", problem), problem.model, topology.get());
  REQUIRE(wide.ok);
  REQUIRE(ring.ok);
  double heuristics = 1e9;  // the best grid-aware tree
  for (const auto& h : grid_heuristics()) {
    const std::string name = "grid-" + std::string(h.name);
    heuristics = std::min(heuristics, simulate(plan_with(name.c_str(), problem), problem.model, topology.get()).makespan);
  }
  INFO("wide " << wide.makespan << " s, scatter-allgather " << ring.makespan << " s, best grid-* " << heuristics
               << " s, slowest block " << slowest << " s");
  // The last block leaves the root's card after the whole message (15 blocks) and needs
  // at least a link's latency more; then each rank's card passes its block 14 times and
  // the slowest link takes one block at most: the scatter and the allgather.
  CHECK(wide.makespan >= static_cast<double>(bytes) * card + 1e-3);
  CHECK(wide.makespan <= static_cast<double>(bytes) * card + (p - 2) * static_cast<double>(block) * card +
                             2 * slowest + 1e-3);
  CHECK(wide.makespan * 1.5 < ring.makespan);  // simulated 56 and 87 ms; the best grid-* tree 120
  CHECK(wide.makespan * 1.5 < heuristics);
  const std::vector<Choice> ranked = rank_choices(problem, Request{});
  REQUIRE(!ranked.empty());
  CHECK(ranked.front().algorithm == "scatter-allgather-wide");
  CHECK(ranked.front().exact);
}
