// `auto`'s trials: which candidate runs each of a size class's first calls, and when
// the measurements decide. Pure logic over measured times (the shim times the calls
// and makes the ranks agree), so every rank that feeds it the same agreed times makes
// the same choice.
//
// The policy, "do no harm":
//  * Native MPI is the default. A schedule replaces it only after it has been measured
//    faster, by a margin, on back-to-back calls (the first call of each batch, which
//    pays for switching from another candidate, is not measured).
//  * Candidates run in rounds, native last: whatever runs first in a size class pays
//    for touching its buffers and connecting (16 MiB on two ranks here: 3x a warm
//    call), and that must not make native look slow. Calls of a millisecond or more (batch 1)
//    start with a first look, one call each, so that a candidate far worse than the
//    best costs one call. Before the first look one call runs the candidate priced
//    cheapest (the first where none is priced) unmeasured (settling()): the first call
//    of a size class also pays for the ranks' skewed arrival (whatever the program did
//    between sizes) and first touches. On
//    the lent 16-core machine the first 4 MiB shm-reduce-scatter-gather call of 16
//    ranks took 31.6 ms (slowest rank; 1.3 ms warm), and the first look pruned it
//    (more than 3x native's 9.3 ms): native stayed, six times slower. Shorter
//    calls, where one call says little (a first call
//    connects to new peers and touches new memory: milliseconds against
//    microseconds), go straight to measured rounds. A measured round is a batch of
//    `batch` consecutive calls per candidate, whose first call (the switch from
//    another candidate) is not measured; native MPI's first such batch runs one call
//    more and leaves out its first two (below). After each round the ranks agree on every
//    candidate's mean time per call (the slowest rank's) and end_round() prunes: after
//    the first look, every schedule but the fastest goes, and native too where it is
//    `first_look` times slower than the best (after_first_look()); after a measured
//    round, what is `drop` times slower. A candidate `clear` times faster than every
//    other one wins at once.
//    Decision (only the fastest schedule after a first look): a measured round of long
//    calls is one call each, no more telling than the look, and each costs a
//    millisecond or more. On the emulated 3-site test bed (6 ranks, 1 MiB allreduce, 3
//    untimed and 5 timed calls) the look measured three schedules at 80-113 ms and
//    native's first call at 276-398; the measured round of all four (native 250-300 ms
//    warm) and then a second ran past the job's 8 calls, 4 of the 5 timed calls trials:
//    2.4-3.5x native, median 2.87x over 9 pairs. With the fastest schedule alone
//    against native the trials end at the 7th call: 2.3-3.5x, median 3.08x over 8 pairs
//    (single calls there vary by up to 1.8x: 81-149 ms for one schedule). What it
//    risks: a schedule whose one look was slow is not seen again until a recheck
//    (CANOPY_AUTO_RECHECK), which measures the best other schedule within `drop`.
//  * A call that warmed new memory up (a ring entry's first or second use by this rank,
//    planner::EntryUses: record()'s `first_touch`) is not measured either, unless nothing
//    else of its candidate's round was: the first passes through a new ring pay for its
//    pages once, whichever candidate makes them, and must not make the ring look slow.
//  * Native MPI's second call of a size is still cold (both MPIs here set up their own
//    transfer of a size on its first calls), so its first measured batch leaves out
//    its first two calls. Decision, from each call's time of a size's first 12 (a
//    barrier between calls, 2 ranks, the 2-core Intel Xeon VM, us): Open MPI's bcast of
//    1 MiB 410, 69, 38, 35, ...; of 4 MiB 1650, 431, 206, 208, ...; MPICH's bcast of 1
//    MiB 498, 75, 37, 37, ...; Open MPI's reduce of 1 MiB 673, 69, 58, 59, .... Native's
//    trial at the 256th call (native_after) measured its second call alone (batches of
//    2 at 1 MiB), at twice its steady time, and lost to a broadcast through the ring
//    that is 6% slower than it (docs/performance-history.md, section 7, "A second machine").
//    It costs one more native call, once per size class.
//  * After the last round, or when one candidate is left, the fastest by its best
//    round wins; a schedule must beat native by `native_margin` or native stays, and
//    must have been the faster of the two in most of the measured rounds they shared
//    (half is not most: native stays). Decision: each candidate's best round alone let
//    one lucky round decide between calls of a few hundred nanoseconds that differ by
//    10-20% from round to round: 2 ranks, Open MPI 4.1.4, 8 B allreduces, OSU's loop,
//    `shm-recursive-doubling` 443 ns against native's 403 in one round and 307 against
//    372 in the next, chosen, then 368 ns a call against Open MPI's own 322, measured in
//    one process (canopy-bench --osu --paired; docs/performance-history.md, section 35).
//    Rounds are adjacent batches of the same calls, so the machine's slow and quick
//    periods fall on both candidates of a round alike; a clear difference wins every
//    round and is decided as before.
//  * With `native_after` N > 0, native MPI sits out the rounds above: the schedules
//    are measured against each other, the best of them runs until the size class's
//    Nth call, and only then is native measured against it, in rounds of the two as
//    above, by the same rules. Why: native MPI's first calls of a size can be the
//    dearest calls of a short job (2 ranks, MPICH 4.0.2: its first 128 KiB reduces took
//    0.9-3 ms each where the ring's schedule takes 8 us; 1 MiB 5-6 ms against 40 us), and
//    the trials paid them wherever that schedule then won. A job of up to N calls of a
//    size never pays them; a longer one pays them as before, later; where native would
//    have won, the schedule runs at most N calls in its place. In native's trial the
//    two are compared on its rounds alone: the schedule's best of the schedules' rounds
//    was a minimum over more rounds than native gets, in another period of the job.
//    Measured: 2 ranks, MPICH, a 64 KiB broadcast on the Intel Xeon VM, shm-bcast 4.0-4.1
//    us in the schedules' rounds and 4.7-6.6 in native's, native 4.1-4.4.
//  * With `native_first` (the default in the shim: CANOPY_AUTO_NATIVE_FIRST), native MPI
//    runs a size class's first calls, and the rounds begin only once those calls have
//    cost what the trials are priced at (the model's price of each schedule's trial
//    calls): the ski-rental rule. Native stays until a schedule is measured faster than
//    it, never because a schedule beat the other schedules; a row of OSU's 100 calls of
//    a size that native runs in microseconds spends most of them in native MPI, not in
//    deciding; where native's first calls are slow (MPICH's 128 KiB reduce, 0.9-3 ms a
//    call against 8 us through the ring), they pay for the trials at once. The ranks
//    agree on native's time (the slowest rank's sum) at its calls 1, 2, 4, 8, ..., so
//    they begin the rounds at the same call, but for those that cannot begin them: after
//    an agreement that does not, the next is the first doubling of its call count where
//    native's calls at the mean just agreed would reach the trials' price
//    (agreement_after). Native's calls grow cheaper as it warms up, so no earlier
//    doubling could, and the rounds begin where they did with every doubling agreed on.
//    A round is reported for each agreement, with native's mean so far.
//    What native's calls have cost is read as their count times their mean, and the
//    mean leaves out the class's very first call once later calls are timed: that call
//    pays what no schedule would save (native MPI's own one-time work for the size, the
//    ranks' planning of the class ending at different times), and says nothing of how
//    dear the calls to come are, which is what the rule weighs. At the first call it
//    is all there is, and stands for itself (a call of hundreds of milliseconds on the
//    test bed still begins the trials at once).
//    Decision: 2 ranks, Open MPI 4.1.4, OSU's osu_bcast way (10 untimed and 100 timed
//    calls of 64 KiB after the smaller sizes): native's first call took 642 us, its next
//    7 about 22 us each, so 8 calls summed 800 us against trials priced at 775 and the
//    rounds (66 calls of cma-bcast and shm-bcast, cma-bcast's first 183 us) took the rest
//    of the row: 10.2 us a call against Open MPI's own 5.9 (0.58x, 3 runs).
//    Decision: an agreement at every doubling cost more than native's calls where it is
//    dearer than a call: 1024 ranks on the simulated EDR cluster (docs/simulation.md), an
//    agreement (a small allreduce) 21-28 us against 4-19 us for an 8 B broadcast or
//    reduce, seven agreements in a row of 100 calls, most of them futile; at 256 ranks
//    (the same platform, one untimed call and 100 timed, us a call) the broadcast 3.32
//    (MPICH's selector 2.17), the reduce 9.30 (10.50) and the allreduce 13.73 (12.98),
//    with this 2.38, 8.65 and 13.08, the trials beginning at the same calls; at 1024
//    ranks 6.4, 11.3 and 23.6 (against 4.4, 18.6 and 21.2) with this 4.75, 10.4 and 22.6.
//    Tried and left: the next agreement an eighth past the call where native's calls
//    at the agreed mean reach the price. It began the rounds sooner (the 256-rank reduce
//    at call 52, 7.76 us a call), but also inside OSU's rows of 110 calls where a
//    doubling had put them past the row (2 ranks, MPICH, a 64 KiB broadcast: trials from
//    call 82, 8.85 us a call against 7.37 without them). A floor of 8 times the model's
//    price of an agreement between two (48 us at 1024 ranks, where one took 21-28) was
//    tried too: it put the 1024-rank reduce's trials at call 49 where its sum had been
//    90% of the price at call 28. Native's first calls are not measured again
//    in its first round (native is warm by then). Native's batch, sized by the model's
//    best point-to-point price (trial_batches), is sized by its first calls' measured
//    time instead where that makes it shorter. Decision: a fresh 16 KiB allreduce on 2
//    ranks (MPICH 4.0.2, a barrier after each call, OSU's 10 untimed and 100 timed calls)
//    measured native's first 16 calls at 196-250 us a call (the ring's schedules: 3), and
//    native's batch of the first round, 9 calls priced at 5 us each, took 55-680 us a
//    call: more than half of the row's time.
//    The price (TrialPrice): a schedule's calls under a millisecond at their whole
//    predicted time, since what makes them dear is outside the model (warm-ups, the
//    ring's fills, switches); a call of a millisecond or more at what it would cost
//    beyond native's measured time a call if it took `first_look` times its price (a
//    candidate that much slower than the best goes after one call). So where the model
//    prices every schedule far under native's first calls (6 ranks on the test bed's 3
//    sites, 1 MiB allreduce: three schedules at 67-69 ms, native 284 ms a call), the
//    rounds begin after native's first call instead of its fourth; 8 calls of that job
//    ran 4 native calls and then trials, at native's speed.
//    Where the rounds begin, a schedule of calls of a millisecond or more that the model
//    prices over `clear` times native's agreed mean of its first calls (cold calls
//    included) is not trialled: where a measured mean that far under every other
//    decides at once, a price that far over native's is as clear, and one call of such a
//    schedule costs several of native's. Where no schedule is left, native is decided.
//    Nor is such a schedule in the trials' price (TrialPrice::beyond).
//    Nor is one priced over `clear` times another schedule's price: the look would keep
//    the faster of the two, and a call of it costs the trials what several of the other's
//    would. Decision: 1024 simulated ranks (SMPI, cluster-edr), a 1 MiB allreduce with
//    node cards in the model (simulate.h): `hierarchical` (2.10 ms) and
//    `hierarchical-leaders` (2.05) priced under twice native's 1.10 ms but over four
//    times `rabenseifner`'s 0.49, measured 1.45 and 1.26 in the look against its 0.40;
//    their looks in the price put native first for 32 calls: 636.0 us a call over 100
//    (docs/performance-history.md, section 29). What it risks is what `clear` over
//    native's time risks, a missed win: the model's worst misses measured so far are
//    within 2.2x (pipelines priced at 2-2.2x their time, under a millisecond a call,
//    where this rule does not apply).
//    Decision: 1024 simulated ranks (SMPI, cluster-edr), a 1 MiB reduce after native's 64
//    first calls at about 0.5 ms a call: `greedy-bidirectional` (priced 1.42 ms) and
//    `binary` (1.80 ms) measured 2.4-4.7 and 3.3 ms on the slowest rank in the first
//    look, native chosen: 6.4 ms of the run's 57, 570 us a call against `mpich`'s 506
//    (docs/simulation.md). Why `clear` (2) and not more: a schedule priced over twice
//    native's time wins only where it runs in under half its price; of long calls the
//    furthest under their price measured so far ran at 0.56 of it (64 simulated ranks, a
//    1 MiB allreduce: `hierarchical` priced 1.05 ms, 0.59 ms on the slowest rank, native
//    0.65; priced under twice native's time, it was trialled), and a schedule kept from
//    its trials that would have won costs a missed win, never a slower call. The model is
//    not trusted the other way: a schedule priced under native is trialled, as the test
//    bed's (priced at 67 ms, native 284) are.
//    Where the rounds begin with a first look, native MPI sits it out: its first calls
//    stand for its look (their agreed mean as the rule above reads it, the cold calls
//    after the first included, so native looks no faster than it runs), a schedule `first_look` times slower than the faster of native
//    and the best schedule goes, a schedule `clear` of the others leaves only itself,
//    and native rejoins for the measured rounds, where it must still be beaten. One
//    native call of 250 ms fewer in a test bed job's trials.
//  * A decision is checked again later (`recheck_share` > 0): its trial may have been
//    measured in another period of the job, or over a rival's cold calls. Measured on
//    the 2-core AMD EPYC VM (2 ranks, MPICH, 256 KiB broadcasts in a slow period):
//    native's trial at the class's 256th call measured 195 us a call, so the ring's
//    90 us won, and the class then ran at 104 us a call where native's steady time was
//    13-19 us. After so many calls of the choice, the choice and its rivals run rounds
//    again, compared on those rounds alone, by the rules above (native's margin
//    included); any may win. The rivals: native MPI where it was measured and lost,
//    and the best other schedule measured (beside native, only where it measured
//    within `drop` of the choice: a far slower one would only make rechecks dear and
//    rare). The calls until a recheck are what keeps its
//    price, priced at the candidates' best means, under `recheck_share` of the
//    choice's time since the decision, and each recheck doubles the wait, so all of a
//    job's rechecks cost at most about that share of its time in the class. The count
//    comes from agreed means and calls: the same on every rank.
// The calls a trial spends are bounded: candidates x rounds x batch (plus native MPI's
// one more call, and, for long calls, the uncounted call and the first look, after
// which a far worse candidate is gone).
#pragma once

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "planner/schedule.h"

