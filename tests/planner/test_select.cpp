// Selection: from a problem and a request to a validated, priced schedule.
#include <catch2/catch.hpp>

#include <iomanip>
#include <sstream>

#include "planner/cost_model.h"
#include "planner/registry.h"
#include "planner/segments.h"
#include "planner/select.h"
#include "planner/staged.h"
#include "planner/topology_json.h"
#include "support.h"

using namespace canopy::planner;
using namespace canopy::planner::testing;

namespace {

// The algorithms of a ranking, in its order.
std::vector<std::string> names(const std::vector<Choice>& ranked) {
  std::vector<std::string> out;
  for (const Choice& c : ranked) out.push_back(c.algorithm);
  return out;
}

}  // namespace

TEST_CASE("Select: every algorithm is registered under one token, for its collective", "[select]") {
  for (Collective c : {Collective::Reduce, Collective::Bcast}) {
    const auto names = algorithm_names(c);
    CHECK_FALSE(names.empty());
    CHECK(std::find(names.begin(), names.end(), "binomial") != names.end());
    for (const auto& name : names) {
      CAPTURE(name);
      CHECK(name.find_first_of(" \t,=:") == std::string::npos);
      const Algorithm* a = find_algorithm(c, name);
      REQUIRE(a != nullptr);
      CHECK(a->collective == c);
      CHECK(a->name == name);
    }
    CHECK(find_algorithm(c, "auto") == nullptr);
    CHECK(find_algorithm(c, "no-such-algorithm") == nullptr);
  }
}

namespace {

// Prices from formulas (planner/tree_price.h) sum the same costs in another order than
// the simulator: equal up to rounding.
bool same_time(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max({1e-30, std::abs(a), std::abs(b)}); }
bool at_most(double a, double b) { return a <= b || same_time(a, b); }

}  // namespace

TEST_CASE("Select: make_plan with \"binomial\" and \"auto\" returns a validated schedule priced as the "
          "simulator prices it",
          "[select]") {
  for (const CostModel& model : {default_model(), hockney_model(3e-6, 1e-9, 5e-10), overlap_model(1, 2)})
    for (Collective c : {Collective::Reduce, Collective::Bcast})
      for (bool commutative : {true, false}) {
        if (c == Collective::Bcast && !commutative) continue;
        for (int p : {1, 2, 5, 16, 17})
          for (std::int64_t count : {0, 1, 3000, 100000})
            for (const char* algo : {"binomial", "auto"}) {
              const int root = p / 2;
              Problem problem = make_problem(c, p, root, count, 4, commutative, 0, model);
              Request request;
              request.algorithm = algo;
              CAPTURE(algo, model.spec(), p, count, commutative);
              const Plan plan = make_plan(problem, request);
              check_valid(plan.schedule);
              CHECK(plan.schedule.collective == c);
              CHECK(plan.schedule.nranks == p);
              CHECK(plan.schedule.root == root);
              CHECK(plan.schedule.count == count);
              CHECK(plan.schedule.commutative == commutative);
              const Simulation sim = simulate(plan.schedule, model);
              REQUIRE(sim.ok);
              CHECK(same_time(plan.predicted, sim.makespan));
              if (std::string(algo) == "binomial") CHECK(plan.schedule.algorithm == "binomial");
              // "auto" keeps the fastest candidate: no registered algorithm at any
              // candidate segment size simulates faster.
              if (std::string(algo) == "auto")
                for (const auto& name : algorithm_names(c))
                  for (std::int64_t seg : segment_candidates(problem.bytes())) {
                    problem.segment_bytes = seg;
                    Schedule candidate;
                    try {
                      candidate = plan_with(name.c_str(), problem);
                    } catch (const PlanError&) {
                      continue;  // the algorithm declines the problem (e.g. non-commutative)
                    }
                    const Simulation other = simulate(candidate, model);
                    if (other.ok) CHECK(at_most(plan.predicted, other.makespan));
                  }
            }
      }
}

