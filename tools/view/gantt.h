// A schedule's simulated timeline as an SVG Gantt chart: one row per rank, split in
// three lanes (sends, receives, reductions and copies) so that what overlaps under the
// model stays visible; idle time is empty.
//
// Kept bounded for large schedules: at most `max_ranks` rows (ranks 0..max_ranks-1;
// a note names the ones left out), and in each lane a bar narrower than
// `min_bar_px` is merged with its neighbours when less than a pixel separates them,
// so a lane holds at most about one bar per pixel of width. Every bar carries
// data-rank, data-steps (how many steps it stands for), data-start and data-end (in
// the model's units) for tools and tests; hovering shows the step.
#pragma once

#include <string>

#include "planner/cost_model.h"
#include "planner/schedule.h"
#include "planner/simulate.h"

namespace canopy::tools {

struct GanttOptions {
  int max_ranks = 64;
  double width = 1000;     // pixels
  double min_bar_px = 2;   // narrower bars merge with neighbours closer than 1 px
  double span = 0;         // the time axis's end (0: the makespan), to share one axis between charts
  std::string label = "makespan";  // what the second line calls the timeline's length
  std::string under;       // what it says the times come from (empty: " under " and the model)
};

// The simulation must be of `schedule` under `model` and ok.
std::string gantt_svg(const planner::Schedule& schedule, const planner::Simulation& simulation,
                      const planner::CostModel& model, const GanttOptions& options);

// "12.3 us" for timed models; "12.3 units" for the (d, c) model, whose times have no unit.
std::string format_time(double t, const planner::CostModel& model);

}  // namespace canopy::tools
