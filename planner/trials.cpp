#include "planner/trials.h"

#include <algorithm>
#include <cmath>

namespace canopy::planner {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
// Calls of a millisecond or more are measured one at a time; shorter ones in batches of
// about 50 us (and so, at two ranks, several calls even at 256 KiB), at most 16 calls.
constexpr double kSingleCallSeconds = 1e-3;
constexpr double kBatchSeconds = 50e-6;
constexpr int kMaxBatch = 16;
// A sum of n calls at an agreed mean is n times it within a rounding: a sum this share of
// native's first-call target or more has reached it (end_round, agreement_after).
constexpr double kReachedShare = 1 - 1e-9;

}  // namespace

int trial_batch(double predicted_seconds, int staging_entries, int stages) {
  if (predicted_seconds >= kSingleCallSeconds) return 1;
  const int entries = std::max(staging_entries, 0);
  const int fill = (entries + std::max(stages, 1) - 1) / std::max(stages, 1);  // calls
  const int ring_full = 4 * fill;
  if (!(predicted_seconds > 0)) return std::max(kMaxBatch, ring_full);
  const double more = std::ceil(kBatchSeconds / predicted_seconds);
  const int batch = static_cast<int>(std::clamp(1.0 + more, 2.0, static_cast<double>(kMaxBatch)));
  return std::max(batch, ring_full);
}

std::vector<int> trial_batches(const std::vector<TrialCandidate>& candidates, double point_to_point_price) {
  std::vector<int> out;
  const double first = candidates.empty() ? 0.0 : candidates.front().predicted;
  for (const TrialCandidate& c : candidates) {
    if (c.native) out.push_back(trial_batch(point_to_point_price > 0 ? point_to_point_price : first));
    else out.push_back(trial_batch(c.predicted, c.runs_ahead ? c.staging_entries : 0, c.stages));
  }
  return out;
}

double TrialPrice::beyond(double native_seconds, double distrust, double clear) const {
  double price = short_calls;
  const bool look = after_look > 0 && (native_batch <= 1 || trial_batch(native_seconds) <= 1);
  // After the look: the settling call runs the cheapest priced schedule, the rounds the
  // look's fastest, which is no slower than that one (TrialPrice).
  double cheapest = kInfinity;
  const double bar = cheapest_schedule > 0 ? std::min(native_seconds, cheapest_schedule) : native_seconds;
  for (const Long& l : long_calls) {
    if (clear > 0 && native_seconds > 0 && l.predicted > clear * bar) continue;  // priced out
    const double call = std::max(0.0, distrust * l.predicted - native_seconds);
    price += (look || l.fallback_calls == 0 ? l.calls : l.fallback_calls) * call;
    cheapest = std::min(cheapest, call);
  }
  return price + (look && cheapest < kInfinity ? after_look * cheapest : 0);
}

TrialPrice trial_price(const std::vector<TrialCandidate>& candidates, const std::vector<int>& batches, int rounds) {
  TrialPrice price;
  const int per_batch = std::max(rounds, 0) + 1;  // the first look (or a round more) and the measured rounds
  bool all_long = true;
  for (std::size_t c = 0; c < candidates.size(); ++c) {
    if (candidates[c].native) {
      price.native_batch = c < batches.size() ? batches[c] : 0;
      continue;
    }
    const int calls = (c < batches.size() ? std::max(batches[c], 1) : 1) * per_batch;
    if (const double p = candidates[c].predicted; p > 0 && (price.cheapest_schedule == 0 || p < price.cheapest_schedule))
      price.cheapest_schedule = p;
    if (candidates[c].predicted >= kSingleCallSeconds) {
      price.long_calls.push_back({candidates[c].predicted, calls});
    } else {
      price.short_calls += calls * candidates[c].predicted;
      all_long = false;
    }
  }
  // Every schedule long (one call a batch): priced at a look each and the calls after it
  // (TrialPrice::after_look), where there is a look.
  if (all_long && !price.long_calls.empty()) {
    for (TrialPrice::Long& l : price.long_calls) l = {l.predicted, 1, l.calls};
    price.after_look = 1 + std::max(rounds, 0);  // the settling call and the measured rounds
  }
  return price;
}

