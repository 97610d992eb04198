// Helpers shared by the planner unit tests (header only; the test glob picks up *.cpp).
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "planner/problem.h"
#include "planner/registry.h"
#include "planner/schedule.h"
#include "planner/simulate.h"
#include "planner/tree.h"
#include "planner/validate.h"

namespace canopy::planner::testing {

// Counts loop failures and keeps the first few, so a sweep over thousands of
// instances is one assertion that still names what failed.
struct Sweep {
  int failures = 0;
  std::string first;
  void check(bool ok, const std::string& what) {
    if (ok) return;
    if (failures++ < 3) first += what + "\n";
  }
};

// ceil(log2 p) for p >= 1, in integers (no floating-point rounding at powers of two).
inline int ceil_log2(int p) {
  int k = 0;
  while ((1 << k) < p) ++k;
  return k;
}

inline Problem make_problem(Collective collective, int nranks, int root, std::int64_t count,
                            std::int64_t element_bytes, bool commutative, std::int64_t segment_bytes,
                            const CostModel& model) {
  Problem p;
  p.collective = collective;
  p.nranks = nranks;
  p.root = root;
  p.count = count;
  p.element_bytes = element_bytes;
  p.commutative = commutative;
  p.segment_bytes = segment_bytes;
  p.model = model;
  return p;
}

inline Schedule plan_with(const char* name, const Problem& problem) {
  const Algorithm* a = find_algorithm(problem.collective, name);
  REQUIRE(a != nullptr);
  return a->plan(problem);
}

inline std::string label(const Schedule& s) {
  return std::string(to_string(s.collective)) + " " + s.algorithm + " p=" + std::to_string(s.nranks) +
         " root=" + std::to_string(s.root) + " count=" + std::to_string(s.count) + " x " +
         std::to_string(s.element_bytes) + " B, " + std::to_string(s.segments.size()) + " segments" +
         (s.commutative ? "" : ", non-commutative");
}

// Counts one assertion per schedule and, on failure, reports the validator's summary.
inline void check_valid(const Schedule& s) {
  const Validation v = validate(s);
  CHECKED_ELSE(v.ok) { FAIL_CHECK(label(s) << ": " << v.summary()); }
}

// Validates and expects a failure whose summary mentions `needle`.
inline void check_rejected(const Schedule& s, const std::string& needle) {
  const Validation v = validate(s);
  INFO("validator says: " << (v.ok ? std::string("ok") : v.summary()));
  CHECK_FALSE(v.ok);
  CHECK_FALSE(v.errors.empty());
  CHECK(v.summary().find(needle) != std::string::npos);
}

// Fibonacci numbers with F(1) = F(2) = 1.
inline std::int64_t fibonacci(int n) {
  std::int64_t a = 0, b = 1;  // F(0), F(1)
  for (int i = 0; i < n; ++i) {
    const std::int64_t next = a + b;
    a = b;
    b = next;
  }
  return a;
}

// Every root for small communicators, else the first, a middle and the last rank.
inline std::vector<int> roots_for(int p) {
  if (p <= 9) {
    std::vector<int> all(p);
    std::iota(all.begin(), all.end(), 0);
    return all;
  }
  return {0, p / 2, p - 1};
}

// Simulates and requires the model to run the schedule, naming it if not.
inline Simulation simulate_ok(const Schedule& s, const CostModel& model) {
  const Simulation sim = simulate(s, model);
  INFO(label(s) << " under " << model.spec() << ": " << sim.error);
  REQUIRE(sim.ok);
  return sim;
}

// Edges on the longest path from a rank to the root.
inline int depth(const Tree& t) {
  int deepest = 0;
  for (int r = 0; r < t.size(); ++r) {
    int d = 0;
    for (int x = r; x != t.root; x = t.parent[x]) ++d;
    deepest = std::max(deepest, d);
  }
  return deepest;
}

}  // namespace canopy::planner::testing