TEST_CASE("Select: an unknown algorithm or an unplannable problem throws PlanError", "[select]") {
  Problem problem = make_problem(Collective::Reduce, 4, 0, 10, 4, true, 0, default_model());
  Request request;
  request.algorithm = "no-such-algorithm";
  CHECK_THROWS_AS(make_plan(problem, request), PlanError);
  CHECK_THROWS_WITH(make_plan(problem, request), Catch::Contains("no-such-algorithm"));
  request.algorithm = "";
  CHECK_THROWS_AS(make_plan(problem, request), PlanError);

  request.algorithm = "auto";
  Problem bad = problem;
  bad.nranks = 0;
  CHECK_THROWS_AS(make_plan(bad, request), PlanError);
  bad = problem;
  bad.root = 4;
  CHECK_THROWS_AS(make_plan(bad, request), PlanError);
  bad = problem;
  bad.count = -1;
  CHECK_THROWS_AS(make_plan(bad, request), PlanError);
  bad = problem;
  bad.element_bytes = 0;
  CHECK_THROWS_AS(make_plan(bad, request), PlanError);
  bad = problem;
  bad.collective = Collective::Bcast;
  bad.commutative = false;
  CHECK_THROWS_AS(make_plan(bad, request), PlanError);
}

TEST_CASE("Select: a forced segment size is the one the layout uses (scatter-allgather: within each "
          "of its blocks)",
          "[select]") {
  for (const char* algo : {"binomial", "auto"})
    for (Collective c : {Collective::Reduce, Collective::Bcast})
      for (std::int64_t seg_bytes : {0, 4, 400, 1000, 4096, 1 << 20}) {
        CAPTURE(algo, seg_bytes);
        const std::int64_t count = 10000, element_bytes = 4;
        const Problem problem = make_problem(c, 8, 3, count, element_bytes, true, 0, default_model());
        Request request;
        request.algorithm = algo;
        request.segment_bytes = seg_bytes;
        const Plan plan = make_plan(problem, request);
        check_valid(plan.schedule);
        if (plan.schedule.algorithm == "scatter-allgather") {
          // Its blocks come first (p of them), each cut by the forced size.
          for (const Segment& seg : plan.schedule.segments)
            if (seg_bytes > 0) CHECK(seg.count * element_bytes <= seg_bytes);
          CHECK(plan.schedule.segments.size() >= 8u);
          continue;
        }
        if (plan.schedule.algorithm == "rabenseifner") {
          // Its slices are the layout (one per rank here); a forced size caps its
          // messages instead, in whole slices, at least one.
          CHECK(plan.schedule.segments.size() == 8u);
          const std::int64_t slice = plan.schedule.segment_bytes(0);
          for (const auto& steps : plan.schedule.steps)
            for (const Step& st : steps)
              if (st.kind == StepKind::Send && seg_bytes > 0)
                CHECK(st.span * slice <= std::max(slice, seg_bytes));
          continue;
        }
        const auto expected = uniform_segments(count, element_bytes, seg_bytes);
        REQUIRE(plan.schedule.segments.size() == expected.size());
        for (std::size_t k = 0; k < expected.size(); ++k) {
          CHECK(plan.schedule.segments[k].first == expected[k].first);
          CHECK(plan.schedule.segments[k].count == expected[k].count);
        }
        if (seg_bytes > 0 && seg_bytes < count * element_bytes)
          CHECK(plan.schedule.segment_bytes(0) == seg_bytes);
        else
          CHECK(plan.schedule.segments.size() == 1u);
      }
}

TEST_CASE("Select: segment candidates are 004's s = m / 2^i, at most 256 segments of at least 1 KiB, "
          "largest first",
          "[select]") {
  for (std::int64_t bytes : {0, 1, 2, 3, 4096, 4097, 65536, 100000, 1 << 20, 1 << 24, (1 << 30) + 3}) {
    CAPTURE(bytes);
    const auto c = segment_candidates(bytes);
    REQUIRE_FALSE(c.empty());
    CHECK(c.front() == 0);
    for (std::size_t i = 1; i < c.size(); ++i) {
      CHECK(c[i] == (bytes + (std::int64_t{1} << i) - 1) >> i);  // ceil(m / 2^i)
      CHECK(c[i] < bytes);
      CHECK(c[i] >= 1024);
      CHECK((bytes + c[i] - 1) / c[i] <= (std::int64_t{1} << i));
      if (i > 1) CHECK(c[i] < c[i - 1]);
    }
    // Every i up to 8 whose size is still a proper, new part of the message is there.
    std::size_t expected = 1;
    for (int i = 1; i <= 8; ++i) {
      const std::int64_t s = (bytes + (std::int64_t{1} << i) - 1) >> i;
      if (s < 1024 || s >= bytes) break;
      ++expected;
    }
    CHECK(c.size() == expected);
  }
}