Trials::Trials(int candidates, int native, TrialSettings settings)
    : settings_(settings),
      native_(native),
      best_(std::max(candidates, 0), kInfinity),
      rounds_with_native_(best_.size(), 0),
      won_over_native_(best_.size(), 0) {
  settings_.batch = std::max(1, settings_.batch);
  settings_.rounds = std::max(0, settings_.rounds);
  const bool has_native = native >= 0 && native < candidates;
  for (int c = 0; c < candidates; ++c)
    if (c != native) live_.push_back(c);
  if (has_native && settings_.native_first && !live_.empty()) {
    phase_ = Phase::kNativeFirst;
    pending_ = live_;
    pending_.push_back(native);  // native last, as in every round
    live_ = {native};
    next_agreement_ = std::max(1, settings_.native_first_calls);
    clear_round();
    return;
  }
  if (has_native && settings_.native_after > 0 && !live_.empty()) phase_ = Phase::kSchedules;
  else if (has_native) live_.push_back(native);
  start_rounds();
}

void Trials::start_rounds() {
  // Native's rounds against each schedule are counted afresh with each series of rounds
  // (as each candidate's best is, where it matters: start_native_trial, a recheck).
  rounds_with_native_.assign(best_.size(), 0);
  won_over_native_.assign(best_.size(), 0);
  position_ = 0;
  in_batch_ = 0;
  clear_round();
  // No first look for short calls (trials.h): where any candidate's batch is longer
  // than one call.
  round_ = 0;
  for (int c : live_)
    if (batch_of(c) > 1) round_ = 1;
  settling_ = false;
  if (live_.size() <= 1) {
    if (phase_ == Phase::kSchedules) {  // one schedule: nothing to measure before native's trial
      decide();
      return;
    }
    decided_ = true;
    chosen_ = live_.empty() ? 0 : live_.front();
    return;
  }
  settling_ = round_ == 0;
  // The settling call runs the schedule priced cheapest (the first where none is
  // priced): what the trials' price counts it at (TrialPrice).
  const auto price = [&](int c) {
    return c == native_ || static_cast<std::size_t>(c) >= settings_.predicted.size()
               ? std::numeric_limits<double>::infinity()
               : settings_.predicted[static_cast<std::size_t>(c)];
  };
  settling_candidate_ = live_.front();
  for (int c : live_)
    if (price(c) < price(settling_candidate_)) settling_candidate_ = c;
}

void Trials::start_native_trial() {
  phase_ = Phase::kWithNative;
  earlier_rounds_ = round_;
  // The schedule and native MPI are compared on the rounds they share only: the
  // schedule's best of its earlier rounds is the best of more samples, and of another
  // period of the job (trials.h).
  best_[chosen_] = kInfinity;
  live_ = {chosen_, native_};  // native last, as in every round
  start_rounds();
}

int Trials::batch_of(int candidate) const {
  if (candidate >= 0 && candidate < static_cast<int>(settings_.batches.size()) && settings_.batches[candidate] > 0)
    return settings_.batches[candidate];
  return settings_.batch;
}

void Trials::clear_round() {
  sums_.assign(live_.size(), 0.0);
  measured_.assign(live_.size(), 0);
  first_touch_sums_.assign(live_.size(), 0.0);
  first_touches_.assign(live_.size(), 0);
}

bool Trials::count_native_first_call() {
  ++first_calls_;
  if (first_calls_ < next_agreement_) return false;
  // end_round() puts the next agreement where native can reach the trials' price
  // (agreement_after); this doubling stands only if no agreement is recorded.
  next_agreement_ = 2 * first_calls_;
  means_.assign(1, native_first_mean());  // every rank ran as many calls
  return true;
}

double Trials::native_first_mean() const {
  if (first_calls_ == 0) return 0;
  if (settings_.native_first_sample > 1) return first_seconds_ / first_calls_;  // first untimed: times_next()
  // The first call stands for itself until others are timed, and then is left out
  // (trials.h, native_first).
  return first_calls_ == 1 ? first_call_seconds_ : first_seconds_ / (first_calls_ - 1);
}

bool Trials::record_untimed() {
  // (Only native's first calls go untimed: times_next().)
  if (decided_ || phase_ != Phase::kNativeFirst) return false;
  ++calls_;
  return count_native_first_call();
}

