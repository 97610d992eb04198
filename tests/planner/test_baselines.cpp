// The baseline reduce trees of Langou's slides (001_*.txt): flat (derived here),
// pipeline (chain) and binary, in the unidirectional model (hockney, half duplex, no
// overlap): validity for every shape of problem, closed forms, and rank order.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "planner/cost_model.h"
#include "planner/segments.h"
#include "planner/tree.h"
#include "support.h"

using namespace canopy::planner;
using namespace canopy::planner::testing;

namespace {

// Full duplex with prefetch, half duplex with overlap (Canon & Antoniu), and Langou's
// unidirectional system: the three shapes tree_reduce_schedule emits.
std::vector<CostModel> reduce_models() { return {default_model(), overlap_model(1, 2), hockney_model(1, 0.5, 0.25)}; }

// N = ceil(log2(p + 1)): the levels of a complete binary tree of p nodes.
int levels(int p) { return ceil_log2(p + 1); }

// Every subtree of `t` is a contiguous rank range and each rank combines its children
// so that its accumulator stays one: the shape a non-commutative reduce needs.
void check_rank_ordered(const Tree& t) {
  const int p = t.size();
  std::vector<int> lo(p), hi(p);
  std::function<void(int)> walk = [&](int r) {
    lo[r] = hi[r] = r;
    for (int c : t.children[r]) {
      walk(c);
      CAPTURE(r, c, lo[r], hi[r], lo[c], hi[c]);
      const bool left = hi[c] + 1 == lo[r], right = hi[r] + 1 == lo[c];
      CHECK((left || right));
      lo[r] = std::min(lo[r], lo[c]);
      hi[r] = std::max(hi[r], hi[c]);
    }
  };
  walk(t.root);
  CHECK(lo[t.root] == 0);
  CHECK(hi[t.root] == p - 1);
}

}  // namespace

TEST_CASE("flat, chain and binary reduce validate for p = 1..33, several roots (all for p <= 9), "
          "commutative and non-commutative, counts 0, 1, 7, 100 and several segment sizes",
          "[baselines][validate]") {
  const std::int64_t element_bytes = 4;
  for (const char* algorithm : {"flat", "chain", "binary"})
    for (const CostModel& model : reduce_models())
      for (int p = 1; p <= 33; ++p)
        for (int root : roots_for(p))
          for (bool commutative : {true, false})
            for (std::int64_t count : {0, 1, 7, 100})
              for (std::int64_t seg : {std::int64_t{0}, element_bytes, 3 * element_bytes, 16 * element_bytes}) {
                if (count == 100 && seg == element_bytes) continue;  // 100 segments: slow, adds nothing
                const Problem problem =
                    make_problem(Collective::Reduce, p, root, count, element_bytes, commutative, seg, model);
                const Schedule s = plan_with(algorithm, problem);
                CHECK(s.algorithm == algorithm);
                check_valid(s);
              }
}

TEST_CASE("flat, chain and binary reduce: the non-commutative trees are rank ordered and rooted at "
          "the root itself (no forwarding message)",
          "[baselines][noncommutative]") {
  const CostModel model = hockney_model(1, 0, 0);
  for (const char* algorithm : {"flat", "chain", "binary"})
    for (int p = 1; p <= 20; ++p)
      for (int root = 0; root < p; ++root) {
        CAPTURE(algorithm, p, root);
        const Schedule s = plan_with(algorithm, make_problem(Collective::Reduce, p, root, 1, 4, false, 0, model));
        const Tree t = tree_of(s);
        REQUIRE_NOTHROW(t.check());
        CHECK(t.root == root);
        check_rank_ordered(t);
      }
}

