// Langou, "Greedy Trees for MPI Reductions" (001_*.txt): the unidirectional greedy
// segmented reduction (the slides' C code Reduce_greedy), its theorem against the
// binomial, pipeline and binary trees, the nonuniform segmentation experiment, and
// the bidirectional greedy with its conjectured time.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <tuple>

#include "planner/cost_model.h"
#include "planner/greedy.h"
#include "planner/segments.h"
#include "support.h"

using namespace canopy::planner;
using namespace canopy::planner::testing;

namespace {

// One message of 001's C code: in round `round`, rank `from` sends segment `segment`
// to rank `to`.
struct RoundTransfer {
  int round, segment, from, to;
  bool operator<(const RoundTransfer& o) const {
    return std::tie(round, segment, from, to) < std::tie(o.round, o.segment, o.from, o.to);
  }
  bool operator==(const RoundTransfer& o) const {
    return std::tie(round, segment, from, to) == std::tie(o.round, o.segment, o.from, o.to);
  }
};

// 001's Reduce_greedy, line by line, with MPI_Send/MPI_Recv replaced by a record of
// who sends to whom in which round (every round is one unit of time when gamma = 0
// and the segments are equal).
std::vector<RoundTransfer> c_code_rounds(int pool_size, int q) {
  std::vector<RoundTransfer> out;
  std::vector<int> hist(q, pool_size);
  int qstart = 0, qend = 0, round = 0;
  while (hist[q - 1] > 1) {
    if (qstart != q - 1 && hist[qstart + 1] - hist[qstart] > 1) qstart++;
    for (int i = qstart; i >= qend; i--) {
      const int z = (i == 0) ? hist[0] / 2 : (hist[i] - hist[i - 1]) / 2;
      for (int my_rank = 0; my_rank < pool_size; ++my_rank)
        if (my_rank < hist[i] && my_rank >= hist[i] - z) out.push_back({round, i, my_rank, my_rank - z});
      hist[i] -= z;
      if (hist[i] == 1) {
        hist[i] = 0;
        qend++;
      }
    }
    ++round;
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<SegmentCost> equal_costs(int q, double transfer, double reduce) {
  return std::vector<SegmentCost>(q, SegmentCost{transfer, reduce, 0});
}

CostModel full_duplex(CostModel m) {
  m.duplex = Duplex::Full;
  return m;
}

// Rank ranges merged by a run whose position v is rank perm[v]: true when every
// combination joins two adjacent ranges (what a non-commutative operation needs).
bool keeps_rank_order(const GreedyRun& run, const std::vector<int>& perm) {
  std::vector<std::vector<std::pair<int, int>>> range(run.segments);
  for (auto& seg : range)
    for (int v = 0; v < run.nranks; ++v) seg.push_back({perm[v], perm[v]});
  for (const GreedyTransfer& t : run.transfers) {
    auto& mine = range[t.segment][t.to];
    const auto theirs = range[t.segment][t.from];
    if (theirs.second + 1 == mine.first) mine.first = theirs.first;
    else if (mine.second + 1 == theirs.first) mine.second = theirs.second;
    else return false;
  }
  return true;
}

// The best simulated makespan of an algorithm over the uniform layouts with
// q = 1..max_q segments (uniform_layout: segments of ceil(m/q) elements).
double best_uniform_time(const char* algorithm, Problem problem, int max_q) {
  double best = -1;
  for (int q = 1; q <= max_q && q <= problem.count; ++q) {
    problem.segment_counts = uniform_layout(problem.count, q);
    const double t = simulate_ok(plan_with(algorithm, problem), problem.model).makespan;
    if (best < 0 || t < best) best = t;
  }
  return best;
}

}  // namespace

TEST_CASE("Langou 001, C code Reduce_greedy: with gamma = 0 and equal segments the greedy makes "
          "exactly the C code's transfers, round by round",
          "[langou][greedy]") {
  for (int p = 1; p <= 40; ++p)
    for (int q = 1; q <= 8; ++q) {
      CAPTURE(p, q);
      const GreedyRun run = greedy_unidirectional(p, equal_costs(q, 1.0, 0.0));
      std::vector<RoundTransfer> mine;
      for (const GreedyTransfer& t : run.transfers) {
        REQUIRE(t.start == std::floor(t.start));  // every event on a round boundary
        mine.push_back({static_cast<int>(t.start), t.segment, t.from, t.to});
      }
      std::sort(mine.begin(), mine.end());
      const std::vector<RoundTransfer> reference = c_code_rounds(p, q);
      CHECK(mine == reference);
      const int rounds = reference.empty() ? 0 : reference.back().round + 1;
      CHECK(run.makespan == rounds);
    }
}

TEST_CASE("Langou 001, greedy tree with one segment and gamma = 0: ceil(log2 p)(alpha + beta m), "
          "the binomial time",
          "[langou][greedy]") {
  const CostModel model = hockney_model(3, 0.25, 0);
  for (int p = 1; p <= 64; ++p) {
    CAPTURE(p);
    const Problem problem = make_problem(Collective::Reduce, p, p / 3, 40, 1, true, 0, model);
    const double expected = ceil_log2(p) * (3 + 0.25 * 40);
    CHECK(simulate_ok(plan_with("greedy-segmented", problem), model).makespan == expected);
  }
}

TEST_CASE("Langou 001, greedy-segmented and greedy-bidirectional validate for p = 1..33, several "
          "roots, counts 0, 1, 7, 100, uniform and explicit layouts, non-commutative: declined "
          "(PlanError) for p >= 4, valid when accepted",
          "[langou][greedy][validate]") {
  const std::vector<CostModel> models = {hockney_model(1, 0.5, 0.25), default_model()};
  for (const char* algorithm : {"greedy-segmented", "greedy-bidirectional"})
    for (const CostModel& model : models)
      for (int p = 1; p <= 33; ++p)
        for (int root : roots_for(p))
          for (bool commutative : {true, false})
            for (std::int64_t count : {0, 1, 7, 100})
              for (std::int64_t seg : {0, 4, 12, 64}) {
                if (count == 100 && seg == 4) continue;  // 100 segments: slow, adds nothing
                const Problem problem = make_problem(Collective::Reduce, p, root, count, 4, commutative, seg, model);
                if (!commutative) {
                  bool declined = false;
                  try {
                    check_valid(plan_with(algorithm, problem));
                  } catch (const PlanError&) {
                    declined = true;
                  }
                  if (p >= 4 && count > 0) CHECK(declined);
                  continue;
                }
                const Schedule s = plan_with(algorithm, problem);
                check_valid(s);
                CHECK(s.algorithm == algorithm);
              }
  // A nonuniform layout is used as given.
  for (const char* algorithm : {"greedy-segmented", "greedy-bidirectional"})
    for (int p : {2, 5, 12, 17}) {
      Problem problem = make_problem(Collective::Reduce, p, p - 1, 10, 8, true, 0, hockney_model(1, 1, 1));
      problem.segment_counts = {3, 1, 4, 2};
      const Schedule s = plan_with(algorithm, problem);
      check_valid(s);
      CHECK(segment_counts_of(s.segments) == problem.segment_counts);
    }
}

TEST_CASE("Langou 001, greedy_schedule: every rank's steps in the order the construction starts them, "
          "ties in the order it makes them",
          "[langou][greedy]") {
  // The rule as greedy.h states it, kept here the simple way: every step with its time
  // (a transfer's send and receive at its start, the copy and the combination at its
  // reduce_start, the root's own copies at the makespan) and its creation number, each
  // rank's list sorted by both. greedy_schedule gets the same order by merging.
  struct Timed {
    double time;
    int created;
    StepKind kind;
    int peer, segment;
  };
  std::mt19937 rng(11);
  int runs = 0;
  for (bool bidirectional : {false, true})
    for (int p : {2, 3, 5, 8, 13, 31, 66})
      for (int trial = 0; trial < 4; ++trial) {
        // Uneven segments, and costs that make ties (0 transfer or reduce time) and near-ties.
        std::vector<std::int64_t> counts;
        for (std::int64_t left = 200; left > 0;) {
          const std::int64_t c = std::min<std::int64_t>(left, 1 + rng() % 60);
          counts.push_back(c);
          left -= c;
        }
        const CostModel model = trial == 0 ? hockney_model(1, 0, 0) : hockney_model(1e-6 * (1 + rng() % 3), 1e-9, 1e-9 * (rng() % 2));
        Problem problem = make_problem(Collective::Reduce, p, static_cast<int>(rng() % p), 200, 8, true, 0, model);
        problem.segment_counts = counts;
        const auto costs = segment_costs(problem_segments(problem), problem.element_bytes, problem.model);
        const GreedyRun run = bidirectional ? greedy_bidirectional(p, costs) : greedy_unidirectional(p, costs);
        const Schedule s = greedy_schedule(problem, run, "greedy-test");
        auto rank_of = [&](int v) { return (problem.root + v) % p; };
        std::vector<std::vector<Timed>> expected(p);
        std::vector<std::vector<char>> combined(p, std::vector<char>(counts.size(), 0));
        int created = 0;
        for (const GreedyTransfer& t : run.transfers) {
          const int from = rank_of(t.from), to = rank_of(t.to);
          expected[from].push_back({t.start, created++, StepKind::Send, to, t.segment});
          expected[to].push_back({t.start, created++, StepKind::Recv, from, t.segment});
          if (!combined[to][t.segment]) expected[to].push_back({t.reduce_start, created++, StepKind::Copy, -1, t.segment});
          combined[to][t.segment] = 1;
          expected[to].push_back({t.reduce_start, created++, StepKind::Reduce, -1, t.segment});
        }
        for (int j = 0; j < static_cast<int>(counts.size()); ++j)
          if (!combined[problem.root][j]) expected[problem.root].push_back({run.makespan, created++, StepKind::Copy, -1, j});
        for (int r = 0; r < p; ++r) {
          std::sort(expected[r].begin(), expected[r].end(), [](const Timed& a, const Timed& b) {
            return a.time < b.time || (a.time == b.time && a.created < b.created);
          });
          CAPTURE(bidirectional, p, trial, r);
          REQUIRE(s.steps[r].size() == expected[r].size());
          for (std::size_t i = 0; i < expected[r].size(); ++i) {
            CAPTURE(i);
            CHECK(s.steps[r][i].kind == expected[r][i].kind);
            CHECK(s.steps[r][i].segment == expected[r][i].segment);
            if (expected[r][i].peer >= 0) CHECK(s.steps[r][i].peer == expected[r][i].peer);
          }
        }
        ++runs;
      }
  CHECK(runs == 56);
}

TEST_CASE("Langou 001, greedy trees: the construction's own times are the simulator's, half duplex "
          "for the unidirectional greedy, full duplex for the bidirectional one (no overlap)",
          "[langou][greedy][simulate]") {
  for (double gamma : {0.0, 0.125, 1.0})
    for (double copy : {0.0, 0.0625})
      for (int p : {2, 3, 5, 8, 13, 32})
        for (const std::vector<std::int64_t>& layout :
             std::vector<std::vector<std::int64_t>>{{12}, {3, 3, 3, 3}, {5, 4, 2, 1}, {1, 2, 3, 6}}) {
          CAPTURE(gamma, copy, p, layout);
          CostModel half = hockney_model(2, 0.25, gamma);
          half.copy_per_byte = copy;
          Problem problem = make_problem(Collective::Reduce, p, 0, 12, 4, true, 0, half);
          problem.segment_counts = layout;
          const auto costs = segment_costs(problem_segments(problem), 4, half);
          const double uni = greedy_unidirectional(p, costs).makespan;
          CHECK(simulate_ok(plan_with("greedy-segmented", problem), half).makespan == Approx(uni).epsilon(1e-12));
          problem.model = full_duplex(half);
          const double bi = greedy_bidirectional(p, costs).makespan;
          CHECK(simulate_ok(plan_with("greedy-bidirectional", problem), problem.model).makespan ==
                Approx(bi).epsilon(1e-12));
          // With equal segments sending and receiving at once never hurt here. Both
          // constructions are greedy, not optimal: with decreasing segments (5,4,2,1) and
          // gamma = 1 the bidirectional one is slower for p = 3 (99 against 97) and p = 5.
          const bool equal = std::adjacent_find(layout.begin(), layout.end(), std::not_equal_to<>()) == layout.end();
          if (equal) CHECK(bi <= uni + 1e-9);
        }
}

TEST_CASE("Langou 001, greedy and rank order: the C code pairs rank r with r + z, so a "
          "non-commutative reduce is declined for p >= 4 and the unchecked schedule fails validation",
          "[langou][greedy][noncommutative]") {
  const CostModel model = hockney_model(1, 0.5, 0.25);
  for (const char* algorithm : {"greedy-segmented", "greedy-bidirectional"})
    for (int p = 1; p <= 12; ++p)
      for (int root = 0; root < p; ++root)
        for (std::int64_t count : {1, 7}) {
          CAPTURE(algorithm, p, root, count);
          const Problem problem = make_problem(Collective::Reduce, p, root, count, 4, false, 4, model);
          const Schedule unchecked = std::string(algorithm) == "greedy-segmented"
                                         ? greedy_segmented_schedule(problem, false)
                                         : greedy_bidirectional_schedule(problem, false);
          const Validation v = validate(unchecked);
          bool declined = false;
          try {
            check_valid(plan_with(algorithm, problem));
          } catch (const PlanError& e) {
            declined = true;
            CHECK(std::string(e.what()).find("out of rank order") != std::string::npos);
          }
          // The algorithm declines exactly the problems whose schedule the validator rejects.
          CHECK(declined == !v.ok);
          if (!v.ok) CHECK(v.summary().find("out of rank order") != std::string::npos);
          if (p >= 4) CHECK(declined);
        }
  // p = 4: rank 0's first operand is rank 2's.
  const Problem four = make_problem(Collective::Reduce, 4, 0, 1, 4, false, 0, model);
  check_rejected(greedy_segmented_schedule(four, false), "combines {2} with {0} out of rank order");
}

TEST_CASE("Langou 001, greedy and rank order: no relabelling of the ranks repairs it once the "
          "segments' trees differ (exhaustive: p = 6, q = 2 and p = 8, q = 3, p = 4, q = 1 has 8)",
          "[langou][greedy][noncommutative]") {
  auto relabellings = [](int p, int q) {
    const GreedyRun run = greedy_unidirectional(p, equal_costs(q, 1.0, 0.0));
    std::vector<int> perm(p);
    std::iota(perm.begin(), perm.end(), 0);
    int found = 0;
    do {
      found += keeps_rank_order(run, perm);
    } while (std::next_permutation(perm.begin(), perm.end()));
    return found;
  };
  CHECK(relabellings(4, 1) == 8);  // one segment: a binomial-like tree, 2^(p-1) orders
  CHECK(relabellings(4, 2) == 2);
  CHECK(relabellings(6, 2) == 0);
  CHECK(relabellings(8, 3) == 0);
}

TEST_CASE("Langou 001, theorem: with segments reduced in order the greedy is never slower than "
          "binomial, pipeline (chain) or binary, at the same segmentation and at each one's best "
          "uniform segmentation",
          "[langou][greedy][theorem]") {
  const char* others[] = {"binomial", "chain", "binary"};
  int points = 0;
  for (int p : {2, 3, 5, 7, 12, 16, 32})
    for (std::int64_t m : {1, 6, 24})
      for (double alpha : {0.0, 1.0, 10.0})
        for (double gamma : {0.0, 1.0}) {
          CAPTURE(p, m, alpha, gamma);
          const CostModel model = hockney_model(alpha, 1, gamma);
          Problem problem = make_problem(Collective::Reduce, p, 0, m, 1, true, 0, model);
          const int max_q = static_cast<int>(std::min<std::int64_t>(m, 12));
          std::vector<double> best(4, -1);
          for (int q = 1; q <= max_q; ++q) {
            problem.segment_counts = uniform_layout(m, q);
            const double greedy = simulate_ok(plan_with("greedy-segmented", problem), model).makespan;
            if (best[0] < 0 || greedy < best[0]) best[0] = greedy;
            for (int i = 0; i < 3; ++i) {
              const double t = simulate_ok(plan_with(others[i], problem), model).makespan;
              CAPTURE(q, others[i], t, greedy);
              CHECK(greedy <= t * (1 + 1e-12));
              if (best[i + 1] < 0 || t < best[i + 1]) best[i + 1] = t;
            }
          }
          for (int i = 0; i < 3; ++i) {
            CAPTURE(others[i]);
            CHECK(best[0] <= best[i + 1] * (1 + 1e-12));
          }
          ++points;
        }
  CHECK(points == 7 * 3 * 3 * 2);
}

TEST_CASE("Langou 001, nonuniform segmentation, sample table (m = 10, every composition): the best "
          "uniform and optimal layouts and percentages of the slides",
          "[langou][greedy][nonuniform]") {
  // The slides: p = 12, alpha = 0: 7.3%, best uniform (1,...,1), optimal (2,2,1,1,1,1,1,1);
  // p = 48, alpha = 1: 2.6%, (2,2,2,2,2), optimal (3,2,2,2,1) and (2,2,1,2,2,1);
  // p = 256, alpha = 5: 3.0%, (4,4,2), optimal (5,3,2); beta = gamma = 1 throughout.
  // (The slide prints nine ones for p = 12: they must sum to m = 10.) "Percent" is
  // T_uniform / T_optimal - 1, and "uniform" is the best over segment counts q.
  using Layout = std::vector<std::int64_t>;
  struct Row {
    int p;
    double alpha;
    Layout uniform;
    std::vector<Layout> optimal;
    double percent;
    double uniform_time, optimal_time;  // what this model gives, in units of beta
  };
  const Row rows[] = {
      {12, 0, Layout(10, 1), {{2, 2, 1, 1, 1, 1, 1, 1}}, 7.3, 44, 41},
      {48, 1, {2, 2, 2, 2, 2}, {{3, 2, 2, 2, 1}, {2, 2, 1, 2, 2, 1}}, 2.6, 79, 77},
      {256, 5, {4, 4, 2}, {{5, 3, 2}}, 3.0, 170, 165},
  };
  for (const Row& row : rows) {
    CAPTURE(row.p, row.alpha);
    const SegmentationSearch found = search_greedy_segmentations(row.p, 10, 1, hockney_model(row.alpha, 1, 1));
    CHECK(found.tried == 512);
    CHECK(found.best_uniform.counts == row.uniform);
    CHECK(found.best_uniform.time == row.uniform_time);
    REQUIRE(found.optimal.size() == row.optimal.size());
    for (std::size_t i = 0; i < row.optimal.size(); ++i) {
      CHECK(found.optimal[i].counts == row.optimal[i]);
      CHECK(found.optimal[i].time == row.optimal_time);
    }
    CHECK(std::round(found.percent() * 10) / 10 == Approx(row.percent));
  }
  // p = 256: segments of 6 elements, (6,4), are not one of the q-layouts (ceil(10/2) = 5)
  // and would beat (4,4,2) in this model (169 < 170); the slides compare with (4,4,2).
  const auto t = [](int p, double alpha, const std::vector<std::int64_t>& counts) {
    return greedy_unidirectional(p, segment_costs(segments_from_counts(counts), 1, hockney_model(alpha, 1, 1)))
        .makespan;
  };
  CHECK(t(256, 5, {6, 4}) == 169);
}

TEST_CASE("Langou 001, nonuniform segmentation: never worse than uniform, and for the pipeline "
          "uniform is already optimal (the slides' sample rows)",
          "[langou][greedy][nonuniform]") {
  for (int p : {2, 3, 7, 12, 20})
    for (std::int64_t m : {1, 4, 9})
      for (double alpha : {0.0, 2.0})
        for (double gamma : {0.0, 1.0}) {
          CAPTURE(p, m, alpha, gamma);
          const SegmentationSearch found = search_greedy_segmentations(p, m, 1, hockney_model(alpha, 1, gamma));
          CHECK(found.tried == (std::int64_t{1} << (m - 1)));
          REQUIRE_FALSE(found.optimal.empty());
          CHECK(found.optimal.front().time <= found.best_uniform.time);
          CHECK(found.percent() >= 0);
        }
  // "For pipeline, all trials were optimized by uniform segmentation": the chain over
  // every composition of m = 10 against its best uniform layout.
  for (auto [p, alpha] : {std::pair<int, double>{12, 0}, {48, 1}}) {
    CAPTURE(p, alpha);
    const CostModel model = hockney_model(alpha, 1, 1);
    Problem problem = make_problem(Collective::Reduce, p, 0, 10, 1, true, 0, model);
    const double uniform = best_uniform_time("chain", problem, 10);
    double best = uniform;
    for (std::int64_t mask = 0; mask < 512; ++mask) {
      std::vector<std::int64_t> counts;
      std::int64_t run = 0;
      for (int i = 0; i < 10; ++i) {
        ++run;
        if (i == 9 || (mask >> i & 1)) counts.push_back(run), run = 0;
      }
      problem.segment_counts = counts;
      best = std::min(best, simulate_ok(plan_with("chain", problem), model).makespan);
    }
    CHECK(best == uniform);
  }
}

TEST_CASE("Langou 001, bidirectional greedy: the conjectured (ceil(log2 p) + q - 1)(t_comm + t_comp) "
          "holds exactly for p = 2..40, q = 1..12, and past 64 ranks",
          "[langou][greedy][bidirectional]") {
  // Past 64 ranks the construction's rank sets take more than one 64-bit word.
  std::vector<int> ranks;
  for (int p = 2; p <= 40; ++p) ranks.push_back(p);
  for (int p : {63, 64, 65, 100, 128, 129, 200, 257}) ranks.push_back(p);
  for (double t_comp : {0.0, 0.5, 1.0})
    for (int p : ranks)
      for (int q = 1; q <= 12; ++q) {
        CAPTURE(t_comp, p, q);
        const GreedyRun run = greedy_bidirectional(p, equal_costs(q, 2.0, t_comp));
        CHECK(run.makespan == Approx((ceil_log2(p) + q - 1) * (2.0 + t_comp)).epsilon(1e-12));
      }
  // The same under the simulator, through the registered algorithm.
  const CostModel model = full_duplex(hockney_model(1, 0.25, 0.125));
  for (int p : {2, 3, 8, 13, 32})
    for (int q : {1, 3, 8}) {
      CAPTURE(p, q);
      const Problem problem = make_problem(Collective::Reduce, p, p / 2, 4 * q, 1, true, 4, model);
      const double step = 1 + 0.25 * 4 + 0.125 * 4;
      CHECK(simulate_ok(plan_with("greedy-bidirectional", problem), model).makespan ==
            Approx((ceil_log2(p) + q - 1) * step).epsilon(1e-12));
    }
}

TEST_CASE("Langou 001, bidirectional greedy (full duplex, no overlap): never slower than binomial, "
          "chain or binary at the same uniform segmentation nor at their best (measured, 001 "
          "states no theorem for it)",
          "[langou][greedy][bidirectional][theorem]") {
  const char* others[] = {"binomial", "chain", "binary"};
  for (int p : {2, 3, 5, 8, 12, 32})
    for (std::int64_t m : {1, 6, 24})
      for (double alpha : {0.0, 1.0, 10.0})
        for (double gamma : {0.0, 1.0}) {
          CAPTURE(p, m, alpha, gamma);
          const CostModel model = full_duplex(hockney_model(alpha, 1, gamma));
          Problem problem = make_problem(Collective::Reduce, p, 0, m, 1, true, 0, model);
          const int max_q = static_cast<int>(std::min<std::int64_t>(m, 12));
          const double greedy = best_uniform_time("greedy-bidirectional", problem, max_q);
          for (const char* other : others) {
            CAPTURE(other);
            CHECK(greedy <= best_uniform_time(other, problem, max_q) * (1 + 1e-12));
          }
          for (int q = 1; q <= max_q; ++q) {
            problem.segment_counts = uniform_layout(m, q);
            const double g = simulate_ok(plan_with("greedy-bidirectional", problem), model).makespan;
            for (const char* other : others) {
              CAPTURE(q, other);
              CHECK(g <= simulate_ok(plan_with(other, problem), model).makespan * (1 + 1e-12));
            }
          }
        }
}

TEST_CASE("Langou 001, segmentation search input checks", "[langou][nonuniform]") {
  CHECK_THROWS_AS(search_greedy_segmentations(4, 0, 1, hockney_model(1, 1, 1)), PlanError);
  CHECK_THROWS_AS(search_greedy_segmentations(4, 25, 1, hockney_model(1, 1, 1)), PlanError);
  CHECK_THROWS_AS(uniform_layout(5, 6), PlanError);
  CHECK(uniform_layout(10, 3) == std::vector<std::int64_t>{4, 4, 2});
  CHECK(uniform_layout(10, 4) == std::vector<std::int64_t>{3, 3, 3, 1});
  CHECK(uniform_layout(10, 6) == std::vector<std::int64_t>{2, 2, 2, 2, 2});  // no s gives exactly 6
  const SegmentationSearch one = search_greedy_segmentations(1, 3, 1, hockney_model(1, 1, 1));
  CHECK(one.best_uniform.time == 0);
  CHECK(one.percent() == 0);
}