int Trials::agreement_after(double native_mean) const {
  // The first of this call count's doublings (as at calls 1, 2, 4, ...) where native's
  // calls at this mean reach the target: they grow cheaper as native warms up, so no
  // earlier doubling can begin the rounds (trials.h).
  // (A rounding's worth under the quotient: a sum of n calls at the mean is n times it.)
  double reach = 0;
  if (native_mean > 0 && std::isfinite(native_mean)) reach = kReachedShare * native_first_target(native_mean) / native_mean;
  double next = 2.0 * std::max(first_calls_, 1);
  while (next < reach && next < std::numeric_limits<int>::max() / 4) next *= 2;
  return static_cast<int>(next);
}

double Trials::native_first_target(double native_mean) const {
  if (!settings_.native_first) return 0;
  // (Without the candidates' prices none is priced out when the rounds begin, so none
  // leaves the price.)
  const double clear = settings_.predicted.empty() ? 0 : settings_.clear;
  return settings_.native_first_factor * settings_.native_first->beyond(native_mean, settings_.first_look, clear);
}

bool Trials::record(double seconds, bool first_touch) {
  if (decided_) return false;
  ++calls_;
  if (phase_ == Phase::kNativeFirst) {
    // A timed call past the first ones stands for itself and the untimed calls after it
    // (times_next()), so that the sum stays a sum over every call: the first calls, far
    // dearer than the rest, weigh as they did (but for the very first, which
    // times_next() leaves out: the ranks' planning of the class, not native's cost).
    // A sampled call counts at most kSampledCallCap times the fastest sampled so far:
    // one that met a pause of the machine would count it `native_first_sample` times.
    // Decision: 2 ranks, MPICH 4.0.2, 8 B allreduces, OSU's way, 3 runs, one in 16 of
    // native's first calls timed from the 32nd: between calls 256 and 512 the sum grew by
    // 290-335 us in two runs and by 1.5 ms in the third (a sampled call of about 90 us),
    // which began the trials there rather than at call 1024.
    // (A call timed where times_next() did not ask for one adds nothing: the sample
    // before it stands for it, or, for a sampled class's first call, nothing does.)
    if (sampling()) {
      if (first_calls_ % settings_.native_first_sample == 0) {
        fastest_sampled_ = std::min(fastest_sampled_, seconds);
        first_seconds_ += std::min(seconds, kSampledCallCap * fastest_sampled_) * settings_.native_first_sample;
      }
    } else if (!untimed_first()) {
      (first_calls_ == 0 ? first_call_seconds_ : first_seconds_) += seconds;
    }
    return count_native_first_call();
  }
  if (phase_ == Phase::kWaiting) {
    ++waited_;
    if (calls_ >= settings_.native_after) start_native_trial();
    return false;
  }
  if (settling_) {  // the call before the first look: not measured (trials.h)
    settling_ = false;
    return false;
  }
  // The first look is one call each; in a measured batch the first call pays for the
  // switch from another candidate and is not measured, and native MPI's first batch
  // (its first calls of the size) leaves out its first two (trials.h), one call longer.
  const int candidate = live_[position_];
  int batch = round_ == 0 ? 1 : batch_of(candidate);
  const bool native_cold = candidate == native_ && batch > 1 && native_calls_ == in_batch_;
  if (native_cold) ++batch;
  const int unmeasured = batch == 1 ? 0 : native_cold ? 2 : 1;
  if (candidate == native_) ++native_calls_;
  if (in_batch_ >= unmeasured && first_touch) {
    first_touch_sums_[position_] += seconds;
    ++first_touches_[position_];
  } else if (in_batch_ >= unmeasured) {
    sums_[position_] += seconds;
    ++measured_[position_];
  }
  if (++in_batch_ < batch) return false;
  in_batch_ = 0;
  if (++position_ < static_cast<int>(live_.size())) return false;
  position_ = 0;
  means_.assign(live_.size(), kInfinity);
  for (std::size_t i = 0; i < live_.size(); ++i) {
    if (measured_[i] > 0)
      means_[i] = sums_[i] / measured_[i];
    else if (first_touches_[i] > 0)
      means_[i] = first_touch_sums_[i] / first_touches_[i];
  }
  return true;
}