TEST_CASE("Select: hill-climbing never predicts worse than the best m / 2^i size", "[select]") {
  for (int p : {3, 8, 17}) {
    for (std::int64_t bytes : {3000, 100000, 1 << 20}) {
      Problem problem = make_problem(Collective::Reduce, p, 0, bytes / 4, 4, true, 0, default_model());
      Request request;
      request.algorithm = "chain";
      const Plan climbed = make_plan(problem, request);
      double best_grid = 1e300;
      for (std::int64_t s : segment_candidates(problem.bytes())) {
        problem.segment_bytes = s;
        best_grid = std::min(best_grid, simulate(plan_with("chain", problem), problem.model).makespan);
      }
      CAPTURE(p, bytes);
      CHECK(at_most(climbed.predicted, best_grid));
    }
  }
}

namespace {

// Checks that `problem`'s search for each algorithm alone (as CANOPY_*_ALGO asks) ends
// with a price that loses to none of the m / 2^i sizes priced one by one, and that
// sizes Algorithm::cut_segment_bytes says cut alike price alike (counted in `alike`).
void check_segment_search(const Problem& problem, Sweep& sweep, int& alike) {
  for (const Algorithm& a : algorithms()) {
    if (a.collective != problem.collective || (a.topology_aware && !problem.topology)) continue;
    Request request;
    request.algorithm = std::string(a.name);
    std::vector<Choice> chosen;
    try {
      chosen = rank_choices(problem, request);
    } catch (const PlanError&) {
      continue;  // declined (snf without a topology, the staged ones without a ring)
    }
    const Choice& best = chosen.front();
    const std::string what = std::string(a.name) + " p=" + std::to_string(problem.nranks) +
                             " bytes=" + std::to_string(problem.bytes()) + " " + to_string(problem.collective);
    std::vector<std::pair<std::int64_t, double>> by_cut;  // (cut size, price)
    for (std::int64_t size : segment_candidates(problem.bytes())) {
      Price price;
      if (!price_choice(problem, {best.algorithm, size, 0, true}, price)) continue;
      const std::string at = what + " size=" + std::to_string(size);
      if (price.exact != best.exact) sweep.check(best.exact, at + ": an exact price was passed over");
      else sweep.check(at_most(best.predicted, price.makespan), at + ": cheaper than the choice");
      if (!a.cut_segment_bytes) continue;
      Problem asked = problem;
      asked.segment_bytes = size;
      const std::int64_t cut = a.cut_segment_bytes(asked);
      for (const auto& [other_cut, other_price] : by_cut)
        if (other_cut == cut) {
          ++alike;
          sweep.check(same_time(price.makespan, other_price), at + ": cut alike, priced differently");
        }
      by_cut.emplace_back(cut, price.makespan);
    }
  }
}

}  // namespace

TEST_CASE("Select: the search over m / 2^i stops past the valley without missing a cheaper size, and "
          "prices once the sizes an algorithm cuts alike",
          "[select]") {
  // The search stops once two sizes in a row price more than 10% above its best, then
  // hill-climbs from the best. Each case below fails with a looser rule: a 32-rank
  // greedy-bidirectional reduce of 15.6 MB (5.11, 5.43, 5.39, 5.17, 5.01 ms from 8 to 128
  // segments) without the 10%, a hierarchical reduce of 3.1 MB over four sites with
  // one size instead of two.
  Sweep sweep;
  int alike = 0;
  // One node with a ring: the built-in model, Langou's unidirectional one, a latency-bound one.
  for (const CostModel& model : {default_model(), hockney_model(1e-5, 1e-9, 1e-10), hockney_model(5e-5, 1e-10, 1e-10)})
    for (Collective c : {Collective::Reduce, Collective::Bcast})
      for (int p : {2, 5, 16, 32})
        for (std::int64_t bytes : {3000, 65536, 1 << 20, 4 << 20, 15625000})
          check_segment_search(with_staging_ring(make_problem(c, p, p - 1, bytes / 8, 8, true, 0, model)), sweep,
                               alike);
  // Four sites of eight ranks, two pairs of them close.
  nlohmann::json sites;
  for (int r = 0; r < 32; ++r) {
    sites["ranks"].push_back(std::string(1, static_cast<char>('a' + r / 8)));
    sites["nodes"].push_back("n" + std::to_string(r / 8));
  }
  const std::string near = "hockney:alpha=5e-6,beta=1e-10", far = "hockney:alpha=5e-5,beta=1e-9";
  sites["links"] = {{"a-b", near}, {"c-d", near}, {"a-c", far}, {"a-d", far}, {"b-c", far}, {"b-d", far}};
  const auto topology = std::make_shared<const Topology>(topology_from_json(sites).topology);
  for (Collective c : {Collective::Reduce, Collective::Bcast})
    for (std::int64_t bytes : {65536, 625000, 3125000}) {
      Problem problem = make_problem(c, 32, 0, bytes / 8, 8, true, 0, default_model());
      problem.topology = topology;
      check_segment_search(problem, sweep, alike);
    }
  CHECK(alike > 100);
  INFO(sweep.first);
  CHECK(sweep.failures == 0);
}

