#include "shim/schedule_log.h"

#include <nlohmann/json.hpp>

#include "planner/schedule_json.h"
#include "planner/topology_json.h"

namespace canopy::shim {

std::string expand_rank(const std::string& pattern, int rank) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == 'r') {
      out += std::to_string(rank);
      ++i;
    } else {
      out += pattern[i];
    }
  }
  return out;
}

std::string ScheduleLog::open(const std::string& pattern, int world_rank) {
  const bool per_rank = pattern.find("%r") != std::string::npos;
  if (!per_rank && world_rank != 0) return "";
  const std::string path = expand_rank(pattern, world_rank);
  file_ = std::fopen(path.c_str(), "w");
  if (!file_) return "CANOPY_SCHEDULE_LOG='" + pattern + "': cannot open " + path + " for writing; no schedule log";
  return "";
}

void ScheduleLog::record(const planner::Schedule& schedule, int comm_size, double predicted_seconds,
                         const std::string& model_spec, const planner::Topology* topology, const std::string& id,
                         std::int64_t first_bytes, std::int64_t last_bytes) {
  if (!file_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!seen_.insert(id).second) return;
  nlohmann::json body = planner::schedule_to_json(schedule);
  nlohmann::json line = {{"event", "schedule"},
                         {"id", id},
                         {"collective", planner::to_string(schedule.collective)},
                         {"comm_size", comm_size},
                         {"root", schedule.root},
                         {"bytes", schedule.bytes()},
                         {"count", schedule.count},
                         {"first_bytes", first_bytes},
                         {"last_bytes", last_bytes},
                         {"algorithm", schedule.algorithm},
                         {"segments", schedule.segments.size()},
                         {"segment_bytes", schedule.segments.empty() ? 0 : schedule.segment_bytes(0)},
                         {"predicted_s", predicted_seconds},
                         {"model", model_spec},
                         {"schedule", std::move(body)}};
  if (topology) line["topology"] = planner::topology_to_json(*topology);
  std::fputs(line.dump().c_str(), file_);
  std::fputc('\n', file_);
  std::fflush(file_);
}

void ScheduleLog::record_timing(const CallRecord& record) {
  if (!file_) return;
  nlohmann::json line = record.to_json();
  const long calls = line["calls"].get<long>();
  line["mean_s"] = calls ? line["total_s"].get<double>() / calls : 0.0;
  line["event"] = "timing";
  std::lock_guard<std::mutex> lock(mutex_);
  std::fputs(line.dump().c_str(), file_);
  std::fputc('\n', file_);
  std::fflush(file_);
}

void ScheduleLog::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (file_) std::fclose(file_);
  file_ = nullptr;
}

}  // namespace canopy::shim