void Trials::end_round(const std::vector<double>& agreed) {
  if (decided_ || agreed.size() != live_.size()) return;
  if (phase_ == Phase::kNativeFirst) {
    // The slowest rank's mean times the calls: its total, the same on every rank.
    // (A sum a rounding short of the target has reached it: projected to reach it at
    // this call, it would otherwise wait for the next agreement.)
    if (first_calls_ < settings_.native_first_calls ||
        agreed[0] * first_calls_ < kReachedShare * native_first_target(agreed[0])) {
      next_agreement_ = agreement_after(agreed[0]);
      return;
    }
    phase_ = Phase::kWithNative;
    native_calls_ = first_calls_;  // warm: its first batch leaves out one call, as the others'
    native_first_mean_ = agreed[0];
    // Native's batches by its measured time, where that makes them shorter (trials.h).
    if (const int measured = trial_batch(native_first_mean_); native_ >= 0 && measured < batch_of(native_)) {
      if (settings_.batches.size() <= static_cast<std::size_t>(native_))
        settings_.batches.resize(static_cast<std::size_t>(native_) + 1, 0);
      settings_.batches[static_cast<std::size_t>(native_)] = measured;
    }
    live_ = pending_;
    // Long schedules priced clearly over native's calls, or over another schedule's
    // price, are not trialled (trials.h).
    const auto price_of = [&](int c) {
      return c == native_ || static_cast<std::size_t>(c) >= settings_.predicted.size()
                 ? 0.0
                 : settings_.predicted[static_cast<std::size_t>(c)];
    };
    double bar = native_first_mean_;
    for (const int c : live_)
      if (const double price = price_of(c); price > 0) bar = std::min(bar, price);
    const auto priced_out = [&](int c) {
      const double price = price_of(c);
      return price >= kSingleCallSeconds && price > settings_.clear * bar;
    };
    live_.erase(std::remove_if(live_.begin(), live_.end(), priced_out), live_.end());
    start_rounds();
    if (!decided_ && round_ == 0) {  // a first look: native's first calls stand for its look (trials.h)
      live_.erase(std::find(live_.begin(), live_.end(), native_));
      best_[native_] = native_first_mean_;
      native_aside_ = true;
      clear_round();
    }
    return;
  }
  if (native_aside_) {
    // The first look after native's first calls: it prunes and clears the schedules only;
    // native rejoins for the measured rounds (trials.h).
    native_aside_ = false;
    double fastest = native_first_mean_;
    for (std::size_t i = 0; i < live_.size(); ++i) {
      best_[live_[i]] = std::min(best_[live_[i]], agreed[i]);
      fastest = std::min(fastest, agreed[i]);
    }
    ++round_;
    if (const int winner = clear_winner(agreed); winner >= 0) live_ = {live_[winner]};
    else live_ = after_first_look(agreed, settings_.first_look * fastest);
    live_.push_back(native_);  // native last, as in every round
    clear_round();
    if (live_.size() <= 1 || round_ > settings_.rounds) decide();
    return;
  }
  double fastest = kInfinity;
  for (std::size_t i = 0; i < live_.size(); ++i) {
    best_[live_[i]] = std::min(best_[live_[i]], agreed[i]);
    fastest = std::min(fastest, agreed[i]);
  }
  count_rounds_with_native(agreed);
  const bool first_look = round_ == 0;
  const double limit = (first_look ? settings_.first_look : settings_.drop) * fastest;
  ++round_;
  // A clear winner decides at once.
  if (const int winner = clear_winner(agreed); winner >= 0) {
    live_ = {live_[winner]};
    decide();
    return;
  }
  std::vector<int> kept;
  if (first_look) {
    kept = after_first_look(agreed, limit);
  } else {
    for (std::size_t i = 0; i < live_.size(); ++i)
      if (agreed[i] <= limit) kept.push_back(live_[i]);
  }
  live_ = kept;
  clear_round();
  if (live_.size() <= 1 || round_ > settings_.rounds) decide();
}

void Trials::count_rounds_with_native(const std::vector<double>& agreed) {
  const auto at = std::find(live_.begin(), live_.end(), native_);
  if (at == live_.end()) return;
  const double native_mean = agreed[static_cast<std::size_t>(at - live_.begin())];
  for (std::size_t i = 0; i < live_.size(); ++i) {
    if (live_[i] == native_) continue;
    ++rounds_with_native_[static_cast<std::size_t>(live_[i])];
    if (agreed[i] < native_mean) ++won_over_native_[static_cast<std::size_t>(live_[i])];
  }
}

