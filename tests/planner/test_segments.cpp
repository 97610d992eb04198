// Pipeline segmentation (001, Langou: "the message m can be split into q segments of
// size s", uniform segmentation s_i = s): the layout covers the message exactly.
#include <catch2/catch.hpp>

#include "planner/describe.h"
#include "planner/problem.h"
#include "planner/segments.h"

using namespace canopy::planner;

namespace {

// Contiguous, non-empty, covering 0..count-1, within the executor's limits.
void check_layout(const std::vector<Segment>& segs, std::int64_t count) {
  std::int64_t next = 0;
  for (const Segment& s : segs) {
    REQUIRE(s.first == next);
    REQUIRE(s.count >= 1);
    REQUIRE(s.count <= kMaxSegmentCount);
    next += s.count;
  }
  CHECK(next == count);
  CHECK(static_cast<std::int64_t>(segs.size()) <= kMaxSegments);
}

}  // namespace

TEST_CASE("Segments: count 0 gives no segment, whatever the segment size", "[segments]") {
  for (std::int64_t seg : {-1, 0, 1, 4, 1 << 20}) CHECK(uniform_segments(0, 4, seg).empty());
}

TEST_CASE("Segments: uniform segmentation s_i = s (Langou 001) covers the count exactly, only the "
          "last segment shorter",
          "[segments]") {
  for (std::int64_t count : {1, 2, 7, 100, 1000, 4099})
    for (std::int64_t element_bytes : {1, 4, 8, 24})
      for (std::int64_t seg_bytes : {-5, 0, 1, 3, 4, 8, 12, 100, 4096, 1 << 30}) {
        CAPTURE(count, element_bytes, seg_bytes);
        const auto segs = uniform_segments(count, element_bytes, seg_bytes);
        check_layout(segs, count);
        const std::int64_t bytes = count * element_bytes;
        if (seg_bytes <= 0 || seg_bytes >= bytes) {
          CHECK(segs.size() == 1u);
          continue;
        }
        // Whole elements, at least one: per = max(1, floor(seg_bytes / element_bytes)).
        const std::int64_t per = std::max<std::int64_t>(1, seg_bytes / element_bytes);
        CHECK(static_cast<std::int64_t>(segs.size()) == (count + per - 1) / per);
        for (std::size_t k = 0; k + 1 < segs.size(); ++k) CHECK(segs[k].count == per);
        CHECK(segs.back().count == count - per * (static_cast<std::int64_t>(segs.size()) - 1));
      }
}

TEST_CASE("Segments: never more than kMaxSegments (the executor's tag space), segments grow instead",
          "[segments]") {
  for (std::int64_t count : {kMaxSegments - 1, kMaxSegments, kMaxSegments + 1, 2 * kMaxSegments + 5,
                             std::int64_t{1} << 33}) {
    CAPTURE(count);
    const auto segs = uniform_segments(count, 1, 1);  // asks for one element per segment
    check_layout(segs, count);
    if (count <= kMaxSegments) {
      CHECK(static_cast<std::int64_t>(segs.size()) == count);
    } else {
      // The smallest equal size that fits: ceil(count / kMaxSegments) elements.
      const std::int64_t per = (count + kMaxSegments - 1) / kMaxSegments;
      CHECK(segs.front().count == per);
      CHECK(static_cast<std::int64_t>(segs.size()) == (count + per - 1) / per);
    }
  }
}

// The planner prices some layouts without building them (reduce-scatter-gather's p
// slices at 65,536 ranks); the counts must be the layout's.
TEST_CASE("Segments: uniform_segment_count and _elements describe uniform_segments without building it",
          "[segments]") {
  for (std::int64_t count : {std::int64_t{0}, std::int64_t{1}, std::int64_t{7}, std::int64_t{4099},
                             kMaxSegments + 1, 3 * kMaxSegmentCount + 7, std::int64_t{1} << 33})
    for (std::int64_t element_bytes : {1, 8, 24})
      for (std::int64_t seg_bytes : {-5, 0, 1, 12, 4096, 1 << 30}) {
        CAPTURE(count, element_bytes, seg_bytes);
        const auto segs = uniform_segments(count, element_bytes, seg_bytes);
        CHECK(uniform_segment_count(count, element_bytes, seg_bytes) == static_cast<std::int64_t>(segs.size()));
        CHECK(uniform_segment_elements(count, element_bytes, seg_bytes) == (segs.empty() ? 0 : segs.front().count));
      }
  CHECK_THROWS_AS(uniform_segment_count(kMaxSegments * kMaxSegmentCount + 1, 1, 0), PlanError);
}

TEST_CASE("Segments: a single segment of more than kMaxSegmentCount elements is split", "[segments]") {
  const std::int64_t count = 3 * kMaxSegmentCount + 7;
  const auto segs = uniform_segments(count, 1, 0);
  check_layout(segs, count);
  CHECK(segs.size() == 4u);
}

TEST_CASE("Segments: an explicit layout (Langou 001, nonuniform segmentation s_i) is used as given, "
          "empty means uniform from segment_bytes",
          "[segments]") {
  Problem p;
  p.count = 10;
  p.element_bytes = 4;
  p.segment_bytes = 12;
  const auto uniform = problem_segments(p);
  CHECK(segment_counts_of(uniform) == std::vector<std::int64_t>{3, 3, 3, 1});
  p.segment_counts = {2, 2, 1, 1, 1, 1, 1, 1};
  const auto given = problem_segments(p);
  check_layout(given, 10);
  CHECK(segment_counts_of(given) == p.segment_counts);
  CHECK(segments_from_counts({4, 1}).back().first == 4);
}

TEST_CASE("Segments: an explicit layout must cover the count with segments of 1..kMaxSegmentCount "
          "elements, at most kMaxSegments of them, check_problem rejects one that does not",
          "[segments]") {
  Problem p;
  p.count = 10;
  for (const std::vector<std::int64_t>& bad :
       std::vector<std::vector<std::int64_t>>{{5, 4}, {5, 6}, {10, 0}, {11, -1}, {kMaxSegmentCount + 1}}) {
    CAPTURE(bad);
    p.segment_counts = bad;
    CHECK_THROWS_AS(problem_segments(p), PlanError);
    CHECK_THROWS_AS(check_problem(p), PlanError);
  }
  CHECK_THROWS_AS(segments_from_counts(std::vector<std::int64_t>(kMaxSegments + 1, 1)), PlanError);
  p.count = 0;
  p.segment_counts = {};
  CHECK(problem_segments(p).empty());
  CHECK_NOTHROW(check_problem(p));
}

TEST_CASE("Segments: a schedule's summary names one size for a uniform layout and the range for "
          "another",
          "[segments]") {
  Schedule s;
  s.count = 10;
  s.element_bytes = 4;
  s.segments = segments_from_counts({3, 3, 3, 1});
  CHECK(summarize(s).find("4 segments of 12 B") != std::string::npos);
  s.segments = segments_from_counts({2, 2, 1, 1, 1, 1, 1, 1});
  CHECK(summarize(s).find("8 segments of 4..8 B") != std::string::npos);
}