namespace canopy::planner {

// What a size class's trials are priced at, for native MPI's first calls (trials.h).
struct TrialPrice {
  double short_calls = 0;  // seconds: the schedules' trial calls under a millisecond, at their price
  struct Long {
    double predicted = 0;  // seconds a call
    int calls = 0;
    int fallback_calls = 0;  // its calls where the rounds have no first look (0: `calls`)
  };
  std::vector<Long> long_calls;  // the schedules' trial calls of a millisecond or more
  // Where every schedule's calls are long, the rounds can begin with a first look (one
  // call each, then only the fastest goes on: trials.h), and then each schedule's
  // `calls` above are its look's one call, and these the calls of the schedule that
  // goes on: the settling call before the look, which runs the schedule priced
  // cheapest, and one call a measured round, of the look's fastest: if every schedule
  // runs within `distrust` times its price (what the price assumes of each), that one
  // runs within that of the cheapest price, so all are priced at the cheapest's. The
  // look comes where native's batch is one call too: where it was planned so
  // (`native_batch`), or where native's own calls take a millisecond or more (its
  // batch is then cut to one). Elsewhere `fallback_calls` stand for `calls`.
  // Decision: every schedule used to be priced at its look and every measured round, 3
  // calls each for 2 rounds, where the rounds run one schedule: on the generated 1024-rank
  // grid (docs/simulation.md) a 1 MiB reduce's two schedules, priced 214 and 239 ms
  // against native's 309 a call, were priced at 6 calls, 2.23 s, where the trials run at
  // most 5 (1.97 s with the rounds at the dearest schedule's price). The rounds at the
  // dearest's price cost the simulated EDR cluster's 1 MiB allreduce at 1024 ranks half
  // its gain: `rabenseifner` priced 1.19 ms and `hierarchical` 2.10 against native's 1.10
  // (the settling call ran `hierarchical`, the candidate the selector ranks first:
  // `rabenseifner`'s price is an estimate), so 23.3 ms of trials, 32 of native's calls
  // before them, and 660 us a call over 100 (rabenseifner then ran at 407); at the
  // cheapest's, 15.1 ms, 16 native calls, 524.7 us a call.
  int after_look = 0;
  int native_batch = 0;
  // The cheapest schedule's price, seconds a call (0: none priced): a long schedule priced
  // over `clear` times it (or native's) is priced out (beyond(), trials.h).
  double cheapest_schedule = 0;
  // The price when native MPI takes `native_seconds` a call: the short calls whole, each
  // long call at what it costs beyond native if it took `distrust` times its price, but
  // for long calls priced over `clear` times the cheaper of native's time and the
  // cheapest schedule's price (clear > 0): the rounds will not trial those
  // (TrialSettings::clear), so they cost nothing. Found at 1024 simulated ranks
  // (SMPI, cluster-edr, 1 MiB allreduce): `grid-ecef` and `grid-ecef-la`, priced 5.35
  // ms a call against native's 1.10, were most of a 92 ms price, so native ran all of
  // a 100-call run, where `rabenseifner` (estimated 0.42 ms) would have replaced it.
  double beyond(double native_seconds, double distrust, double clear = 0) const;
};

struct TrialSettings {
  int rounds = 2;               // measured rounds after the first look
  int batch = 2;                // consecutive calls per candidate per round
  std::vector<int> batches;     // per candidate, where they differ (empty: `batch` for each)
  double first_look = 3.0;      // pruned after the first look when this much slower than the best
  double drop = 1.5;            // ... after a measured round
  double clear = 2.0;           // decided at once when the best is this much faster than every other
  double native_margin = 0.10;  // a schedule must be this much faster than native to replace it
  int native_after = 0;         // calls before native's trial (0: native in every round from the first)
  // Set: what the trials are priced at; native MPI runs the size class's calls until
  // they have cost that much, then the rounds begin, native in every measured one
  // (native_after is then ignored). Unset: the rounds begin at the first call.
  std::optional<TrialPrice> native_first;
  // With native_first: native runs at least this many of the class's first calls, whatever
  // the price (the shim's cheap allreduces trialled through the ring: native MPI's first
  // calls of a size are slow for hundreds of calls, CommState::kWarmNativeCalls). The
  // ranks first agree on native's time at this call, not before.
  int native_first_calls = 0;
  // With native_first, for classes of sub-microsecond calls (the shim's cheap classes
  // trialled through the ring): the rounds begin once native's calls have cost this many
  // times the trials' price (1: the ski-rental rule as it stands), and after native's
  // first kTimedNativeFirstCalls only one call in `native_first_sample` is timed
  // (times_next()), its mean standing for the others. Both are for rows of a few
  // thousand calls of well under a microsecond, where the trials cannot win much and
  // timing each call costs a fifth of it (kCheapNativeFirstFactor says why).
  double native_first_factor = 1;
  int native_first_sample = 1;
  // With native_first: each candidate's predicted seconds a call (native's is not read;
  // empty: none known). Where the rounds begin, a schedule of calls of a millisecond or
  // more priced over `clear` times native's agreed mean is not trialled (trials.h).
  std::vector<double> predicted;
  double recheck_share = 0;     // of a decided choice's time, for checking it again (0: a decision is final)
};

// The fewest calls of a choice before its first recheck (trials.h), whatever the prices:
// a recheck of calls this cheap says little after fewer, and OSU's 110 calls a size
// never meet one.
constexpr long kMinRecheckCalls = 1024;

// Native MPI's first calls of a size class that are all timed where only some are after
// (TrialSettings::native_first_sample): its coldest calls, whose cost the mean must hold.
constexpr int kTimedNativeFirstCalls = 32;
// A sampled call of native's first calls counts at most this many times the fastest
// sampled before it (Trials::record says why).
constexpr double kSampledCallCap = 8;

// The calls native MPI runs before the trials of a cheap size class (one priced under
// CANOPY_AUTO_NATIVE_BELOW) whose ring exists already (TrialSettings::native_first_calls),
// by the model's price of its best schedule: kWarmNativeFirstCalls under
// kMidCallSeconds, kWarmMidNativeFirstCalls from there. Native MPI's first calls of a
// size are slow: for hundreds of calls at the shortest (2 ranks, right after 1 MiB
// calls: Open MPI's 8 B reduce 7.8 us a call over the first 16, 0.28 over 1024, 0.11
// warm; MPICH's 4 KiB bcast 10.4, 1.0 and 0.36-0.58), and trials among those chose the
// ring where warm native is faster. Decision: of a fresh 16 KiB allreduce on 2 ranks,
// native's calls averaged 25-29 us over the first 32, 7.3-9.8 over the next 32 and
// 4.4-6.7 after (MPICH 4.0.2; Open MPI 4.1.4: 16-18, 10.5-11.0, then 9.7-10.6), and 256
// first calls put its trials beyond OSU's 110 calls of that size, where the ring's
// schedule runs in 3.7 us against MPICH's 5.4 (medians, the same processes). From 2 us
// the ring's schedule wins whether native is measured warm or not, so native's first
// calls there only have to keep the trials off its very first ones: 16. Decision: with
// 64, OSU's loop (MPI_Barrier after each call, 3 runs, 2 ranks) ran the 16 KiB
// allreduce at 4.7-8.5 us a call on MPICH (native 5.2-5.5) and 10.1-11.2 on Open MPI
// (native 14.1-14.2), most of its 110 calls native; with 16, 3.4-4.2 and 4.1-4.2, and
// every other row from 8 B to 64 KiB as before.
constexpr int kWarmNativeFirstCalls = 256;
constexpr int kWarmMidNativeFirstCalls = 16;
constexpr double kMidCallSeconds = 2e-6;
constexpr int warm_native_first_calls(double best_price) {
  return best_price < kMidCallSeconds ? kWarmNativeFirstCalls : kWarmMidNativeFirstCalls;
}

// The ski-rental factor and the timing of native's first calls (TrialSettings::
// native_first_factor, native_first_sample) for a cheap size class trialled through the
// ring, by the model's price of its best schedule: kCheapNativeFirstFactor and one call
// in kCheapNativeFirstSample timed under kMidCallSeconds, the plain rule from there.
// Decision, from OSU's way on 2 ranks (8 B allreduces, 200 untimed and 1000 timed calls,
// each run of 100 calls timed: canopy-bench --osu --osu-calls 100). With the plain rule
// native's first 256 calls (0.7-1.2 us a call on the slowest rank, the first call's
// planning and OSU's barrier skew included) paid for the trials' price (about 120 us)
// at once; the trials then cost 40-50 us of Open MPI's 230 us row (three ring schedules
// at 245-473 ns a call against native's 222-278, the switches, the agreements) and
// chose native every time: the row 0.72-0.80x native. Timing every one of native's
// first calls cost another 80-100 ns a call (0.29-0.34 us against 0.21-0.23 decided).
// Over their first 1024 calls native took 360-561 ns a call on Open MPI 4.1.4 and
// 500-647 on MPICH 4.0.2 (slowest rank): with 4 times the price the trials still began
// at call 1024 in two of four Open MPI runs, inside the row; with 8 past 2048 on both.
// The rows are now native's, 0.23-0.31 us a call against 0.21-0.28 (Open MPI, 3cf2c1d
// 0.27-0.40); what it costs: MPICH's 16 B-1 KiB rows, where the ring's schedules won
// 1.9-2.2x, are native too until then (docs/performance-history.md, section 17).
constexpr double kCheapNativeFirstFactor = 8;
constexpr int kCheapNativeFirstSample = 16;
constexpr double cheap_native_first_factor(double best_price) {
  return best_price < kMidCallSeconds ? kCheapNativeFirstFactor : 1;
}
constexpr int cheap_native_first_sample(double best_price) {
  return best_price < kMidCallSeconds ? kCheapNativeFirstSample : 1;
}

// Whether auto trials a call kept native for being cheap (its best schedule priced under
// CANOPY_AUTO_NATIVE_BELOW, `best_price`) against native MPI through the node's staging
// ring, by its collective and the most of its communicator's ranks one node holds.
// Allreduces: always. Decision, from OSU's osu_reduce and osu_bcast on 2 ranks (MPICH
// 4.0.2, a barrier after each call), once MPI_COMM_WORLD's ring existed from MPI_Init:
// at 8 B to 1 KiB the trials measured the ring's reduce at 0.92-1.0 us a call against
// native's 1.3-1.4 (the slowest rank: the root) and chose it, and OSU then timed it at
// 0.8-1.0 us against native's 0.47-0.69 (the mean over the ranks: natively a non-root
// returns as soon as its small message is sent, through the ring it does not); the
// broadcast alike (0.78-1.07 against 0.46-0.53). An allreduce's ranks all wait for every
// contribution, so there the two measures agree, and the ring won both (OSU: 0.93-1.24
// us against 1.11-1.56, 16 B to 1 KiB). Broadcasts: never.
// Reduces: where a node holds more than 2 ranks and the price is from kMidCallSeconds
// up. Beyond 2 ranks native MPI's reduce is a tree of log2(p) rounds that every rank but
// the leaves waits in. Measured, 16 ranks on 16 cores, 3 interleaved runs
// (docs/performance/sixteen/cheap-reduce-2026-12-04.txt), medians, us a call, native
// against the ring's shm-reduce-scatter-gather: 4 KiB (priced 2.2 us) MPICH 11.1 / 5.8
// back to back, 8.0 / 4.2 OSU's way; Open MPI 7.2 / 5.5 and 5.0 / 4.4; 8 KiB MPICH 12.9
// / 6.8 and 9.5 / 5.6, Open MPI 10.1 / 7.2 and 7.1 / 5.9. Under 2 us (8 B to 1 KiB,
// priced 0.5-1.3 us) the same trials, tried, cost more than they won: their 256 native
// calls and batches of 64-128 calls a candidate outlast a run of 300 calls, and Open
// MPI's 1.2-2.6 us rows came out 0.68-0.76x native back to back.
constexpr bool cheap_calls_through_ring(Collective collective, int ranks_per_node, double best_price) {
  switch (collective) {
    case Collective::Allreduce: return true;
    case Collective::Reduce: return ranks_per_node > 2 && best_price >= kMidCallSeconds;
    case Collective::Bcast: return false;
  }
  return false;
}

// Calls per batch for candidates predicted to take `predicted_seconds` a call: enough
// back-to-back calls to measure microsecond calls, one for calls of a millisecond or
// more (where one call is long enough and trials are expensive). Where a candidate
// stages through a ring of `staging_entries` entries per rank (0: none) in `stages`
// stages a call, its batch of short calls lasts four
// fills of the ring (entries / stages calls each): two fills for the ring's warm-up,
// which Trials::record leaves out of the means, and two more because back to back such
// calls run ahead into the ring's free entries until it is full and only then wait for
// the slowest reader, which is their steady state (16 ranks, 8 B shm-bcast: 0.6-1.0 us
// a call in batches of 16, 3.1-3.7 back to back).
// Decisions: calls of many stages fill the ring in a few calls, and batches of twice the
// ring's entries whatever the stages made a 2-rank 256 KiB broadcast's trials (8 stages,
// batches of 32) 128-192 calls long, more than the 110 calls OSU's osu_bcast times at
// that size. Calls of one stage (up to 48 KiB) get all four fills: capped at twice the
// entries, their batch was the warm-up alone, measured as nothing else was, and a 2-rank
// 32 KiB reduce through the ring measured 37-63 us a call (1.9 back to back) and lost to
// binomial (7.5); with four fills the ring measured 1.5-1.7 us and won.
// The ring's term applies only to candidates that stage through it (trial_batches).
int trial_batch(double predicted_seconds, int staging_entries = 0, int stages = 1);

// One candidate of a size class's trials, as trial_batches sizes its batch.
struct TrialCandidate {
  bool native = false;      // native MPI: no price of its own
  double predicted = 0;     // seconds a call, the model's price
  int staging_entries = 0;  // of the ring it stages through (0: none)
  int stages = 1;           // its stages a call, where it stages
  // Whether back-to-back calls may run ahead of the slowest rank into the ring's free
  // entries (a reduce's or broadcast's ranks leave a call once their own part is done),
  // which the ring's fills in its batch are for; false where every rank waits in each
  // call for every rank's contribution (an allreduce: no rank is ever a call ahead).
  bool runs_ahead = true;
};

// Each candidate's batch (TrialSettings::batches): trial_batch of its predicted time,
// with the ring's fills where it stages through the ring. Decision: every candidate
// used to run the staged candidates' batch, and native and point-to-point candidates
// several times slower than the ring ran it too (2 ranks, counts varying up to 800 KB:
// 16 native and 16 reduce-scatter-gather calls of 50-60 us beside 16 ring calls of
// 7-8 us in each size class from 128 to 220 KB). Native MPI's from
// `point_to_point_price`, the model's best point-to-point schedule (0: none; then the
// first candidate's price), since MPI's own algorithms are such schedules. Decision:
// native's batch was sized by the best candidate, the ring's schedule where there is
// one, and MPICH's 2-rank reduce, far slower than the ring, ran 6 to 11 calls of
// 1.4-1.8 ms in a 256 KiB reduce's first trial round (the ring priced at 5-10 us): most
// of that size's first 110 calls (124-130 us a call; 76-84 with this).
// A staged candidate whose calls cannot run ahead (TrialCandidate::runs_ahead: an
// allreduce) gets no fills: its steady state is any call after the warm-up, which the
// trials leave out (first touches) and the ring's making now mostly pays
// (shim/staging.cpp). Decision, measured: 2 ranks, OSU's way (4 KiB to 1 MiB in one
// process, 3 runs each), the fills made a 64 KiB allreduce's batch 32 calls and its
// trials' price so high that native MPI ran most of OSU's 110 calls: 16.0-20.9 us a call
// on Open MPI 4.1.4 (native 22.7-23.9), 13.1-19.7 on MPICH 4.0.2 (native 21.4-29.7);
// without them 7.4-14.8 and 7.9-8.6.
std::vector<int> trial_batches(const std::vector<TrialCandidate>& candidates, double point_to_point_price);

// What the schedules' trial calls are priced at (TrialSettings::native_first): each
// schedule's batch, for the first look and each of `rounds` measured rounds, at its
// predicted time a call (calls of a millisecond or more as TrialPrice::long_calls).
// Native's own trial calls are left out: they cost what staying native costs.
TrialPrice trial_price(const std::vector<TrialCandidate>& candidates, const std::vector<int>& batches, int rounds);

class Trials {
 public:
  // `candidates` candidates, of which `native` (or -1) is native MPI.
  Trials(int candidates, int native, TrialSettings settings);

