// auto's trial policy (planner/trials.h): native stays unless a schedule is measured
// faster by the margin, bad candidates go after their first batch, a clear winner
// decides at once, and the number of trial calls is what the settings allow.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>
#include <functional>
#include <map>

#include "planner/trials.h"

using namespace canopy::planner;

namespace {

// Runs the trials with each candidate taking `time(candidate, call)` seconds per call
// (the same on every rank: agreed means are this rank's). Returns the winner.
int run(Trials& t, const std::function<double(int)>& time, int max_calls = 1000) {
  for (int call = 0; call < max_calls && !t.decided(); ++call) {
    const int c = t.current();
    if (t.record(time(c))) t.end_round(t.round_means());
  }
  REQUIRE(t.decided());
  return t.chosen();
}

// Runs native MPI's first calls at `native` seconds each until they have cost the trials'
// price (TrialSettings::native_first); returns how many ran.
int native_first_calls(Trials& t, double native) {
  int calls = 0;
  while (t.native_first()) {
    ++calls;
    if (t.record(native)) t.end_round(t.round_means());
  }
  return calls;
}

}  // namespace

TEST_CASE("Trials: native stays unless a schedule beats it by the margin (10%)", "[trials]") {
  TrialSettings s;
  s.batch = 3;
  // Candidate 0 is native. A schedule 5% faster does not replace it; 15% faster does.
  for (double ratio : {0.98, 0.95, 0.85, 1.0, 1.3}) {
    Trials t(2, 0, s);
    const int chosen = run(t, [&](int c) { return c == 0 ? 10e-6 : ratio * 10e-6; });
    CAPTURE(ratio);
    CHECK(chosen == (ratio < 0.9 ? 1 : 0));
  }
  // Without native (it cannot compete), the fastest schedule wins.
  Trials t(3, -1, s);
  CHECK(run(t, [](int c) { return c == 2 ? 1e-6 : 1.2e-6; }) == 2);
}

TEST_CASE("Trials: a schedule must be the faster in most rounds it shares with native, not in its best alone",
          "[trials]") {
  // Candidate 0 is native at 10 us a call throughout; the schedule's time a call in each
  // measured round is `ratio[round]` times that (rounds numbered as they end).
  const auto decide = [](int rounds, std::vector<double> ratio) {
    TrialSettings s;
    s.batch = 3;  // no first look: every round is measured, native in each
    s.rounds = rounds;
    Trials t(2, 0, s);
    int round = 0;
    for (int call = 0; call < 1000 && !t.decided(); ++call) {
      const int c = t.current();
      REQUIRE(round < static_cast<int>(ratio.size()));
      if (t.record(c == 0 ? 10e-6 : ratio[static_cast<std::size_t>(round)] * 10e-6)) {
        t.end_round(t.round_means());
        ++round;
      }
    }
    REQUIRE(t.decided());
    CHECK(round == static_cast<int>(ratio.size()));  // every round ran: none was a clear win
    return t.chosen();
  };
  // A lucky round 30% under native, a slower one: its best beats the margin, yet native
  // stays (one of two rounds is not most).
  CHECK(decide(2, {1.1, 0.7}) == 0);
  CHECK(decide(2, {0.7, 1.1}) == 0);
  // Faster in both rounds by more than the margin: the schedule.
  CHECK(decide(2, {0.85, 0.8}) == 1);
  // Two rounds of three, each past the margin: the schedule.
  CHECK(decide(3, {0.8, 1.05, 0.8}) == 1);
  // One of three: native.
  CHECK(decide(3, {1.05, 0.7, 1.2}) == 0);
}

TEST_CASE("Trials: the first call of each batch is not measured", "[trials]") {
  TrialSettings s;
  s.batch = 2;
  s.rounds = 1;
  Trials t(2, 0, s);
  // The first call of each of the schedule's batches is slow (a switch: 100 us, ten
  // times native's 10 us); the other calls are fast.
  std::map<int, int> calls;
  const int chosen = run(t, [&](int c) {
    const int k = calls[c]++;
    if (c == 0) return 10e-6;
    return k % 2 == 0 ? 100e-6 : 5e-6;
  });
  CHECK(chosen == 1);
  // Short calls have no first look: one measured round (2 calls each, the first not
  // measured; native's first batch 3, the first two not measured) finds the schedule
  // twice as fast, and it wins at once.
  CHECK(t.calls() == 5);
}

TEST_CASE("Trials: calls that touched new memory are measured only where nothing else of the round was",
          "[trials]") {
  // As measured on the 2-core AMD EPYC VM (2 ranks, 64 KiB broadcast): a new ring's
  // first 16 calls (two passes of its entries) took about 100 us where later ones took
  // 3 us, native MPI 6.5 us. Calls of the ring's first passes say record(.., true).
  TrialSettings s;
  s.batch = 32;
  s.rounds = 2;
  auto trial = [&](bool flag_first_touches) {
    Trials t(2, 1, s);  // candidate 0: the ring's schedule; 1: native
    int ring_calls = 0;
    for (int call = 0; call < 1000 && !t.decided(); ++call) {
      const int c = t.current();
      const bool young = c == 0 && ring_calls++ < 16;
      const double seconds = c == 1 ? 6.5e-6 : young ? 100e-6 : 3e-6;
      if (t.record(seconds, flag_first_touches && young)) t.end_round(t.round_means());
    }
    REQUIRE(t.decided());
    return t;
  };
  const Trials flagged = trial(true);
  CHECK(flagged.chosen() == 0);
  CHECK(flagged.best()[0] == Approx(3e-6));
  // Unflagged, the first pass is in the mean: (15 x 100 + 16 x 3) / 31 us, 50 us, and
  // native stays.
  const Trials unflagged = trial(false);
  CHECK(unflagged.chosen() == 1);
  CHECK(unflagged.best()[0] > 6.5e-6);

  // A round whose only measured calls touched new memory still has a mean: theirs.
  TrialSettings two = s;
  two.batch = 2;
  two.rounds = 1;
  Trials t(2, 1, two);
  REQUIRE(t.current() == 0);
  CHECK_FALSE(t.record(100e-6, true));  // the batch's first call: never measured
  CHECK_FALSE(t.record(40e-6, true));   // the batch's only measured call, first touch
  CHECK_FALSE(t.record(60e-6));         // native's first call: not measured
  CHECK_FALSE(t.record(30e-6));         // its second, still cold: not measured either
  REQUIRE(t.record(6e-6));
  REQUIRE(t.round_means().size() == 2);
  CHECK(t.round_means()[0] == Approx(40e-6));
  CHECK(t.round_means()[1] == Approx(6e-6));
}

TEST_CASE("Trials: a far slower candidate goes after its first batch (long calls: its first call), a clear "
          "winner decides at once",
          "[trials]") {
  TrialSettings s;
  s.batch = 2;
  s.rounds = 2;
  // Candidate 2 is 10x slower than the others: it runs one batch only.
  Trials t(3, 0, s);
  std::map<int, int> calls;
  run(t, [&](int c) {
    ++calls[c];
    return c == 2 ? 100e-6 : c == 1 ? 8.5e-6 : 10e-6;
  });
  CHECK(calls[2] == 2);    // one batch
  CHECK(calls[0] == 5);    // two measured rounds of 2, native's first batch one call longer
  CHECK(t.chosen() == 1);  // 8.5 us beats native's 10 us by more than the 10% margin
  // Long calls: one call is enough to see a candidate 10x slower.
  TrialSettings once = s;
  once.batch = 1;
  Trials slow(3, 0, once);
  std::map<int, int> slow_calls;
  run(slow, [&](int c) {
    ++slow_calls[c];
    return c == 2 ? 100e-3 : c == 1 ? 9e-3 : 10e-3;
  });
  CHECK(slow_calls[2] == 1);  // the first look only
  CHECK(slow.chosen() == 1);
  // A schedule 4x faster than native wins after the first look: on the test bed, the
  // trials of a 1 MiB broadcast end after four calls (the uncounted one, then one each).
  TrialSettings one = s;
  one.batch = 1;
  Trials fast(3, 0, one);
  CHECK(run(fast, [](int c) { return c == 0 ? 280e-3 : c == 1 ? 70e-3 : 140e-3; }) == 1);
  CHECK(fast.calls() == 4);
}

