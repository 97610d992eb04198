// Rank views (Schedule::view_rank, Algorithm::view): every algorithm that builds one
// rank's steps directly builds exactly that rank's part of its whole schedule, for
// every rank, root and shape of problem; the union of the views is the schedule.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "planner/describe.h"
#include "planner/schedule_json.h"
#include "sites.h"
#include "support.h"

using namespace canopy::planner;
using namespace canopy::planner::testing;

namespace {

// Full duplex with overlap (the shim's), Canon & Antoniu's half duplex with overlap,
// and Langou's unidirectional system: the three step shapes tree schedules take.
std::vector<CostModel> view_models() { return {default_model(), overlap_model(1, 2), hockney_model(1, 0.5, 0.25)}; }

bool same_header(const Schedule& a, const Schedule& b) {
  if (a.collective != b.collective || a.algorithm != b.algorithm || a.nranks != b.nranks || a.root != b.root ||
      a.count != b.count || a.element_bytes != b.element_bytes || a.commutative != b.commutative ||
      a.segments.size() != b.segments.size())
    return false;
  for (std::size_t j = 0; j < a.segments.size(); ++j)
    if (a.segments[j].first != b.segments[j].first || a.segments[j].count != b.segments[j].count) return false;
  return true;
}

// Every rank's view equals that rank's steps and slots of the whole schedule; returns
// a description of the first difference, or "".
std::string compare_views(const Algorithm& a, const Problem& problem) {
  const Schedule whole = a.plan(problem);
  for (int r = 0; r < problem.nranks; ++r) {
    const Schedule view = a.view(problem, r);
    const std::string where = label(whole) + ", rank " + std::to_string(r) + ": ";
    if (view.view_rank != r || view.steps.size() != 1 || view.slots.size() != 1) return where + "not a view of r";
    if (!same_header(view, whole)) return where + "header or segments differ";
    if (view.slots_of(r) != whole.slots_of(r)) return where + "slots differ";
    const auto& mine = view.steps_of(r);
    const auto& theirs = whole.steps_of(r);
    if (mine.size() != theirs.size())
      return where + std::to_string(mine.size()) + " steps, the schedule has " + std::to_string(theirs.size());
    for (std::size_t i = 0; i < mine.size(); ++i)
      if (!(mine[i] == theirs[i])) return where + "step " + std::to_string(i) + " is " + describe(mine[i]) +
                                          ", the schedule's " + describe(theirs[i]);
  }
  return "";
}

std::vector<const Algorithm*> algorithms_with_views() {
  std::vector<const Algorithm*> out;
  for (const Algorithm& a : algorithms())
    if (a.view) out.push_back(&a);
  return out;
}

}  // namespace

TEST_CASE("Every homogeneous algorithm but Langou's greedy builds rank views directly", "[views]") {
  // Langou's constructions (greedy-segmented, greedy-bidirectional) pair ranks as the
  // whole run unfolds, and the topology-aware ones compose whole levels: plan_view
  // projects their schedules, as it does the staged ones (one node: few ranks). Every other algorithm must have its own view.
  for (const Algorithm& a : algorithms()) {
    CAPTURE(a.name, to_string(a.collective));
    // Allreduce compositions of a reduce and a broadcast merge the parts by simulating
    // both (algorithms/reduce_bcast.cpp): projected too.
    const bool composed = a.collective == Collective::Allreduce && a.name != "recursive-doubling" &&
                          a.name != "rabenseifner" && a.name != "ring" && a.name != "shm-recursive-doubling" &&
                          a.name != "reduce-scatter-allgather-wide";
    // Staged ones are projected too (one node: few ranks), but for shm-recursive-doubling,
    // whose stage numbers have a closed form.
    const bool staged_projected = a.staged && a.name != "shm-recursive-doubling";
    const bool projected = a.topology_aware || staged_projected || composed || a.name == "greedy-segmented" ||
                           a.name == "greedy-bidirectional";
    CHECK((a.view != nullptr) == !projected);
  }
}