  bool decided() const { return decided_; }
  int chosen() const { return chosen_; }
  // The candidate the next call runs.
  int current() const {
    return decided_ || phase_ == Phase::kWaiting ? chosen_ : settling_ ? settling_candidate_ : live_[position_];
  }
  // Whether the schedules' rounds have chosen the best of them (chosen()), which now runs
  // until native MPI's trial (TrialSettings::native_after); record() counts its calls.
  bool waiting_for_native() const { return phase_ == Phase::kWaiting; }
  // Whether native MPI is running the class's first calls before the rounds
  // (TrialSettings::native_first), and how many it has run so far.
  bool native_first() const { return phase_ == Phase::kNativeFirst; }
  int native_first_calls() const { return first_calls_; }
  // What native's first calls must cost (on the slowest rank, in all) before the rounds
  // begin, when they take `native_mean` a call (TrialSettings::native_first and
  // native_first_factor); 0 where the settings price no trials (no native_first).
  double native_first_target(double native_mean) const;
  // Whether the next call is to be timed and passed to record(), rather than counted
  // with record_untimed(): every call but native's first calls past
  // kTimedNativeFirstCalls where TrialSettings::native_first_sample says so, and a
  // sampled class's very first call. The same answer on every rank (it follows the call
  // count).
  // Decision (the first call of a class whose native calls are sampled, the cheap ones):
  // it is not native's cost. On 2 ranks (Open MPI 4.1.4, OSU's way, 8 B allreduces, the
  // process's first size) the ranks' first native calls took 52 and 829 us, the faster
  // rank waiting in it for the other to finish planning the class (1.2-2 ms on each),
  // and the slowest rank's 829 us was most of the 963 us the trials were priced at: the
  // trials began at call 256, inside OSU's row (0.55-1.42 us a call against native's
  // 0.54-0.78, 5 runs).
  bool times_next() const {
    if (phase_ != Phase::kNativeFirst) return true;
    if (untimed_first()) return false;
    return !sampling() || first_calls_ % settings_.native_first_sample == 0;
  }