TEST_CASE("Flat reduce (derived for 001's unidirectional model): (p-1)(q alpha + (beta + gamma) m), "
          "any root, either operation kind",
          "[baselines][closed-form]") {
  // Dyadic numbers: every sum the simulator forms is exact.
  const double alpha = 3, beta = 0.25, gamma = 0.125;
  const CostModel model = hockney_model(alpha, beta, gamma);
  const std::int64_t per = 4;  // elements (bytes) per segment
  for (int p = 1; p <= 24; ++p)
    for (int root : {0, p / 2, p - 1})
      for (bool commutative : {true, false})
        for (int q : {1, 2, 5}) {
          CAPTURE(p, root, commutative, q);
          const Problem problem = make_problem(Collective::Reduce, p, root, q * per, 1, commutative, per, model);
          const double m = static_cast<double>(q * per);
          CHECK(simulate_ok(plan_with("flat", problem), model).makespan == (p - 1) * (q * alpha + (beta + gamma) * m));
        }
}

TEST_CASE("Chain reduce = Langou 001's pipeline: ((p-1) + 2(q-1))(alpha + beta s) exactly with "
          "gamma = 0, any root, with gamma > 0 the exact critical path "
          "(p-1)(T+G) + (q-1)(2T+G), below Langou's ((p-1) + 2(q-1))(T + G)",
          "[baselines][closed-form][pipeline]") {
  const double alpha = 3, beta = 0.25;
  for (double gamma : {0.0, 0.125})
    for (int p = 2; p <= 24; ++p)
      for (int root : {0, 1, p / 2, p - 1})
        for (bool commutative : {true, false}) {
          // A non-commutative chain with the root inside has two arms (below).
          if (!commutative && root != 0 && root != p - 1) continue;
          for (int q : {1, 2, 3, 8})
            for (std::int64_t per : {1, 8}) {
              CAPTURE(gamma, p, root, commutative, q, per);
              const CostModel model = hockney_model(alpha, beta, gamma);
              const Problem problem =
                  make_problem(Collective::Reduce, p, root, q * per, 1, commutative, per, model);
              const double T = alpha + beta * per, G = gamma * per;
              const double makespan = simulate_ok(plan_with("chain", problem), model).makespan;
              const double langou = ((p - 1) + 2.0 * (q - 1)) * (T + G);
              if (p == 2) {
                CHECK(makespan == q * (T + G));  // no forwarding rank: the root's port serves q transfers
                continue;
              }
              CHECK(makespan == (p - 1) * (T + G) + (q - 1) * (2 * T + G));
              CHECK(makespan <= langou);
              if (gamma == 0) CHECK(makespan == langou);
            }
        }
}

TEST_CASE("Chain reduce, full duplex (003's pipelined reduce, (T_start + n/m T_byte)(p + m - 2)): "
          "(p-1 + q-1)(alpha + beta s) with gamma = 0, with or without overlap",
          "[baselines][closed-form][pipeline]") {
  for (bool overlap : {false, true})
    for (int p = 2; p <= 20; ++p)
      for (int q : {1, 2, 5, 9}) {
        CAPTURE(overlap, p, q);
        CostModel model = hockney_model(3, 0.25, 0);
        model.duplex = Duplex::Full;
        model.overlap = overlap;
        const Problem problem = make_problem(Collective::Reduce, p, p / 2, 4 * q, 1, true, 4, model);
        CHECK(simulate_ok(plan_with("chain", problem), model).makespan == (p - 1 + q - 1) * (3 + 0.25 * 4));
      }
}

TEST_CASE("Chain reduce, non-commutative, root inside: two rank-ordered arms, operands from the "
          "right above the root and from the left below it",
          "[baselines][noncommutative][pipeline]") {
  const CostModel model = hockney_model(1, 0, 0);
  for (int p = 3; p <= 12; ++p)
    for (int root = 1; root + 1 < p; ++root) {
      CAPTURE(p, root);
      const Schedule s = plan_with("chain", make_problem(Collective::Reduce, p, root, 3, 4, false, 4, model));
      const Tree t = tree_of(s);
      for (int r = 0; r < p; ++r) {
        if (r < root) CHECK(t.parent[r] == r + 1);
        if (r > root) CHECK(t.parent[r] == r - 1);
        // Half duplex, one segment buffer per child: slot i holds child i's operand.
        for (const Step& st : s.steps[r])
          if (st.kind == StepKind::Reduce) CHECK(st.incoming_is_left == (t.children[r][st.slot] < r));
      }
      // The root's first operand is the shorter arm's.
      const int first = t.children[root].front();
      CHECK(first == (root <= p - 1 - root ? root - 1 : root + 1));
      // Both arms pipeline into the root: no slower than one chain through it plus its second arm.
      const double one_chain = simulate_ok(plan_with("chain", make_problem(Collective::Reduce, p, 0, 3, 4, false, 4, model)), model).makespan;
      CHECK(simulate_ok(s, model).makespan <= one_chain);
    }
}