TEST_CASE("Trials: long calls' first call is not measured, so a cold first call does not prune the best",
          "[trials]") {
  // As measured on the lent 16-core machine (4 MiB reduce, 16 ranks): the first call of
  // the size class took 31.6 ms, the same schedule 1.3 ms warm, native 9.3 ms. Measured,
  // that first call would be more than 3x native's and prune the schedule at the first look.
  TrialSettings s;
  s.batch = 1;
  Trials t(2, 1, s);  // candidate 0: the schedule; 1: native
  REQUIRE(t.settling());
  REQUIRE(t.current() == 0);  // the uncounted call runs the first candidate
  int call = 0;
  const int chosen = run(t, [&](int c) {
    const bool first = call++ == 0;
    return c == 0 ? (first ? 31.6e-3 : 1.3e-3) : 9.3e-3;
  });
  CHECK_FALSE(t.settling());
  CHECK(chosen == 0);
  CHECK(t.best()[0] == Approx(1.3e-3));  // the cold call is in no mean
  // Short calls have no first look and no uncounted call before it (their batches'
  // first calls are not measured instead).
  TrialSettings short_calls;
  short_calls.batch = 4;
  CHECK_FALSE(Trials(2, 1, short_calls).settling());
  // Nor does a trial with one candidate, which is decided at once.
  CHECK_FALSE(Trials(1, 0, s).settling());
}

TEST_CASE("Trials: one candidate needs no trial, batches follow the predicted time, native runs last in a round",
          "[trials]") {
  Trials t(1, 0, TrialSettings{});
  CHECK(t.decided());
  CHECK(t.chosen() == 0);
  CHECK_FALSE(t.record(1.0));
  // Whatever runs first pays for first touches: native, the default, goes last.
  Trials order(3, 0, TrialSettings{});
  CHECK(order.live() == std::vector<int>{1, 2, 0});
  CHECK(order.current() == 1);
  CHECK(trial_batch(5e-3) == 1);
  CHECK(trial_batch(1e-3) == 1);
  CHECK(trial_batch(100e-6) == 2);
  CHECK(trial_batch(50e-6) == 2);
  CHECK(trial_batch(10e-6) == 6);  // 1 unmeasured + 5 calls of about 50 us in all
  CHECK(trial_batch(1e-6) == 16);
  CHECK(trial_batch(0) == 16);
  // Staged candidates: four fills of the ring for short calls, none for long ones. One
  // stage a call: four passes of the entries, two of them the warm-up.
  CHECK(trial_batch(1e-6, 32) == 128);
  CHECK(trial_batch(100e-6, 8) == 32);
  CHECK(trial_batch(1e-6, 4) == 16);
  CHECK(trial_batch(5e-3, 32) == 1);
  CHECK(trial_batch(0, 32) == 128);
  // Where a call makes several stages (a ring of 16 entries, as 3 to 8 ranks have; 2 ranks
  // had it before their ring of 8 larger entries): 64 KiB broadcasts in 2
  // stages 32 calls, 256 KiB in 8 stages 8, in 6 stages 12; a 1 MiB one of 22 stages
  // (40 us) 4; one stage a call (8 B to 48 KiB) 64.
  CHECK(trial_batch(2e-6, 16, 2) == 32);
  CHECK(trial_batch(10e-6, 16, 8) == 8);
  CHECK(trial_batch(10e-6, 16, 6) == 12);
  CHECK(trial_batch(40e-6, 16, 22) == 4);
  CHECK(trial_batch(1e-6, 16, 1) == 64);
  CHECK(trial_batch(1e-6, 16, 0) == 64);  // (no stages given: as one)
  // Never fewer than the predicted time asks for.
  CHECK(trial_batch(1e-6, 16, 64) == 16);
}

TEST_CASE("Trials: each candidate runs its own batch, only the ring's candidates fill the ring", "[trials]") {
  // A ring schedule (batch 8: four fills), a point-to-point one and native (batch 3):
  // a measured round is 8 + 3 + 4 calls, each batch's first call unmeasured, and
  // native's first two in its first batch (one call longer).
  TrialSettings s;
  s.batch = 3;
  s.batches = {8, 3, 3};
  s.rounds = 1;
  Trials t(3, 2, s);
  CHECK(t.batch_of(0) == 8);
  CHECK(t.batch_of(1) == 3);
  CHECK(t.batch_of(2) == 3);
  std::map<int, int> calls;
  std::map<int, double> first_call;
  int round_end = -1;
  for (int call = 0; call < 100 && !t.decided(); ++call) {
    const int c = t.current();
    // The first call of each batch (native: its first two) is ten times slower (the
    // switch, native's cold calls); they must not count.
    const double seconds = (calls[c]++ < (c == 2 ? 2 : 1) ? 10 : 1) * (c == 0 ? 5e-6 : c == 1 ? 40e-6 : 30e-6);
    if (t.record(seconds)) {
      round_end = call;
      const std::vector<double> means = t.round_means();
      REQUIRE(means.size() == 3);
      CHECK(means[0] == Approx(5e-6));
      CHECK(means[1] == Approx(40e-6));
      CHECK(means[2] == Approx(30e-6));
      t.end_round(means);
    }
  }
  CHECK(round_end == 8 + 3 + 4 - 1);
  CHECK(calls[0] == 8);
  CHECK(calls[1] == 3);
  CHECK(calls[2] == 4);
  REQUIRE(t.decided());
  CHECK(t.chosen() == 0);  // the ring, 6x faster than the others: decided at once
  // Without per-candidate batches every candidate runs `batch`.
  TrialSettings same;
  same.batch = 4;
  Trials u(2, 1, same);
  CHECK(u.batch_of(0) == 4);
  CHECK(u.batch_of(1) == 4);
  // Long calls (every batch one call) start with the first look; one longer batch is
  // enough for measured rounds from the start.
  TrialSettings longs;
  longs.batch = 1;
  longs.batches = {1, 1};
  CHECK(Trials(2, 1, longs).settling());
  longs.batches = {4, 1};
  CHECK_FALSE(Trials(2, 1, longs).settling());
}

TEST_CASE("Trials: each candidate's batch follows its own price, native's the best point-to-point schedule's",
          "[trials]") {
  // 2 ranks, 256 KiB reduce: the ring's schedule priced 8 us in 6 stages through 16
  // entries, a point-to-point one 60 us, native; the best point-to-point price 60 us.
  const std::vector<TrialCandidate> candidates = {
      {false, 8e-6, 16, 6}, {false, 60e-6, 0, 1}, {true, 0, 0, 1}};
  const std::vector<int> batches = trial_batches(candidates, 60e-6);
  REQUIRE(batches.size() == 3);
  CHECK(batches[0] == trial_batch(8e-6, 16, 6));  // four fills of the ring: 12
  CHECK(batches[0] == 12);
  CHECK(batches[1] == trial_batch(60e-6));  // 2
  CHECK(batches[2] == 2);                   // not the ring's price's 8
  CHECK(trial_batch(8e-6) == 8);
  // Without a point-to-point price, native's follows the first candidate's.
  CHECK(trial_batches(candidates, 0)[2] == 8);
  // Long point-to-point calls: native's batch is one call.
  CHECK(trial_batches(candidates, 2e-3)[2] == 1);
}

TEST_CASE("Trials: an allreduce's staged candidates get no fills of the ring, since no rank runs a call ahead",
          "[trials]") {
  // 2 ranks, 64 KiB allreduce: the ring's schedule priced 13.6 us in 1 stage through 8
  // entries, rabenseifner 13.8, native.
  std::vector<TrialCandidate> candidates = {{false, 13.6e-6, 8, 1}, {false, 13.8e-6, 0, 1}, {true, 0, 0, 1}};
  const std::vector<int> ahead = trial_batches(candidates, 13.8e-6);
  CHECK(ahead[0] == 32);  // a reduce's or a broadcast's: four fills of 8 calls
  for (TrialCandidate& c : candidates) c.runs_ahead = false;
  const std::vector<int> in_step = trial_batches(candidates, 13.8e-6);
  CHECK(in_step[0] == trial_batch(13.6e-6));  // its price's batch alone: 5
  CHECK(in_step[0] == 5);
  CHECK(in_step[1] == ahead[1]);  // the others' batches as they were
  CHECK(in_step[2] == ahead[2]);
  // ... so native MPI's first calls have less to pay for before the rounds begin.
  const int rounds = 2;
  CHECK(trial_price(candidates, in_step, rounds).short_calls <
        trial_price(candidates, ahead, rounds).short_calls / 2);
}