  // Records this rank's duration of the call just made with current(). True when a
  // round has ended: the ranks must then agree on round_means() (each element's
  // maximum over the ranks) and pass the result to end_round(). `first_touch`: the call
  // warmed memory up on this rank (it counts towards its batch, but its
  // time goes into the round's mean only where no other call of the candidate's round
  // was measured). Each rank decides that for itself; every rank counts the same calls,
  // so rounds still end at the same call everywhere.
  bool record(double seconds, bool first_touch = false);
  // Counts a call times_next() left untimed, as record() would count it (true: the
  // ranks must agree, as after record()).
  bool record_untimed();
  // Where the next call is one of native's first calls that is neither timed nor ends a
  // round, counts it (true): nothing else changes. Inline for the native shortcut's
  // path (shim/collectives.cpp), where record_untimed() and what follows it cost a
  // call 10-20 ns more. False: the call goes as times_next() says.
  bool count_quiet_call() {
    if (phase_ != Phase::kNativeFirst || times_next() || first_calls_ + 1 >= next_agreement_) return false;
    ++calls_;
    ++first_calls_;
    return true;
  }
  // This rank's mean time per measured call of each live candidate this round.
  const std::vector<double>& round_means() const { return means_; }
  const std::vector<int>& live() const { return live_; }
  // Prunes or decides from the agreed means (one per live candidate, in live() order).
  void end_round(const std::vector<double>& agreed_means);

