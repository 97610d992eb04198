// Large messages (issue 6): counts near INT_MAX elements and byte counts near the
// 64-bit limit. The executor sends each segment as one MPI message with an int count
// and tags it with its index, so every layout must keep segments within
// kMaxSegmentCount elements and kMaxSegments in number, and nothing may overflow.
#include <catch2/catch.hpp>

#include <climits>
#include <cstdint>

#include "planner/problem.h"
#include "planner/registry.h"
#include "planner/segments.h"
#include "planner/select.h"
#include "planner/validate.h"

using namespace canopy::planner;

namespace {

void check_fits_mpi(const std::vector<Segment>& segs, std::int64_t count) {
  std::int64_t next = 0;
  for (const Segment& s : segs) {
    REQUIRE(s.first == next);
    REQUIRE(s.count >= 1);
    REQUIRE(s.count <= INT_MAX);
    next += s.count;
  }
  CHECK(next == count);
  CHECK(static_cast<std::int64_t>(segs.size()) <= kMaxSegments);
}

}  // namespace

TEST_CASE("Large counts: a message over INT_MAX elements is split into int-sized segments, even unsegmented",
          "[segments][large]") {
  const std::int64_t int_max = INT_MAX;
  for (std::int64_t count : {int_max - 1, int_max, int_max + 1, 3 * (int_max + 1), (std::int64_t{1} << 40) + 3})
    for (std::int64_t seg : {std::int64_t{-1}, std::int64_t{0}, std::int64_t{1} << 20, std::int64_t{1} << 40}) {
      CAPTURE(count, seg);
      const auto segs = uniform_segments(count, 1, seg);
      check_fits_mpi(segs, count);
      if (count <= int_max && (seg <= 0 || seg >= count)) CHECK(segs.size() == 1);
      if (count > int_max) CHECK(segs.size() >= 2);
    }
  // The 2049 MiB broadcast of tests/shim/large_messages.c, planned in bytes.
  const auto two_gib = uniform_segments(std::int64_t{2049} << 20, 1, 0);
  check_fits_mpi(two_gib, std::int64_t{2049} << 20);
  CHECK(two_gib.size() == 2);
}

TEST_CASE("Large counts: the most kMaxSegments segments of kMaxSegmentCount can hold, and one more is refused",
          "[segments][large]") {
  const std::int64_t most = kMaxSegments * kMaxSegmentCount;
  const auto segs = uniform_segments(most, 1, 0);
  check_fits_mpi(segs, most);
  CHECK(static_cast<std::int64_t>(segs.size()) == kMaxSegments);
  CHECK_THROWS_AS(uniform_segments(most + 1, 1, 0), PlanError);
  // Near the 64-bit limit: refused, not overflowed.
  CHECK_THROWS_AS(uniform_segments(INT64_MAX, 1, 64), PlanError);
  CHECK_THROWS_AS(uniform_segments(INT64_MAX - 1, 8, 0), PlanError);
}

TEST_CASE("Large counts: a byte count that overflows 64 bits is a PlanError", "[problem][large]") {
  Problem p;
  p.nranks = 4;
  p.count = INT_MAX;
  p.element_bytes = std::int64_t{1} << 33;  // 2^64 bytes
  CHECK_THROWS_AS(check_problem(p), PlanError);
  CHECK_THROWS_AS(make_plan(p, Request{}), PlanError);
  p.element_bytes = std::int64_t{1} << 31;  // 2^62 bytes: representable
  CHECK_NOTHROW(check_problem(p));
}

TEST_CASE("Large counts: segment size candidates near INT64_MAX bytes stay positive and shrink", "[select][large]") {
  for (std::int64_t bytes : {INT64_MAX, INT64_MAX - 1, std::int64_t{1} << 62, std::int64_t{3} << 31}) {
    CAPTURE(bytes);
    const auto sizes = segment_candidates(bytes);
    REQUIRE(sizes.size() == 9);  // 0 and m/2 .. m/256
    CHECK(sizes[0] == 0);
    for (std::size_t i = 1; i < sizes.size(); ++i) {
      CHECK(sizes[i] > 0);
      CHECK(sizes[i] >= bytes / (std::int64_t{1} << i));
      CHECK(sizes[i] <= bytes / (std::int64_t{1} << i) + 1);
    }
  }
}

TEST_CASE("Large counts: every algorithm plans INT_MAX-element reduces and 3 GiB broadcasts the executor can send",
          "[select][large]") {
  for (const Algorithm& a : algorithms()) {
    if (a.topology_aware || a.wide_area) continue;  // they need a topology; test_hierarchy.cpp plans large counts with one
    if (a.staged) continue;          // their chunks are a staging entry at most: test_reduce_scatter_gather.cpp
    for (int p : {2, 5})
      for (std::int64_t element_bytes : {1, 8}) {
        Problem problem;
        problem.collective = a.collective;
        problem.nranks = p;
        problem.root = p - 1;
        // A reduce or allreduce: INT_MAX elements (MPI's largest count). A broadcast is planned in
        // bytes: 3 GiB (e.g. 3072 x a 1 MiB type).
        const bool reduces = a.collective != Collective::Bcast;  // a reduce or an allreduce
        problem.count = reduces ? INT_MAX : std::int64_t{3} << 30;
        problem.element_bytes = reduces ? element_bytes : 1;
        for (std::int64_t seg : {std::int64_t{-1}, std::int64_t{0}}) {
          CAPTURE(a.name, to_string(a.collective), p, element_bytes, seg);
          Request request;
          request.algorithm = a.name;
          request.segment_bytes = seg;
          const Plan plan = make_plan(problem, request);  // validated: segments fit the executor
          check_fits_mpi(plan.schedule.segments, problem.count);
          CHECK(plan.schedule.bytes() == problem.count * problem.element_bytes);
          CHECK(plan.predicted > 0);
        }
      }
  }
}

TEST_CASE("Large counts: the validator rejects a segment over INT_MAX elements", "[validate][large]") {
  Problem problem;
  problem.collective = Collective::Bcast;
  problem.nranks = 2;
  problem.count = std::int64_t{INT_MAX} + 10;
  Request request;
  request.algorithm = "binomial";
  request.segment_bytes = 0;
  Schedule s = make_plan(problem, request).schedule;
  REQUIRE(s.segments.size() == 2);
  CHECK(validate(s));
  // Merge the two segments into one the executor could not send.
  s.segments = {{0, problem.count}};
  std::vector<Step> kept;
  for (auto& steps : s.steps) {
    kept.clear();
    for (const Step& st : steps)
      if (st.segment == 0) kept.push_back(st);
    steps = kept;
  }
  const Validation v = validate(s);
  REQUIRE_FALSE(v);
  CHECK(v.summary().find("more than one MPI message can") != std::string::npos);
}