TEST_CASE("Select: rank_plans lists each algorithm once at its best segment size, cheapest first, "
          "and make_plan returns the first",
          "[select]") {
  for (const CostModel& model : {default_model(), hockney_model(3e-6, 1e-9, 5e-10)})
    for (Collective c : {Collective::Reduce, Collective::Bcast}) {
      const Problem problem = make_problem(c, 12, 5, 50000, 4, true, 0, model);
      const std::vector<Plan> ranked = rank_plans(problem, Request{});
      REQUIRE_FALSE(ranked.empty());
      // Without a topology the topology-aware and wide-area algorithms decline, without a
      // staging ring the staged ones; every other one is ranked.
      std::size_t homogeneous = 0;
      for (const Algorithm& a : algorithms())
        homogeneous += a.collective == c && !a.topology_aware && !a.wide_area && !a.staged;
      CHECK(ranked.size() == homogeneous);
      for (std::size_t i = 0; i < ranked.size(); ++i) {
        CAPTURE(i, ranked[i].schedule.algorithm);
        if (i > 0) CHECK(ranked[i - 1].predicted <= ranked[i].predicted);
        for (std::size_t j = 0; j < i; ++j) CHECK(ranked[j].schedule.algorithm != ranked[i].schedule.algorithm);
        CHECK(same_time(ranked[i].predicted, simulate(ranked[i].schedule, model).makespan));
      }
      const Plan best = make_plan(problem, Request{});
      CHECK(best.schedule.algorithm == ranked.front().schedule.algorithm);
      CHECK(best.predicted == ranked.front().predicted);
      CHECK(best.schedule.segments.size() == ranked.front().schedule.segments.size());
    }
}

TEST_CASE("Select: bring_staged_forward moves the ring's best choice to the trialled ones, the rest in order",
          "[select]") {
  const std::vector<Choice> ranked{{"binomial"}, {"scatter-allgather"}, {"chain"}, {"shm-bcast"}, {"flat"}};
  std::vector<Choice> r = ranked;
  CHECK(bring_staged_forward(r, 2, Collective::Bcast) == 1);
  CHECK(names(r) == std::vector<std::string>{"binomial", "scatter-allgather", "shm-bcast", "chain", "flat"});
  // At the first position not trialled: it stays, and the caller trials one more.
  CHECK(bring_staged_forward(r, 2, Collective::Bcast) == 1);
  CHECK(names(r) == std::vector<std::string>{"binomial", "scatter-allgather", "shm-bcast", "chain", "flat"});
  // Already trialled, or no staged algorithm at all: nothing moves.
  CHECK(bring_staged_forward(r, 3, Collective::Bcast) == 0);
  std::vector<Choice> none{{"binomial"}, {"chain"}, {"flat"}};
  CHECK(bring_staged_forward(none, 1, Collective::Bcast) == 0);
  CHECK(names(none) == std::vector<std::string>{"binomial", "chain", "flat"});
  // Staged for reduces: shm-flat and shm-reduce-scatter-gather; the first one found moves.
  std::vector<Choice> reduce{{"binomial"}, {"chain"}, {"reduce-scatter-gather"}, {"shm-flat"}, {"shm-reduce-scatter-gather"}};
  CHECK(bring_staged_forward(reduce, 1, Collective::Reduce) == 1);
  CHECK(names(reduce) ==
        std::vector<std::string>{"binomial", "shm-flat", "chain", "reduce-scatter-gather", "shm-reduce-scatter-gather"});
}