TEST_CASE("Trials: with native_after, native MPI runs no call before the size class's Nth, then is measured "
          "against the schedules' best by the same rules",
          "[trials]") {
  // Candidates 0 and 1 are schedules, 2 is native; batches of 4, one measured round
  // each time (rounds = 1). Each case: the schedules' times and native's, and who wins.
  struct Case {
    double schedule0, schedule1, native;
    int winner;
  };
  const Case cases[] = {
      {5e-6, 20e-6, 400e-6, 0},  // the ring 80x faster than native (2 ranks, 128 KiB, MPICH)
      {20e-6, 5e-6, 30e-6, 1},   // the schedules' best beats native by more than the margin
      {10e-6, 12e-6, 9e-6, 2},   // native faster: it wins its trial
      {10e-6, 12e-6, 10.5e-6, 2},  // the best schedule is faster, but not by the margin
  };
  for (const Case& k : cases) {
    CAPTURE(k.schedule0, k.schedule1, k.native);
    for (int after : {1, 30, 256}) {
      CAPTURE(after);
      TrialSettings s;
      s.batch = 4;
      s.rounds = 1;
      s.native_after = after;
      Trials t(3, 2, s);
      std::vector<int> sequence;
      bool waited = false;
      const int chosen = run(t, [&](int c) {
        sequence.push_back(c);
        waited = waited || t.waiting_for_native();
        return c == 0 ? k.schedule0 : c == 1 ? k.schedule1 : k.native;
      });
      CHECK(chosen == k.winner);
      // Without deferral the same times choose the same (the trials' rule is unchanged).
      TrialSettings at_once = s;
      at_once.native_after = 0;
      Trials u(3, 2, at_once);
      CHECK(run(u, [&](int c) { return c == 0 ? k.schedule0 : c == 1 ? k.schedule1 : k.native; }) == k.winner);
      // Native's first call is the class's call `after` or later (0-based: index >= after),
      // after both schedules' rounds; between them the schedules' best runs alone.
      const auto first_native = std::find(sequence.begin(), sequence.end(), 2);
      REQUIRE(first_native != sequence.end());
      const long at = first_native - sequence.begin();
      CHECK(at >= std::max(after, 8) + 4);  // the wait, then the schedule's batch of the last round
      CHECK(std::count(sequence.begin(), sequence.end(), 2) == 5);  // one batch, native's first: 4 + 1
      const int best = k.schedule0 <= k.schedule1 ? 0 : 1;
      for (long i = 8; i < at; ++i) CHECK(sequence[static_cast<std::size_t>(i)] == best);
      CHECK(waited == (after > 8));
      // calls() leaves the waiting out: the schedules' round (4 + 4 calls) and native's
      // trial (the best schedule's batch, then native's: 4 + 5).
      CHECK(t.calls() == 8 + 4 + 5);
      CHECK(t.calls() + (at - 12) == static_cast<long>(sequence.size()));  // the schedule's batch before native's
    }
  }
}

TEST_CASE("Trials: with native_after, one schedule and native: the schedule runs alone, then both are measured",
          "[trials]") {
  TrialSettings s;
  s.batch = 3;
  s.native_after = 50;
  Trials t(2, 1, s);  // candidate 0: the schedule; 1: native
  CHECK_FALSE(t.decided());
  CHECK(t.waiting_for_native());
  for (int call = 0; call < 49; ++call) {
    REQUIRE(t.current() == 0);
    CHECK_FALSE(t.record(1e-6));
  }
  CHECK(t.waiting_for_native());
  CHECK_FALSE(t.record(1e-6));  // call 50: the wait is over
  CHECK_FALSE(t.waiting_for_native());
  CHECK(t.live() == std::vector<int>{0, 1});  // native last, as in every round
  // The schedule 3x slower than native: native wins its trial (a clear winner).
  CHECK(run(t, [](int c) { return c == 0 ? 30e-6 : 10e-6; }) == 1);
  // Long calls get the first look in native's trial, as without deferral.
  TrialSettings longs;
  longs.batch = 1;
  longs.native_after = 5;
  Trials slow(2, 1, longs);
  for (int call = 0; call < 5; ++call) slow.record(1e-3);
  CHECK(slow.settling());
  // Without native, or with native_after 0, nothing waits.
  CHECK_FALSE(Trials(2, -1, s).waiting_for_native());
  TrialSettings none = s;
  none.native_after = 0;
  Trials now(2, 1, none);
  CHECK_FALSE(now.waiting_for_native());
  CHECK(now.live() == std::vector<int>{0, 1});
}

TEST_CASE("Trials: native MPI's first two calls of a size are not measured, and only in its first batch",
          "[trials]") {
  // As measured on the 2-core Intel Xeon VM (2 ranks, Open MPI, 1 MiB broadcast, a
  // barrier between calls): native's first calls took 410, 69, 38, 35 us; back to back
  // its steady calls take 59 us, the ring's broadcast 63. Native's trial comes at the
  // size class's 256th call, in batches of 2 (its price, 60 us). Its second call, cold
  // at twice its steady time, must not decide: native wins (the ring is not 10% faster).
  TrialSettings s;
  s.batch = 2;
  s.batches = {8, 2};  // the ring's schedule fills its ring; native's price
  s.rounds = 2;
  s.native_after = 256;
  Trials t(2, 1, s);  // candidate 0: the ring's broadcast; 1: native
  int native_calls = 0;
  std::vector<double> native_times;
  const int chosen = run(t, [&](int c) {
    if (c == 0) return 63e-6;
    const int k = native_calls++;
    native_times.push_back(k == 0 ? 410e-6 : k == 1 ? 120e-6 : 59e-6);
    return native_times.back();
  });
  CHECK(chosen == 1);
  CHECK(t.best()[1] == Approx(59e-6));
  // Native ran its first batch of 3 (2 + 1) and a second of 2: only the first call of
  // later batches is left out.
  CHECK(native_calls == 5);
  // (Measured from its second call, native's 120 us against the ring's 63 pruned it
  // after one round: the ring ran every later call, 6% slower.) A native whose third
  // call is still slow loses, as before.
  Trials slow(2, 1, s);
  int k = 0;
  CHECK(run(slow, [&](int c) { return c == 0 ? 63e-6 : (k++ < 3 ? 410e-6 : 59e-6); }) == 0);
}

TEST_CASE("Trials: in native's trial after the wait, the schedule and native are compared on its rounds only",
          "[trials]") {
  // The schedule measured 3.5 us a call in the schedules' rounds (a quick period, or the
  // minimum of more rounds), 4.4 in the rounds it shares with native, native 4.1 there.
  // Compared on the shared rounds native wins; the earlier best (3.5 < 0.9 x 4.1) would
  // have kept the schedule, 7% slower than native from then on.
  TrialSettings s;
  s.batch = 4;
  s.rounds = 2;
  s.native_after = 64;
  Trials t(3, 2, s);  // candidates 0 and 1: schedules; 2: native
  // Native is live only in its own trial (native_after > 0): the shared rounds.
  auto in_native_trial = [&] { return std::count(t.live().begin(), t.live().end(), 2) > 0 && !t.waiting_for_native(); };
  const int chosen = run(t, [&](int c) {
    if (c == 2) return 4.1e-6;
    if (c == 1) return 9e-6;
    return in_native_trial() ? 4.4e-6 : 3.5e-6;
  });
  CHECK(chosen == 2);
  CHECK(t.best()[0] == Approx(4.4e-6));  // the log reports what decided
  CHECK(t.best()[2] == Approx(4.1e-6));
  // A schedule faster by the margin in the shared rounds still wins.
  Trials u(3, 2, s);
  CHECK(run(u, [&](int c) { return c == 2 ? 4.1e-6 : c == 1 ? 9e-6 : 3.5e-6; }) == 0);
}

TEST_CASE("Trials: a decision is checked again after the calls its share allows, and a rival faster now wins",
          "[trials]") {
  // The case that made rechecks (trials.h): native's trial measured 195 us a call over
  // its cold calls, the ring's schedule 90 us; later native takes 15 us.
  TrialSettings s;
  s.batch = 4;
  s.rounds = 2;
  s.recheck_share = 0.02;
  Trials t(2, 1, s);  // 0: the schedule, 1: native
  double native_time = 195e-6;
  REQUIRE(run(t, [&](int c) { return c == 1 ? native_time : 90e-6; }) == 0);
  CHECK(t.rivals() == std::vector<int>{1});
  // The recheck's price: two rounds of both candidates' batches at their measured
  // times, under 2% of the choice's calls since the decision.
  const double price = s.rounds * (195e-6 * s.batch + 90e-6 * s.batch);
  const long expected = std::max(kMinRecheckCalls, static_cast<long>(std::ceil(price / (s.recheck_share * 90e-6))));
  REQUIRE(t.calls_until_recheck() == expected);
  for (long call = 1; call < expected; ++call) REQUIRE_FALSE(t.count_decided_call());
  CHECK(t.count_decided_call());
  CHECK_FALSE(t.decided());
  CHECK(t.rechecks() == 1);
  native_time = 15e-6;
  CHECK(run(t, [&](int c) { return c == 1 ? native_time : 90e-6; }) == 1);
  // Now native is the choice and the schedule its rival; the next wait is twice as
  // long for the same price (here priced at native's new time).
  CHECK(t.rivals() == std::vector<int>{0});
  const double next_price = s.rounds * (90e-6 * s.batch + 15e-6 * s.batch);
  CHECK(t.calls_until_recheck() ==
        2 * std::max(kMinRecheckCalls, static_cast<long>(std::ceil(next_price / (s.recheck_share * 15e-6)))));
}