std::vector<int> Trials::after_first_look(const std::vector<double>& agreed, double limit) const {
  int fastest_schedule = -1;
  for (std::size_t i = 0; i < live_.size(); ++i)
    if (live_[i] != native_ && agreed[i] <= limit &&
        (fastest_schedule < 0 || agreed[i] < agreed[static_cast<std::size_t>(fastest_schedule)]))
      fastest_schedule = static_cast<int>(i);
  std::vector<int> kept;
  for (std::size_t i = 0; i < live_.size(); ++i)
    if (static_cast<int>(i) == fastest_schedule || (live_[i] == native_ && agreed[i] <= limit)) kept.push_back(live_[i]);
  return kept;
}

int Trials::clear_winner(const std::vector<double>& agreed) const {
  if (live_.size() < 2) return -1;
  for (std::size_t i = 0; i < live_.size(); ++i) {
    bool clear = true;
    for (std::size_t j = 0; j < live_.size() && clear; ++j)
      if (j != i && !(agreed[i] * settings_.clear <= agreed[j])) clear = false;
    if (clear) return static_cast<int>(i);
  }
  return -1;
}

void Trials::decide() {
  int winner = live_.front();
  for (int c : live_)
    if (best_[c] < best_[winner]) winner = c;  // ties: the earlier in trial order
  if (phase_ == Phase::kSchedules) {
    // The schedules' rounds are over: their best runs until native's trial.
    chosen_ = winner;
    phase_ = Phase::kWaiting;
    if (calls_ >= settings_.native_after) start_native_trial();
    return;
  }
  const bool native_live = std::find(live_.begin(), live_.end(), native_) != live_.end();
  if (native_live && winner != native_ && !(best_[winner] < (1 - settings_.native_margin) * best_[native_]))
    winner = native_;
  // ... and must have been the faster in most of the rounds the two shared (trials.h).
  if (native_live && winner != native_) {
    const int shared = rounds_with_native_[static_cast<std::size_t>(winner)];
    if (shared > 0 && 2 * won_over_native_[static_cast<std::size_t>(winner)] <= shared) winner = native_;
  }
  decided_ = true;
  chosen_ = winner;
  plan_recheck();
}

void Trials::plan_recheck() {
  rivals_.clear();
  since_decision_ = 0;
  if (!(settings_.recheck_share > 0) || !(best_[chosen_] > 0) || !std::isfinite(best_[chosen_])) return;
  auto measured = [&](int c) { return c >= 0 && c != chosen_ && std::isfinite(best_[c]); };
  int schedule = -1;  // the best other schedule measured
  for (int c = 0; c < static_cast<int>(best_.size()); ++c)
    if (c != native_ && measured(c) && (schedule < 0 || best_[c] < best_[schedule])) schedule = c;
  const bool native_rival = measured(native_);
  // Beside native MPI, only a schedule measured close to the choice (within `drop`).
  if (schedule >= 0 && (!native_rival || best_[schedule] <= settings_.drop * best_[chosen_]))
    rivals_.push_back(schedule);
  if (native_rival) rivals_.push_back(native_);  // native last, as in every round
  if (rivals_.empty()) return;
  // A recheck's price: its measured rounds (a first look for calls of one per batch)
  // of the choice and its rivals, at their best means; the calls of the choice that
  // make it that share.
  double per_round = best_[chosen_] * batch_of(chosen_);
  for (int r : rivals_) per_round += best_[r] * batch_of(r);
  const double price = std::max(1, settings_.rounds) * per_round;
  const double first = std::max(std::ceil(price / (settings_.recheck_share * best_[chosen_])),
                                static_cast<double>(kMinRecheckCalls));
  recheck_at_ = static_cast<long>(std::min(std::ldexp(first, std::min(rechecks_, 40)), 1e15));
}

bool Trials::count_decided_call() {
  if (!decided_ || rivals_.empty() || ++since_decision_ < recheck_at_) return false;
  ++rechecks_;
  decided_ = false;
  phase_ = Phase::kWithNative;
  earlier_rounds_ += round_;
  // Compared on the recheck's rounds alone (as in native's trial), native last.
  live_.clear();
  if (chosen_ != native_) live_.push_back(chosen_);
  live_.insert(live_.end(), rivals_.begin(), rivals_.end());
  if (chosen_ == native_) live_.push_back(chosen_);
  for (int c : live_) best_[c] = kInfinity;
  start_rounds();
  return true;
}

}  // namespace canopy::planner
