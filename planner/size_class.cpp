#include "planner/size_class.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "planner/segments.h"

namespace canopy::planner {

namespace {

// Quarter octave K covers [T(K), T(K+1)) with T(K) = ceil(2^(K/4)), computed the same
// way everywhere (a double per quarter, scaled exactly by ldexp), so every rank and
// every function here agrees on where a class starts.
std::int64_t threshold(int K) {
  static const double quarter[4] = {1.0, 1.189207115002721, 1.4142135623730951, 1.681792830507429};
  return static_cast<std::int64_t>(std::ceil(std::ldexp(quarter[K % 4], K / 4)));
}

constexpr int kFirstQuarter = 24;  // 2^(24/4) = 64: quarters start above the exact classes
constexpr int kLastQuarter = 251;  // 2^(251/4) < 2^63 <= 2^(252/4)

// Class numbers: 0..64 the exact sizes, then 65 + (K - kFirstQuarter) per quarter K.
int quarter_of_class(int c) { return c - 65 + kFirstQuarter; }

}  // namespace

int size_class(std::int64_t bytes) {
  if (bytes <= kExactClassBytes) return static_cast<int>(std::max<std::int64_t>(bytes, 0));
  int e = 63;
  while (!(bytes >> e & 1)) --e;  // floor(log2 bytes), >= 6
  int K = 4 * e + 3;
  while (K > 4 * e && threshold(K) > bytes) --K;  // threshold(4e) = 2^e <= bytes
  return 65 + std::max(K, kFirstQuarter) - kFirstQuarter;
}

std::int64_t class_first_bytes(int c) {
  if (c <= kExactClassBytes) return c;
  return std::max(kExactClassBytes + 1, threshold(quarter_of_class(c)));
}

std::int64_t class_last_bytes(int c) {
  if (c < kExactClassBytes) return c;
  if (c == kExactClassBytes) return kExactClassBytes;
  if (quarter_of_class(c) >= kLastQuarter) return std::numeric_limits<std::int64_t>::max();
  return class_first_bytes(c + 1) - 1;
}

std::int64_t class_representative_count(int c, std::int64_t element_bytes) {
  const std::int64_t first = class_first_bytes(c), last = class_last_bytes(c);
  if (c <= kExactClassBytes) return std::max<std::int64_t>(first / element_bytes, first > 0 ? 1 : 0);
  // The geometric middle: 2^(1/8) above the class's start.
  const double middle = static_cast<double>(first) * 1.0905077326652577;
  std::int64_t count = std::max<std::int64_t>(1, std::llround(middle / static_cast<double>(element_bytes)));
  const std::int64_t lo = (first + element_bytes - 1) / element_bytes, hi = last / element_bytes;
  if (lo <= hi) count = std::clamp(count, lo, hi);
  return count;
}

bool rescale_segments(const std::vector<Segment>& layout, std::int64_t from_count, std::int64_t to_count,
                      std::vector<Segment>& out) {
  out.clear();
  if (layout.empty() || from_count <= 0) return to_count == 0 && layout.empty();
  const auto scaled = [&](std::int64_t boundary) {
    return static_cast<std::int64_t>(static_cast<__int128>(boundary) * to_count / from_count);
  };
  out.reserve(layout.size());
  for (std::size_t j = 0; j < layout.size(); ++j) {
    const std::int64_t first = scaled(layout[j].first);
    const std::int64_t end = j + 1 < layout.size() ? scaled(layout[j + 1].first) : to_count;
    if (end - first < 1 || end - first > kMaxSegmentCount) return false;
    out.push_back({first, end - first});
  }
  return true;
}

}  // namespace canopy::planner
