#include "planner/segments.h"

#include <algorithm>
#include <string>

namespace canopy::planner {

std::int64_t uniform_segment_elements(std::int64_t count, std::int64_t element_bytes, std::int64_t segment_bytes) {
  if (count <= 0) return 0;
  if (count > kMaxSegments * kMaxSegmentCount)
    throw PlanError("a message of " + std::to_string(count) + " elements does not fit in " +
                    std::to_string(kMaxSegments) + " segments of at most " + std::to_string(kMaxSegmentCount));
  std::int64_t per = count;
  if (segment_bytes > 0 && element_bytes > 0) per = std::max<std::int64_t>(1, segment_bytes / element_bytes);
  per = std::max(per, count / kMaxSegments + (count % kMaxSegments != 0));  // (no overflow near INT64_MAX)
  return std::min({per, count, kMaxSegmentCount});
}

std::int64_t uniform_segment_count(std::int64_t count, std::int64_t element_bytes, std::int64_t segment_bytes) {
  const std::int64_t per = uniform_segment_elements(count, element_bytes, segment_bytes);
  return per > 0 ? count / per + (count % per != 0) : 0;
}

std::vector<Segment> uniform_segments(std::int64_t count, std::int64_t element_bytes,
                                      std::int64_t segment_bytes) {
  std::vector<Segment> out;
  const std::int64_t per = uniform_segment_elements(count, element_bytes, segment_bytes);
  if (per == 0) return out;
  out.reserve(static_cast<std::size_t>(count / per + 1));
  for (std::int64_t first = 0; first < count; first += per)
    out.push_back({first, std::min(per, count - first)});
  return out;
}

std::vector<Segment> segments_from_counts(const std::vector<std::int64_t>& counts) {
  if (static_cast<std::int64_t>(counts.size()) > kMaxSegments)
    throw PlanError("an explicit layout of " + std::to_string(counts.size()) + " segments exceeds " +
                    std::to_string(kMaxSegments));
  std::vector<Segment> out;
  out.reserve(counts.size());
  std::int64_t first = 0;
  for (std::int64_t c : counts) {
    if (c < 1 || c > kMaxSegmentCount)
      throw PlanError("segment size " + std::to_string(c) + " is outside 1.." + std::to_string(kMaxSegmentCount));
    out.push_back({first, c});
    first += c;
  }
  return out;
}

std::int64_t segments_asked(const Problem& p) {
  if (!p.segment_counts.empty()) return static_cast<std::int64_t>(p.segment_counts.size());
  const std::int64_t bytes = p.bytes();
  if (p.segment_bytes <= 0 || p.segment_bytes >= bytes) return 1;
  return std::min(bytes / p.segment_bytes + 1, kMaxSegments);
}

std::vector<Segment> problem_segments(const Problem& p) {
  if (p.segment_counts.empty()) return uniform_segments(p.count, p.element_bytes, p.segment_bytes);
  std::vector<Segment> out = segments_from_counts(p.segment_counts);
  const std::int64_t covered = out.back().first + out.back().count;
  if (covered != p.count)
    throw PlanError("the explicit segment layout covers " + std::to_string(covered) + " of " +
                    std::to_string(p.count) + " elements");
  return out;
}

std::vector<std::int64_t> segment_counts_of(const std::vector<Segment>& segments) {
  std::vector<std::int64_t> out;
  out.reserve(segments.size());
  for (const Segment& s : segments) out.push_back(s.count);
  return out;
}

std::vector<SegmentRun> message_runs(const std::vector<Segment>& segments, int begin, int end,
                                     std::int64_t max_elements) {
  std::vector<SegmentRun> runs;
  std::int64_t elements = 0;
  for (int k = begin; k < end; ++k) {
    if (runs.empty() || elements + segments[k].count > max_elements) {
      runs.push_back({k, 1});
      elements = segments[k].count;
    } else {
      ++runs.back().span;
      elements += segments[k].count;
    }
  }
  return runs;
}

}  // namespace canopy::planner
