// The planner's prices as the shim asks for them: planner::rank_choices and
// planner::price_gradient, computed once per process and shared by its ranks where the
// platform's ranks share one (SMPI: shim/process_memo.h), else simply computed.
#pragma once

#include <vector>

#include "planner/learn.h"
#include "planner/select.h"

namespace canopy::shim {

std::vector<planner::Choice> rank_choices(const planner::Problem& problem, const planner::Request& request);
planner::ModelGradient price_gradient(const planner::Problem& problem, const planner::Choice& choice);

}  // namespace canopy::shim
