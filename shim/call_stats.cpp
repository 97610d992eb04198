#include "shim/call_stats.h"

#include <algorithm>

#include "shim/runtime.h"

namespace canopy::shim {

std::string CallKind::key() const {
  return std::string(planner::to_string(collective)) + "|" + std::to_string(comm_size) + "|" + std::to_string(root) +
         "|" + std::to_string(bytes) + "|" + algorithm + "|" + reason + "|" + schedule_id;
}

void CallRecord::add(double seconds) {
  // Locked only when calls may overlap (see shim/thread_lock.h): this runs on every
  // timed call, where an uncontended lock is a measurable part of an 8-byte one.
  std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
  if (runtime().concurrent_calls()) lock.lock();
  ++calls_;
  ++timed_;
  total_ += seconds;
  min_ = std::min(min_, seconds);
  max_ = std::max(max_, seconds);
}

nlohmann::json CallRecord::to_json() const {
  std::lock_guard<std::mutex> lock(mutex_);
  nlohmann::json j = {{"collective", planner::to_string(kind_.collective)},
                      {"comm_size", kind_.comm_size},
                      {"root", kind_.root},
                      {"bytes", kind_.bytes},
                      {"algorithm", kind_.algorithm},
                      {"segments", kind_.segments},
                      {"predicted_s", kind_.predicted},
                      {"calls", calls_},
                      {"timed_calls", timed_},
                      {"total_s", timed_ ? total_ / timed_ * calls_ : 0.0},
                      {"min_s", timed_ ? min_ : 0.0},
                      {"max_s", max_}};
  if (!kind_.reason.empty()) j["reason"] = kind_.reason;  // a FallbackReason name
  if (learned_ >= 0) j["predicted_learned_s"] = learned_;
  if (!kind_.schedule_id.empty()) j["schedule_id"] = kind_.schedule_id;
  return j;
}

CallRecord* CallStats::record(const CallKind& kind) {
  const std::string key = kind.key();
  std::lock_guard<std::mutex> lock(mutex_);
  auto& slot = records_[key];
  if (!slot) slot = std::make_unique<CallRecord>(kind);
  return slot.get();
}

std::vector<const CallRecord*> CallStats::records() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<const CallRecord*> out;
  for (const auto& [key, r] : records_) out.push_back(r.get());
  return out;
}

nlohmann::json CallStats::to_json() const {
  nlohmann::json out = nlohmann::json::array();
  for (const CallRecord* r : records()) out.push_back(r->to_json());
  return out;
}

}  // namespace canopy::shim
