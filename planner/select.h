// The planner's front door: from a problem and what the user asked for, the schedule
// to run, validated and priced. Every input is identical on all ranks, so every rank
// makes the same choice without talking to the others.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "planner/problem.h"
#include "planner/schedule.h"

namespace canopy::planner {

struct Request {
  std::string algorithm = "auto";   // a registered name, or "auto": the cheapest predicted
  std::int64_t segment_bytes = -1;  // >= 0 forces a segment size (0: one segment); -1: choose
  // "auto" leaves out topology-aware algorithms (Algorithm::topology_aware): how a
  // hierarchical algorithm plans the level above its groups without planning itself
  // again (planner/hierarchy.h).
  bool homogeneous_only = false;
};

struct Plan {
  Schedule schedule;
  double predicted = 0;  // simulated makespan under problem.model, in its units
};

// Segment sizes worth trying for a message (004): the whole message (0) and
// s = ceil(m / 2^i) for i = 1..8 (at most 256 segments) down to 1 KiB. make_plan then
// refines the best of them by local hill-climbing.
std::vector<std::int64_t> segment_candidates(std::int64_t bytes);

// Every candidate that can be built and priced, cheapest first, keeping for each
// algorithm only its best segment size. Not validated (validate what you run).
std::vector<Plan> rank_plans(Problem problem, const Request& request);

// Builds every candidate (algorithm x segment size), simulates each, keeps the
// fastest and validates it. A candidate whose algorithm throws PlanError (it declines
// the problem) or that the model cannot run is skipped. Throws PlanError when no
// candidate is left.
Plan make_plan(Problem problem, const Request& request);

}  // namespace canopy::planner
