// Tree prices without simulation (planner/tree_price.h) against simulate(): equal,
// up to rounding, under full duplex with overlap, on random trees, the fixed families
// and long chains, with uniform and nonuniform segments, hockney and pLogP.
#include <catch2/catch.hpp>

#include <random>

#include "planner/segments.h"
#include "planner/tree_price.h"
#include "support.h"

using namespace canopy::planner;
using namespace canopy::planner::testing;

namespace {

bool close(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max({1e-30, std::abs(a), std::abs(b)}); }

// A random full-duplex overlapping model: hockney with any of its parameters large or
// small (copies slower than transfers included), or pLogP with a few gap points.
CostModel random_model(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  auto pick = [&](double lo, double hi) { return lo * std::pow(hi / lo, u(rng)); };
  CostModel m;
  if (u(rng) < 0.7) {
    m = hockney_model(pick(1e-7, 1e-4), pick(1e-11, 1e-8), u(rng) < 0.2 ? 0.0 : pick(1e-11, 1e-8));
    m.copy_per_byte = u(rng) < 0.3 ? 0.0 : pick(1e-11, 1e-8);
    m.reduce_fixed = u(rng) < 0.7 ? 0.0 : pick(1e-7, 1e-5);
  } else {
    m = plogp_model(pick(1e-7, 1e-4), {{1, pick(1e-7, 1e-5)}, {4096, pick(2e-6, 1e-4)}, {1 << 20, pick(1e-4, 1e-2)}});
    m.gamma = pick(1e-11, 1e-8);
    m.copy_per_byte = pick(1e-11, 1e-8);
  }
  m.duplex = Duplex::Full;
  m.overlap = true;
  return m;
}

// A random tree over p ranks: random parents (each rank below a random earlier one,
// in a shuffled numbering), children in random order; rooted at `root`.
Tree random_tree(int p, int root, std::mt19937_64& rng) {
  std::vector<int> label(p);
  std::iota(label.begin(), label.end(), 0);
  std::swap(label[0], label[root]);
  std::shuffle(label.begin() + 1, label.end(), rng);
  std::vector<int> parent(p, -1);
  for (int i = 1; i < p; ++i) {
    // Mostly shallow, sometimes a long chain: both shapes matter to the recurrence.
    const int up = std::uniform_int_distribution<int>(0, 9)(rng) < 3 ? i - 1 : std::uniform_int_distribution<int>(0, i - 1)(rng);
    parent[label[i]] = label[up];
  }
  std::vector<int> order(p);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  return tree_from_parents(root, parent, order);
}

Problem problem_for(Collective c, int p, int root, std::int64_t count, std::int64_t seg, const CostModel& m) {
  return make_problem(c, p, root, count, 8, true, seg * 8, m);
}

}  // namespace

TEST_CASE("Tree prices equal the simulator on random trees, models and segmentations", "[tree-price]") {
  std::mt19937_64 rng(20261124);
  Sweep sweep;
  int compared = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    const int p = std::uniform_int_distribution<int>(1, 40)(rng);
    const int root = std::uniform_int_distribution<int>(0, p - 1)(rng);
    const CostModel model = random_model(rng);
    const std::int64_t count = std::uniform_int_distribution<std::int64_t>(0, 4000)(rng);
    Problem problem = problem_for(Collective::Reduce, p, root, count, 0, model);
    // Uniform segments (a shorter last one), or an explicit nonuniform layout.
    if (count > 0 && trial % 3 == 0) {
      std::int64_t left = count;
      while (left > 0) {
        const std::int64_t n = std::min(left, std::uniform_int_distribution<std::int64_t>(1, count / 3 + 1)(rng));
        problem.segment_counts.push_back(n);
        left -= n;
      }
    } else {
      problem.segment_bytes = 8 * std::uniform_int_distribution<std::int64_t>(0, 900)(rng);
    }
    const Tree tree = random_tree(p, root, rng);
    const ShapeTree shapes = shapes_of(tree, false);
    CHECK(shapes.size(shapes.root) == p);
    const std::vector<Segment> segments = problem_segments(problem);
    for (Collective c : {Collective::Reduce, Collective::Bcast}) {
      problem.collective = c;
      const Schedule s = c == Collective::Reduce ? tree_reduce_schedule(problem, tree, "random")
                                                 : tree_bcast_schedule(problem, tree, "random");
      const Simulation sim = simulate(s, model);
      REQUIRE(sim.ok);
      const double price = c == Collective::Reduce ? price_tree_reduce(shapes, segments, 8, model)
                                                   : price_tree_bcast(shapes, segments, 8, model);
      sweep.check(close(price, sim.makespan), std::string(to_string(c)) + " p=" + std::to_string(p) + " q=" +
                                                  std::to_string(segments.size()) + " " + model.spec() + ": price " +
                                                  std::to_string(price) + ", simulated " + std::to_string(sim.makespan));
      ++compared;
    }
  }
  INFO(sweep.first);
  CHECK(sweep.failures == 0);
  CHECK(compared == 3000);
}

