// CANOPY_SCHEDULE_LOG: JSON lines, one for every distinct schedule a rank uses, with
// the calls it serves (a size class of messages: first_bytes..last_bytes) and its predicted time ("event": "schedule"), and with
// CANOPY_TIMING, at MPI_Finalize, one per kind of call with this rank's measured
// times ("event": "timing", pointing to its schedule by "schedule_id"). The schedule itself is in the planner's
// JSON form (planner/schedule_json.h), so tools read it back into the IR.
#pragma once

#include <cstdio>
#include <mutex>
#include <string>
#include <unordered_set>

#include "planner/schedule.h"
#include "planner/topology.h"
#include "shim/call_stats.h"

namespace canopy::shim {

class ScheduleLog {
 public:
  ~ScheduleLog() { close(); }
  // "%r" in `pattern` expands to the world rank and every rank writes its own file;
  // without it only world rank 0 writes. Returns an error message, or "" on success.
  std::string open(const std::string& pattern, int world_rank);
  bool enabled() const { return file_ != nullptr; }
  // Appends one line unless the schedule `id` was logged already; with the
  // communicator's topology when the plan had one ("topology", planner/topology_json.h).
  // `schedule` is the whole schedule, or (for communicators too large to hold every
  // rank's steps) this rank's view; `id` names it the same on every rank. It was made
  // for its own count and serves the calls of first_bytes..last_bytes (its size class,
  // planner/size_class.h), cut for each count.
  void record(const planner::Schedule& schedule, int comm_size, double predicted_seconds,
              const std::string& model_spec, const planner::Topology* topology, const std::string& id,
              std::int64_t first_bytes, std::int64_t last_bytes);
  // Appends one "timing" line: the calls `record` counted on this rank (CANOPY_TIMING).
  void record_timing(const CallRecord& record);
  void close();

 private:
  std::mutex mutex_;
  std::FILE* file_ = nullptr;
  std::unordered_set<std::string> seen_;  // ids already written
};


// "%r" replaced by `rank` everywhere in `pattern`.
std::string expand_rank(const std::string& pattern, int rank);

}  // namespace canopy::shim
