// Size classes: a plan is chosen once per class of message sizes, not per exact count.
//
// A program that cycles through thousands of counts would otherwise plan (and, with
// `auto`, run trials) thousands of times. Sizes up to 64 bytes are a class each
// (latency decides there, and one more element is a large relative change); above,
// a class is a quarter of an octave, [2^(k/4), 2^((k+1)/4)), about 19% wide, so the
// sizes up to 1 GiB fall into about a hundred classes. A class's plan is made for one
// count of it (the shim: the first one a program uses) and run for any count of the
// class with the same steps and the segment boundaries scaled to the count
// (rescale_segments): the step lists of every algorithm depend on the number of
// segments, not on their sizes, so the schedule stays the one the planner proved, cut
// for this count.
//
// Every function depends only on its arguments: ranks that pass the same count and
// element size (MPI requires it) agree on the class, the plan and the layout.
#pragma once

#include <cstdint>
#include <vector>

#include "planner/schedule.h"

namespace canopy::planner {

// Sizes up to this many bytes are a class each.
constexpr std::int64_t kExactClassBytes = 64;

// The class of a message of `bytes` (>= 0); increasing with bytes.
int size_class(std::int64_t bytes);

// The smallest and largest message (bytes) of a class.
std::int64_t class_first_bytes(int size_class);
std::int64_t class_last_bytes(int size_class);

// The segments of `layout` (a layout of `from_count` elements) scaled to `to_count`:
// boundary b becomes floor(b * to_count / from_count), in exact integer arithmetic.
// Returns false (and leaves `out` unspecified) when a scaled segment would be empty
// or hold more than kMaxSegmentCount elements: then the count needs its own plan.
bool rescale_segments(const std::vector<Segment>& layout, std::int64_t from_count, std::int64_t to_count,
                      std::vector<Segment>& out);

}  // namespace canopy::planner