TEST_CASE("Binary reduce (Langou 001): (2(N-1) + 4(q-1))(alpha + beta s + gamma s), N = "
          "ceil(log2(p+1)), bounds every case and is exact for q = 1 on perfect trees, there the "
          "exact form is 2(N-1)(T+G) + (q-1)(3T+2G)",
          "[baselines][closed-form][binary]") {
  const double alpha = 1, beta = 0.25;
  for (double gamma : {0.0, 0.5})
    for (int p = 1; p <= 40; ++p)
      for (int root : {0, p / 2, p - 1})
        for (bool commutative : {true, false})
          for (int q : {1, 2, 3, 7}) {
            CAPTURE(gamma, p, root, commutative, q);
            const CostModel model = hockney_model(alpha, beta, gamma);
            const std::int64_t per = 4;
            const Problem problem = make_problem(Collective::Reduce, p, root, q * per, 1, commutative, per, model);
            const double T = alpha + beta * per, G = gamma * per;
            const int N = levels(p);
            const double langou = (2 * (N - 1) + 4 * (q - 1)) * (T + G);
            const double makespan = simulate_ok(plan_with("binary", problem), model).makespan;
            CHECK(makespan <= langou);
            const bool perfect = p == (1 << N) - 1;
            if (!perfect || (!commutative && root != 0)) continue;
            if (q == 1) CHECK(makespan == langou);
            // Per segment an inner rank receives twice, combines twice and sends once; the
            // root of a 3-rank tree only receives and combines twice.
            if (p >= 7) CHECK(makespan == 2 * (N - 1) * (T + G) + (q - 1) * (3 * T + 2 * G));
            if (p == 3) CHECK(makespan == 2 * q * (T + G));
          }
}

TEST_CASE("Binary tree shape: a complete binary tree, depth floor(log2 p), at most two children, "
          "the same shape for every root of a commutative reduce",
          "[baselines][binary]") {
  const CostModel model = hockney_model(1, 0, 0);
  for (int p = 1; p <= 64; ++p)
    for (int root : {0, p / 2, p - 1}) {
      CAPTURE(p, root);
      const Tree t = tree_of(plan_with("binary", make_problem(Collective::Reduce, p, root, 1, 4, true, 0, model)));
      REQUIRE_NOTHROW(t.check());
      CHECK(t.root == root);
      CHECK(depth(t) == levels(p) - 1);
      std::vector<int> per_level(levels(p) + 1, 0);
      for (int r = 0; r < p; ++r) {
        CHECK(t.children[r].size() <= 2u);
        int d = 0;
        for (int x = r; x != t.root; x = t.parent[x]) ++d;
        ++per_level[d];
      }
      // Complete: every level but the last is full.
      for (int d = 0; d + 1 < levels(p); ++d) CHECK(per_level[d] == (1 << d));
    }
}

TEST_CASE("flat, chain, binary honour an explicit nonuniform layout (Problem::segment_counts)",
          "[baselines][segments]") {
  for (const char* algorithm : {"binomial", "flat", "chain", "binary"})
    for (Collective c : {Collective::Reduce, Collective::Bcast})
      for (const CostModel& model : {default_model(), hockney_model(1, 0.5, 0.25)}) {
        CAPTURE(algorithm, to_string(c));
        Problem problem = make_problem(c, 7, 2, 12, 4, true, 8, model);
        problem.segment_counts = {5, 1, 4, 2};
        const Schedule s = plan_with(algorithm, problem);
        check_valid(s);
        CHECK(segment_counts_of(s.segments) == problem.segment_counts);
        problem.segment_counts = {5, 1, 4};  // sums to 10, not 12
        CHECK_THROWS_AS(plan_with(algorithm, problem), PlanError);
      }
}
