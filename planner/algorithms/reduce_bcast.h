// An allreduce as a reduce to rank 0 followed by a broadcast from it, in one schedule
// (algorithms/reduce_bcast.cpp says how the two are merged).
#pragma once

#include <cstdint>
#include <string>

#include "planner/problem.h"
#include "planner/schedule.h"

namespace canopy::planner {

// The two parts an allreduce of `problem` is composed of, rooted at 0. The reduce keeps
// the problem's count, element size, commutativity, segment size and explicit layout,
// model, topology and ring; the broadcast moves the same elements (commutative, no
// operation) cut as `layout` says (Problem::segment_counts), so that both parts share
// segments. Neither may reach into other ranks' memory (direct_access is off).
Problem reduce_part(const Problem& problem);
Problem bcast_part(const Problem& problem, const std::vector<Segment>& layout);

// Plans the reduce part with the reduce algorithm `reduce_algorithm` and the broadcast
// part with the broadcast algorithm `bcast_algorithm` and merges them rank by rank,
// pipelined, into the allreduce schedule named `name`. Throws PlanError when either
// part declines, when the broadcast cuts the message differently, when the parts stage
// through different rings, or when a part is direct.
Schedule compose_reduce_bcast(const Problem& problem, const std::string& reduce_algorithm,
                              const std::string& bcast_algorithm, const std::string& name);

// The sum of the parts' prices, an estimate (Price::exact false: the merge overlaps the
// broadcast of a segment with the reduction of the next). Throws PlanError where a part
// has no price function.
Price price_reduce_bcast(const Problem& problem, const std::string& reduce_algorithm,
                         const std::string& bcast_algorithm);

// The parts' step estimates summed (Algorithm::whole_steps), the broadcast's for the
// reduce's segments.
std::int64_t steps_reduce_bcast(const Problem& problem, const std::string& reduce_algorithm,
                                const std::string& bcast_algorithm);

}  // namespace canopy::planner