TEST_CASE("Trials: native chosen, a schedule faster in a later period of the job wins its recheck", "[trials]") {
  TrialSettings s;
  s.batch = 4;
  s.recheck_share = 0.05;
  Trials t(2, 1, s);
  double schedule_time = 20e-6;
  REQUIRE(run(t, [&](int c) { return c == 1 ? 15e-6 : schedule_time; }) == 1);
  REQUIRE(t.rivals() == std::vector<int>{0});
  schedule_time = 5e-6;
  long calls = 0;
  while (!t.count_decided_call()) ++calls;
  CHECK(calls + 1 >= kMinRecheckCalls);
  CHECK(run(t, [&](int c) { return c == 1 ? 15e-6 : schedule_time; }) == 0);
}

TEST_CASE("Trials: rechecks that keep the choice double their wait and cost at most about their share",
          "[trials]") {
  TrialSettings s;
  s.batch = 4;
  s.rounds = 2;
  s.recheck_share = 0.02;
  const double schedule = 10e-6, native = 15e-6;  // the schedule is the right choice throughout
  Trials t(2, 1, s);
  auto time = [&](int c) { return c == 1 ? native : schedule; };
  REQUIRE(run(t, time) == 0);
  double total = 0, extra = 0;
  std::vector<long> starts;
  for (long call = 0; call < 4000000; ++call) {
    if (t.decided()) {
      total += schedule;
      if (t.count_decided_call()) starts.push_back(call);
      continue;
    }
    const int c = t.current();
    total += time(c);
    extra += time(c) - schedule;
    if (t.record(time(c))) t.end_round(t.round_means());
  }
  CHECK(t.decided());
  CHECK(t.chosen() == 0);
  REQUIRE(starts.size() >= 5);
  CAPTURE(starts);
  for (std::size_t i = 2; i < starts.size(); ++i) {
    const double gap = starts[i] - starts[i - 1], before = starts[i - 1] - starts[i - 2];
    CHECK(gap / before == Approx(2).epsilon(0.01));
  }
  CHECK(extra <= s.recheck_share * total);
  CHECK(extra > 0);
}

TEST_CASE("Trials: a recheck measures native and a schedule measured close to the choice", "[trials]") {
  TrialSettings s;
  s.batch = 4;
  s.rounds = 2;
  s.recheck_share = 0.02;
  // 0 and 1: schedules, 2: native. Schedule 1 measured 1.2x the choice (within drop,
  // 1.5x): it is rechecked beside native, and wins when it has become the fastest.
  {
    Trials t(3, 2, s);
    double second = 12e-6;
    REQUIRE(run(t, [&](int c) { return c == 2 ? 20e-6 : c == 0 ? 10e-6 : second; }) == 0);
    CHECK(t.rivals() == std::vector<int>{1, 2});
    const double price = s.rounds * (10e-6 * s.batch + 12e-6 * s.batch + 20e-6 * s.batch);
    CHECK(t.calls_until_recheck() ==
          std::max(kMinRecheckCalls, static_cast<long>(std::ceil(price / (s.recheck_share * 10e-6)))));
    while (!t.count_decided_call()) {
    }
    CHECK(t.live() == std::vector<int>{0, 1, 2});
    second = 6e-6;
    CHECK(run(t, [&](int c) { return c == 2 ? 20e-6 : c == 0 ? 10e-6 : second; }) == 1);
  }
  // Measured 2x the choice, schedule 1 is left out where native is a rival ...
  {
    Trials t(3, 2, s);
    REQUIRE(run(t, [](int c) { return c == 2 ? 20e-6 : c == 0 ? 10e-6 : 20e-6; }, 1000) == 0);
    CHECK(t.rivals() == std::vector<int>{2});
  }
  // ... and is the rival where native does not compete.
  {
    Trials t(2, -1, s);
    REQUIRE(run(t, [](int c) { return c == 0 ? 10e-6 : 25e-6; }) == 0);
    CHECK(t.rivals() == std::vector<int>{1});
  }
}

TEST_CASE("Trials: where the floor of calls sets the wait, it doubles too", "[trials]") {
  TrialSettings s;
  s.batch = 2;
  s.rounds = 1;
  s.recheck_share = 0.5;  // the price alone would recheck after a few calls
  Trials t(2, 1, s);
  auto time = [](int c) { return c == 1 ? 12e-6 : 10e-6; };
  REQUIRE(run(t, time) == 0);
  REQUIRE(t.calls_until_recheck() == kMinRecheckCalls);
  for (long wait : {kMinRecheckCalls, 2 * kMinRecheckCalls, 4 * kMinRecheckCalls}) {
    REQUIRE(t.calls_until_recheck() == wait);
    for (long call = 1; call < wait; ++call) REQUIRE_FALSE(t.count_decided_call());
    REQUIRE(t.count_decided_call());
    REQUIRE(run(t, time) == 0);
  }
}

TEST_CASE("Trials: no recheck where its share is 0 or nothing else was measured", "[trials]") {
  TrialSettings s;
  s.batch = 4;
  Trials final_choice(2, 1, s);  // recheck_share 0: decisions are final
  REQUIRE(run(final_choice, [](int c) { return c == 1 ? 15e-6 : 5e-6; }) == 0);
  CHECK(final_choice.calls_until_recheck() == -1);
  for (int call = 0; call < 100000; ++call) REQUIRE_FALSE(final_choice.count_decided_call());
  s.recheck_share = 0.5;
  Trials alone(1, -1, s);  // one candidate: decided without a measurement
  CHECK(alone.decided());
  CHECK(alone.rivals().empty());
  for (int call = 0; call < 100000; ++call) REQUIRE_FALSE(alone.count_decided_call());
}

TEST_CASE("Trials: with native_first, native MPI runs the class's first calls until they cost what the trials are "
          "priced at, agreeing where its calls at the agreed mean would reach that",
          "[trials]") {
  TrialSettings s;
  s.batch = 2;
  s.native_first = TrialPrice{1.0, {}};  // the trials' price, seconds
  // Candidates 0 and 1 are schedules, 2 is native. Native takes 0.125 s a call: agreed at
  // its first call, its sum reaches 1.0 at call 8, the first doubling there, where the
  // ranks agree again (not at 2 and 4, where the agreed mean says it cannot).
  Trials t(3, 2, s);
  std::vector<int> agreements;
  for (int call = 1; call <= 16 && t.native_first(); ++call) {
    CHECK(t.current() == 2);
    if (t.record(0.125)) {
      agreements.push_back(call);
      CHECK(t.live() == std::vector<int>{2});
      REQUIRE(t.round_means().size() == 1);
      CHECK(t.round_means()[0] == Approx(0.125));
      t.end_round(t.round_means());
    }
  }
  CHECK(agreements == std::vector<int>{1, 8});
  CHECK_FALSE(t.native_first());
  CHECK(t.native_first_calls() == 8);
  CHECK(t.calls() == 0);         // none of them a trial call
  CHECK_FALSE(t.decided());
  // The rounds: the schedules first, native last, as always; native is warm, so its
  // batch leaves out one call like the others'.
  CHECK(t.live() == std::vector<int>{0, 1, 2});
  CHECK(t.current() == 0);
  // A schedule twice as fast as native is then measured and wins.
  const int chosen = run(t, [](int c) { return c == 2 ? 0.1 : c == 0 ? 0.05 : 0.2; });
  CHECK(chosen == 0);
  CHECK(t.calls() > 0);
  CHECK(t.calls() <= 3 * (2 + 1) * (s.rounds + 1));
}

TEST_CASE("Trials: the agreements on native's first calls skip the doublings where native's calls at the agreed "
          "mean cannot reach the trials' price, and the rounds begin where an agreement at every doubling begins them",
          "[trials]") {
  // Runs native's first calls at `seconds(call)` until the rounds begin; the calls at
  // which the ranks agreed.
  auto agreements_of = [](TrialSettings s, const std::function<double(int)>& seconds) {
    Trials t(2, 1, s);
    std::vector<int> out;
    for (int call = 1; call <= 1 << 21 && t.native_first(); ++call)
      if (t.record(seconds(call))) {
        out.push_back(call);
        t.end_round(t.round_means());
      }
    REQUIRE_FALSE(t.native_first());
    return out;
  };
  TrialSettings s;
  s.native_first = TrialPrice{400e-6, {}};
  // 4 us a call: the price is reached at call 100, which the first agreement projects;
  // the ranks agree next at the doubling past it.
  CHECK(agreements_of(s, [](int) { return 4e-6; }) == std::vector<int>{1, 128});
  // Native warming up (each call dearer than the next), first calls up to a millisecond:
  // the rounds begin at the first doubling whose cost reaches the price, as when the
  // ranks agree at every doubling; every agreement but the last is at a doubling whose
  // cost had not reached it. The cost of n calls: the first call's time at the first,
  // then n times the mean of the calls after the first (trials.h, native_first).
  for (const double first : {1e-6, 1e-4, 1e-3}) {
    auto warming = [first](int call) { return 1e-7 + first / call; };
    std::vector<double> sums{0};  // the cost of native's first n calls, as read
    double after_first = 0;
    for (int call = 1; call <= 1 << 21; ++call) {
      if (call > 1) after_first += warming(call);
      sums.push_back(call == 1 ? warming(1) : call * after_first / (call - 1));
    }
    for (const double price : {1e-5, 1e-4, 1e-3, 1e-2, 1e-1}) {
      for (const int first_calls : {0, 16, 256}) {
        CAPTURE(first, price, first_calls);
        s.native_first = TrialPrice{price, {}};
        s.native_first_calls = first_calls;
        const std::vector<int> agreed = agreements_of(s, warming);
        // Every doubling: the first from max(first_calls, 1) whose sum reaches the price.
        int doubling = std::max(first_calls, 1);
        while (sums[static_cast<std::size_t>(doubling)] < price) doubling *= 2;
        CHECK(agreed.back() == doubling);
        for (std::size_t k = 0; k < agreed.size(); ++k) {
          const int at = agreed[k];
          CHECK(at == std::max(first_calls, 1) << static_cast<int>(std::round(std::log2(at / std::max(first_calls, 1)))));
          if (k + 1 < agreed.size()) CHECK(sums[static_cast<std::size_t>(at)] < price);
        }
      }
    }
  }
}