TEST_CASE("Select: drop_point_to_point_behind_ring keeps point-to-point choices only above the ring's first",
          "[select]") {
  // Ranked after the ring's first schedule: dropped, the staged ones keeping their order.
  std::vector<Choice> staged_first{{"shm-reduce-scatter-gather"}, {"reduce-scatter-gather"}, {"shm-flat"},
                                   {"binomial"}};
  CHECK(drop_point_to_point_behind_ring(staged_first, Collective::Reduce) == 2);
  CHECK(names(staged_first) == std::vector<std::string>{"shm-reduce-scatter-gather", "shm-flat"});
  // Ranked above it: kept (the model's best is trialled), those after it dropped.
  std::vector<Choice> p2p_first{{"binomial"}, {"chain"}, {"shm-bcast"}, {"flat"}, {"cma-bcast"}};
  CHECK(drop_point_to_point_behind_ring(p2p_first, Collective::Bcast) == 1);
  CHECK(names(p2p_first) == std::vector<std::string>{"binomial", "chain", "shm-bcast", "cma-bcast"});
  // Cross-memory attach is the node's too (staged and direct).
  std::vector<Choice> direct_first{{"cma-bcast"}, {"binomial"}, {"shm-bcast"}};
  CHECK(drop_point_to_point_behind_ring(direct_first, Collective::Bcast) == 1);
  CHECK(names(direct_first) == std::vector<std::string>{"cma-bcast", "shm-bcast"});
  // No staged choice (no ring): nothing dropped.
  std::vector<Choice> none{{"rabenseifner"}, {"ring"}, {"recursive-doubling"}};
  CHECK(drop_point_to_point_behind_ring(none, Collective::Allreduce) == 0);
  CHECK(names(none) == std::vector<std::string>{"rabenseifner", "ring", "recursive-doubling"});
  std::vector<Choice> empty;
  CHECK(drop_point_to_point_behind_ring(empty, Collective::Allreduce) == 0);
}

TEST_CASE("Select: bring_estimate_forward trials the best estimated choice where it is under every exact price",
          "[select]") {
  // As rank_choices ranks them: exact prices first, then estimates, each cheapest first.
  const std::vector<Choice> ranked{{"hierarchical", 0, 48e-6, true}, {"binomial", 0, 48e-6, true},
                                   {"binary", 0, 82e-6, true}, {"recursive-doubling", 0, 20e-6, false},
                                   {"rabenseifner", 0, 30e-6, false}};
  std::vector<Choice> r = ranked;
  CHECK(bring_estimate_forward(r, 2) == 1);
  CHECK(names(r) == std::vector<std::string>{"hierarchical", "binomial", "recursive-doubling", "binary", "rabenseifner"});
  // At the first place not trialled it stays, and the caller trials one more; trialled
  // already, nothing moves.
  CHECK(bring_estimate_forward(r, 2) == 1);
  CHECK(bring_estimate_forward(r, 3) == 0);
  CHECK(names(r) == std::vector<std::string>{"hierarchical", "binomial", "recursive-doubling", "binary", "rabenseifner"});
  // An estimate no cheaper than the best exact price stays where it is.
  std::vector<Choice> dearer{{"binomial", 0, 48e-6, true}, {"binary", 0, 82e-6, true}, {"ring", 0, 48e-6, false}};
  CHECK(bring_estimate_forward(dearer, 1) == 0);
  CHECK(names(dearer) == std::vector<std::string>{"binomial", "binary", "ring"});
  // No exact price (every choice an estimate, already cheapest first), or no estimate.
  std::vector<Choice> estimates{{"ring", 0, 10e-6, false}, {"recursive-doubling", 0, 20e-6, false}};
  CHECK(bring_estimate_forward(estimates, 1) == 0);
  std::vector<Choice> exact{{"binomial", 0, 48e-6, true}, {"binary", 0, 10e-6, true}};
  CHECK(bring_estimate_forward(exact, 1) == 0);
  std::vector<Choice> empty;
  CHECK(bring_estimate_forward(empty, 0) == 0);
}

