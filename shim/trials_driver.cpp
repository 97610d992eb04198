// auto's trials and CANOPY_LEARN for one communicator: what happens after a call ran.
// CommState::finish_call records the trials' times, has the ranks agree on each round
// and lets the trials prune or decide; count_decided_call counts a decided plan's calls
// towards its recheck; sample_call and align_for_sample measure a decided plan's calls
// for the model, which learn() refits (stamp_learned_predictions puts its predictions
// in the report). And the log lines and CANOPY_SAVE_RULES decisions that say what the
// trials measured and chose. The plans, and the trials they start with, are made with
// the plan cache (make_cached_plan); the agreements are the state's (agree_max,
// shim/comm_state.cpp); the trials' rules are the planner's (planner/trials.h).
#include "shim/trials_driver.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <spdlog/fmt/fmt.h>

#include "planner/describe.h"
#include "planner/learn.h"
#include "shim/comm_state.h"
#include "shim/runtime.h"
#include "shim/save_rules.h"

namespace canopy::shim {

namespace {

// The bytes a plan serves, for auto's log lines: its exact size, or its class's range.
std::string class_bytes_text(const PlanKey& key) {
  return key.exact_count >= 0 ? std::to_string(key.exact_count * key.element_bytes)
                              : fmt::format("{}..{}", planner::class_first_bytes(key.size_class),
                                            planner::class_last_bytes(key.size_class));
}

// What `plan`'s trials decided (or, waiting for native MPI's trial, what they measured),
// for CANOPY_SAVE_RULES.
config::Decision decision_of(const CachedPlan& plan, const PlanKey& key, int size) {
  config::Decision d;
  d.collective = key.collective;
  d.comm_size = size;
  d.root = key.root;
  d.first_bytes = key.exact_count >= 0 ? key.exact_count * key.element_bytes : planner::class_first_bytes(key.size_class);
  d.last_bytes = key.exact_count >= 0 ? key.exact_count * key.element_bytes : planner::class_last_bytes(key.size_class);
  d.commutative = key.collective != planner::Collective::Bcast ? (key.commutative ? 1 : 0) : -1;
  d.decided = plan.trials.decided();
  const Candidate& chosen = plan.candidates[plan.trials.chosen()];
  d.algorithm = chosen.native ? "native" : chosen.name();
  const std::vector<double>& best = plan.trials.best();
  for (std::size_t c = 0; c < plan.candidates.size(); ++c)
    if (best[c] < 1e300)
      d.measured += (d.measured.empty() ? "" : ", ") + trial_name(plan.candidates[c]) + " " + planner::format_seconds(best[c]);
  if (d.decided)
    d.measured = "measured per call " + d.measured + "; chose " + trial_name(chosen);
  else
    d.measured = trial_name(chosen) + " measured fastest of the schedules (" +
                 (d.measured.empty() ? std::string("the only one") : d.measured) +
                 "); native MPI's trial, at the size's call " + std::to_string(runtime().settings.auto_native_after) +
                 " (CANOPY_AUTO_NATIVE_AFTER), did not come";
  return d;
}

}  // namespace

std::string trial_name(const Candidate& c) {
  return c.native ? c.name() : c.name() + "/" + std::to_string(c.schedule.segments.size());
}

void log_native_wait(const CachedPlan& plan, const PlanKey& key, int size) {
  const Runtime& rt = runtime();
  if (!plan.trials.waiting_for_native() || !rt.log->should_log(spdlog::level::info)) return;
  const int chosen = plan.trials.chosen();
  const double best = plan.trials.best()[static_cast<std::size_t>(chosen)];
  const std::string which = best < 1e300 ? trial_name(plan.candidates[chosen]) + " measured fastest of the schedules (" +
                                               planner::format_seconds(best) + " per call)"
                                         : trial_name(plan.candidates[chosen]) + " is the only schedule";
  rt.log->info("auto: {}, {} B: {}; it runs until the size's call {}, then native MPI is "
               "measured against it (CANOPY_AUTO_NATIVE_AFTER)",
               planner::on_ranks(key.collective, size, key.root), class_bytes_text(key), which,
               rt.settings.auto_native_after);
}

void CommState::learn(const Candidate& c, double seconds) {
  if (!learning_ || c.native || !(seconds > 0) || !std::isfinite(seconds)) return;
  if (!c.gradient.any()) return;
  // The latest samples only: the machine may change, and the fit stays cheap.
  if (samples_.size() == kLearnSamples) samples_.erase(samples_.begin());
  samples_.push_back({c.gradient, seconds});
  model_ = planner::refit(runtime().model, samples_);
}

void CommState::align_for_sample() {
  std::vector<double> nothing{0};
  agree_max(nothing);
}

void CommState::sample_call(const Candidate& c, double seconds) {
  std::vector<double> slowest{seconds};
  if (agree_max(slowest)) learn(c, slowest[0]);
}

void CommState::stamp_learned_predictions() const {
  if (!learning_) return;
  for (const auto& [key, plan] : lru_)
    for (const Candidate& c : plan->candidates)
      if (!c.native && c.stats.record) c.stats.record->set_learned(planner::predict(c.gradient, model_));
}

bool CommState::count_decided_call(CachedPlan& plan, const PlanKey& key) const {
  if (!plan.trials.count_decided_call()) return false;
  Runtime& rt = runtime();
  if (rank_ != 0 || !rt.log->should_log(spdlog::level::debug)) return true;
  const std::vector<int>& live = plan.trials.live();
  std::string which;
  for (std::size_t i = 0; i < live.size(); ++i) which += (i ? " and " : "") + trial_name(plan.candidates[live[i]]);
  rt.log->debug("auto: {}, {} B: recheck {} of the decision (CANOPY_AUTO_RECHECK): {} run "
                "rounds again",
                planner::on_ranks(key.collective, size_, key.root), class_bytes_text(key), plan.trials.rechecks(),
                which);
  return true;
}

void CommState::finish_call(CachedPlan& plan, const PlanKey& key, double seconds, bool first_touch) {
  if (plan.trials.record(seconds, first_touch)) end_trial_round(plan, key);
}

void CommState::finish_untimed_call(CachedPlan& plan, const PlanKey& key) {
  if (plan.trials.record_untimed()) end_trial_round(plan, key);
}

void CommState::end_trial_round(CachedPlan& plan, const PlanKey& key) {
  // The slowest rank's time is each candidate's time.
  std::vector<double> agreed = plan.trials.round_means();
  const std::vector<int> live = plan.trials.live();
  if (!agree_max(agreed)) {
    // The agreement failed (MPI returned an error): native MPI wins if it is in the
    // running, else the first candidate, without further trials.
    agreed.assign(live.size(), 1.0);
    for (std::size_t i = 0; i < live.size(); ++i)
      if (plan.candidates[live[i]].native || (i == 0 && !plan.candidates[live.back()].native)) agreed[i] = 0.25;
  }
  Runtime& rt = runtime();
  if (plan.trials.native_first()) {
    // Native MPI's first calls (CANOPY_AUTO_NATIVE_FIRST): the rounds begin once they have
    // cost what the trials are priced at, on the slowest rank.
    const int calls = plan.trials.native_first_calls();
    plan.trials.end_round(agreed);
    // The lines are made only where they are printed: in a call, and run for the first
    // time, formatting them cost 36-93 us on this project's VM (2 ranks, Open MPI, the
    // 256th 8 B allreduce; docs/performance-history.md, section 15), on every rank.
    const bool begins = !plan.trials.native_first();
    const spdlog::level::level_enum level = begins ? spdlog::level::info : spdlog::level::debug;
    if (rank_ != 0 || !rt.log->should_log(level)) return;
    // Past the first call its mean leaves that call out (planner/trials.h, native_first).
    const bool one = calls == 1;
    rt.log->log(level, "auto: {}, {} B: native MPI's first {} took {} a call{} (slowest rank), {} {} against {} for the trials: {}",
                planner::on_ranks(key.collective, size_, key.root), class_bytes_text(key),
                one ? std::string("call") : fmt::format("{} calls", calls), planner::format_seconds(agreed.front()),
                one ? "" : " past the first", planner::format_seconds(agreed.front() * calls),
                one ? "in all" : "at that rate", planner::format_seconds(plan.trials.native_first_target(agreed.front())),
                begins ? "the trials begin (CANOPY_AUTO_NATIVE_FIRST)" : "native MPI runs on (CANOPY_AUTO_NATIVE_FIRST)");
    return;
  }
  if (rank_ == 0 && rt.log->should_log(spdlog::level::debug)) {
    std::string round;
    for (std::size_t i = 0; i < live.size(); ++i)
      round += (i ? ", " : "") + trial_name(plan.candidates[live[i]]) + " " + planner::format_seconds(agreed[i]);
    rt.log->debug("auto: {}: trial round {}, per call (slowest rank): {}",
                  planner::on_ranks(key.collective, size_, key.root), plan.trials.rounds_done() + 1, round);
  }
  for (std::size_t i = 0; i < live.size(); ++i) learn(plan.candidates[live[i]], agreed[i]);
  plan.trials.end_round(agreed);
  if (rank_ == 0) log_native_wait(plan, key, size_);
  if (rank_ == 0 && !rt.settings.save_rules.empty() && (plan.trials.decided() || plan.trials.waiting_for_native()))
    plan.noted_decision = note_decision(decision_of(plan, key, size_), plan.noted_decision);
  if (plan.trials.decided() && !topology_) {
    // The size class's other roots take this decision from now on (ClassChoices).
    ClassChoices* choices = class_choices(key);
    // (A recheck's decision at that root replaces its earlier one.)
    if (choices && (choices->decided_root < 0 || choices->decided_root == key.root)) {
      const Candidate& chosen = plan.candidates[plan.trials.chosen()];
      choices->decided_root = key.root;
      choices->native = chosen.native;
      if (!chosen.native) {
        auto same = [&](const planner::Choice& c) {
          return c.algorithm == chosen.choice.algorithm && c.segment_bytes == chosen.choice.segment_bytes;
        };
        const auto at = std::find_if(choices->picks.begin(), choices->picks.end(), same);
        choices->chosen = static_cast<int>(at - choices->picks.begin());
        if (at == choices->picks.end()) choices->picks.push_back(chosen.choice);
      }
    }
  }
  if (plan.trials.decided() && rank_ == 0 && rt.log->should_log(spdlog::level::info)) {
    std::string measured;
    const std::vector<double>& best = plan.trials.best();
    for (std::size_t c = 0; c < plan.candidates.size(); ++c)
      measured += (c ? ", " : "") + trial_name(plan.candidates[c]) + " " +
                  (best[c] < 1e300 ? planner::format_seconds(best[c]) : std::string("not measured"));
    const std::string recheck =
        plan.trials.rechecks() > 0 ? fmt::format("recheck {} (CANOPY_AUTO_RECHECK): ", plan.trials.rechecks()) : "";
    rt.log->info("auto: {}, {} B: {}measured per call {} ({} trial calls, {} rounds); chose {}",
                 planner::on_ranks(key.collective, size_, key.root), class_bytes_text(key), recheck, measured,
                 plan.trials.calls(),
                 plan.trials.rounds_done(), trial_name(plan.candidates[plan.trials.chosen()]));
  }
}

}  // namespace canopy::shim