TEST_CASE("Trials: native MPI's first call of a class counts alone at that call and not after it: its one-time "
          "cost does not begin the trials of calls that are cheap after it",
          "[trials]") {
  // Open MPI 4.1.4's first 64 KiB broadcast on 2 ranks (OSU's way, after the smaller
  // sizes): 642 us, the next seven about 22 us each, then 6 us; the trials priced at 775
  // us. Read as a sum, 8 calls made 796 us and the rounds began at call 8, inside OSU's
  // row of 110 calls. Read as the calls after the first, n of them cost n x their mean:
  // 176 us at call 8, 881 us at call 128, the first doubling that reaches the price.
  auto time = [](int call) { return call == 1 ? 642e-6 : call <= 8 ? 22e-6 : 6e-6; };
  TrialSettings s;
  s.native_first = TrialPrice{775e-6, {}};
  Trials t(2, 1, s);
  std::vector<int> agreements;
  double after_first = 0;
  int call = 0;
  while (t.native_first() && call < 1024) {
    ++call;
    if (call > 1) after_first += time(call);
    if (t.record(time(call))) {
      agreements.push_back(call);
      REQUIRE(t.round_means().size() == 1);
      // The mean the ranks agree on: the first call alone, then the calls after it.
      CHECK(t.round_means()[0] == Approx(call == 1 ? time(1) : after_first / (call - 1)));
      t.end_round(t.round_means());
    }
  }
  CHECK_FALSE(t.native_first());
  CHECK(call == 128);
  CHECK(agreements.front() == 1);
  CHECK(agreements.back() == 128);
  // Where the first call alone reaches the price (the test bed's 1 MiB calls of 300 ms
  // against trials of 250), the rounds still begin right after it.
  s.native_first = TrialPrice{600e-6, {}};
  Trials at_once(2, 1, s);
  REQUIRE(at_once.record(time(1)));
  at_once.end_round(at_once.round_means());
  CHECK_FALSE(at_once.native_first());
}

TEST_CASE("Trials: with native_first, slow first native calls pay for the trials at once, and native that stays "
          "fastest is kept",
          "[trials]") {
  TrialSettings s;
  s.batch = 2;
  s.native_first = TrialPrice{1e-3, {}};
  // Native's first call of the size takes 5 ms (MPICH's first 128 KiB reduces: 0.9-3 ms),
  // more than the trials' price: the rounds begin at the second call.
  Trials slow(2, 1, s);
  CHECK(slow.current() == 1);
  REQUIRE(slow.record(5e-3));
  slow.end_round(slow.round_means());
  CHECK_FALSE(slow.native_first());
  CHECK(slow.current() == 0);
  // A schedule slower than native never replaces it: native was the default all along.
  Trials kept(2, 1, s);
  CHECK(run(kept, [](int c) { return c == 1 ? 1e-4 : 1.5e-4; }) == 1);
  // The ranks agree on the slowest rank's time: a mean that one rank measured higher
  // starts the rounds on every rank (end_round gets the maximum).
  Trials agreed(2, 1, s);
  REQUIRE(agreed.record(1e-4));  // this rank: 0.1 ms, under the price
  agreed.end_round({2e-3});      // the slowest rank: 2 ms
  CHECK_FALSE(agreed.native_first());
  // Without native among the candidates there is nothing to run first.
  Trials none(2, -1, s);
  CHECK_FALSE(none.native_first());
}

TEST_CASE("Trials: a cheap class priced from 2 us agrees on native's first calls at its 16th, a shorter one at its "
          "256th",
          "[trials]") {
  // Native's calls every one dearer than the trials' price: the rounds begin at the
  // first agreement, which warm_native_first_calls places.
  for (const auto& [price, first] : {std::pair{0.5e-6, 256}, std::pair{1.99e-6, 256}, std::pair{2e-6, 16},
                                     std::pair{3.8e-6, 16}}) {
    CAPTURE(price);
    TrialSettings s;
    s.native_first = TrialPrice{1e-6, {}};
    s.native_first_calls = warm_native_first_calls(price);
    Trials t(2, 1, s);
    int call = 0;
    while (t.native_first() && call < 1024) {
      ++call;
      if (t.record(1e-3)) t.end_round(t.round_means());
    }
    CHECK(call == first);
  }
  // Both fit OSU's way of timing a size within its calls: 1000 timed calls up to 8 KiB
  // (priced under 2 us on two ranks), 100 above.
  CHECK(warm_native_first_calls(1e-6) < 1000);
  CHECK(warm_native_first_calls(4e-6) < 100);
}

TEST_CASE("Trials: cheap allreduces go through the ring, cheap reduces only beyond 2 ranks a node and from 2 us, "
          "cheap broadcasts never",
          "[trials]") {
  for (const int ranks : {2, 3, 16, 32}) {
    for (const double price : {0.3e-6, kMidCallSeconds * 0.999, kMidCallSeconds, 4.9e-6}) {
      CAPTURE(ranks, price);
      CHECK(cheap_calls_through_ring(Collective::Allreduce, ranks, price));
      CHECK_FALSE(cheap_calls_through_ring(Collective::Bcast, ranks, price));
      // At 2 ranks a native reduce is one message, which a non-root sends and leaves;
      // under 2 us the trials cost more than they win.
      CHECK(cheap_calls_through_ring(Collective::Reduce, ranks, price) == (ranks > 2 && price >= kMidCallSeconds));
    }
  }
  // Where it trials, native MPI's first calls are those of a class priced from 2 us.
  CHECK(warm_native_first_calls(kMidCallSeconds) == kWarmMidNativeFirstCalls);
}

TEST_CASE("Trials: with native_first_calls, native runs at least that many first calls, agreeing first at the "
          "last of them, even where they paid for the trials at once",
          "[trials]") {
  TrialSettings s;
  s.batch = 2;
  s.native_first = TrialPrice{1e-6, {}};  // the trials' price: paid by native's first call
  s.native_first_calls = 256;
  Trials t(3, 2, s);
  std::vector<int> agreements;
  for (int call = 1; call <= 1024 && t.native_first(); ++call) {
    CHECK(t.current() == 2);
    if (t.record(1e-3)) {  // every call alone dearer than the price
      agreements.push_back(call);
      t.end_round(t.round_means());
    }
  }
  CHECK(agreements == std::vector<int>{256});
  CHECK(t.native_first_calls() == 256);
  CHECK(t.calls() == 0);
  // The rounds follow as after any native-first phase: a faster schedule wins.
  CHECK(run(t, [](int c) { return c == 2 ? 1e-3 : c == 1 ? 4e-4 : 2e-3; }) == 1);
  // Agreed sooner by another rank's slower mean, the count still holds: no rank starts early.
  Trials early(2, 1, s);
  for (int call = 1; call < 256; ++call) REQUIRE_FALSE(early.record(1e-3));
  REQUIRE(early.record(1e-3));
  early.end_round({1.0});
  CHECK_FALSE(early.native_first());
}

// Runs native's first calls of `t` as the shim does (shim/collectives.cpp, run_shortcut):
// each call either counted quietly, or timed at `seconds(call)` and recorded, or counted
// untimed, and each agreement ended with this rank's mean as the agreed one. Returns the
// call at which the rounds begin (0: not within `calls`), and the calls it timed.
std::pair<int, int> run_native_first(Trials& t, int calls, const std::function<double(int)>& seconds) {
  int timed = 0;
  for (int call = 1; call <= calls; ++call) {
    REQUIRE(t.native_first());
    if (t.count_quiet_call()) continue;
    bool agree;
    if (t.times_next()) {
      ++timed;
      agree = t.record(seconds(call));
    } else {
      agree = t.record_untimed();
    }
    if (agree) t.end_round(t.round_means());
    if (!t.native_first()) return {call, timed};
  }
  return {0, timed};
}