  // A call of the decided choice was made (every call of a decided plan, on every rank).
  // True where it makes a recheck due (trials.h): the choice and its rivals then run
  // rounds again, as current() and record() say, until a new decision.
  bool count_decided_call();
  // `calls` calls of the decided choice, fewer than calls_until_recheck() (so none
  // begins it): counted as that many count_decided_call() would.
  void count_decided_calls(long calls) {
    if (decided_ && !rivals_.empty()) since_decision_ += calls;
  }
  // Rechecks begun so far; the candidates the next one measures the choice against
  // (none: no recheck comes); the calls of the choice until it begins (-1: none).
  int rechecks() const { return rechecks_; }
  const std::vector<int>& rivals() const { return rivals_; }
  long calls_until_recheck() const { return rivals_.empty() || !decided_ ? -1 : recheck_at_ - since_decision_; }

  // Every candidate's best agreed mean so far (infinity: never measured), for logs.
  const std::vector<double>& best() const { return best_; }
  int rounds_done() const { return round_ + earlier_rounds_; }
  // Calls that ran a trial round (not those that waited for native's trial, nor native's
  // first calls before the rounds).
  int calls() const { return calls_ - waited_ - first_calls_; }
  // True while the next call is the unmeasured one before the first look.
  bool settling() const { return settling_; }
  // Consecutive calls of `candidate` per measured round.
  int batch_of(int candidate) const;

