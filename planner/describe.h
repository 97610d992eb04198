// Human-readable text of a schedule: a one-line summary, the tree it uses, and the
// per-rank step lists. Used by the shim's info log and by the tools.
#pragma once

#include <string>

#include "planner/schedule.h"

namespace canopy::planner {

// "reduce of 1048576 B over 4 ranks, root 0: binomial, 16 segments of 65536 B"
// "allreduce on 4 ranks", "reduce on 4 ranks, root 2": a call's collective, ranks and
// root (none for a root-less collective), as the logs and summaries say it.
std::string on_ranks(Collective c, int nranks, int root);

std::string summarize(const Schedule& schedule);

// Time in the most readable unit: "812 ns", "12.3 us", "4.56 ms", "1.20 s".
std::string format_seconds(double seconds);

// The tree as indented text, then (if `with_steps`) every rank's steps.
std::string describe_schedule(const Schedule& schedule, bool with_steps);

}  // namespace canopy::planner
