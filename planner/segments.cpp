#include "planner/segments.h"

#include <algorithm>

namespace canopy::planner {

std::vector<Segment> uniform_segments(std::int64_t count, std::int64_t element_bytes,
                                      std::int64_t segment_bytes) {
  std::vector<Segment> out;
  if (count <= 0) return out;
  std::int64_t per = count;
  if (segment_bytes > 0 && element_bytes > 0) per = std::max<std::int64_t>(1, segment_bytes / element_bytes);
  per = std::max(per, (count + kMaxSegments - 1) / kMaxSegments);
  per = std::min<std::int64_t>(per, kMaxSegmentCount);
  for (std::int64_t first = 0; first < count; first += per)
    out.push_back({first, std::min(per, count - first)});
  return out;
}

}  // namespace canopy::planner