TEST_CASE("Select: bring_staged_forward also trials the other node mechanism, the ring's or cross-memory attach's",
          "[select]") {
  // cma-bcast ranked first and trialled anyway: the ring's best comes to the first place
  // not trialled.
  std::vector<Choice> direct_first{{"cma-bcast"}, {"binomial"}, {"chain"}, {"shm-bcast"}};
  CHECK(bring_staged_forward(direct_first, 2, Collective::Bcast) == 1);
  CHECK(names(direct_first) == std::vector<std::string>{"cma-bcast", "binomial", "shm-bcast", "chain"});
  // Both past the trialled ones: the better one first, the other right after it.
  std::vector<Choice> both_late{{"binomial"}, {"chain"}, {"shm-bcast"}, {"flat"}, {"cma-bcast"}};
  CHECK(bring_staged_forward(both_late, 1, Collective::Bcast) == 2);
  CHECK(names(both_late) == std::vector<std::string>{"binomial", "shm-bcast", "cma-bcast", "chain", "flat"});
  std::vector<Choice> direct_late{{"binomial"}, {"cma-bcast"}, {"chain"}, {"shm-bcast"}};
  CHECK(bring_staged_forward(direct_late, 1, Collective::Bcast) == 2);
  CHECK(names(direct_late) == std::vector<std::string>{"binomial", "cma-bcast", "shm-bcast", "chain"});
  // Both trialled already: nothing moves. Only one mechanism offered: only it.
  std::vector<Choice> trialled{{"shm-bcast"}, {"cma-bcast"}, {"binomial"}};
  CHECK(bring_staged_forward(trialled, 2, Collective::Bcast) == 0);
  CHECK(names(trialled) == std::vector<std::string>{"shm-bcast", "cma-bcast", "binomial"});
  std::vector<Choice> only_direct{{"binomial"}, {"chain"}, {"cma-bcast"}};
  CHECK(bring_staged_forward(only_direct, 1, Collective::Bcast) == 1);
  CHECK(names(only_direct) == std::vector<std::string>{"binomial", "cma-bcast", "chain"});
}

TEST_CASE("A call is kept native untried only where the starting model also prices it under the threshold",
          "[select]") {
  // 2 ranks with the ring. A model learnt from the ring's calls (copy and gamma 20x
  // faster than the default's) prices a 64 KiB reduce through the ring under 5 us; the
  // default model does not, so it is tried. An 8-byte reduce is short under both.
  const CostModel prior = default_model();
  CostModel learnt = prior;
  learnt.copy_per_byte /= 20;
  learnt.gamma /= 20;
  for (const auto& [bytes, short_call] : {std::pair{std::int64_t{8}, true}, std::pair{std::int64_t{65536}, false}}) {
    const Problem problem = with_staging_ring(make_problem(Collective::Reduce, 2, 0, std::max<std::int64_t>(1, bytes / 8), 8,
                                                           true, -1, learnt));
    const Choice best = rank_choices(problem, Request{}).front();
    CAPTURE(bytes, best.algorithm, best.predicted);
    REQUIRE(best.predicted < 5e-6);  // the learnt model says: short
    CHECK(below_trial_threshold(problem, best, prior, 5e-6) == short_call);
    // Under the starting model itself the answer is its price's.
    CHECK(below_trial_threshold(problem, best, learnt, 5e-6));
  }
  // Priced over the threshold by the model in use: never short.
  const Problem big = make_problem(Collective::Bcast, 2, 0, 1 << 20, 1, true, -1, prior);
  CHECK_FALSE(below_trial_threshold(big, rank_choices(big, Request{}).front(), prior, 5e-6));
}

