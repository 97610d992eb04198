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
constexpr int kFirstQuarter = 24;  // 2^(24/4) = 64: quarters start above the exact classes
constexpr int kLastQuarter = 251;  // 2^(251/4) < 2^63 <= 2^(252/4)

std::int64_t compute_threshold(int K) {
  static const double quarter[4] = {1.0, 1.189207115002721, 1.4142135623730951, 1.681792830507429};
  return static_cast<std::int64_t>(std::ceil(std::ldexp(quarter[K % 4], K / 4)));
}

// Computed once, when the library loads: size_class runs on every intercepted call.
struct Thresholds {
  std::int64_t at[kLastQuarter + 1];
  Thresholds() {
    for (int K = 0; K <= kLastQuarter; ++K) at[K] = compute_threshold(K);
  }
};
const Thresholds thresholds;

std::int64_t threshold(int K) { return thresholds.at[K]; }

// Class numbers: 0..64 the exact sizes, then 65 + (K - kFirstQuarter) per quarter K.
int quarter_of_class(int c) { return c - 65 + kFirstQuarter; }

}  // namespace

int size_class(std::int64_t bytes) {
  if (bytes <= kExactClassBytes) return static_cast<int>(std::max<std::int64_t>(bytes, 0));
  const int e = 63 - __builtin_clzll(static_cast<unsigned long long>(bytes));  // floor(log2 bytes), >= 6
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
