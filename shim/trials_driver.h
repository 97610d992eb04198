// auto's trials and CANOPY_LEARN, as the shim drives them for a communicator
// (shim/trials_driver.cpp). Declared here: the log helpers that the making of plans
// (make_cached_plan) shares with the trials, for the lines that name candidates and say
// how trials stand. The trials' rules themselves are the planner's (planner/trials.h).
#pragma once

#include <string>

#include "shim/plan_cache.h"

namespace canopy::shim {

// A candidate in auto's log line: the algorithm and, for a schedule, its segments (two
// candidates may be one algorithm cut differently).
std::string trial_name(const Candidate& c);

// Where `plan`'s schedules have had their trials (or there is one) and the best runs
// until native MPI's trial (CANOPY_AUTO_NATIVE_AFTER), the info line that says so.
void log_native_wait(const CachedPlan& plan, const PlanKey& key, int size);

}  // namespace canopy::shim