 private:
  // The position in live_ of the candidate `clear` times faster than every other in
  // `agreed` (one per live candidate), or -1 (none, or fewer than two live).
  int clear_winner(const std::vector<double>& agreed) const;
  // What goes on after a first look without a clear winner, from its agreed means (in
  // live() order): the fastest schedule no slower than `limit`, and native MPI where it
  // is live and no slower than `limit` (trials.h).
  std::vector<int> after_first_look(const std::vector<double>& agreed, double limit) const;
  void decide();
  bool count_native_first_call();  // one of native's first calls, timed or not (record())
  // This rank's mean time a call of native's first calls so far, as the rounds' rule reads
  // it (trials.h, native_first): the first call alone, then the calls after it.
  double native_first_mean() const;
  // The call count of the next agreement on native's first calls, after one at this
  // count that agreed on `native_mean` a call and did not begin the rounds (trials.h).
  int agreement_after(double native_mean) const;
  // Whether native's next first call falls where only samples are timed
  // (TrialSettings::native_first_sample, past kTimedNativeFirstCalls).
  bool sampling() const { return settings_.native_first_sample > 1 && first_calls_ >= kTimedNativeFirstCalls; }
  // The next call is a sampled class's first, which is not timed (times_next()).
  bool untimed_first() const { return settings_.native_first_sample > 1 && first_calls_ == 0; }
  void clear_round();  // the round's sums, for the live candidates
  void start_rounds();  // first look or measured rounds of live_, from its first call
  void start_native_trial();  // rounds of the schedules' choice and native
  void plan_recheck();        // after a decision: the rivals and when to measure against them