// Bounding (Request::bounded, select.h): a composed allreduce's estimate carries a lower
// bound, the slower of its parts alone, and a choice whose bound loses to the
// kBoundedPlaces-th best exact price is not simulated. These hold over allreduces of
// 2-64 ranks, 8 B-4 MiB, three models (duplex half and full), with and without a ring
// and for rank-ordered operations.
TEST_CASE("Select: bounding never changes the first kBoundedPlaces of an allreduce's ranking, and a composed "
          "allreduce's lower bound never exceeds its simulated price",
          "[select]") {
  CostModel full = hockney_model(2e-6, 1e-10, 1e-10);
  full.duplex = Duplex::Full;
  int problems = 0, spared = 0, bounds_checked = 0;
  for (const CostModel& model : {default_model(), hockney_model(3e-6, 1e-9, 5e-10), full})
    for (int p : {2, 3, 5, 8, 16, 64})
      for (std::int64_t bytes : {std::int64_t{8}, std::int64_t{4096}, std::int64_t{65536}, std::int64_t{1} << 20,
                                 std::int64_t{4} << 20})
        for (bool ring : {false, true})
          for (bool commutative : {true, false}) {
            if (ring && !staging_ring_allowed(p)) continue;
            if (p == 64 && bytes > (std::int64_t{1} << 20)) continue;  // the slowest unbounded plans; CI's time
            Problem q;
            q.collective = Collective::Allreduce;
            q.nranks = p;
            q.element_bytes = 8;
            q.count = bytes / 8;
            q.commutative = commutative;
            q.model = model;
            if (ring) q = with_staging_ring(q);
            Request all;
            all.bounded = false;
            const std::vector<Choice> bounded = rank_choices(q, Request{});
            const std::vector<Choice> every = rank_choices(q, all);
            INFO(p << " ranks, " << bytes << " B, model " << model.spec() << (ring ? ", ring" : "")
                   << (commutative ? "" : ", rank-ordered"));
            REQUIRE(bounded.size() == every.size());
            for (int i = 0; i < kBoundedPlaces && i < static_cast<int>(every.size()); ++i) {
              CHECK(bounded[i].algorithm == every[i].algorithm);
              CHECK(bounded[i].segment_bytes == every[i].segment_bytes);
              CHECK(bounded[i].predicted == every[i].predicted);
              CHECK(bounded[i].exact == every[i].exact);
            }
            for (const Choice& c : every)
              for (const Choice& b : bounded)
                if (b.algorithm == c.algorithm && c.exact && !b.exact) ++spared;
            // The bound against the simulation, at every composed choice the full search kept.
            for (const Choice& c : every) {
              const Algorithm* a = find_algorithm(Collective::Allreduce, c.algorithm);
              REQUIRE(a);
              if (!a->price || !c.exact) continue;
              Problem at = q;
              at.segment_bytes = c.segment_bytes;
              Price estimate;
              try {
                estimate = a->price(at);
              } catch (const PlanError&) {
                continue;
              }
              if (estimate.lower_bound <= 0) continue;
              INFO(c.algorithm << " at " << c.segment_bytes << " B segments");
              CHECK(estimate.lower_bound <= c.predicted * (1 + 1e-9));
              CHECK(c.predicted <= estimate.makespan * (1 + 1e-9));  // and the estimate is above it
              ++bounds_checked;
            }
            ++problems;
          }
  CHECK(problems > 100);
  CHECK(bounds_checked > 100);
  CHECK(spared > 50);  // bounding spared simulations
}

// 256 ranks: 16 sites of 16 ranks on nodes of `ranks_per_node` ranks, 25 us inside a
// site, 1-15 ms and 56-336 Mbit/s between sites (a grid as tools/sim/gridgen.py draws
// them, figures spread evenly instead of drawn); the slowest link's latency and time
// per byte.
namespace {
nlohmann::json sixteen_sites(double& slowest_alpha, double& slowest_beta, int ranks_per_node = 4) {
  constexpr int kSites = 16, kRanks = 256;
  nlohmann::json grid;
  slowest_alpha = slowest_beta = 0;
  for (int r = 0; r < kRanks; ++r) {
    grid["ranks"].push_back("s" + std::to_string(r / (kRanks / kSites)));
    grid["nodes"].push_back("n" + std::to_string(r / ranks_per_node));
  }
  for (int a = 0; a < kSites; ++a) {
    grid["links"]["s" + std::to_string(a)] = "hockney:alpha=25e-6,beta=8e-9";
    for (int b = a + 1; b < kSites; ++b) {
      const double f = static_cast<double>((a * kSites + b) % 17) / 16;  // 0 .. 1
      const double alpha = 1e-3 + 14e-3 * f, beta = 8.0 / (56e6 + 280e6 * (1 - f));
      slowest_alpha = std::max(slowest_alpha, alpha);
      slowest_beta = std::max(slowest_beta, beta);
      std::ostringstream spec;
      spec << std::setprecision(17) << "hockney:alpha=" << alpha << ",beta=" << beta;
      grid["links"]["s" + std::to_string(a) + "-s" + std::to_string(b)] = spec.str();
    }
  }
  return grid;
}
}  // namespace