TEST_CASE("The families' shape trees price their algorithms' schedules exactly: every root, "
          "both operation kinds, p = 1..70",
          "[tree-price]") {
  std::mt19937_64 rng(20261125);
  Sweep sweep;
  for (int p = 1; p <= 70; ++p)
    for (int root : roots_for(p))
      for (bool commutative : {true, false}) {
        const CostModel model = random_model(rng);
        const std::int64_t seg = std::uniform_int_distribution<std::int64_t>(0, 300)(rng);
        for (Collective c : {Collective::Reduce, Collective::Bcast}) {
          if (c == Collective::Bcast && !commutative) continue;
          Problem problem = problem_for(c, p, root, 1000, seg, model);
          problem.commutative = commutative;
          const std::vector<Segment> segments = problem_segments(problem);
          const bool reduce = c == Collective::Reduce;
          std::vector<std::pair<const char*, ShapeTree>> families = {
              {"binomial", reduce ? binomial_shapes(p, false) : binomial_shapes(p, true)},
              {"binary", reduce && !commutative ? binary_two_sided_shapes(p, root) : binary_shapes(p)},
              {"chain", reduce && !commutative ? two_arm_chain_shapes(p, root) : chain_shapes(p)},
              {"flat", flat_shapes(p)}};
          // The rank-ordered binomial reduce is rooted at rank 0 and forwards.
          families[0].second.forwards = reduce && !commutative && root != 0;
          for (const auto& [name, shapes] : families) {
            CHECK(shapes.size(shapes.root) == p);
            const Simulation sim = simulate(plan_with(name, problem), model);
            REQUIRE(sim.ok);
            const double price = reduce ? price_tree_reduce(shapes, segments, 8, model)
                                        : price_tree_bcast(shapes, segments, 8, model);
            sweep.check(close(price, sim.makespan), std::string(name) + " " + to_string(c) + " p=" +
                                                        std::to_string(p) + " root=" + std::to_string(root) +
                                                        (commutative ? "" : " non-commutative") + ": price " +
                                                        std::to_string(price) + ", simulated " +
                                                        std::to_string(sim.makespan));
          }
        }
      }
  INFO(sweep.first);
  CHECK(sweep.failures == 0);
}

TEST_CASE("Long chains: the shift taken past the first levels is the simulator's", "[tree-price]") {
  std::mt19937_64 rng(20261126);
  for (int trial = 0; trial < 6; ++trial) {
    const int p = trial % 2 ? 1500 : 600;
    const CostModel model = random_model(rng);
    for (Collective c : {Collective::Reduce, Collective::Bcast}) {
      const Problem problem = problem_for(c, p, p / 3, 4000, 250, model);  // 16 segments
      const Simulation sim = simulate(plan_with("chain", problem), model);
      REQUIRE(sim.ok);
      const double price = c == Collective::Reduce ? price_tree_reduce(chain_shapes(p), problem_segments(problem), 8, model)
                                                   : price_tree_bcast(chain_shapes(p), problem_segments(problem), 8, model);
      CAPTURE(to_string(c), p, model.spec());
      CHECK(close(price, sim.makespan));
    }
  }
}

TEST_CASE("Shape trees stay small: O(log p) shapes for binomial and binary, one path for a chain", "[tree-price]") {
  const std::int64_t p = std::int64_t{1} << 24;
  for (std::int64_t n : {p, p - 1, p / 3 + 7}) {
    CHECK(binomial_shapes(n, false).shapes.size() <= 80);
    CHECK(binary_shapes(n).shapes.size() <= 80);
    CHECK(binomial_shapes(n, true).size(binomial_shapes(n, true).root) == n);
    CHECK(binary_shapes(n).size(binary_shapes(n).root) == n);
  }
  CHECK(chain_shapes(p).shapes.size() == 2);
  CHECK(flat_shapes(p).shapes.size() == 2);
  CHECK(chain_shapes(1).root == 0);
}

TEST_CASE("Langou's unidirectional model: the families' paper forms price them as estimates, equal to the "
          "simulator where the papers' forms are exact (equal segments, no copy cost)",
          "[tree-price][unidirectional]") {
  // 001's system: hockney, half duplex, no overlap. Chain: (p-1)(T+G) + (q-1)(2T+G) for
  // p >= 3; flat: (p-1) q (T+G); binary on perfect trees of p >= 7: 2(N-1)(T+G) +
  // (q-1)(3T+2G); binomial unsegmented: ceil(log2 p)(T+G). Bcast (G = 0): chain
  // ((p-1) + 2(q-1)) T; flat (p-1) q T; binary (2(N-1) + 3(q-1)) T; binomial unsegmented
  // ceil(log2 p) T.
  const CostModel model = hockney_model(3, 0.25, 0.125);
  Sweep sweep;
  for (Collective c : {Collective::Reduce, Collective::Bcast})
    for (const char* name : {"chain", "flat", "binary", "binomial"})
      for (int p : {3, 4, 7, 15, 16, 31})
        for (int q : {1, 2, 5}) {
          const bool perfect = ((p + 1) & p) == 0;
          if (std::string(name) == "binary" && !(perfect && p >= 7)) continue;
          if (std::string(name) == "binomial" && q > 1) continue;
          const Problem problem = make_problem(c, p, 0, 8 * q, 1, true, 8, model);
          const Algorithm* a = find_algorithm(c, name);
          const Price price = a->price(problem);
          const double simulated = simulate_ok(a->plan(problem), model).makespan;
          sweep.check(!price.exact && close(price.makespan, simulated),
                      std::string(name) + " " + to_string(c) + " p=" + std::to_string(p) + " q=" + std::to_string(q) +
                          ": price " + std::to_string(price.makespan) + ", simulated " + std::to_string(simulated));
        }
  INFO(sweep.first);
  CHECK(sweep.failures == 0);
}
