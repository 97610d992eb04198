// What canopy-view reads: the schedules of one input, whatever form it takes.
//   * canopy-plan --json output: {"algorithm", "makespan", "model", "schedule", ...,
//     and "topology" when it planned with --topology};
//   * a bare schedule in the planner's JSON form (planner/schedule_json.h);
//   * a CANOPY_SCHEDULE_LOG: JSON lines, of which those with "event":"schedule" (or
//     with no "event" and a "schedule" object) are schedules; other events (timing
//     lines and whatever comes later) are skipped, and unknown fields ignored. A
//     schedule line carries "topology" when the communicator had one.
// A "topology" next to a schedule is the JSON form of planner/topology_json.h; it
// must read back, give every pair of clusters a link, and have the schedule's ranks.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "planner/schedule.h"
#include "planner/topology.h"

namespace canopy::tools {

// Input that is not what canopy-view reads; the message names what and where.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ScheduleEntry {
  int index = 0;  // among the input's schedules, from 0: what --list prints and --entry takes
  int line = 1;   // where it starts in the input, from 1
  planner::Schedule schedule;
  std::string model;                // the cost model recorded with it; empty: none recorded
  std::optional<double> predicted;  // the makespan recorded with it (log, canopy-plan)
  std::string id;                   // the schedule log's id of it (a trace's schedule_id); empty: none
  // The network it was planned for (the "topology" field); none: every message
  // follows the model. Shared: entries are copied, topologies can be large.
  std::shared_ptr<const planner::Topology> topology;
};

// Every schedule of `text`, in input order. Throws InputError for text that is not
// JSON, an object that is not a schedule, a schedule that does not read back, or no
// schedule at all.
std::vector<ScheduleEntry> read_schedules(const std::string& text);

// Which entry to show: every criterion given must hold; none given selects all.
struct Selection {
  int entry = -1;              // its index; -1: any
  std::string collective;      // "reduce" or "bcast"; empty: any
  std::string algorithm;       // empty: any
  std::int64_t bytes = -1;     // message size; -1: any

  bool matches(const ScheduleEntry& e) const;
  // "--entry 3 --algorithm binomial", for messages.
  std::string describe() const;
};

// The first entry the selection matches. Throws InputError naming what did not
// match (an index out of range says how many entries there are).
const ScheduleEntry& select_entry(const std::vector<ScheduleEntry>& entries, const Selection& selection);

}  // namespace canopy::tools