  TrialSettings settings_;
  int native_;
  std::vector<int> live_;      // candidates still running, in trial order (native first)
  std::vector<double> best_;   // per candidate
  std::vector<double> sums_;   // this round, per live candidate
  std::vector<int> measured_;  // this round, per live candidate
  std::vector<double> first_touch_sums_;  // this round, per live candidate: calls that
  std::vector<int> first_touches_;        // touched new memory (record())
  std::vector<double> means_;
  int position_ = 0;           // index into live_
  int in_batch_ = 0;           // calls made in the current batch
  int round_ = 0;              // rounds ended
  int calls_ = 0;              // trial calls so far
  bool decided_ = false;
  bool settling_ = false;      // the next call runs unmeasured, before the first look
  int settling_candidate_ = 0;  // ... and runs this candidate
  int chosen_ = 0;
  // Where native's trial waits (TrialSettings::native_after): the schedules' rounds
  // without native, then their choice (chosen_) alone until native_after calls, then
  // rounds of that choice and native. Without the wait, the last phase from the start.
  // With native_first: native alone (live_ = {native}) until its agreed time reaches
  // native_first, then the rounds of `pending_` with native.
  enum class Phase { kNativeFirst, kSchedules, kWaiting, kWithNative };
  Phase phase_ = Phase::kWithNative;
  std::vector<int> pending_;      // the candidates of the rounds after native's first calls
  bool native_aside_ = false;     // native sits out this first look (its first calls stand for it)
  double native_first_mean_ = 0;  // the agreed mean of native's first calls
  int first_calls_ = 0;           // native's first calls so far
  double first_seconds_ = 0;       // ... their time on this rank (sampled: record()) after the first,
  double first_call_seconds_ = 0;  // ... and the first's, where it is timed (native_first_mean())
  double fastest_sampled_ = std::numeric_limits<double>::infinity();  // ... the fastest of them timed as a sample (record())
  int next_agreement_ = 1;        // the first call count at which the ranks agree on it
  int waited_ = 0;                // calls that ran while waiting
  int native_calls_ = 0;          // calls native MPI ran in these trials
  int earlier_rounds_ = 0;        // rounds before native's trial (and before this recheck)
  // Per candidate, in this series of rounds: the measured rounds it shared with native,
  // and those in which it was the faster (decide(): a schedule must win most of them).
  std::vector<int> rounds_with_native_;
  std::vector<int> won_over_native_;
  void count_rounds_with_native(const std::vector<double>& agreed);
  std::vector<int> rivals_;       // what the next recheck measures the choice against
  long since_decision_ = 0;       // calls of the choice since the decision
  long recheck_at_ = 0;           // ... at which the recheck begins
  int rechecks_ = 0;
};

}  // namespace canopy::planner
