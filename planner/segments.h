// Cutting a message into pipeline segments.
#pragma once

#include <cstdint>
#include <vector>

#include "planner/problem.h"
#include "planner/schedule.h"

namespace canopy::planner {

// The executor tags each message with its segment index, and MPI guarantees only
// tags up to 32767, so no layout has more segments than this.
constexpr std::int64_t kMaxSegments = 32767;

// MPI counts are ints: no segment holds more elements than this.
constexpr std::int64_t kMaxSegmentCount = 2147483647;

// Large messages. A message of more than kMaxSegmentCount elements (a broadcast is
// planned in bytes, so any broadcast over 2 GiB) is split into more segments, each a
// message with an int count, even where the segment size asks for one segment: Canopy
// runs it itself rather than handing it to native MPI, whose int-count calls face the
// same limit. Byte offsets and sizes are 64-bit throughout (Segment, Schedule,
// DatatypeLayout). Only a message that kMaxSegments segments of kMaxSegmentCount
// elements cannot hold (over 7e13 elements, far beyond any memory) is refused with
// PlanError, and then native MPI runs.
//
// Equal segments of about `segment_bytes` (whole elements, at least one), the last
// one shorter (and none over kMaxSegmentCount elements); segment_bytes <= 0 or >= the
// message gives a single segment (or more, see above). When the count would exceed
// kMaxSegments the segments grow instead. Count 0 gives none. Throws PlanError when
// count > kMaxSegments * kMaxSegmentCount.
std::vector<Segment> uniform_segments(std::int64_t count, std::int64_t element_bytes,
                                      std::int64_t segment_bytes);

// The elements in uniform_segments' first segment, as in every one but the last (0 for
// count 0), and
// how many segments it cuts: its layout without building it (the same PlanError).
std::int64_t uniform_segment_elements(std::int64_t count, std::int64_t element_bytes, std::int64_t segment_bytes);
std::int64_t uniform_segment_count(std::int64_t count, std::int64_t element_bytes, std::int64_t segment_bytes);

// The layout of an explicit list of segment sizes (elements), in order. Throws
// PlanError unless every size is in 1..kMaxSegmentCount and there are at most
// kMaxSegments of them.
std::vector<Segment> segments_from_counts(const std::vector<std::int64_t>& counts);

// The layout every algorithm that segments uses: problem.segment_counts when given
// (a nonuniform segmentation; it must sum to problem.count), otherwise
// uniform_segments(count, element_bytes, segment_bytes). Throws PlanError on a bad
// explicit layout.
std::vector<Segment> problem_segments(const Problem& problem);

// How many segments problem_segments would cut, without cutting them: the explicit
// layout's, else about count x element_bytes / segment_bytes (one where the size asks
// for none), at most kMaxSegments. For estimates (Algorithm::whole_steps).
std::int64_t segments_asked(const Problem& problem);

// Segments begin .. end-1 of a layout as the fewest messages (Step::span): runs of
// consecutive segments, each run at most kMaxSegmentCount elements (one MPI count).
struct SegmentRun {
  int first = 0;
  int span = 1;
};
std::vector<SegmentRun> message_runs(const std::vector<Segment>& segments, int begin, int end,
                                     std::int64_t max_elements = kMaxSegmentCount);

// The sizes of a layout, the inverse of segments_from_counts.
std::vector<std::int64_t> segment_counts_of(const std::vector<Segment>& segments);

}  // namespace canopy::planner
