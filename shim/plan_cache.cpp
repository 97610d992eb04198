// The plan cache of a communicator: what a plan is made from and how (make_cached_plan:
// the planner prices the algorithms, the best are built as this rank's views and checked,
// and with auto their trials set up), the cache of plans per PlanKey, bounded and least
// recently used first, the choices a size class's first root shares with the others
// (ClassChoices), and the plans remembered for communicators of a shape seen before
// (PlanRecipe). CommState's plan(), touch(), drop_plans() and class_choices() are
// defined here. Apart from the state's life cycle so that which plans are made, and how
// they are kept, can change without touching the communicator's state.
#include "shim/plan_cache.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <spdlog/fmt/fmt.h>

#include "planner/describe.h"
#include "planner/fnv1a.h"
#include "planner/learn.h"
#include "planner/registry.h"
#include "planner/segments.h"
#include "planner/select.h"
#include "planner/validate.h"
#include "shim/collectives.h"
#include "shim/comm_state.h"
#include "shim/executor.h"
#include "shim/platform.h"
#include "shim/prices.h"
#include "shim/runtime.h"
#include "shim/trials_driver.h"

namespace canopy::shim {

namespace {

// FNV-1a over how a schedule was planned (the algorithm, its segment size and the
// problem): the same on every rank, although each rank keeps only its own steps.
std::uint64_t plan_fingerprint(const planner::Problem& problem, const planner::Choice& choice) {
  planner::Fnv1a h;
  h.bytes(choice.algorithm);
  for (std::int64_t v : {std::int64_t(problem.collective), std::int64_t(problem.nranks), std::int64_t(problem.root),
                         problem.count, problem.element_bytes, std::int64_t(problem.commutative), choice.segment_bytes})
    h.word(static_cast<std::uint64_t>(v));
  return h.value();
}

// CANOPY_FAULT=invalid-schedule: a receive from a rank that does not exist, which the
// validator (and, in a view, the shape check) rejects whatever the schedule was ("bad
// peer").
void corrupt(planner::Schedule& s) {
  if (s.steps.empty()) s.steps.resize(1);
  s.steps[0].push_back(planner::Step::recv_into_accumulator(s.nranks, 0));
}

// The whole schedule is built, validated and logged up to this many steps as its
// algorithm estimates them (planner::whole_steps_of: a tree's 2^16 ranks x
// segments), cheap next to the calls it serves; beyond, only this rank's view is built
// and its shape checked: the algorithms' views are proven against their whole
// schedules by the planner's tests (tests/planner/test_views.cpp). Counted in steps,
// not ranks x segments: reduce-scatter-gather forced on 4096 ranks has one segment
// asked for and 50 million steps (3 GB on every rank).
constexpr std::int64_t kWholeScheduleSteps = std::int64_t{1} << 18;

// One candidate's schedule for this rank: the view, checked, or an error message.
struct Built {
  planner::Schedule view;
  std::string rejected;  // why the validator (or the shape check) refused it
  // The whole schedule's steps, where it was built (every rank has them alike): how a
  // candidate that another algorithm already gave, step for step, is recognised.
  std::vector<std::vector<planner::Step>> whole_steps;
  // Only this rank's view was built and checked: whether it passed is this rank's alone
  // (CachedPlan::views_checked_alone).
  bool view_only = false;
};

// CANOPY_FAULT=view-rejected-on-rank-1: views only, as beyond kWholeScheduleSteps, and
// rank 1's corrupted, so that its shape check alone rejects them (the test that the
// ranks then agree on native MPI instead of running different plans).
bool views_rejected_on_rank_1() { return runtime().settings.fault == "view-rejected-on-rank-1"; }

Built build_candidate(const planner::Problem& problem, const planner::Choice& choice, int rank, bool fault,
                      const PlanKey& key, const planner::Topology* topology, const std::string& id) {
  Runtime& rt = runtime();
  // The sizes the plan serves: its class, or its exact count.
  const std::int64_t first = key.exact_count >= 0 ? problem.bytes() : planner::class_first_bytes(key.size_class);
  const std::int64_t last = key.exact_count >= 0 ? problem.bytes() : planner::class_last_bytes(key.size_class);
  Built out;
  if (platform().builds_whole_schedules && !views_rejected_on_rank_1() &&
      planner::whole_steps_of(problem, choice) <= kWholeScheduleSteps) {
    planner::Schedule whole = planner::build_schedule(problem, choice);
    if (fault) corrupt(whole);
    const planner::Validation v = planner::validate(whole);
    if (!v) {
      out.rejected = planner::summarize(whole) + ": rejected by the validator: " + v.summary();
      return out;
    }
    rt.schedule_log.record(whole, problem.nranks, choice.predicted, rt.model.spec(), topology, id, first, last);
    out.view = planner::project(whole, rank);
    out.whole_steps = std::move(whole.steps);
    return out;
  }
  out.view_only = true;
  out.view = planner::build_view(problem, choice, rank);
  if (fault || (views_rejected_on_rank_1() && rank == 1)) corrupt(out.view);
  std::vector<std::string> errors;
  if (!planner::check_shape(out.view, errors)) {
    out.rejected = planner::summarize(out.view) + ": rejected by the shape check: " + errors.front();
    return out;
  }
  rt.schedule_log.record(out.view, problem.nranks, choice.predicted, rt.model.spec(), topology, id, first, last);
  return out;
}

bool writes_accumulator(const planner::Schedule& s, int rank) {
  for (const planner::Step& st : s.steps_of(rank))
    if (st.kind != planner::StepKind::Send && st.kind != planner::StepKind::Stage &&
        !(st.kind == planner::StepKind::Recv && st.buffer == planner::Buffer::Slot))
      return true;
  return false;
}

// auto's trials add a coarser segmentation of the best schedule from this many segments.
constexpr std::size_t kCoarserTrialSegments = 8;

// auto trials the model's runner-up (and the coarser cut) only when priced within this
// factor of the best: further off, the model would have to be wrong by more than it
// has been (docs/performance-history.md: medians of 15% to 81% off).
constexpr double kTrialPriceRatio = 2.0;

// A class priced under 2 us and trialled through the ring (make_cached_plan) tries up to
// this many schedules, the ring's whatever their price. Decision: 16 ranks on 16 cores, MPICH,
// forced, steady state, us a call at 8 B and 1 KiB: shm-recursive-doubling 2.4 and
// 4.2-4.6, shm-reduce-scatter-allgather 4.1-4.3 and 8.1, shm 5.2-6.4 and 14.5-15.2,
// native 3.4-3.8 and 11.1-12.7 (docs/performance/sixteen/small-allreduce-2026-12-04.txt),
// where the model prices shm-recursive-doubling at twice shm-reduce-scatter-allgather
// (2.0 against 1.0 us at 8 B, 2.8 against 1.3 at 1 KiB) and two candidates left it out.
constexpr std::size_t kCheapStagedCandidates = 3;

// On an oversubscribed node, reduces priced under this trial the ring's schedules
// whatever the model's ratio between them (make_cached_plan: crowded_ring_trial).
constexpr double kCrowdedTrialSeconds = 10e-6;

// Native MPI competes in auto mode, at every root (an in-place reduce at a non-zero
// root, which Debian's MPICH 4.0.2 crashes on, reaches it with a copy:
// shim/native_reduce.h), except where it is known to mislead: on an oversubscribed node
// MPICH's first calls are fast and later ones are not (its busy-polling starves the
// ranks it waits for), so trials cannot judge it.
bool native_may_compete() { return !runtime().oversubscribed; }

}  // namespace

const std::vector<planner::Segment>* Candidate::segments_for(std::int64_t count) {
  if (count == schedule.count) return &schedule.segments;
  if (count != layout_count) {
    if (!planner::rescale_segments(schedule.segments, schedule.count, count, layout)) return nullptr;
    layout_count = count;
  }
  return &layout;
}

const std::vector<Fused>& Candidate::fusions_for(int rank, bool input_is_accumulator) {
  const int k = input_is_accumulator ? 1 : 0;
  if (!fusions_made[k]) {
    fusions[k] = shim::fusions_for(schedule, rank, input_is_accumulator);
    fusions_made[k] = true;
  }
  return fusions[k];
}

std::size_t CachedPlan::bytes_held() const {
  std::size_t n = sizeof(CachedPlan);
  for (const Candidate& c : candidates) {
    n += sizeof(Candidate) + (c.schedule.segments.capacity() + c.layout.capacity()) * sizeof(planner::Segment);
    for (const auto& steps : c.schedule.steps) n += steps.capacity() * sizeof(planner::Step);
  }
  return n;
}

namespace {

// The plan cache's counts over every communicator (PlanCacheStats); guarded because
// threads may plan on different communicators at once.
ThreadLock cache_stats_mutex;
PlanCacheStats cache_counts;

// A candidate of `pick` for `rank`: its schedule's view, identity and price, or the
// reason the validator rejected it (`rejected`; the candidate is then empty).
struct CandidateBuild {
  Candidate candidate;
  std::string rejected;
  std::vector<std::vector<planner::Step>> whole_steps;  // Built::whole_steps
  bool view_only = false;                                 // Built::view_only
};

CandidateBuild candidate_for(const planner::Problem& problem, const planner::Choice& pick, int rank,
                             const PlanKey& key, const planner::Topology* topology, bool learning) {
  CandidateBuild out;
  Candidate& c = out.candidate;
  c.fingerprint = plan_fingerprint(problem, pick);
  char id[17];
  std::snprintf(id, sizeof id, "%016llx", static_cast<unsigned long long>(c.fingerprint));
  c.schedule_id = id;
  Built built =
      build_candidate(problem, pick, rank, runtime().settings.fault == "invalid-schedule", key, topology, c.schedule_id);
  out.view_only = built.view_only;
  if (!built.rejected.empty()) {
    out.rejected = std::move(built.rejected);
    return out;
  }
  c.rank_needs_workspace = writes_accumulator(built.view, rank);
  c.schedule = std::move(built.view);
  c.predicted = pick.predicted;
  c.choice = pick;
  if (learning) c.gradient = shim::price_gradient(problem, pick);
  out.whole_steps = std::move(built.whole_steps);
  return out;
}

// What a plan is made from (besides the topology and another root's choices): equal
// recipes make equal plans (remembered_plan).
struct PlanRecipe {
  PlanKey key;
  std::int64_t count;
  int rank, size;
  planner::CostModel model;
  bool learning, staging, direct, trial_cheap;
  bool ring_ready;      // the communicator's staging ring exists (MPI_COMM_WORLD's from MPI_Init)
  int ranks_per_node;   // the most of the communicator's ranks one node holds
  bool operator==(const PlanRecipe& o) const {
    return key == o.key && count == o.count && rank == o.rank && size == o.size && learning == o.learning &&
           staging == o.staging && direct == o.direct && trial_cheap == o.trial_cheap &&
           ring_ready == o.ring_ready && ranks_per_node == o.ranks_per_node && model == o.model;
  }
};

// The candidates for `recipe.key` on `recipe.rank` of a communicator of `recipe.size`
// ranks: priced by the planner (planner/select.h), the best ones built as this rank's views.
std::unique_ptr<CachedPlan> make_cached_plan(const PlanRecipe& recipe,
                                             const std::shared_ptr<const planner::Topology>& topology,
                                             const ClassChoices* adopt) {
  const PlanKey& key = recipe.key;
  const std::int64_t count = recipe.count;
  const int rank = recipe.rank, size = recipe.size;
  const planner::CostModel& model = recipe.model;
  const bool learning = recipe.learning, staging = recipe.staging, direct = recipe.direct;
  const bool trial_cheap = recipe.trial_cheap;
  Runtime& rt = runtime();
  // A cheap allreduce (or reduce: CommState::ring_trials_cheap says which) where the
  // ring exists already (MPI_COMM_WORLD's, made at MPI_Init): its ring schedules are
  // built now, at the class's first call, where its planning is paid anyway, and native
  // MPI runs its first calls before the trials (256, or 16 for a class priced from 2 us:
  // planner::warm_native_first_calls), so that the trials cost calls and not a second
  // planning in the middle of a run of calls.
  // Decision, from OSU's way (2 ranks, MPICH, 8 B, 200 untimed calls and 1000 timed):
  // the plan made again at call 256, as plans kept native for being cheap still are
  // where the ring comes later (CANOPY_RING_AFTER), took 300-420 us in one call (pricing
  // 80-170 us, building the ring's candidates the rest), most of what made the row 0.56x
  // native.
  const bool cheap_ring_first = recipe.ring_ready && !trial_cheap && rt.settings.auto_native_first;
  bool warm_native_first = false;  // a cheap plan trialled through the ring from its first call
  double cheap_best_price = 0;     // ... and what the model prices its best schedule at
  auto made = std::make_unique<CachedPlan>();
  planner::Problem problem;
  problem.collective = key.collective;
  problem.nranks = size;
  problem.root = key.root;
  problem.count = count;
  problem.element_bytes = key.element_bytes;
  problem.commutative = key.commutative;
  problem.model = model;
  problem.topology = topology;
  if (staging) problem = planner::with_staging_ring(problem);
  problem.direct_access = staging && direct;
  // The global settings, or what a CANOPY_CONFIG rule says for this size (rules come
  // with exact counts: PlanKey).
  const config::Choice choice = rt.settings.choice_for(key.collective, problem.bytes(), size, key.commutative);
  planner::Request request;
  request.algorithm = choice.algorithm;
  request.segment_bytes = choice.segment_bytes;
  // Another root's trials decided this class: its choice runs, without trials.
  const bool adopt_decision = adopt && adopt->decided_root >= 0;
  const bool tune = request.algorithm == "auto" && rt.settings.auto_trials > 0 && !adopt_decision;
  const bool rule_says_native = request.algorithm == "native";
  const bool native_competes = tune && native_may_compete();
  if (adopt_decision && adopt->native) {
    made->native_why = FallbackReason::AutoChoseNative;
    made->candidates.emplace_back().native = true;
    if (rank == 0)
      rt.log->info("auto: {}: native MPI, as the trials at root {} chose for this size class "
                   "(no trials)",
                   planner::on_ranks(key.collective, size, key.root), adopt->decided_root);
    return made;
  }
  if (!rule_says_native && adopt) try {
    // Built from the choices priced at another root of this class (or the one its
    // trials chose), not priced again.
    const std::vector<planner::Choice> picks =
        adopt_decision ? std::vector<planner::Choice>{adopt->picks[adopt->chosen]} : adopt->picks;
    for (const planner::Choice& pick : picks) {
      CandidateBuild built = candidate_for(problem, pick, rank, key, topology.get(), learning);
      if (!built.rejected.empty()) return nullptr;  // priced afresh instead
      made->candidates.push_back(std::move(built.candidate));
    }
    if (rank == 0 && rt.log->should_log(spdlog::level::info)) {
      if (adopt_decision)
        rt.log->info("auto: {}: {}, as the trials at root {} chose for this size class (no trials)",
                     planner::on_ranks(key.collective, size, key.root), trial_name(made->candidates.front()),
                     adopt->decided_root);
      else
        rt.log->info("auto: {}: trials of the candidates priced at root {} for this size class",
                     planner::on_ranks(key.collective, size, key.root), adopt->priced_root);
    }
  } catch (const std::exception&) {
    return nullptr;  // an adopted choice declines this root: priced afresh instead
  }
  // The model's price of the best point-to-point schedule: what native MPI's own
  // algorithms are, for sizing native's trial batch (below).
  double point_to_point_price = 0;
  if (!rule_says_native && !adopt) try {
    // The model's best schedules (two when tuning, so a wrong model can be overruled),
    // each checked before it may run.
    std::vector<planner::Choice> ranked;
    if (rt.settings.fault == "planner-error") throw planner::PlanError("injected by CANOPY_FAULT=planner-error");
    try {
      ranked = shim::rank_choices(problem, request);
    } catch (const planner::PlanError& e) {
      if (request.algorithm == "auto") throw;
      // A forced algorithm may decline a call (e.g. a commutative-only one meeting a
      // non-commutative op). The user asked for a schedule of Canopy's, so the model's
      // best algorithm runs (this also kept such calls off MPICH 4.0.2's crash on
      // in-place reduces at non-zero roots before native calls got a copy there).
      // Said once per process and collective; later cases at debug level.
      static std::atomic<bool> said[planner::kCollectives];
      const bool first = !said[static_cast<int>(key.collective)].exchange(true);
      if (rank == 0)
        rt.log->log(first ? spdlog::level::warn : spdlog::level::debug,
                    "{} cannot plan {} on {} ranks ({}); using the model's best algorithm{}",
                    choice.algorithm_origin, planner::to_string(key.collective), size, e.what(),
                    first ? " (further cases at debug level)" : "");
      request.algorithm = "auto";
      ranked = shim::rank_choices(problem, request);
    }
    // Trials also try the model's best algorithm with segments four times as large when
    // it cuts the message into many: what one more message costs is what the model
    // knows least (on the test bed, 6 ranks on 2 cores over tcp, about 1.7 ms where
    // the idle ping-pong says 30 us, so 22 segments of a 1 MiB bcast ran at 100 ms
    // where 4 ran at 72). Only when the planner chooses the segment size.
    std::size_t wanted = tune ? 2 : 1;
    if (tune && request.segment_bytes < 0) {
      planner::Problem cut = problem;
      cut.segment_bytes = ranked.front().segment_bytes;
      const std::vector<planner::Segment> layout = planner::problem_segments(cut);
      if (layout.size() >= kCoarserTrialSegments) {
        std::int64_t largest = 0;
        for (const planner::Segment& seg : layout) largest = std::max(largest, seg.count);
        planner::Request coarser{ranked.front().algorithm, 4 * largest * problem.element_bytes};
        try {
          planner::Choice variant = shim::rank_choices(problem, coarser).front();
          ranked.insert(ranked.begin() + std::min<std::size_t>(2, ranked.size()), std::move(variant));
          wanted = 3;
        } catch (const planner::PlanError&) {
          // The algorithm declines that segment size: the usual two candidates compete.
        }
      }
    }
    // Trials also try the ring's best schedule where the model ranks it below those, and
    // the best of the other node mechanism (cross-memory attach against the ring's
    // entries; planner::bring_staged_forward says why), still within kTrialPriceRatio
    // below, but for the best direct schedule, trialled whatever its price: the model
    // learns a direct copy's price from those trials alone (per byte and per copy, which
    // one size cannot tell apart), and a direct schedule priced out of one size's trials
    // is never measured again. Measured: 2 ranks on the AMD EPYC VM, a 64 KiB trial
    // taught 1.6e-10 s/B and 1.5 us a copy, which priced cma-bcast at 256 KiB at 18.4 us,
    // twice the ring's price, where it runs in 9-12, and 1 MiB at 69.6 (it took 28-31).
    if (tune && staging && request.algorithm == "auto")
      wanted += planner::bring_staged_forward(ranked, wanted, problem.collective);
    // And the best schedule the planner could only estimate, where its estimate is under
    // every exact price (planner::bring_estimate_forward says why): at scale the
    // exchanges (recursive doubling) are too large to simulate over a topology.
    if (tune && request.algorithm == "auto") wanted += planner::bring_estimate_forward(ranked, wanted);
    const double best_price = ranked.front().predicted;
    for (const planner::Choice& c : ranked) {
      const planner::Algorithm* a = planner::find_algorithm(problem.collective, c.algorithm);
      if (a && !a->staged) {
        point_to_point_price = c.predicted;
        break;
      }
    }
    // On one node with its ring, point-to-point schedules the model ranks below the
    // ring's are not trialled (planner::drop_point_to_point_behind_ring says why; native
    // MPI's batches are still sized by the best of them, above).
    if (tune && staging && request.algorithm == "auto" && recipe.ranks_per_node >= size)
      planner::drop_point_to_point_behind_ring(ranked, problem.collective);
    // CANOPY_AUTO_NATIVE_BELOW (5 us by default): where native MPI may compete and the
    // model prices the best schedule under it, native runs and nothing is built or
    // trialled. Such calls are latency, where MPI's own short path is as good as a
    // point-to-point schedule gets (two ranks: 0.3-0.5 us for 8 B to 1 KiB natively, no
    // such schedule faster), and trials of calls this short measure the clock and the
    // first calls' warm-up more than the calls (1 rank, 8 B: native measured 56 ns in
    // trials, 21 ns after). Not once `trial_cheap`: the communicator's staging ring
    // exists and native MPI has run this plan's calls kWarmNativeCalls times
    // (CommState::native_warmed). Through the ring such calls often beat MPI's short path
    // (2 ranks, MPICH 4.0.2, back to back: reduce 8 B 0.14-0.26 us against 0.28-0.41,
    // 4 KiB 0.50-0.58 against 1.4-2.1; 16 ranks, 4 KiB 5.6-7.4 against 11-16; Open MPI
    // 4.1, bcast 4 KiB 0.48-0.54 against 2.3-3.1), but native MPI's first calls of a
    // size are slow for hundreds of calls (2 ranks, right after 1 MiB calls: Open MPI's
    // 8 B reduce 7.8 us a call over the first 16, 0.28 over 1024, 0.11 warm; MPICH's 4 KiB
    // bcast 10.4, 1.0 and 0.36-0.58), and trials among those chose the ring where warm
    // native is faster. A broadcast's trials also once misled with batches that did not
    // fill the ring (16 ranks, 8 B shm-bcast 0.6-1.0 us in trials, 3.1-3.7 back to back,
    // against Open MPI's 0.75); they outlast it now (planner::trial_batch).
    // Where the model learns, the starting model must price it that short too
    // (planner::below_trial_threshold says why).
    const bool cheap_through_ring =
        cheap_ring_first && planner::cheap_calls_through_ring(key.collective, recipe.ranks_per_node, best_price);
    const bool ring_beats_short_path = staging && (trial_cheap || cheap_through_ring);
    const bool short_call =
        learning ? planner::below_trial_threshold(problem, ranked.front(), rt.model, rt.settings.auto_native_below)
                 : best_price < rt.settings.auto_native_below;
    // A cheap class trialled through the ring, now or (trial_cheap) at this making.
    const bool cheap_class_through_ring = native_competes && ring_beats_short_path && short_call;
    warm_native_first = cheap_class_through_ring && !trial_cheap;
    cheap_best_price = best_price;
    // Not where the topology puts the communicator's ranks on several nodes: there MPI's
    // short path is one algorithm among those the network allows, and the class is
    // trialled as any other (native MPI first, until its calls have cost the trials'
    // price). Decision, SimGrid's SMPI on the EDR cluster (docs/simulation.md), 256
    // ranks on 16 nodes, 8 B, one untimed call and 100 timed, us a call: MPICH's
    // selector's reduce took 10.5 (Open MPI's 5.4) where Canopy's binomial, priced 4.5,
    // ran at 2.1 forced; kept native for being cheap, auto ran MPICH's 10.5, trialled
    // 6.0 (native's first 33 calls, then hierarchical at 2.7); 16 nodes of one rank,
    // reduce 8.1 -> 6.6, allreduce 8.1 -> 7.4. What it costs where native wins: the
    // broadcast's agreements on native's first calls (256 ranks 2.17 -> 2.38, 16 nodes
    // 2.09 -> 2.25; the ranks' first agreement at call 16 instead of 1 made it 2.57 at
    // 256: both in the timed calls, where call 1's was in the untimed one).
    const bool across_nodes = recipe.ranks_per_node < size;
    if (native_competes && !ring_beats_short_path && short_call && !across_nodes) {
      made->native_why = FallbackReason::AutoBelowThreshold;  // native alone (and the shortcut)
      made->cheap_price = best_price;
      wanted = 0;
    }
    // A class priced under 2 us trialled through the ring tries up to
    // kCheapStagedCandidates of the ring's schedules whatever the model's ratio between
    // them: there the model's ranking among them is least sure (it prices a rank's waits
    // on the ring's flags, not how they add up over ranks), a batch costs microseconds,
    // and its 256 native calls first put the trials in calls that OSU times by the
    // thousand. Not from 2 us: there OSU times 100 calls, which 16 native calls and three
    // staged batches would outlast (2 ranks, 16 KiB allreduce: 13.6 us a call against 8.4
    // with two candidates).
    const bool cheap_ring_trial = cheap_class_through_ring && best_price < planner::kMidCallSeconds;
    // On an oversubscribed node the model misprices the ring's schedules most: it gives
    // every rank a core of its own, where the node's ranks take turns on its cores. A
    // schedule whose every rank waits for every other's part (shm-reduce-scatter-gather)
    // waits there for each of them to be scheduled, twice a call; one whose ranks leave
    // once their input is staged (shm-flat) lets them run calls ahead. So there the
    // ring's schedules of a reduce priced under kCrowdedTrialSeconds are trialled
    // whatever the model's ratio between them, as a cheap class's are. Decision: 8 ranks
    // on 2 cores (MPICH 4.0.2), 300 calls from the first, us a call: at 8 KB
    // shm-reduce-scatter-gather, priced 3.3 us, ran at 113-121 a reduce and shm-flat,
    // priced 7.1 (over kTrialPriceRatio times it: never trialled), at 46 (native MPICH:
    // 42 ms); with these trials 72-89, shm-flat chosen. Where the calls move more data
    // the turns weigh less: at 64 KiB (priced 20 us) both ran at 170 forced and the
    // trials only added theirs (auto 270-284 against 221-240), and at 1 MiB they chose
    // shm-flat on noisy rounds, 1.37-2.40 ms a call against 1.11-1.12. Not broadcasts and
    // allreduces: there the extra candidates (cma-bcast, shm-recursive-doubling) lost
    // their trials at 2-10 times the model's choice, 8 KB rows 19.6 -> 34.4 us a bcast
    // and 123 -> 158 an allreduce. The places it adds are the ring's: other schedules
    // keep the places they had.
    const bool crowded_ring_trial = tune && staging && rt.oversubscribed &&
                                    key.collective == planner::Collective::Reduce && best_price < kCrowdedTrialSeconds;
    const std::size_t uncrowded_wanted = wanted;
    if (cheap_ring_trial || crowded_ring_trial) wanted = std::max(wanted, kCheapStagedCandidates);
    std::vector<std::vector<std::vector<planner::Step>>> kept_steps;  // of the candidates kept, where built whole
    bool direct_tried = false;  // the best direct schedule is among the candidates
    for (const planner::Choice& pick : ranked) {
      if (made->candidates.size() == wanted) break;
      // A schedule the model prices far above the best is not worth a trial (but for the
      // best direct one, above).
      const planner::Algorithm* algorithm = planner::find_algorithm(problem.collective, pick.algorithm);
      const bool best_direct = tune && !direct_tried && algorithm && algorithm->direct;
      const bool cheap_staged = (cheap_ring_trial || crowded_ring_trial) && algorithm && algorithm->staged;
      if (crowded_ring_trial && !cheap_staged && made->candidates.size() >= uncrowded_wanted) continue;
      if (!made->candidates.empty() && !best_direct && !cheap_staged && pick.predicted > kTrialPriceRatio * best_price)
        continue;
      direct_tried = direct_tried || best_direct;
      CandidateBuild built = candidate_for(problem, pick, rank, key, topology.get(), learning);
      made->views_checked_alone = made->views_checked_alone || built.view_only;
      if (!built.rejected.empty()) {
        if (rank == 0) rt.log->warn("{}", built.rejected);
        continue;
      }
      // On few ranks several algorithms build the same schedule (on 2 ranks every tree
      // is one message): one trial of it is enough. Decided from the whole schedule,
      // which every rank has alike.
      if (!built.whole_steps.empty() &&
          std::find(kept_steps.begin(), kept_steps.end(), built.whole_steps) != kept_steps.end())
        continue;
      if (!built.whole_steps.empty()) kept_steps.push_back(std::move(built.whole_steps));
      made->candidates.push_back(std::move(built.candidate));
    }
    if (made->candidates.empty() && wanted > 0) {
      made->native_why = FallbackReason::ValidatorRejected;
      throw planner::PlanError("every schedule failed validation");
    }
  } catch (const std::exception& e) {
    // Deterministic: every rank gets the same error for the same key.
    made->candidates.clear();
    made->native_reason = e.what();
  }
  int native_index = -1;
  if (made->candidates.empty() || native_competes) {
    Candidate native;
    native.native = true;
    native_index = static_cast<int>(made->candidates.size());
    made->candidates.push_back(std::move(native));
  }
  if (tune && made->candidates.size() > 1) {
    planner::TrialSettings trial;
    trial.rounds = rt.settings.auto_trials;
    // Each candidate's batch (planner::trial_batches says how).
    std::vector<planner::TrialCandidate> shapes;
    for (const Candidate& c : made->candidates) {
      const bool staged = !c.native && c.schedule.staging_entries > 0;
      shapes.push_back({c.native, c.predicted, staged ? c.schedule.staging_entries : 0,
                        staged ? static_cast<int>(c.schedule.segments.size()) : 1,
                        key.collective != planner::Collective::Allreduce});
    }
    trial.batches = planner::trial_batches(shapes, point_to_point_price);
    // Native MPI runs the class's first calls until they have cost what the trials are
    // priced at (CANOPY_AUTO_NATIVE_FIRST, planner/trials.h); with that off its trial
    // waits (CANOPY_AUTO_NATIVE_AFTER). Neither for a cheap plan trialled through the
    // ring: native has run its calls 256 times already.
    if (!trial_cheap && rt.settings.auto_native_first && native_index >= 0) {
      trial.native_first = planner::trial_price(shapes, trial.batches, trial.rounds);
      for (const planner::TrialCandidate& shape : shapes) trial.predicted.push_back(shape.predicted);
      if (warm_native_first) {
        trial.native_first_calls = planner::warm_native_first_calls(cheap_best_price);
        trial.native_first_factor = planner::cheap_native_first_factor(cheap_best_price);
        trial.native_first_sample = planner::cheap_native_first_sample(cheap_best_price);
      }
    } else if (!trial_cheap) trial.native_after = rt.settings.auto_native_after;
    trial.recheck_share = rt.settings.auto_recheck;  // CANOPY_AUTO_RECHECK (planner/trials.h)
    made->trials = planner::Trials(static_cast<int>(made->candidates.size()), native_index, trial);
  }

  if (rule_says_native) made->native_why = FallbackReason::Configured;  // counted and said when it runs
  if (!made->native_reason.empty() && rank == 0)
    rt.log->warn("{}, {} elements: planning failed ({}); native MPI runs",
                 planner::on_ranks(key.collective, size, key.root), problem.count, made->native_reason);
  if (rank == 0 && rt.log->should_log(spdlog::level::info))
    for (const Candidate& c : made->candidates) {
      if (c.native) continue;
      std::string text = planner::describe_schedule(c.schedule, rt.log->should_log(spdlog::level::debug));
      if (!text.empty() && text.back() == '\n') text.pop_back();
      const std::string sizes =
          key.exact_count >= 0 ? "" : fmt::format(" (for {}..{} B)", planner::class_first_bytes(key.size_class),
                                                   planner::class_last_bytes(key.size_class));
      rt.log->info("new schedule: {}{}; predicted {}\n{}", planner::summarize(c.schedule), sizes,
                   planner::format_seconds(c.predicted), text);
    }
  if (rank == 0) log_native_wait(*made, key, size);
  return made;
}

// Plans made before, for communicators of the same shape. A plan is a pure function of
// what it is made from: its key, the count it is made for, this rank and the
// communicator's size, the cost model, whether a ring is offered (and the process's
// settings, fixed at MPI_Init). A communicator like one before (a program that splits a
// communicator, uses it and frees it, again and again) gets a copy of the plan made then,
// as it was made (its trials not begun), instead of pricing every algorithm again:
// 2 ranks, a new communicator's 64 KiB reduce and bcast planned in about 150 us. Only
// where no topology is known: a topology is the world's restricted to the ranks, and
// comparing it would cost what it saves. Every rank gets the same plan whether it
// remembered one or not, so what each rank remembers may differ.
constexpr std::size_t kRememberedPlans = 64;
constexpr std::size_t kRememberedPlanBytes = std::size_t{4} << 20;
ThreadLock remembered_mutex;
std::list<std::pair<PlanRecipe, std::unique_ptr<const CachedPlan>>> remembered;  // most recent first
std::size_t remembered_bytes = 0;

// A copy of the plan remembered for `recipe`, or null.
std::unique_ptr<CachedPlan> remembered_plan(const PlanRecipe& recipe) {
  std::lock_guard<ThreadLock> lock(remembered_mutex);
  for (auto it = remembered.begin(); it != remembered.end(); ++it)
    if (it->first == recipe) {
      remembered.splice(remembered.begin(), remembered, it);
      return std::make_unique<CachedPlan>(*it->second);
    }
  return nullptr;
}

void remember_plan(const PlanRecipe& recipe, const CachedPlan& plan) {
  auto copy = std::make_unique<const CachedPlan>(plan);
  std::lock_guard<ThreadLock> lock(remembered_mutex);
  remembered_bytes += copy->bytes_held();
  remembered.emplace_front(recipe, std::move(copy));
  while (remembered.size() > kRememberedPlans || (remembered_bytes > kRememberedPlanBytes && remembered.size() > 1)) {
    remembered_bytes -= remembered.back().second->bytes_held();
    remembered.pop_back();
  }
}

}  // namespace

std::atomic<long> CommState::cache_hits{0};
std::atomic<std::uint64_t> CommState::generation_{1};

PlanCacheStats CommState::cache_stats() {
  std::lock_guard<ThreadLock> lock(cache_stats_mutex);
  PlanCacheStats out = cache_counts;
  out.hits = cache_hits.load(std::memory_order_relaxed);
  return out;
}

namespace {

// Whether one of `plan`'s schedules (not native MPI) is of the kind `uses` says
// (Schedule::uses_staging, uses_direct).
bool offers(const CachedPlan& plan, bool (planner::Schedule::*uses)() const) {
  return std::any_of(plan.candidates.begin(), plan.candidates.end(),
                     [uses](const Candidate& c) { return !c.native && (c.schedule.*uses)(); });
}

}  // namespace

void CommState::agree_on_views(const PlanKey& key, std::unique_ptr<CachedPlan>& made) {
  // A whole schedule is checked alike on every rank; a view by its own rank alone. Where
  // views were checked alone, the ranks compare their candidates (every rank makes this
  // plan at this call: the agreement is collective) and run native MPI unless all have
  // the same: a rank that rejected a view the others kept would otherwise run another
  // plan than theirs, and the job would hang (views are proven against their whole
  // schedules by tests/planner/test_views.cpp, so only a bug gets here; the first
  // found was in the shape check itself, planner/validate.cpp).
  if (!made->views_checked_alone) return;
  planner::Fnv1a h;
  h.word(made->candidates.size());
  for (const Candidate& c : made->candidates) h.word(c.native ? 1 : c.fingerprint);
  if (private_ready() && agree(h.value())) return;
  Runtime& rt = runtime();
  if (rank_ == 0)
    rt.log->warn("{}: the ranks' own checks of their schedule views disagree (a planner bug); native MPI runs for "
                 "this size",
                 planner::on_ranks(key.collective, size_, key.root));
  auto native = std::make_unique<CachedPlan>();
  Candidate n;
  n.native = true;
  native->candidates.push_back(std::move(n));
  native->native_why = FallbackReason::ValidatorRejected;
  native->native_reason = "the ranks' checks of their schedule views disagree";
  made = std::move(native);
}

CachedPlan& CommState::plan(const PlanKey& key, std::int64_t count, PlanHandle* where) {
  std::lock_guard<ThreadLock> lock(plans_lock_);
  if (drop_staged_plans_) {
    // The staging ring could not be made (every rank learnt it at the same call): the
    // plans that offered staged schedules are made again without them.
    drop_staged_plans_ = false;
    drop_plans([](const PlanKey&, const CachedPlan& plan) { return offers(plan, &planner::Schedule::uses_staging); });
  }
  if (drop_direct_plans_) {
    // The ring was made without cross-memory attach: the same for direct schedules.
    drop_direct_plans_ = false;
    drop_plans([](const PlanKey&, const CachedPlan& plan) { return offers(plan, &planner::Schedule::uses_direct); });
  }
  if (drop_cheap_native_plans_ || drop_warm_plans_) {
    // Plans kept native for being cheap are made again with trials through the ring where
    // their native calls are warm: when the ring was made, those that had run native
    // kWarmNativeCalls times; after, each as it reaches that (native_warmed). Every rank
    // drops alike: the ring's making and each plan's calls are the same on every rank.
    const bool ring_just_made = drop_cheap_native_plans_;
    drop_cheap_native_plans_ = drop_warm_plans_ = false;
    drop_plans([&](const PlanKey& key, const CachedPlan& plan) {
      if (plan.native_why != FallbackReason::AutoBelowThreshold || !ring_trials_cheap(key.collective, plan.cheap_price))
        return false;
      if (ring_just_made && plan.calls >= kWarmNativeCalls) warm_cheap_keys_.insert(key);
      return warm_cheap_keys_.count(key) > 0;
    });
  }
  auto it = plans_.find(key);
  if (it != plans_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);  // now the most recently used
    add_one(cache_hits, concurrent_);
    if (where) *where = it->second;
    return *it->second->second;
  }
  std::unique_ptr<CachedPlan> made;
  // (Taken once: if this plan is evicted and made again, its native calls count afresh.)
  const bool trial_cheap = staging_ != nullptr && warm_cheap_keys_.erase(key) > 0;
  const PlanRecipe recipe{key,           count,        rank_,           size_,
                          model_,        learning_,    staging_offered(), direct_offered(),
                          trial_cheap,   staging_ != nullptr, ranks_per_node_};
  // Another root of this size class was planned before: its choices are built for this
  // root (not remembered for other communicators: the plan depends on this one's past).
  ClassChoices* known = topology_ ? nullptr : class_choices(key);
  if (known) {
    made = make_cached_plan(recipe, topology_, known);
    if (made) agree_on_views(key, made);
  }
  if (!made && !topology_) {
    made = remembered_plan(recipe);
    if (made && rank_ == 0 && runtime().log->should_log(spdlog::level::info))
      for (const Candidate& c : made->candidates)
        if (!c.native)
          runtime().log->info("schedule as planned before for a communicator of this shape: {}",
                              planner::summarize(c.schedule));
  }
  if (!made) {
    made = make_cached_plan(recipe, topology_, nullptr);
    agree_on_views(key, made);
    if (!topology_) remember_plan(recipe, *made);
  }
  if (!topology_ && !known && made->trialling()) {
    // The first root of this size class that trials: its choices, for the others.
    ClassChoices choices;
    for (const Candidate& c : made->candidates)
      if (!c.native) choices.picks.push_back(c.choice);
    choices.priced_root = key.root;
    PlanKey any_root = key;
    any_root.root = -1;
    class_choices_.emplace_back(any_root, std::move(choices));
    if (class_choices_.size() > kClassChoices) class_choices_.pop_front();
  }
  plans_bytes_ += made->bytes_held();
  lru_.emplace_front(key, std::move(made));
  plans_[key] = lru_.begin();
  long evicted = 0;
  flush_native_shortcuts();  // before a plan they count calls of goes
  while (lru_.size() > kMaxPlans || (plans_bytes_ > kMaxPlanBytes && lru_.size() > 1)) {
    plans_bytes_ -= lru_.back().second->bytes_held();
    plans_.erase(lru_.back().first);
    lru_.pop_back();
    generation_.fetch_add(1, std::memory_order_relaxed);
    ++evicted;
  }
  if (where) *where = lru_.begin();
  {
    std::lock_guard<ThreadLock> counts(cache_stats_mutex);
    ++cache_counts.plans;
    cache_counts.evictions += evicted;
    cache_counts.most_held = std::max(cache_counts.most_held, static_cast<long>(lru_.size()));
    cache_counts.most_bytes = std::max(cache_counts.most_bytes, plans_bytes_);
  }
  return *lru_.front().second;
}

void CommState::drop_plans(const std::function<bool(const PlanKey&, const CachedPlan&)>& drop) {
  flush_native_shortcuts();  // before a plan they count calls of goes
  for (auto p = lru_.begin(); p != lru_.end();) {
    if (!drop(p->first, *p->second)) {
      ++p;
      continue;
    }
    plans_bytes_ -= p->second->bytes_held();
    plans_.erase(p->first);
    p = lru_.erase(p);
    generation_.fetch_add(1, std::memory_order_relaxed);
  }
}

ClassChoices* CommState::class_choices(const PlanKey& key) {
  PlanKey any_root = key;
  any_root.root = -1;
  for (auto& [k, choices] : class_choices_)
    if (k == any_root) return &choices;
  return nullptr;
}

}  // namespace canopy::shim
