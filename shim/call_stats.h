// What Canopy did, kept for CANOPY_TIMING and CANOPY_REPORT: per kind of call (the
// collective, communicator size, root, message size and what ran), how many calls
// this rank made and how long they took here, next to the model's prediction.
// Disabled (and free) unless one of the two settings asks for it.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "planner/schedule.h"

namespace canopy::shim {

struct CallKind {
  planner::Collective collective = planner::Collective::Reduce;
  int comm_size = 0;
  int root = 0;
  std::int64_t bytes = 0;
  std::string algorithm;    // a planner name, or "native"
  std::string reason;       // for native: why native MPI ran
  int segments = 0;         // 0 for native
  double predicted = 0;     // seconds under the cost model; 0 for native
  std::string schedule_id;  // the schedule log's id of the schedule; "" for native

  std::string key() const;  // identical for calls that share a record
};

// One kind's calls on this rank. Several communicators (and, with
// MPI_THREAD_MULTIPLE, threads) may share a record, hence the lock.
//
// Calls are counted, and timed by sample: the first kAlwaysTimed calls of a kind, then
// one in kSampleEvery. Two clock reads on every call cost more than an 8-byte call on
// two ranks; the total time is estimated from the samples' mean. Decision: one in 16
// was 3 ns a call of a one-rank 8 B MPI_Bcast that auto keeps native (MPICH 4.0.2 with
// CANOPY_REPORT, perf: clock_gettime about 24 ns on the project's VM), a seventh of
// what Canopy then added; one in 64 still times 15,000 of a million calls.
class CallRecord {
 public:
  static constexpr long kAlwaysTimed = 8;
  static constexpr long kSampleEvery = 64;

  explicit CallRecord(CallKind kind) : kind_(std::move(kind)) {}
  // Whether the next call should be timed (then add() it, else count() it).
  bool time_next() const { return calls_ < kAlwaysTimed || calls_ % kSampleEvery == 0; }
  void add(double seconds);  // a timed call
  // An untimed call; `concurrent`: calls may overlap (Runtime::concurrent_calls).
  // Inline: where the report records calls, most native calls do only this.
  void count(bool concurrent) {
    std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
    if (concurrent) lock.lock();
    ++calls_;
  }
  // The prediction of the learned model (CANOPY_LEARN) for this kind's schedule.
  void set_learned(double seconds) { learned_ = seconds; }
  const CallKind& kind() const { return kind_; }
  // Kind and this rank's calls, timed_calls, total_s (estimated: calls x the samples'
  // mean), min_s and max_s (of the samples).
  nlohmann::json to_json() const;

 private:
  CallKind kind_;
  mutable std::mutex mutex_;
  long calls_ = 0;
  long timed_ = 0;
  double total_ = 0;  // of the timed calls
  double learned_ = -1;
  double min_ = std::numeric_limits<double>::infinity();
  double max_ = 0;
};

// A record found for one message size, kept while calls repeat that size.
struct RecordCache {
  CallRecord* record = nullptr;
  std::int64_t bytes = -1;
};

class CallStats {
 public:
  void enable() { enabled_ = true; }
  bool enabled() const { return enabled_; }
  // The record of `kind`, created on first use; the pointer stays valid until reset().
  CallRecord* record(const CallKind& kind);
  // Every record of this rank, as a JSON array.
  nlohmann::json to_json() const;
  std::vector<const CallRecord*> records() const;

 private:
  bool enabled_ = false;
  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<CallRecord>> records_;
};

}  // namespace canopy::shim