TEST_CASE("Trials: sampled native first calls (the shim's cheap classes) time their first 32 calls and then one "
          "in native_first_sample, and begin the rounds at the same call as when every call is timed",
          "[trials]") {
  TrialSettings s;
  s.batch = 2;
  s.native_first = TrialPrice{1e-3, {}};  // 1 ms: native's 1 us calls pay for it at call 1000
  s.native_first_calls = 256;
  s.native_first_sample = 16;
  Trials sampled(3, 2, s);
  const auto [begun, timed] = run_native_first(sampled, 4096, [](int) { return 1e-6; });
  // The agreements come at calls 256 and 1024, the first doubling past where the sum (1
  // ms) reaches the price at the mean agreed at 256: the same calls as with every call
  // timed.
  CHECK(begun == 1024);
  // (Of the first 32, all but the very first: times_next() leaves it out.)
  CHECK(timed == kTimedNativeFirstCalls - 1 + (1024 - kTimedNativeFirstCalls) / 16);
  CHECK(sampled.native_first_calls() == 1024);
  CHECK(sampled.calls() == 0);
  s.native_first_sample = 1;
  Trials every(3, 2, s);
  const auto [begun_every, timed_every] = run_native_first(every, 4096, [](int) { return 1e-6; });
  CHECK(begun_every == 1024);
  CHECK(timed_every == 1024);
  // Past native's first calls every call is timed again (the rounds measure each).
  CHECK(sampled.times_next());
  CHECK_FALSE(sampled.count_quiet_call());
  CHECK_FALSE(sampled.record_untimed());
}

TEST_CASE("Trials: a sampled native call stands for the calls it samples, the first calls for themselves (but "
          "the very first, left out), and a pause of the machine in a sample counts at most kSampledCallCap times "
          "the fastest sample",
          "[trials]") {
  TrialSettings s;
  s.native_first = TrialPrice{1.0, {}};  // never reached: only the agreed means matter here
  s.native_first_calls = 256;
  s.native_first_sample = 16;
  // The first call (the ranks planning the class) costs 800 us, the next 100 us, every
  // other 1 us: the first is left out (times_next()), the rest count once each, not the
  // second call's weight times 16.
  Trials cold(2, 1, s);
  CHECK_FALSE(cold.times_next());
  double mean = 0;
  for (int call = 1; call <= 256; ++call) {
    if (cold.count_quiet_call()) continue;
    const double seconds = call == 1 ? 800e-6 : call == 2 ? 100e-6 : 1e-6;
    const bool agree = cold.times_next() ? cold.record(seconds) : cold.record_untimed();
    if (agree) mean = cold.round_means()[0];
  }
  CHECK(mean == Approx((100e-6 + 254 * 1e-6) / 256));
  // Where every call is timed and recorded all the same (the shim's path past a native
  // shortcut), the calls between samples count as the samples stand for them: once.
  Trials every_timed(2, 1, s);
  double every_mean = 0;
  for (int call = 1; call <= 256; ++call)
    if (every_timed.record(call == 1 ? 800e-6 : call == 2 ? 100e-6 : 1e-6)) every_mean = every_timed.round_means()[0];
  CHECK(every_mean == Approx(mean));
  // A sampled call that met a 90 us pause counts as 8 of the fastest sample's time, 16 times.
  Trials paused(2, 1, s);
  int sample = 0;
  for (int call = 1; call <= 256; ++call) {
    if (paused.count_quiet_call()) continue;
    double seconds = 1e-6;
    if (paused.times_next() && call > kTimedNativeFirstCalls && ++sample == 3) seconds = 90e-6;
    const bool agree = paused.times_next() ? paused.record(seconds) : paused.record_untimed();
    if (agree) mean = paused.round_means()[0];
  }
  CHECK(mean == Approx((255 * 1e-6 + kSampledCallCap * 1e-6 * 16 - 1e-6 * 16) / 256));
  CHECK(mean < 1.5e-6);
}

TEST_CASE("Trials: with native_first_factor, native's first calls must cost that many times the trials' price",
          "[trials]") {
  TrialSettings s;
  s.native_first = TrialPrice{100e-6, {}};
  s.native_first_calls = 256;
  for (const auto& [factor, begins] : {std::pair{1.0, 256}, std::pair{4.0, 512}, std::pair{8.0, 1024}}) {
    CAPTURE(factor);
    s.native_first_factor = factor;
    Trials t(2, 1, s);
    CHECK(t.native_first_target(1e-6) == Approx(factor * 100e-6));
    // Native's calls take 1 us: 256 us at call 256, 512 at 512, 1.024 ms at 1024.
    CHECK(run_native_first(t, 4096, [](int) { return 1e-6; }).first == begins);
  }
  // The shim's factor and sampling apply to the classes priced under kMidCallSeconds alone.
  CHECK(cheap_native_first_factor(0.5e-6) == kCheapNativeFirstFactor);
  CHECK(cheap_native_first_factor(kMidCallSeconds) == 1);
  CHECK(cheap_native_first_sample(0.5e-6) == kCheapNativeFirstSample);
  CHECK(cheap_native_first_sample(kMidCallSeconds) == 1);
  Trials none(2, -1, s);  // no native MPI among the candidates: no first calls to count
  CHECK_FALSE(none.native_first());
  CHECK_FALSE(none.count_quiet_call());
  Trials unpriced(2, 1, TrialSettings{});
  CHECK(unpriced.native_first_target(1e-6) == 0);
}

TEST_CASE("Trials: the trials' price is each schedule's batch, first look and rounds, at its predicted time",
          "[trials]") {
  // Two schedules (10 us, batches of 6; 40 us, batches of 2) and native (left out).
  const std::vector<TrialCandidate> candidates{{false, 10e-6}, {false, 40e-6}, {true, 0}};
  const std::vector<int> batches{6, 2, 6};
  CHECK(trial_price(candidates, batches, 2).beyond(1.0, 3) == Approx(3 * (6 * 10e-6 + 2 * 40e-6)));
  CHECK(trial_price(candidates, batches, 0).beyond(1.0, 3) == Approx(6 * 10e-6 + 2 * 40e-6));
  CHECK(trial_price({{true, 0}}, {6}, 2).beyond(0, 3) == 0);
}

TEST_CASE("Trials: a schedule's calls of a millisecond or more are priced at what they would cost beyond native "
          "if they took the first look's factor times their price",
          "[trials]") {
  // The test bed's 1 MiB allreduce on 6 ranks: three schedules priced at 67-69 ms,
  // one call each per look and round (2 rounds), beside a short one (10 us, batch 6).
  const std::vector<TrialCandidate> candidates{{false, 66.85e-3}, {false, 68.26e-3}, {false, 68.80e-3},
                                               {false, 10e-6}, {true, 0}};
  const std::vector<int> batches{1, 1, 1, 6, 1};
  const TrialPrice price = trial_price(candidates, batches, 2);
  REQUIRE(price.long_calls.size() == 3);
  CHECK(price.short_calls == Approx(3 * 6 * 10e-6));
  // Native at 284 ms a call: three times each price is under it, only the short calls count.
  CHECK(price.beyond(284e-3, 3) == Approx(3 * 6 * 10e-6));
  // Native at 100 ms: each long call costs 3 x its price - 100 ms, three calls each.
  const double expected = 3 * 6 * 10e-6 + 3 * ((3 * 66.85e-3 - 0.1) + (3 * 68.26e-3 - 0.1) + (3 * 68.80e-3 - 0.1));
  CHECK(price.beyond(0.1, 3) == Approx(expected));
  // Trusting the model fully (distrust 1) and native slower than all: only the short calls.
  CHECK(price.beyond(0.1, 1) == Approx(3 * 6 * 10e-6));
  // With `clear`, the long ones are priced over twice the short one's 10 us: priced out
  // (the rounds would not trial them), whatever native's time.
  CHECK(price.beyond(284e-3, 3, 2) == Approx(3 * 6 * 10e-6));
  CHECK(price.beyond(0.1, 3, 2) == Approx(3 * 6 * 10e-6));
  // Without the short one's price (none known), only native's time prices them out.
  TrialPrice unpriced = price;
  unpriced.cheapest_schedule = 0;
  // Native at 30 ms: with `clear` 2, schedules priced over 60 ms are priced out, so only
  // the short calls count; with `clear` 3, none is.
  CHECK(unpriced.beyond(30e-3, 3, 2) == Approx(3 * 6 * 10e-6));
  const double at_30 = 3 * 6 * 10e-6 + 3 * ((3 * 66.85e-3 - 0.03) + (3 * 68.26e-3 - 0.03) + (3 * 68.80e-3 - 0.03));
  CHECK(unpriced.beyond(30e-3, 3, 3) == Approx(at_30));
  CHECK(unpriced.beyond(30e-3, 3) == Approx(at_30));
  // 34 ms: 66.85 is under twice it, the other two are not.
  CHECK(unpriced.beyond(34e-3, 3, 2) == Approx(3 * 6 * 10e-6 + 3 * (3 * 66.85e-3 - 0.034)));
}

