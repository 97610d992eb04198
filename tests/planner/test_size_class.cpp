// Size classes (planner/size_class.h): every size falls in exactly one class, classes
// tile the sizes in order, each at most a quarter octave wide, and a class's layout
// scales to any count of the class without empty or oversized segments.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "planner/registry.h"
#include "planner/segments.h"
#include "planner/size_class.h"
#include "planner/validate.h"

using namespace canopy::planner;

TEST_CASE("Size classes tile the sizes: exact up to 64 bytes, then quarter octaves", "[size-class]") {
  for (std::int64_t b = 0; b <= 64; ++b) {
    CHECK(size_class(b) == b);
    CHECK(class_first_bytes(size_class(b)) == b);
    CHECK(class_last_bytes(size_class(b)) == b);
  }
  // Consecutive classes meet without a gap, each at most 2^(1/4) wide.
  int classes = 0;
  for (int c = 64; class_last_bytes(c) < std::numeric_limits<std::int64_t>::max(); ++c, ++classes) {
    CAPTURE(c, class_first_bytes(c), class_last_bytes(c));
    REQUIRE(class_last_bytes(c) >= class_first_bytes(c));
    CHECK(class_first_bytes(c + 1) == class_last_bytes(c) + 1);
    CHECK(size_class(class_first_bytes(c)) == c);
    CHECK(size_class(class_last_bytes(c)) == c);
    // 2^(1/4) wide, give or take the rounding of both ends to whole bytes.
    if (c > 65) CHECK(class_last_bytes(c) + 1 - class_first_bytes(c) <= 0.18921 * class_first_bytes(c) + 1);
  }
  CHECK(classes < 250);  // every int64 size in under 250 classes
  CHECK(size_class(1 << 20) - size_class(1 << 10) == 40);  // four per octave
  CHECK(class_first_bytes(size_class(1 << 20)) == 1 << 20);
  std::mt19937_64 rng(7);
  for (int i = 0; i < 100000; ++i) {
    const std::int64_t b = static_cast<std::int64_t>(rng() >> (1 + rng() % 62));
    const int c = size_class(b);
    INFO(b);
    CHECK(class_first_bytes(c) <= b);
    CHECK(b <= class_last_bytes(c));
  }
}

TEST_CASE("rescale_segments keeps the number of segments and covers the new count", "[size-class]") {
  std::mt19937_64 rng(8);
  int refused = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const std::int64_t from = 1 + static_cast<std::int64_t>(rng() % 5000000);
    const std::int64_t seg_bytes = 1 + static_cast<std::int64_t>(rng() % (from + 1));
    const std::vector<Segment> layout = uniform_segments(from, 1, seg_bytes);
    // A count of the same class: within about 19% of `from`.
    const std::int64_t to = std::max<std::int64_t>(1, from + static_cast<std::int64_t>((static_cast<double>(rng() % 1000) / 1000 - 0.5) * 0.38 * from));
    std::vector<Segment> out;
    if (!rescale_segments(layout, from, to, out)) {
      ++refused;
      CHECK(static_cast<std::int64_t>(layout.size()) > to / 2);  // only when segments hold about one element
      continue;
    }
    REQUIRE(out.size() == layout.size());
    std::int64_t next = 0;
    for (const Segment& s : out) {
      CHECK(s.first == next);
      CHECK(s.count >= 1);
      next += s.count;
    }
    CHECK(next == to);
  }
  CHECK(refused < 2000);
  std::vector<Segment> out;
  const std::vector<Segment> layout = uniform_segments(1000, 4, 400);  // 10 segments of 100
  CHECK(rescale_segments(layout, 1000, 1000, out));
  CHECK(out.size() == layout.size());
  CHECK(out[3].first == layout[3].first);
  CHECK_FALSE(rescale_segments(layout, 1000, 9, out));  // 10 segments cannot hold 9 elements
  // Counts past what an int holds per segment need a plan of their own.
  const std::vector<Segment> big = uniform_segments(std::int64_t{3} << 30, 1, 0);  // 2 segments
  CHECK_FALSE(rescale_segments(big, std::int64_t{3} << 30, std::int64_t{5} << 30, out));
  CHECK(rescale_segments({}, 0, 0, out));
  CHECK(out.empty());
}

TEST_CASE("A class's schedule cut for other counts of its class still validates, every algorithm", "[size-class]") {
  std::mt19937_64 rng(9);
  int checked = 0;
  for (const Algorithm& a : algorithms()) {
    if (a.topology_aware) continue;
    for (int p : {1, 2, 3, 5, 8, 13}) {
      for (bool commutative : {true, false}) {
        if (!commutative && a.collective == Collective::Bcast) continue;
        const std::int64_t element = a.collective == Collective::Reduce ? 4 : 1;
        const int c = size_class(static_cast<std::int64_t>(rng() % 200000) + 65);
        Problem problem;
        problem.collective = a.collective;
        problem.nranks = p;
        problem.root = static_cast<int>(rng() % p);
        problem.commutative = commutative;
        problem.element_bytes = element;
        // The plan is made for one count of the class, here its first whole element.
        problem.count = std::max<std::int64_t>(1, (class_first_bytes(c) + element - 1) / element);
        problem.segment_bytes = static_cast<std::int64_t>(rng() % 4) * 2048;
        if (a.staged) {  // a ring for them: chunks of 3/4 entry at most still fit once rescaled
          problem.staging_entries = 2 * p;
          problem.staging_entry_bytes = 4096;
        }
        Schedule s;
        try {
          s = a.plan(problem);
        } catch (const PlanError&) {
          continue;  // the algorithm declines (rank order)
        }
        const std::vector<Segment> layout = s.segments;
        for (int k = 0; k < 4; ++k) {
          const std::int64_t bytes = class_first_bytes(c) + static_cast<std::int64_t>(rng() % (class_last_bytes(c) - class_first_bytes(c) + 1));
          const std::int64_t count = bytes / element;
          if (!rescale_segments(layout, problem.count, count, s.segments)) continue;
          s.count = count;
          CAPTURE(a.name, p, commutative, problem.count, count);
          const Validation v = validate(s);
          INFO(v.summary());
          CHECK(v.ok);
          ++checked;
        }
      }
    }
  }
  CHECK(checked > 300);
}
