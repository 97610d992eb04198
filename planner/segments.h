// Cutting a message into pipeline segments.
#pragma once

#include <cstdint>
#include <vector>

#include "planner/schedule.h"

namespace canopy::planner {

// The executor tags each message with its segment index, and MPI guarantees only
// tags up to 32767, so no layout has more segments than this.
constexpr std::int64_t kMaxSegments = 32767;

// MPI counts are ints: no segment holds more elements than this.
constexpr std::int64_t kMaxSegmentCount = 2147483647;

// Equal segments of about `segment_bytes` (whole elements, at least one), the last
// one shorter (and none over kMaxSegmentCount elements); segment_bytes <= 0 or >= the message gives a single segment. When the
// count would exceed kMaxSegments the segments grow instead. Count 0 gives none.
std::vector<Segment> uniform_segments(std::int64_t count, std::int64_t element_bytes,
                                      std::int64_t segment_bytes);

}  // namespace canopy::planner