TEST_CASE("Select: over a grid, a flat algorithm's estimate is priced as if every message took the slowest link",
          "[select]") {
  // A 1 MiB broadcast from rank 0 over sixteen_sites.
  double slowest_alpha = 0, slowest_beta = 0;
  const nlohmann::json grid = sixteen_sites(slowest_alpha, slowest_beta);
  Problem problem = make_problem(Collective::Bcast, 256, 0, 1 << 20, 1, true, 0, default_model());
  problem.topology = std::make_shared<const Topology>(topology_from_json(grid).topology);
  const CostModel worst = slowest_link(*problem.topology, problem.model, problem.bytes());
  CHECK(worst.alpha == Approx(slowest_alpha).epsilon(1e-5));
  CHECK(worst.beta == Approx(slowest_beta).epsilon(1e-5));
  CHECK(worst.gamma == problem.model.gamma);  // reductions follow the model inside a node

  std::vector<Choice> ranked = rank_choices(problem, Request{});
  REQUIRE(!ranked.empty());
  REQUIRE(ranked.front().exact);
  const auto estimate = std::find_if(ranked.begin(), ranked.end(), [](const Choice& c) { return !c.exact; });
  REQUIRE(estimate != ranked.end());
  INFO(estimate->algorithm << " estimated at " << estimate->predicted << " s; the best exact price "
                           << ranked.front().algorithm << " " << ranked.front().predicted << " s");
  // Every rank outside site 0 gets the whole megabyte across some wide-area link: no
  // flat schedule does it faster than the fastest link takes a 64th of it (the 16
  // sites' 15 links out of site 0, at most 4 nodes each sending at once).
  CHECK(estimate->predicted > 1e-3 + (1 << 20) / 64.0 * (8.0 / 336e6));
  // So auto does not trial it as the fastest by far (it did: scatter-allgather at 1024
  // ranks, estimated at 4.3 ms, ran 7.4 s a call).
  CHECK(bring_estimate_forward(ranked, 2) == 0);
}

TEST_CASE("Select: over a grid, no flat algorithm's price is below the bytes its schedule sends through one link",
          "[select]") {
  // 1 MiB reduce, broadcast and allreduce from or to rank 0 over sixteen_sites. Whatever
  // the order of its messages, a schedule cannot take less than the bytes it sends from
  // one site to another through their link, at that link's rate (topology.h,
  // busiest_link): a bound of the network, where the planner's simulator gives every
  // message between two clusters the link to itself. Before slowest_link, the estimates
  // were far below it (reduce-scatter-gather's reduce 0.72 ms against 121 ms,
  // scatter-allgather's broadcast 1.2 against 26, the ring's allreduce 1.4 against 227);
  // simulated, rabenseifner's reduce was priced 91 ms where the bound is 300 ms (and
  // SMPI measured 344 ms on such a grid: a site one node of 16 ranks, as here).
  double slowest_alpha = 0, slowest_beta = 0;
  const nlohmann::json grid = sixteen_sites(slowest_alpha, slowest_beta, 16);
  for (Collective collective : {Collective::Reduce, Collective::Bcast, Collective::Allreduce}) {
    Problem problem = make_problem(collective, 256, 0, 1 << 17, 8, true, 0, default_model());
    problem.topology = std::make_shared<const Topology>(topology_from_json(grid).topology);
    int estimates = 0, simulated = 0;
    for (const Choice& c : rank_choices(problem, Request{})) {
      const Algorithm* a = find_algorithm(collective, c.algorithm);
      REQUIRE(a);
      if (a->topology_aware) continue;
      const double bound = busiest_link(build_schedule(problem, c), *problem.topology);
      INFO(mpi_function_name(collective) << " " << c.algorithm << " (" << c.segment_bytes << " B segments, "
                                         << (c.exact ? "simulated" : "estimated") << ") priced " << c.predicted
                                         << " s; its bytes through one link take " << bound << " s");
      CHECK(bound > 0);
      CHECK(c.predicted >= bound);
      ++(c.exact ? simulated : estimates);
    }
    CHECK(estimates + simulated > 0);
  }
}