TEST_CASE("Trials: where every schedule's calls are long, the trials' price is a look each and the rounds of the "
          "one that goes on, at the cheapest schedule's price, and that bounds what the trials run",
          "[trials]") {
  // Three schedules of 30, 40 and 60 ms a call, native's batch one call (its model price
  // a millisecond or more), 2 measured rounds; native at 50 ms a call, distrust 3.
  const std::vector<TrialCandidate> candidates{{false, 30e-3}, {false, 40e-3}, {false, 60e-3}, {true, 0}};
  const std::vector<int> batches = trial_batches(candidates, 5e-3);
  REQUIRE(batches == std::vector<int>{1, 1, 1, 1});
  const TrialPrice price = trial_price(candidates, batches, 2);
  const double native = 50e-3;
  auto beyond = [&](double p) { return 3 * p - native; };
  // A look each, then the settling call (the cheapest priced schedule, 30 ms) and 2
  // rounds of the look's fastest, no slower than 3 x the cheapest price.
  const double expected = beyond(30e-3) + beyond(40e-3) + beyond(60e-3) + 3 * beyond(30e-3);
  CHECK(price.beyond(native, 3) == Approx(expected));
  // Every schedule at each round, as before, would be 3 calls each: more than the trials run.
  CHECK(price.beyond(native, 3) < 3 * (beyond(30e-3) + beyond(40e-3) + beyond(60e-3)));
  // Priced out (over `clear` x the cheaper of native and the cheapest schedule): with
  // `clear` 1.5, the 60 ms one (over 1.5 x 30 ms) leaves the look's price; with 1, the 40 ms one too.
  CHECK(price.beyond(native, 3, 1.5) == Approx(beyond(30e-3) + beyond(40e-3) + 3 * beyond(30e-3)));
  CHECK(price.beyond(native, 3, 1.0) == Approx(beyond(30e-3) + 3 * beyond(30e-3)));
  // The same where the cheapest is not the first candidate.
  const TrialPrice dear_first = trial_price({{false, 40e-3}, {false, 30e-3}, {true, 0}}, {1, 1, 1}, 2);
  CHECK(dear_first.beyond(native, 3) == Approx(beyond(40e-3) + beyond(30e-3) + 3 * beyond(30e-3)));

  // The price holds what the trials then run: count the schedules' calls.
  TrialSettings s;
  s.batches = batches;
  s.native_first = price;
  Trials t(4, 3, s);
  native_first_calls(t, native);
  int schedule_calls = 0;
  double beyond_native = 0;  // what the schedules' calls cost beyond native's
  while (!t.decided()) {
    const int c = t.current();
    // The dearest-priced schedule runs fastest and goes on alone (no clear win over
    // native); each within 3 x its price, as the price assumes.
    const double seconds = c == 3 ? native : c == 2 ? 0.035 : c == 1 ? 0.08 : 0.09;
    if (c != 3) {
      ++schedule_calls;
      beyond_native += std::max(0.0, seconds - native);
    }
    if (t.record(seconds)) t.end_round(t.round_means());
  }
  CHECK(schedule_calls == 1 + 3 + 2);  // the settling call, the looks, 2 rounds of the one left
  CHECK(beyond_native <= price.beyond(native, 3));

  // Native's batch longer than one call (a point-to-point price under a millisecond) and
  // native measured under one: no look, every schedule at each round, as before.
  const TrialPrice no_look = trial_price(candidates, {1, 1, 1, 4}, 2);
  CHECK(no_look.beyond(0.5e-3, 3) == Approx(3 * ((3 * 30e-3 - 0.5e-3) + (3 * 40e-3 - 0.5e-3) + (3 * 60e-3 - 0.5e-3))));
  // ... but measured at a millisecond or more native's batch is cut to one: a look.
  CHECK(no_look.beyond(native, 3) == Approx(expected));
  // A short schedule among them: no look either, 3 calls each as before.
  const std::vector<TrialCandidate> mixed{{false, 30e-3}, {false, 10e-6}, {true, 0}};
  const TrialPrice with_short = trial_price(mixed, {1, 6, 1}, 2);
  CHECK(with_short.beyond(native, 3) == Approx(3 * 6 * 10e-6 + 3 * beyond(30e-3)));
}

TEST_CASE("Trials: with native_first and long calls, the rounds begin after native's first call where the schedules "
          "are priced far under it, and native sits out the first look",
          "[trials]") {
  TrialSettings s;
  s.batches = {1, 1, 1, 1};  // calls of a millisecond or more: a first look
  TrialPrice price;
  price.long_calls = {{0.07, 3}, {0.07, 3}, {0.07, 3}};
  s.native_first = price;
  Trials t(4, 3, s);  // schedules 0-2, native 3
  // Native's first call: 280 ms (slowest rank); 3 x 70 ms is under it, the trials cost
  // nothing beyond native: the rounds begin at once.
  CHECK(t.current() == 3);
  REQUIRE(t.record(0.28));
  t.end_round({0.28});
  REQUIRE_FALSE(t.native_first());
  // The settling call (the first schedule, unmeasured), then the first look of the three
  // schedules alone.
  CHECK(t.settling());
  CHECK(t.current() == 0);
  CHECK_FALSE(t.record(0.5));
  CHECK(t.live() == std::vector<int>{0, 1, 2});
  std::vector<int> looked;
  bool ended = false;
  const std::vector<double> times{0.10, 0.09, 0.90};  // schedule 2 is 10x slower than the best
  while (!ended) {
    looked.push_back(t.current());
    ended = t.record(times[t.current()]);
  }
  CHECK(looked == std::vector<int>{0, 1, 2});
  t.end_round(t.round_means());
  // Only the fastest schedule of the look goes on (schedule 0, 10% slower, goes too; 2,
  // more than 3x, would have gone anyway). Native rejoins, last, for the measured rounds.
  CHECK(t.live() == std::vector<int>{1, 3});
  CHECK_FALSE(t.decided());
  // The measured round: native (warm now) at 250 ms against schedule 1's 90 ms, more than
  // twice as fast: decided after it, at the job's 7th call (on the test bed, 3 untimed and
  // 5 timed calls: 4 of the 5 timed calls used to be trials).
  const int chosen = run(t, [](int c) { return c == 3 ? 0.25 : c == 0 ? 0.10 : 0.09; });
  CHECK(chosen == 1);
  CHECK(t.best()[3] == Approx(0.25));  // native was measured in the rounds, not only first
  CHECK(t.calls() == 6);  // after native's first call: the settling call, 3 looks, 2 in the round
}

TEST_CASE("Trials: where the rounds begin, long schedules priced over `clear` times native's agreed mean are not "
          "trialled, none left, native is decided",
          "[trials]") {
  // 1024 simulated ranks, a 1 MiB reduce (trials.h): schedules priced 1.42 and 1.80 ms,
  // native's first calls 0.5 ms a call.
  auto settings = [](std::vector<double> predicted) {
    TrialSettings s;
    s.batches = {1, 1, 1, 1};
    TrialPrice price;
    for (std::size_t c = 0; c + 1 < predicted.size(); ++c) price.long_calls.push_back({predicted[c], 3});
    s.native_first = price;
    s.predicted = std::move(predicted);
    return s;
  };
  const auto first_calls = native_first_calls;
  // Every schedule over twice native's 0.5 ms (and over a millisecond): none is in the
  // trials' price either (TrialPrice::beyond), so native is decided at the ranks' first
  // agreement, its first call, no schedule run.
  Trials out(4, 3, settings({1.42e-3, 1.80e-3, 1.0e-3 + 1e-9, 0}));
  CHECK(first_calls(out, 0.5e-3) == 1);
  CHECK(out.decided());
  CHECK(out.chosen() == 3);
  CHECK(out.calls() == 0);
  // The same schedules without prices run their look (the trials as before), once
  // native's calls have cost what the three would beyond native's: later.
  TrialSettings unpriced = settings({1.42e-3, 1.80e-3, 1.0e-3 + 1e-9, 0});
  unpriced.predicted.clear();
  Trials look(4, 3, unpriced);
  CHECK(first_calls(look, 0.5e-3) > 1);
  CHECK_FALSE(look.decided());
  CHECK(look.live() == std::vector<int>{0, 1, 2});  // (native sits out the first look)
  // Native at 0.6 ms a call: a schedule priced 0.99 ms (a short call, always trialled)
  // or 1.1 ms (long, but under 2 x 0.6 ms) stays, alone in the first look.
  for (double kept : {0.99e-3, 1.1e-3}) {
    CAPTURE(kept);
    Trials some(4, 3, settings({1.42e-3, kept, 1.80e-3, 0}));
    first_calls(some, 0.6e-3);
    CHECK_FALSE(some.decided());
    CHECK(some.live() == std::vector<int>{1});
    CHECK(run(some, [](int c) { return c == 3 ? 0.6e-3 : 0.3e-3; }) == 1);
  }
  // Priced under native (the test bed's 67 ms against 280): all trialled.
  Trials under(4, 3, settings({0.067, 0.069, 0.068, 0}));
  first_calls(under, 0.28);
  CHECK(under.live() == std::vector<int>{0, 1, 2});
}