TEST_CASE("Rank views equal the schedule's own steps: p = 1..40 with every root up to 12, all models, "
          "commutative and not, several counts and segment sizes",
          "[views]") {
  Sweep sweep;
  int compared = 0;
  for (const Algorithm* a : algorithms_with_views())
    for (const CostModel& model : view_models())
      for (int p = 1; p <= 40; ++p) {
        std::vector<int> roots = p <= 12 ? roots_for(p) : std::vector<int>{0, 1, p / 2, p - 2, p - 1};
        if (p > 12 && p % 3 != 0) roots = {0, p - 1};  // fewer roots for most sizes: the test stays quick
        for (int root : roots)
          for (bool commutative : {true, false}) {
            if (!commutative && a->collective == Collective::Bcast) continue;
            for (std::int64_t count : {0, 1, 5, 100})
              for (std::int64_t seg : {std::int64_t{0}, std::int64_t{16}, std::int64_t{96}}) {
                Problem problem = make_problem(a->collective, p, root, count, 4, commutative, seg, model);
                if (a->wide_area) problem.topology = sites_apart_with_port(p);  // where they plan at all
                Schedule whole;
                try {
                  whole = a->plan(problem);
                } catch (const PlanError&) {
                  // The algorithm declines (e.g. rank order): its view must decline too.
                  bool declined = false;
                  try {
                    a->view(problem, 0);
                  } catch (const PlanError&) {
                    declined = true;
                  }
                  sweep.check(declined, std::string(a->name) + " declines the schedule but not the view");
                  continue;
                }
                const std::string diff = compare_views(*a, problem);
                sweep.check(diff.empty(), diff);
                ++compared;
              }
          }
      }
  INFO(sweep.first);
  CHECK(sweep.failures == 0);
  CHECK(compared > 10000);
}

TEST_CASE("Rank views equal the schedule's own steps at a few hundred ranks", "[views]") {
  Sweep sweep;
  for (const Algorithm* a : algorithms_with_views())
    for (int p : {97, 128, 255, 300})
      for (int root : {0, p / 3, p - 1})
        for (bool commutative : {true, false}) {
          if (!commutative && a->collective == Collective::Bcast) continue;
          const Problem problem =
              make_problem(a->collective, p, root, 4096, 8, commutative, 4096, default_model());
          std::string diff;
          try {
            diff = compare_views(*a, problem);
          } catch (const PlanError&) {
            // The algorithm declines (ring: a non-commutative op): its view must decline too.
            bool declined = false;
            try {
              a->view(problem, 0);
            } catch (const PlanError&) {
              declined = true;
            }
            sweep.check(declined, std::string(a->name) + " declines the schedule but not the view");
            continue;
          }
          sweep.check(diff.empty(), diff);
        }
  INFO(sweep.first);
  CHECK(sweep.failures == 0);
}

// What a view holds grows with its rank's steps, never with p: f81c999 gave every view
// p empty step lists (kept as capacity after shrinking to one): 24 MB at 1,048,576 ranks,
// held by every plan of the shim's cache.
TEST_CASE("A rank view holds one rank's step list and slot count, whatever p", "[views]") {
  for (const Algorithm* a : algorithms_with_views())
    for (int p : {2, 300, 70000}) {
      const Problem problem = make_problem(a->collective, p, 0, 4096, 8, true, 4096, default_model());
      Schedule view;
      try {
        view = a->view(problem, p / 2);
      } catch (const PlanError&) {
        continue;  // declined (reduce-scatter-gather: more slices than a schedule's segments)
      }
      CAPTURE(a->name, p);
      CHECK(view.view_rank == p / 2);
      CHECK(view.steps.capacity() == 1);
      CHECK(view.slots.capacity() == 1);
    }
}

TEST_CASE("plan_view projects the algorithms without a view of their own", "[views]") {
  const Algorithm* a = find_algorithm(Collective::Reduce, "greedy-segmented");
  REQUIRE(a != nullptr);
  const Problem problem = make_problem(Collective::Reduce, 9, 4, 64, 4, true, 32, default_model());
  const Schedule whole = a->plan(problem);
  for (int r = 0; r < 9; ++r) {
    const Schedule view = plan_view(*a, problem, r);
    CHECK(view.view_rank == r);
    CHECK(view.steps_of(r) == whole.steps_of(r));
    CHECK(view.slots_of(r) == whole.slots_of(r));
  }
  CHECK_THROWS_AS(plan_view(*a, problem, 9), PlanError);
  CHECK_THROWS_AS(plan_view(*find_algorithm(Collective::Reduce, "binomial"), problem, -1), PlanError);
}

