// The direct steps of the IR (Expose, Read, Write: schedule.h) and the algorithm that
// uses them, cma-bcast (algorithms/cma_bcast.cpp): the validator's shape, matching,
// race and run checks, the simulator's timing and price (CostModel::direct_copy), and
// the JSON form.
#include <string>
#include <utility>

#include "planner/cost_model.h"
#include "planner/describe.h"
#include "planner/hierarchy.h"
#include "planner/schedule_json.h"
#include "planner/select.h"
#include "planner/staged.h"
#include "support.h"

namespace canopy::planner {
namespace {

using testing::check_rejected;
using testing::check_valid;
using testing::make_problem;
using testing::plan_with;
using testing::simulate_ok;
using testing::Sweep;

// A broadcast problem that cma-bcast plans: every rank on one node, its ring made,
// cross-memory attach allowed.
Problem direct_problem(int p, int root, std::int64_t bytes, const CostModel& model = default_model()) {
  Problem problem = with_staging_ring(make_problem(Collective::Bcast, p, root, bytes, 1, true, 0, model));
  problem.direct_access = true;
  return problem;
}

// An empty direct broadcast from rank 0 of `segments` one-byte segments on p ranks,
// for steps written by hand.
Schedule direct_schedule(int p, int segments) {
  Schedule s;
  s.collective = Collective::Bcast;
  s.algorithm = "by-hand";
  s.nranks = p;
  s.root = 0;
  s.count = segments;
  for (int k = 0; k < segments; ++k) s.segments.push_back({k, 1});
  s.steps.assign(p, {});
  s.slots.assign(p, 0);
  s.staging_entries = 2;
  s.staging_entry_bytes = 4096;
  s.direct = true;
  return s;
}

// cma-bcast's shape on 3 ranks and 3 segments, as the algorithm lays it out: the root
// writes segment 0 into rank 1 and segment 1 into rank 2, which read the rest from it.
Schedule three_ranks() {
  Schedule s = direct_schedule(3, 3);
  s.steps[0] = {Step::expose(4), Step::write(1, 0), Step::write(2, 1)};
  s.steps[1] = {Step::expose(1), Step::read(0, 1), Step::read(0, 2)};
  s.steps[2] = {Step::expose(1), Step::read(0, 2), Step::read(0, 0)};
  return s;
}

TEST_CASE("cma-bcast validates and simulates: p = 2..9, every root, 1 byte, a few bytes, a few pages, 1 MiB",
          "[cma-bcast]") {
  Sweep sweep;
  int checked = 0;
  for (int p = 2; p <= 9; ++p)
    for (int root = 0; root < p; ++root)
      for (std::int64_t bytes : {std::int64_t{1}, std::int64_t{p - 1}, std::int64_t{1000},
                                 std::int64_t{5 * 4096 * p + 123}, std::int64_t{1} << 20}) {
        const Schedule s = plan_with("cma-bcast", direct_problem(p, root, bytes));
        const std::string what = testing::label(s);
        const Validation v = validate(s);
        sweep.check(v.ok, what + ": " + v.summary());
        sweep.check(s.direct && s.uses_staging(), what + ": not marked direct, or without its ring");
        const Simulation sim = simulate(s, default_model());
        sweep.check(sim.ok && sim.makespan > 0, what + ": " + sim.error);
        ++checked;
      }
  INFO(sweep.first);
  CHECK(sweep.failures == 0);
  CHECK(checked == 44 * 5);  // 44 (p, root) pairs for p = 2..9, 5 sizes each
}

TEST_CASE("cma-bcast takes (p-1) direct copies of a share: the root's writes and the others' reads at once",
          "[cma-bcast]") {
  for (const CostModel& model : {default_model(), hockney_model(1e-6, 1e-9, 1e-9)}) {
    CostModel m = model;
    m.copy_per_byte = 3e-10;
    for (int p = 2; p <= 9; ++p)
      for (int root : {0, p - 1}) {
        const std::int64_t share = 65536;  // whole pages: p equal segments
        const Schedule s = plan_with("cma-bcast", direct_problem(p, root, share * p, m));
        REQUIRE(s.segments.size() == static_cast<std::size_t>(p));
        CAPTURE(p, root, m.spec());
        CHECK(simulate_ok(s, m).makespan == Approx((p - 1) * m.direct_copy(share)).epsilon(1e-12));
      }
  }
}

TEST_CASE("A direct copy costs a system call and 1.35 local copies per byte, nothing per byte where copies are free",
          "[cma-bcast][cost-model]") {
  CostModel m = default_model();
  m.copy_per_byte = 2e-10;
  CHECK(m.direct_copy(0) == Approx(kDirectCopyFixedSeconds));
  CHECK(m.direct_copy(1 << 20) == Approx(kDirectCopyFixedSeconds + kDirectCopyFactor * 2e-10 * (1 << 20)));
  CHECK(m.direct_copy(1 << 20) > m.copy(1 << 20));
  m.copy_per_byte = 0;
  CHECK(m.direct_copy(1 << 20) == kDirectCopyFixedSeconds);
  // Its units are not seconds: the (d, c) model prices no system call.
  CHECK(overlap_model(1, 1).direct_copy(4096) == 0);
  // Derived, it is no part of the model's text, which reads back as the same model.
  CHECK(m.spec().find("direct") == std::string::npos);
  CHECK(parse_model(m.spec()) == m);
}

TEST_CASE("A model's own direct price replaces the factor on copy and the fixed part, and its text carries them",
          "[cma-bcast][cost-model]") {
  CostModel m = default_model();
  m.copy_per_byte = 2e-10;
  m.direct_per_byte = 9e-10;  // the AMD EPYC VM's order: several local copies per byte
  m.direct_fixed = 3e-6;
  CHECK(m.direct_copy(1 << 20) == Approx(3e-6 + 9e-10 * (1 << 20)));
  m.copy_per_byte = 1e-12;  // no longer follows the copy rate
  CHECK(m.direct_copy(1 << 20) == Approx(3e-6 + 9e-10 * (1 << 20)));
  CHECK(m.spec().find(",direct=9e-10,direct_fixed=3e-06,") != std::string::npos);
  CHECK(parse_model(m.spec()) == m);
  CostModel derived = m;
  derived.direct_per_byte = 0;
  CHECK_FALSE(derived == m);
  CostModel starting_fixed = m;
  starting_fixed.direct_fixed = kDirectCopyFixedSeconds;
  CHECK_FALSE(starting_fixed == m);
  CHECK(starting_fixed.spec().find("direct_fixed") == std::string::npos);
  // The price ranks the broadcast: cma-bcast's p-1 direct copies of a share against the
  // ring's two local copies of each segment.
  CostModel slow_direct = default_model();
  slow_direct.direct_per_byte = 8 * slow_direct.copy_per_byte;
  const Choice cheap = rank_choices(direct_problem(2, 0, 1 << 20), Request{}).front();
  const Choice dear = rank_choices(direct_problem(2, 0, 1 << 20, slow_direct), Request{}).front();
  CHECK(cheap.algorithm == "cma-bcast");
  CHECK(dear.algorithm != "cma-bcast");
}

TEST_CASE("cma-bcast declines without cross-memory attach, without a ring spanning the ranks, and for a reduce",
          "[cma-bcast]") {
  const Algorithm* a = find_algorithm(Collective::Bcast, "cma-bcast");
  REQUIRE(a != nullptr);
  CHECK_FALSE(a->composable);
  Problem no_access = direct_problem(4, 1, 100000);
  no_access.direct_access = false;
  CHECK_THROWS_AS(a->plan(no_access), PlanError);
  Problem no_ring = make_problem(Collective::Bcast, 4, 1, 100000, 1, true, 0, default_model());
  no_ring.direct_access = true;
  CHECK_THROWS_AS(a->plan(no_ring), PlanError);
  Problem reduce = direct_problem(4, 1, 100000);
  reduce.collective = Collective::Reduce;
  reduce.element_bytes = 8;
  CHECK_THROWS_AS(a->plan(reduce), PlanError);
  CHECK(find_algorithm(Collective::Reduce, "cma-bcast") == nullptr);
  // The selector leaves it out where a ring spans the ranks without cross-memory attach,
  // and a forced cma-bcast says what it needs.
  for (const Choice& c : rank_choices(no_access, Request{})) CHECK(c.algorithm != "cma-bcast");
  Request forced;
  forced.algorithm = "cma-bcast";
  CHECK_THROWS_WITH(rank_choices(no_access, forced), Catch::Contains("CANOPY_CMA not off"));
}

TEST_CASE("The validator accepts direct steps by hand where they race with nothing", "[cma-bcast][validate]") {
  check_valid(three_ranks());
  // Rank 2 reads segment 2 from rank 1, which read it from the root before exposing.
  Schedule s = three_ranks();
  s.steps[0][0].readers = 3;
  s.steps[1] = {Step::read(0, 2), Step::expose(2), Step::read(0, 1)};
  s.steps[2][1] = Step::read(1, 2);
  check_valid(s);
}

TEST_CASE("The validator rejects direct steps outside a direct broadcast", "[cma-bcast][validate]") {
  {
    Schedule s = three_ranks();
    s.direct = false;
    check_rejected(s, "the schedule is not direct");
  }
  {
    Schedule s = three_ranks();
    s.collective = Collective::Reduce;
    check_rejected(s, "direct steps are for broadcasts only");
  }
  {
    Schedule s = three_ranks();
    s.staging_entries = 0;
    check_rejected(s, "no ring to expose through");
  }
  {
    Schedule s = three_ranks();
    s.steps[1][1].buffer = Buffer::Input;
    check_rejected(s, "moves the accumulator only");
  }
  {
    Schedule s = three_ranks();
    s.steps[2][1].peer = 2;  // itself
    check_rejected(s, "bad peer");
  }
  {
    Schedule s = three_ranks();
    s.steps[2][1].segment = 3;
    check_rejected(s, "no such segment");
  }
  {
    Schedule s = three_ranks();
    s.steps[1][0].readers = 0;
    check_rejected(s, "an expose needs an accessor");
  }
}

TEST_CASE("The validator pairs every Read and Write with its peer's one Expose", "[cma-bcast][validate]") {
  {
    // The root writes into rank 2, which exposes nothing.
    Schedule s = three_ranks();
    s.steps[2].erase(s.steps[2].begin());
    check_rejected(s, "rank 2 exposes nothing");
  }
  {
    Schedule s = three_ranks();
    s.steps[0][0].readers = 5;
    check_rejected(s, "accessed by 4 steps, declares 5");
  }
  {
    Schedule s = three_ranks();
    s.steps[1].push_back(Step::expose(1));
    check_rejected(s, "exposes the accumulator again");
  }
}

TEST_CASE("The validator rejects direct accesses that race with the exposer's own steps or each other",
          "[cma-bcast][validate]") {
  {
    // Rank 1 reads segment 2 from the root after exposing it to rank 2, which reads it.
    Schedule s = three_ranks();
    s.steps[0][0].readers = 3;
    s.steps[1][0].readers = 2;
    s.steps[2][1] = Step::read(1, 2);
    check_rejected(s, "rank 1 step 2 (read seg 2 of 0's acc -> acc): writes a segment after exposing it to rank 2");
  }
  {
    // Rank 1 also reads segment 0, which the root writes into it.
    Schedule s = three_ranks();
    s.steps[0][0].readers = 5;
    s.steps[1].push_back(Step::read(0, 0));
    check_rejected(s, "rank 1 step 3 (read seg 0 of 0's acc -> acc): touches a segment that rank 0 writes into this rank");
  }
  {
    // Rank 2 also receives segments 0..1 from rank 1 in one message: the second of them
    // is the one the root writes into it (a span is checked whole, not by its first
    // segment).
    Schedule s = three_ranks();
    s.steps[1].push_back(Step::send(2, 0).spanning(2));
    s.steps[2].push_back(Step::recv_into_accumulator(1, 0).spanning(2));
    check_rejected(s, "rank 2 step 3 (recv seg 0..1 from 1 -> acc): touches a segment that rank 0 writes into this rank");
  }
  {
    // Rank 2 writes segment 0 into rank 1 as well as the root.
    Schedule s = three_ranks();
    s.steps[1][0].readers = 2;
    s.steps[2].push_back(Step::write(1, 0));
    check_rejected(s, "segment 0 of rank 1 is written by rank 0 too");
  }
  {
    // Rank 2 reads from rank 1 the segment the root writes into it: nothing says which comes first.
    Schedule s = three_ranks();
    s.steps[0][0].readers = 3;
    s.steps[1][0].readers = 2;
    s.steps[2][2] = Step::read(1, 0);
    check_rejected(s, "nothing orders the write before the read");
  }
}

TEST_CASE("The validator's run: a Read finds data, a Write has it, an Expose waits for the receives",
          "[cma-bcast][validate]") {
  {
    // Rank 2 reads segment 2 from rank 1, which exposes before it has it (and never gets it).
    Schedule s = three_ranks();
    s.steps[0][0].readers = 2;
    s.steps[1] = {Step::expose(2), Step::read(0, 1)};
    s.steps[2][1] = Step::read(1, 2);
    check_rejected(s, "rank 2 step 1 (read seg 2 of 1's acc -> acc): reads a segment that holds no data");
  }
  {
    // Rank 1 writes into rank 2 a segment it has not got yet.
    Schedule s = three_ranks();
    s.steps[0] = {Step::expose(4), Step::write(1, 0)};
    s.steps[1].insert(s.steps[1].begin() + 1, Step::write(2, 1));
    check_rejected(s, "rank 1 step 1 (write seg 1 of acc -> 2's acc): writes a segment that holds no data");
  }
  {
    // Rank 1 receives segment 2, which rank 2 reads from it, before it exposes; the root
    // sends it only after a write into rank 2, so the receive is still pending when rank 1
    // gets to its Expose (the validator runs the ranks in order): the Expose waits for it.
    Schedule s = three_ranks();
    s.steps[0] = {Step::expose(2), Step::write(2, 1), Step::send(1, 2), Step::write(1, 0)};
    s.steps[1] = {Step::recv_into_accumulator(0, 2), Step::expose(2), Step::read(0, 1)};
    s.steps[2][1] = Step::read(1, 2);
    check_valid(s);
    // Without the receive the run finds no data where rank 2 reads.
    s.steps[0].erase(s.steps[0].begin() + 2);
    s.steps[1].erase(s.steps[1].begin());
    check_rejected(s, "rank 2 step 1 (read seg 2 of 1's acc -> acc): reads a segment that holds no data");
  }
  {
    // Ranks 1 and 2 each read from the other before exposing: neither Expose comes.
    Schedule s = direct_schedule(3, 2);
    s.steps[0] = {Step::expose(2)};
    s.steps[1] = {Step::read(0, 0), Step::read(2, 1), Step::expose(1)};
    s.steps[2] = {Step::read(0, 1), Step::read(1, 0), Step::expose(1)};
    check_rejected(s, "deadlock: rank 1 step 1 (read seg 1 of 2's acc -> acc) waits forever");
  }
}

TEST_CASE("Simulation: a Read waits for its peer's Expose, which waits for the receive before it", "[cma-bcast][simulate]") {
  // The root sends the segment to rank 1, which exposes it; rank 2 reads it from rank 1.
  Schedule s = direct_schedule(3, 1);
  s.segments = {{0, 1 << 16}};
  s.count = 1 << 16;
  s.staging_entry_bytes = 1 << 16;
  s.steps[0] = {Step::send(1, 0)};
  s.steps[1] = {Step::recv_into_accumulator(0, 0), Step::expose(1)};
  s.steps[2] = {Step::read(1, 0)};
  check_valid(s);
  const CostModel m = default_model();
  const Simulation sim = simulate_ok(s, m);
  const double arrives = m.transfer(1 << 16);
  CHECK(sim.timing[1][0].end == Approx(arrives));
  CHECK(sim.timing[1][1].start == Approx(arrives));  // the Expose waits for the receive
  CHECK(sim.timing[1][1].end == sim.timing[1][1].start);
  CHECK(sim.timing[2][0].start == Approx(arrives));  // the Read for the Expose
  CHECK(sim.timing[2][0].end == Approx(arrives + m.direct_copy(1 << 16)));
  CHECK(sim.makespan == Approx(arrives + m.direct_copy(1 << 16)).epsilon(1e-12));
}

TEST_CASE("Simulation: a Write waits for the writer's data and its peer's Expose", "[cma-bcast][simulate]") {
  // The root sends segment 0 to rank 1 and segment 1 to rank 2, one after the other (one
  // send port); rank 1 writes its segment into rank 2 once both have happened, then reads
  // the other segment from rank 2.
  Schedule s = direct_schedule(3, 2);
  s.steps[0] = {Step::send(1, 0), Step::send(2, 1)};
  s.steps[1] = {Step::recv_into_accumulator(0, 0), Step::write(2, 0), Step::read(2, 1)};
  s.steps[2] = {Step::recv_into_accumulator(0, 1), Step::expose(2)};
  check_valid(s);
  // A message costs 1, a direct copy its fixed part. Copies overlap transfers: no port
  // orders them, the data and the Expose alone.
  CostModel m = hockney_model(1, 0, 0);
  m.overlap = true;
  m.duplex = Duplex::Full;
  const double f = kDirectCopyFixedSeconds;
  const Simulation exposed_late = simulate_ok(s, m);
  CHECK(exposed_late.timing[1][0].end == Approx(1));
  CHECK(exposed_late.timing[2][1].start == Approx(2));  // the Expose, after the second message
  CHECK(exposed_late.timing[1][1].start == Approx(2).epsilon(1e-12));
  CHECK(exposed_late.makespan == Approx(2 + 2 * f).epsilon(1e-12));
  // The messages the other way round: rank 2 exposes at 1, rank 1 has its data at 2.
  std::swap(s.steps[0][0], s.steps[0][1]);
  const Simulation data_late = simulate_ok(s, m);
  CHECK(data_late.timing[2][1].start == Approx(1));
  CHECK(data_late.timing[1][1].start == Approx(2).epsilon(1e-12));
  CHECK(data_late.makespan == Approx(2 + 2 * f).epsilon(1e-12));
}

TEST_CASE("cma-bcast and the direct steps survive the JSON form", "[cma-bcast][json]") {
  const Schedule s = plan_with("cma-bcast", direct_problem(5, 3, 300000));
  const nlohmann::json j = schedule_to_json(s);
  CHECK(j["direct"] == true);
  const Schedule back = schedule_from_json(j);
  CHECK(back.direct);
  CHECK(back.staging_entries == s.staging_entries);
  CHECK(back.staging_entry_bytes == s.staging_entry_bytes);
  CHECK(back.steps == s.steps);
  CHECK(validate(back).ok);
  CHECK(schedule_to_json(schedule_from_json(nlohmann::json::parse(j.dump()))) == j);
  // The compact tuples, and a schedule that is not direct says nothing about it.
  Schedule t = direct_schedule(3, 3);
  t.steps[0] = {Step::expose(4), Step::read(1, 2), Step::write(2, 1)};
  CHECK(schedule_to_json(t)["steps"][0] == nlohmann::json::parse(R"([["expose",4],["read",1,2],["write",2,1]])"));
  t.direct = false;
  CHECK_FALSE(schedule_to_json(t).contains("direct"));
  CHECK_FALSE(schedule_from_json(schedule_to_json(t)).direct);
  // Malformed direct steps and flags are named.
  auto rejected = [&](const nlohmann::json& bad, const std::string& needle) {
    CAPTURE(bad.dump(), needle);
    try {
      schedule_from_json(bad);
      FAIL_CHECK("accepted");
    } catch (const std::invalid_argument& e) {
      CHECK(std::string(e.what()).find(needle) != std::string::npos);
    }
  };
  nlohmann::json bad = j;
  bad["direct"] = "yes";
  rejected(bad, "direct");
  bad = j;
  bad["steps"][0] = nlohmann::json::parse(R"([["expose"]])");
  rejected(bad, "expose");
  bad["steps"][0] = nlohmann::json::parse(R"([["read",1]])");
  rejected(bad, "read");
  bad["steps"][0] = nlohmann::json::parse(R"([["write",1,"0"]])");
  rejected(bad, "segment");
}

TEST_CASE("A leader's Expose in a lower level follows every step of its upper one", "[cma-bcast][hierarchy]") {
  // Without that, the upper level's receive of segment 1 would land after the Expose, in
  // a segment others may read.
  const std::vector<Step> upper = {Step::recv_into_accumulator(5, 0), Step::recv_into_accumulator(5, 1)};
  const std::vector<Step> lower = {Step::expose(2), Step::write(1, 0)};
  const std::vector<Step> merged = merge_after(upper, lower, 2);
  REQUIRE(merged.size() == 4);
  CHECK(merged[2] == Step::expose(2));
  CHECK(merged[3] == Step::write(1, 0));
  // An Expose in the first list is no step on segment 0.
  CHECK(merge_after({Step::expose(1), Step::recv_into_accumulator(5, 1)}, {Step::send(2, 0)}, 2).front() ==
        Step::send(2, 0));
}

TEST_CASE("cma-bcast is described rank by rank: whom each reads from and writes to", "[cma-bcast]") {
  const Schedule s = plan_with("cma-bcast", direct_problem(3, 0, 3 * 4096));
  const std::string text = describe_schedule(s, false);
  CAPTURE(text);
  CHECK(text.find("no single tree") != std::string::npos);
  CHECK(text.find("rank 0 of 3: 3 steps, 0 scratch slots; receives from none; sends to none; reads from none; "
                  "writes to 1, 2; exposes its buffer to 4 accesses") != std::string::npos);
  CHECK(text.find("rank 1 of 3: 3 steps, 0 scratch slots; receives from none; sends to none; reads from 0; "
                  "writes to none; exposes its buffer to 1 access") != std::string::npos);
  CHECK(text.find("fetches") == std::string::npos);  // its ring holds addresses, not stages
}

}  // namespace
}  // namespace canopy::planner