TEST_CASE("Trials: where the rounds begin, long schedules priced over `clear` times another schedule's price are "
          "not trialled and leave the trials' price",
          "[trials]") {
  // 1024 simulated ranks, a 1 MiB allreduce with node cards in the model (trials.h):
  // `hierarchical` 2.10 ms, `hierarchical-leaders` 2.05, `rabenseifner` 0.487 (a short
  // call, batch 2), native's first calls 1.10 ms; 2 rounds.
  const std::vector<TrialCandidate> candidates{{false, 2.10e-3}, {false, 2.05e-3}, {false, 0.487e-3}, {true, 0}};
  TrialSettings s;
  s.batches = {1, 1, 2, 1};
  s.native_first = trial_price(candidates, s.batches, 2);
  s.predicted = {2.10e-3, 2.05e-3, 0.487e-3, 0};
  const double native = 1.10e-3;
  CHECK(s.native_first->cheapest_schedule == Approx(0.487e-3));
  // Both long ones are over twice 0.487 ms: only rabenseifner's 6 calls (2 a batch, the
  // look or a round more and 2 rounds) are in the price.
  CHECK(s.native_first->beyond(native, 3, 2) == Approx(6 * 0.487e-3));
  // Without `clear` they are in it, at three times their price beyond native's.
  CHECK(s.native_first->beyond(native, 3) ==
        Approx(6 * 0.487e-3 + 3 * ((3 * 2.10e-3 - native) + (3 * 2.05e-3 - native))));
  Trials t(4, 3, s);
  const int calls = native_first_calls(t, native);
  // Native's calls reach 2.9 ms at its 4th call (the ranks agree at 1, 2, 4, ...).
  CHECK(calls == 4);
  CHECK(t.live() == std::vector<int>{2, 3});
  // A long schedule within twice the cheapest stays: 0.9 ms against 0.487 (and native 1.10).
  TrialSettings near = s;
  near.predicted = {2.10e-3, 0.9e-3, 0.487e-3, 0};
  near.native_first = trial_price({{false, 2.10e-3}, {false, 0.9e-3}, {false, 0.487e-3}, {true, 0}}, near.batches, 2);
  Trials kept(4, 3, near);
  native_first_calls(kept, native);
  CHECK(kept.live() == std::vector<int>{1, 2, 3});
}

TEST_CASE("Trials: a dearer schedule in the first look adds its look to the price, not the rounds after it",
          "[trials]") {
  // 1024 simulated ranks on the EDR cluster, a 1 MiB allreduce (trials.h): `hierarchical`
  // priced 2.10 ms and ranked first, `rabenseifner` 1.19 (an estimate, ranked after it;
  // both under twice native's 1.10 ms), one call a batch, 2 rounds.
  const std::vector<TrialCandidate> candidates{{false, 2.10e-3}, {false, 1.19e-3}, {true, 0}};
  TrialSettings s;
  s.batches = {1, 1, 1};
  s.native_first = trial_price(candidates, s.batches, 2);
  s.predicted = {2.10e-3, 1.19e-3, 0};
  const double native = 1.10e-3;
  auto beyond = [&](double p) { return 3 * p - native; };
  // Two looks, then the settling call and 2 rounds at the cheapest's price.
  CHECK(s.native_first->beyond(native, 3, 2) == Approx(beyond(1.19e-3) + beyond(2.10e-3) + 3 * beyond(1.19e-3)));
  Trials t(3, 2, s);
  const int calls = native_first_calls(t, native);
  // 15.1 ms of trials: native's 16th call reaches it (at the dearer's price, 23.3 ms:
  // its 32nd).
  CHECK(calls == 16);
  CHECK(t.live() == std::vector<int>{0, 1});
  // The settling call runs the cheaper, as priced; then the look, in the candidates' order.
  CHECK(t.settling());
  CHECK(t.current() == 1);
  CHECK_FALSE(t.record(0.4e-3));
  CHECK_FALSE(t.settling());
  CHECK(t.current() == 0);
  CHECK_FALSE(t.record(2.5e-3));
  CHECK(t.current() == 1);
  REQUIRE(t.record(0.4e-3));
  t.end_round(t.round_means());
  // `rabenseifner` is clear of `hierarchical`: it goes on alone, against native.
  CHECK(t.live() == std::vector<int>{1, 2});
}

TEST_CASE("Trials: after a first look only the fastest schedule, and native where it is in the running, go on",
          "[trials]") {
  TrialSettings s;
  s.batch = 1;  // calls of a millisecond or more: a first look
  // The settling call, then one call each at `times` (native in the look: no native_first).
  auto first_look = [](Trials& t, const std::vector<double>& times) {
    REQUIRE_FALSE(t.record(1.0));
    bool ended = false;
    while (!ended) ended = t.record(times[t.current()]);
    t.end_round(t.round_means());
  };
  // The fastest schedule and native stay.
  Trials t(4, 3, s);
  first_look(t, {0.12, 0.10, 0.11, 0.13});
  CHECK(t.live() == std::vector<int>{1, 3});
  // Native fastest in the look: it stays, with the fastest schedule, which must still
  // beat it in a measured round to replace it.
  Trials n(3, 2, s);
  first_look(n, {0.20, 0.15, 0.10});
  CHECK(n.live() == std::vector<int>{1, 2});
  CHECK(run(n, [](int c) { return c == 2 ? 0.10 : 0.15; }) == 2);
  // Every schedule beyond the first look's factor: native alone is left, and decided.
  Trials far(3, 2, s);
  first_look(far, {0.40, 0.50, 0.10});
  CHECK(far.decided());
  CHECK(far.chosen() == 2);
}

TEST_CASE("Trials: native sitting out the first look still decides it: slow schedules go, a clear one is still "
          "measured against native",
          "[trials]") {
  TrialSettings s;
  s.batches = {1, 1, 1};
  s.native_first = TrialPrice{0, {}};  // no price: the rounds begin after native's first call
  auto first_look = [&](Trials& t, const std::vector<double>& times) {
    REQUIRE(t.record(0.05));  // native's first call: 50 ms
    t.end_round({0.05});
    REQUIRE_FALSE(t.record(1.0));  // the settling call
    bool ended = false;
    while (!ended) ended = t.record(times[t.current()]);
    t.end_round(t.round_means());
  };
  // Both schedules more than 3x native's first calls: native alone is left, and decided.
  Trials slow(3, 2, s);
  first_look(slow, {0.2, 0.3});
  CHECK(slow.decided());
  CHECK(slow.chosen() == 2);
  // A schedule clear of the other (2x faster) leaves only itself, and native rejoins:
  // not decided until native has run in a measured round.
  Trials clear(3, 2, s);
  first_look(clear, {0.02, 0.05});
  CHECK_FALSE(clear.decided());
  CHECK(clear.live() == std::vector<int>{0, 2});
  // Native, warm, turns out as fast as the schedule: native stays.
  CHECK(run(clear, [](int c) { return c == 2 ? 0.02 : 0.02; }) == 2);
}

TEST_CASE("Trials: after native's first calls, native's batch is sized by their measured time where that is shorter",
          "[trials]") {
  auto first_round_calls = [](double native_first_mean) {
    TrialSettings s;
    s.batches = {4, 11};          // the schedule's; native's, priced by a 5 us point-to-point schedule
    s.native_first = TrialPrice{};  // no price: the rounds begin at the first agreement
    Trials t(2, 1, s);
    REQUIRE(t.record(native_first_mean));
    t.end_round({native_first_mean});
    REQUIRE_FALSE(t.native_first());
    std::map<int, int> calls;
    bool ended = false;
    while (!ended) {
      const int c = t.current();
      ++calls[c];
      ended = t.record(c == 1 ? native_first_mean : 3e-6);
    }
    return calls;
  };
  // Native's first calls at 200 us (a fresh 16 KiB allreduce on MPICH): a batch of 2, the
  // first not measured, instead of 11.
  std::map<int, int> slow = first_round_calls(200e-6);
  CHECK(slow[0] == 4);
  CHECK(slow[1] == trial_batch(200e-6));
  CHECK(slow[1] == 2);
  // Native at 1 us: its measured time would make a longer batch; the priced one stays.
  std::map<int, int> fast = first_round_calls(1e-6);
  CHECK(fast[1] == 11);
}
