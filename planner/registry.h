// The algorithm registry: name -> function from a Problem to a Schedule. Names are
// one token everywhere: registry key, CANOPY_*_ALGO value, log field, tool argument.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "planner/problem.h"
#include "planner/schedule.h"

namespace canopy::planner {

using PlanFunction = Schedule (*)(const Problem&);

struct Algorithm {
  std::string_view name;
  Collective collective;
  PlanFunction plan;
  std::string_view summary;  // one line for --help and --list
  // True for algorithms that plan from Problem::topology (hierarchical, grid-*): they
  // decline a problem without one, and a level of a hierarchy plans its own ranks
  // without them (Request::homogeneous_only), which ends the recursion. Last, with a
  // default, so that rows of four fields stay as they are.
  bool topology_aware = false;
};

const std::vector<Algorithm>& algorithms();
const Algorithm* find_algorithm(Collective collective, std::string_view name);
std::vector<std::string> algorithm_names(Collective collective);

}  // namespace canopy::planner
