// canopy-plan --compare --svg: every algorithm's predicted time over a range of
// message sizes, each at its best segment size as the planner chooses it
// (planner::rank_choices, the code make_plan and the shim use), drawn log-log.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "planner/problem.h"

namespace canopy::tools {

struct SizeCurve {
  std::string algorithm;
  std::vector<std::int64_t> bytes;  // the sizes it could plan (declined ones are left out)
  std::vector<double> predicted;    // price at each (planner/select.h), in the model's units
};

struct SizeComparison {
  planner::Problem base;  // collective, ranks, root, model: what every size shares
  std::vector<std::int64_t> sizes;
  std::vector<SizeCurve> curves;  // registry order, algorithms that planned at least one size
};

// min_bytes, 2 min_bytes, 4 min_bytes, ... up to max_bytes. Throws
// std::invalid_argument unless 0 < min_bytes <= max_bytes and min_bytes is a whole
// number of elements.
std::vector<std::int64_t> doubling_sizes(std::int64_t min_bytes, std::int64_t max_bytes, std::int64_t element_bytes);

// segment_bytes: -1 lets the planner search (as the shim does), >= 0 forces one size.
SizeComparison compare_over_sizes(const planner::Problem& base, std::int64_t segment_bytes,
                                  const std::vector<std::int64_t>& sizes);

// "8 B", "64 KiB", "16 MiB", or the exact byte count when it is not a power of 1024 multiple.
std::string format_bytes(std::int64_t bytes);

// A log-log chart, one curve per algorithm (class 'curve', data-algorithm, data-bytes
// and data-predicted hold the plotted values). Throws std::runtime_error when
// nothing has a positive predicted time (one rank: nothing to do).
std::string comparison_svg(const SizeComparison& comparison);

}  // namespace canopy::tools
