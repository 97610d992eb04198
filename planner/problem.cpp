#include "planner/problem.h"

#include <cstdint>

#include "planner/segments.h"

namespace canopy::planner {

void check_problem(const Problem& p) {
  if (p.nranks < 1) throw PlanError("nranks must be at least 1, got " + std::to_string(p.nranks));
  if (p.root < 0 || p.root >= p.nranks)
    throw PlanError("root " + std::to_string(p.root) + " is outside 0.." + std::to_string(p.nranks - 1));
  if (p.count < 0) throw PlanError("count must not be negative");
  if (p.element_bytes < 1) throw PlanError("element size must be positive");
  // bytes() = count * element_bytes must fit in 64 bits (the cost model and the
  // segment search compute with it).
  if (p.count > INT64_MAX / p.element_bytes)
    throw PlanError(std::to_string(p.count) + " elements of " + std::to_string(p.element_bytes) +
                    " bytes overflow a 64-bit byte count");
  if (p.limit < 0) throw PlanError("limit must not be negative, got " + std::to_string(p.limit));
  // An allreduce takes any operation: rank-ordered algorithms serve non-commutative ones.
  if (p.collective == Collective::Bcast && !p.commutative)
    throw PlanError("a broadcast has no operation to be non-commutative");
  if (!p.segment_counts.empty()) problem_segments(p);  // throws on a layout that does not fit
  if (p.topology) {
    check_topology(*p.topology);
    if (p.topology->nranks() != p.nranks)
      throw PlanError("the topology has " + std::to_string(p.topology->nranks()) + " ranks, the problem " +
                      std::to_string(p.nranks));
  }  // throws on a layout that does not fit
}

Schedule empty_schedule(const Problem& problem, const std::string& algorithm, std::vector<Segment> segments,
                        int view_rank) {
  Schedule s;
  s.collective = problem.collective;
  s.algorithm = algorithm;
  s.nranks = problem.nranks;
  s.root = problem.collective == Collective::Allreduce ? 0 : problem.root;  // schedule.h: rooted at 0
  s.count = problem.count;
  s.element_bytes = problem.element_bytes;
  s.commutative = problem.commutative;
  s.segments = std::move(segments);
  const int held = view_rank < 0 ? problem.nranks : 1;
  s.steps.assign(held, {});
  s.slots.assign(held, 0);
  s.view_rank = view_rank;
  return s;
}

}  // namespace canopy::planner
