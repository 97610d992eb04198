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
};

const std::vector<Algorithm>& algorithms();
const Algorithm* find_algorithm(Collective collective, std::string_view name);
std::vector<std::string> algorithm_names(Collective collective);

}  // namespace canopy::planner