TEST_CASE("A view holds one rank: the validator and simulator refuse it, JSON and text keep it", "[views]") {
  const Problem problem = make_problem(Collective::Reduce, 6, 2, 64, 4, true, 32, default_model());
  const Schedule view = plan_view(*find_algorithm(Collective::Reduce, "binomial"), problem, 3);
  CHECK(view.holds(3));
  CHECK_FALSE(view.holds(2));
  CHECK_THROWS_AS(view.steps_of(2), std::out_of_range);

  const Validation v = validate(view);
  CHECK_FALSE(v.ok);
  CHECK(v.summary().find("validate the whole schedule") != std::string::npos);
  const Simulation sim = simulate(view, default_model());
  CHECK_FALSE(sim.ok);
  CHECK(sim.error.find("simulate the whole schedule") != std::string::npos);

  std::vector<std::string> errors;
  CHECK(check_shape(view, errors));
  const Schedule back = schedule_from_json(schedule_to_json(view));
  CHECK(back.view_rank == 3);
  CHECK(back.steps_of(3) == view.steps_of(3));
  CHECK(check_shape(back, errors));

  // A view with a peer outside the communicator, or of a rank outside it, is malformed.
  Schedule bad = view;
  bad.steps[0].push_back(Step::recv_into_accumulator(6, 0));
  CHECK_FALSE(check_shape(bad, errors));
  bad = view;
  bad.view_rank = 6;
  errors.clear();
  CHECK_FALSE(check_shape(bad, errors));

  CHECK(summarize(view).find("rank 3's view") != std::string::npos);
  const std::string text = describe_schedule(view, true);
  CHECK(text.find("rank 3 of 6") != std::string::npos);
  CHECK(text.find("sends to 2") != std::string::npos);  // binomial, root 2: relative 1 sends to relative 0
}

// check_shape is what the shim runs on a view where the whole schedule is too large to
// build (plan_cache.cpp, beyond 2^18 steps): it read a receive's slot bound at
// slots[rank], past the end of a view's one count, so views of ranks above 0 passed or
// failed with whatever lay there (found under SMPI, which builds views only: some ranks
// of a 24-rank chain rejected their view, the others ran it, and the job aborted).
// AddressSanitizer (tools/test-sanitizers.sh) reports the old read outright.
TEST_CASE("The shape check passes every rank's view of every algorithm that has one", "[views]") {
  Sweep sweep;
  for (const Algorithm* a : algorithms_with_views())
    for (int p : {2, 5, 24, 97})
      for (std::int64_t segment_bytes : {std::int64_t{0}, std::int64_t{1024}}) {
        const bool bcast = a->collective == Collective::Bcast;
        const Problem problem =
            make_problem(a->collective, p, p / 3, bcast ? 8192 : 1024, bcast ? 1 : 8, true, segment_bytes,
                         default_model());
        for (int r = 0; r < p; ++r) {
          std::vector<std::string> errors;
          try {
            const Schedule view = a->view(problem, r);
            sweep.check(check_shape(view, errors),
                        label(view) + ", rank " + std::to_string(r) + ": " + (errors.empty() ? "" : errors.front()));
          } catch (const PlanError&) {
            break;  // the algorithm declines the problem (every rank alike)
          }
        }
      }
  INFO(sweep.first);
  CHECK(sweep.failures == 0);
}

TEST_CASE("The shape check reads a view's slot count, not its rank's place in a whole schedule", "[views]") {
  Schedule view;
  view.collective = Collective::Reduce;
  view.algorithm = "hand-made";
  view.nranks = 8;
  view.root = 0;
  view.count = 4;
  view.element_bytes = 8;
  view.segments = {{0, 4}};
  view.view_rank = 6;
  view.steps = {{Step::recv_into_slot(7, 0, 0), Step::reduce(0, 0, false), Step::send(5, 0, Buffer::Accumulator)}};
  view.slots = {1};
  std::vector<std::string> errors;
  CHECK(check_shape(view, errors));
  view.slots = {0};
  errors.clear();
  CHECK_FALSE(check_shape(view, errors));
  REQUIRE(!errors.empty());
  CHECK_THAT(errors.front(), Catch::Contains("slot outside 0..-1"));
}
