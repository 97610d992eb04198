// Reduce-scatter + gather over messages (reduce-scatter-gather) and through the node's
// staging ring (shm-reduce-scatter-gather, shm-bcast): algorithms/reduce_scatter_gather.cpp
// and algorithms/shm_bcast.cpp, and the staging steps of the IR (schedule.h) in the
// validator, the simulator and the JSON form.
#include <functional>
#include <iomanip>
#include <set>
#include <sstream>

#include "planner/schedule_json.h"
#include "planner/select.h"
#include "planner/staged.h"
#include "planner/topology_json.h"
#include "sites.h"
#include "support.h"

namespace canopy::planner {
namespace {

using testing::make_problem;
using testing::plan_with;
using testing::sites_apart;
using testing::sixteen_sites_apart;
using testing::Sweep;

Problem staged(Problem p, int entries, std::int64_t entry_bytes) {
  p.staging_entries = entries;
  p.staging_entry_bytes = entry_bytes;
  return p;
}

TEST_CASE("reduce-scatter-gather and its staged form validate: p = 1..12, every root, commutative or not, "
          "counts below and above p, several chunk sizes",
          "[reduce-scatter-gather]") {
  Sweep sweep;
  int checked = 0;
  for (int p = 1; p <= 12; ++p)
    for (int root = 0; root < p; ++root)
      for (bool commutative : {true, false})
        for (std::int64_t count : {std::int64_t{1}, std::int64_t{p - 1 > 0 ? p - 1 : 1}, std::int64_t{1000}, std::int64_t{77777}})
          for (std::int64_t seg : {std::int64_t{0}, std::int64_t{512}, std::int64_t{8192}}) {
            const Problem problem = make_problem(Collective::Reduce, p, root, count, 4, commutative, seg, default_model());
            const std::string what = "p=" + std::to_string(p) + " root=" + std::to_string(root) + " count=" +
                                     std::to_string(count) + " seg=" + std::to_string(seg) +
                                     (commutative ? "" : " non-commutative");
            const Validation plain = validate(plan_with("reduce-scatter-gather", problem));
            sweep.check(plain.ok, "reduce-scatter-gather " + what + ": " + plain.summary());
            const Validation shm = validate(plan_with("shm-reduce-scatter-gather", staged(problem, 2 * p, 16384)));
            sweep.check(shm.ok, "shm-reduce-scatter-gather " + what + ": " + shm.summary());
            const Validation flat = validate(plan_with("shm-flat", staged(problem, 2 * p, 16384)));
            sweep.check(flat.ok, "shm-flat " + what + ": " + flat.summary());
            Problem bcast = staged(problem, 2, 16384);
            bcast.collective = Collective::Bcast;
            bcast.element_bytes = 1;
            bcast.commutative = true;
            const Validation b = validate(plan_with("shm-bcast", bcast));
            sweep.check(b.ok, "shm-bcast " + what + ": " + b.summary());
            checked += 4;
          }
  INFO(sweep.first);
  CHECK(sweep.failures == 0);
  CHECK(checked > 2000);
}

TEST_CASE("reduce-scatter-gather-wide validates with every operand in a slot of its own: p = 2..12, every root, "
          "counts below and above p, several chunk sizes",
          "[reduce-scatter-gather]") {
  Sweep sweep;
  int checked = 0;
  for (int p = 2; p <= 12; ++p) {
    const auto topology = sites_apart(p, [](int, int) { return "hockney:alpha=1e-3,beta=1e-8,port=1e-9"; });
    for (int root = 0; root < p; ++root)
      for (std::int64_t count : {std::int64_t{1}, std::int64_t{p - 1}, std::int64_t{1000}, std::int64_t{77777}})
        for (std::int64_t seg : {std::int64_t{0}, std::int64_t{512}, std::int64_t{8192}}) {
          Problem problem = make_problem(Collective::Reduce, p, root, count, 4, true, seg, default_model());
          problem.topology = topology;
          const std::string what = "p=" + std::to_string(p) + " root=" + std::to_string(root) +
                                   " count=" + std::to_string(count) + " seg=" + std::to_string(seg);
          const Schedule s = plan_with("reduce-scatter-gather-wide", problem);
          const Validation v = validate(s);
          sweep.check(v.ok, what + ": " + v.summary());
          for (int r = 0; r < p; ++r) {
            int receives = 0;  // the exchange's, into slots
            for (const Step& st : s.steps[r]) receives += st.kind == StepKind::Recv && st.buffer == Buffer::Slot;
            sweep.check(s.slots[r] == receives, what + ": rank " + std::to_string(r) + " has " +
                                                    std::to_string(s.slots[r]) + " slots for " +
                                                    std::to_string(receives) + " operands");
          }
          ++checked;
        }
  }
  INFO(sweep.first);
  CHECK(sweep.failures == 0);
  CHECK(checked > 900);
}

TEST_CASE("reduce-scatter-gather-wide declines where the ports are held for the whole transfer",
          "[reduce-scatter-gather]") {
  Problem problem = make_problem(Collective::Reduce, 4, 0, 1000, 8, true, 0, default_model());
  CHECK_THROWS_WITH(plan_with("reduce-scatter-gather-wide", problem), Catch::Contains("port="));  // no topology
  problem.topology = sites_apart(4, [](int, int) { return "hockney:alpha=1e-3,beta=1e-8"; });
  CHECK_THROWS_WITH(plan_with("reduce-scatter-gather-wide", problem), Catch::Contains("port="));
  const Algorithm* wide = find_algorithm(Collective::Reduce, "reduce-scatter-gather-wide");
  REQUIRE(wide);
  CHECK(wide->price == nullptr);  // priced by simulating it alone
  CHECK_THROWS_AS(plan_view(*wide, problem, 1), PlanError);
}

TEST_CASE("reduce-scatter-gather-wide and its allreduce over sixteen sites far apart: one latency a round, where "
          "two slots pay one a message and Rabenseifner's rounds one each, auto takes them",
          "[reduce-scatter-gather]") {
  // 16 sites of one rank, 1-15 ms and 56-336 Mbit/s apart (tools/sim/gridgen.py's
  // ranges, spread evenly), 1 Gbit/s cards; 1 MiB of doubles to rank 0, or to all. A
  // slice is 64 KiB. SMPI measured this shape on a drawn grid at 43.9 ms a reduce, two
  // slots at 194.6 ms, and 50.8 ms an allreduce (docs/simulation.md).
  constexpr int p = 16;
  const std::int64_t slice = (std::int64_t{1} << 20) / p;
  const auto topology = sixteen_sites_apart(1, 1);
  const double slowest_round = testing::slowest_link(*topology, slice);  // its latency and one slice
  // The wide form, its rival and how much faster it must be: simulated 55 against 141
  // ms (reduce), 57 against 88 (allreduce).
  struct Case {
    Collective collective;
    const char* wide;
    const char* rival;
    double ratio;
  };
  for (const Case& c : {Case{Collective::Reduce, "reduce-scatter-gather-wide", "reduce-scatter-gather", 2.0},
                        Case{Collective::Allreduce, "reduce-scatter-allgather-wide", "rabenseifner", 1.5}}) {
    CAPTURE(c.wide);
    Problem problem = make_problem(c.collective, p, 0, (1 << 20) / 8, 8, true, 0, default_model());
    problem.topology = topology;
    const Simulation wide = simulate(plan_with(c.wide, problem), problem.model, topology.get());
    const Simulation rival = simulate(plan_with(c.rival, problem), problem.model, topology.get());
    REQUIRE(wide.ok);
    REQUIRE(rival.ok);
    INFO("wide " << wide.makespan << " s, " << c.rival << " " << rival.makespan << " s, slowest round "
                 << slowest_round);
    // The exchange and the gather (or allgather) each wait at least for one slice over
    // some link; the cards pass a rank's 15 slices each way in 15 x 64 KiB x 8 ns = 7.9 ms.
    CHECK(wide.makespan >= slowest_round);
    CHECK(wide.makespan <= 2 * slowest_round + 2 * (p - 1) * static_cast<double>(slice) * 8e-9 + 1e-3);
    CHECK(wide.makespan * c.ratio < rival.makespan);
    // And auto takes it over every other schedule there.
    const std::vector<Choice> ranked = rank_choices(problem, Request{});
    REQUIRE(!ranked.empty());
    CHECK(ranked.front().algorithm == c.wide);
    CHECK(ranked.front().exact);
  }
}

TEST_CASE("reduce-scatter-allgather-wide validates over sites far apart: p = 2..12, commutative or not, counts "
          "below and above p, several chunk sizes, each slice combined on its owner alone and received once by "
          "every other rank",
          "[reduce-scatter-gather][allreduce]") {
  Sweep sweep;
  int checked = 0;
  for (int p = 2; p <= 12; ++p) {
    const auto topology = sites_apart(p, [](int, int) { return "hockney:alpha=1e-3,beta=1e-8,port=1e-9"; });
    for (bool commutative : {true, false})
      for (std::int64_t count : {std::int64_t{1}, std::int64_t{p - 1}, std::int64_t{1000}, std::int64_t{77777}})
        for (std::int64_t seg : {std::int64_t{0}, std::int64_t{512}, std::int64_t{8192}}) {
          Problem problem = make_problem(Collective::Allreduce, p, 0, count, 4, commutative, seg, default_model());
          problem.topology = topology;
          const std::string what = "p=" + std::to_string(p) + (commutative ? "" : " non-commutative") +
                                   " count=" + std::to_string(count) + " seg=" + std::to_string(seg);
          const Schedule s = plan_with("reduce-scatter-allgather-wide", problem);
          const Validation v = validate(s);
          sweep.check(v.ok, what + ": " + v.summary());
          sweep.check(simulate(s, problem.model, topology.get()).ok, what + ": does not simulate");
          // p contributions meet in p - 1 combines, all on the segment's owner; every
          // other rank receives the result once, straight into its own.
          const auto nseg = static_cast<int>(s.segments.size());
          std::vector<int> combines(nseg, 0), combiner(nseg, -1), results(nseg, 0);
          for (int r = 0; r < p; ++r)
            for (const Step& st : s.steps[r]) {
              if (st.kind == StepKind::Reduce) {
                ++combines[st.segment];
                sweep.check(combiner[st.segment] < 0 || combiner[st.segment] == r,
                            what + ": segment " + std::to_string(st.segment) + " combined on two ranks");
                combiner[st.segment] = r;
              }
              if (st.kind == StepKind::Recv && st.buffer == Buffer::Accumulator) ++results[st.segment];
            }
          for (int g = 0; g < nseg; ++g) {
            sweep.check(combines[g] == p - 1, what + ": segment " + std::to_string(g) + " combined " +
                                                  std::to_string(combines[g]) + " times");
            sweep.check(results[g] == p - 1, what + ": segment " + std::to_string(g) + "'s result received " +
                                                 std::to_string(results[g]) + " times");
          }
          ++checked;
        }
  }
  INFO(sweep.first);
  CHECK(sweep.failures == 0);
  CHECK(checked > 250);
  // It declines where the reduce's wide form does.
  Problem problem = make_problem(Collective::Allreduce, 4, 0, 1000, 8, true, 0, default_model());
  CHECK_THROWS_WITH(plan_with("reduce-scatter-allgather-wide", problem), Catch::Contains("port="));
  problem.topology = sites_apart(4, [](int, int) { return "hockney:alpha=1e-3,beta=1e-8"; });
  CHECK_THROWS_WITH(plan_with("reduce-scatter-allgather-wide", problem), Catch::Contains("port="));
}

TEST_CASE("shm-flat: every other rank stages each chunk of its input once, the root alone combines them, on two "
          "ranks it is the split root_share picks when a reduction costs under two copies",
          "[reduce-scatter-gather]") {
  const int p = 5, root = 3;
  const Problem problem = staged(make_problem(Collective::Reduce, p, root, 40000, 8, true, 0, default_model()), 2 * p, 65536);
  const Schedule s = plan_with("shm-flat", problem);
  testing::check_valid(s);
  const auto chunks = static_cast<int>(s.segments.size());
  REQUIRE(chunks > 1);
  for (int r = 0; r < p; ++r) {
    int stages = 0, combines = 0, other = 0;
    for (const Step& st : s.steps[r]) {
      if (st.kind == StepKind::Stage) stages += st.buffer == Buffer::Input && st.readers == 1;
      else if (st.kind == StepKind::FetchReduce) combines += st.peer != r;
      else ++other;
    }
    CAPTURE(r);
    CHECK(other == 0);
    CHECK(stages == (r == root ? 0 : chunks));
    CHECK(combines == (r == root ? (p - 1) * chunks : 0));
  }
  const Simulation sim = simulate(s, problem.model);
  REQUIRE(sim.ok);
  // The root's combines are the critical path: (p-1) n r at least.
  CHECK(sim.makespan >= (p - 1) * 40000.0 * 8 * problem.model.gamma);
  // Two ranks, default model (r = c < 2c): shm-reduce-scatter-gather gives the root
  // everything, which is shm-flat step for step.
  const Problem two = staged(make_problem(Collective::Reduce, 2, 1, 100000, 8, true, 0, default_model()), 4, 65536);
  CHECK(plan_with("shm-flat", two).steps == plan_with("shm-reduce-scatter-gather", two).steps);
}

TEST_CASE("reduce-scatter-gather: every rank reduces a slice, the root combines only its own", "[reduce-scatter-gather]") {
  const int p = 6;
  const Schedule s = plan_with("reduce-scatter-gather",
                               make_problem(Collective::Reduce, p, 2, 6000, 8, true, 0, default_model()));
  REQUIRE(s.segments.size() == static_cast<std::size_t>(p));  // one slice each, no chunks asked
  for (int r = 0; r < p; ++r) {
    int reduces = 0;
    for (const Step& st : s.steps[r]) reduces += st.kind == StepKind::Reduce;
    CAPTURE(r);
    CHECK(reduces == p - 1);  // its own slice's p-1 operands, no more
  }
}

// The price counts chunks without cutting the slices (O(1) at any p; 150 ms at 65,536
// ranks when it cut them): with alpha = 1 and free bytes it is p q, q the longest
// slice's chunks, and it declines exactly where the plan would (too many chunks).
TEST_CASE("reduce-scatter-gather's price counts each slice's chunks as the schedule cuts them",
          "[reduce-scatter-gather]") {
  const Algorithm* a = find_algorithm(Collective::Reduce, "reduce-scatter-gather");
  REQUIRE(a != nullptr);
  Sweep sweep;
  for (int p : {2, 3, 5, 7, 12})
    for (std::int64_t count : {std::int64_t{1}, std::int64_t{p - 1}, std::int64_t{p}, std::int64_t{1003}})
      for (std::int64_t segment_bytes : {0, 8, 24, 800})
        for (int root : {0, p - 1}) {
          const Problem problem = make_problem(Collective::Reduce, p, root, count, 8, true, segment_bytes,
                                               hockney_model(1, 0, 0));
          const Schedule s = a->plan(problem);
          std::int64_t longest = 0;  // chunks an owner reduces (a rank with an empty slice owns none)
          for (int r = 0; r < p; ++r) {
            std::set<int> owned;
            for (const Step& st : s.steps[r])
              if (st.kind == StepKind::Reduce) owned.insert(st.segment);
            longest = std::max<std::int64_t>(longest, owned.size());
          }
          const double q = a->price(problem).makespan / p;
          sweep.check(q == static_cast<double>(longest) || longest == 0,
                      "p=" + std::to_string(p) + " count=" + std::to_string(count) + " segment_bytes=" +
                          std::to_string(segment_bytes) + " root=" + std::to_string(root) + ": priced " +
                          std::to_string(q) + " chunks, the schedule's longest slice has " + std::to_string(longest));
        }
  INFO(sweep.first);
  CHECK(sweep.failures == 0);
  // 40,000 ranks: a slice each is more segments than a schedule may have, priced or planned.
  const Problem wide = make_problem(Collective::Reduce, 40000, 0, 40000, 8, true, 0, default_model());
  CHECK_THROWS_AS(a->price(wide), PlanError);
  CHECK_THROWS_AS(a->view(wide, 0), PlanError);
}

TEST_CASE("reduce-scatter-gather on 2 ranks: the simulator gives n (beta + gamma/2), a binomial tree n (beta + gamma)",
          "[reduce-scatter-gather][simulate]") {
  // Full duplex with overlap, no latency: each rank sends half (beta n/2, at the same
  // time), reduces half (gamma n/2), and rank 1 sends its reduced half (beta n/2).
  CostModel m = hockney_model(0, 1e-9, 2e-9);
  m.duplex = Duplex::Full;
  m.overlap = true;
  const std::int64_t count = 1 << 20;  // bytes: element size 1
  const double n = static_cast<double>(count);
  const Problem problem = make_problem(Collective::Reduce, 2, 0, count, 1, true, 0, m);
  const Simulation rsg = simulate(plan_with("reduce-scatter-gather", problem), m);
  const Simulation tree = simulate(plan_with("binomial", problem), m);
  REQUIRE(rsg.ok);
  REQUIRE(tree.ok);
  CHECK(rsg.makespan == Approx(n * (m.beta + m.gamma / 2)));
  CHECK(tree.makespan == Approx(n * (m.beta + m.gamma)));
  // The estimate is the simulation's here (one chunk per slice, no latency).
  CHECK(find_algorithm(Collective::Reduce, "reduce-scatter-gather")->price(problem).makespan == Approx(rsg.makespan));
}

TEST_CASE("shm-reduce-scatter-gather on 2 ranks, one chunk per slice: the simulator gives b (3c + r) + 2h",
          "[reduce-scatter-gather][simulate]") {
  // c = copy, r = 3c, h = one hand-over. The root's share (root_share) balances
  // 2 (1 - x) c + x r against x c + (1 - x) r on two ranks: 2c + cx = 3c - 2cx at x = 1/3.
  // With the root's slice a = n/3 and rank 1's b = 2n/3: rank 1 stages a (c a) while
  // the root stages b (c b); rank 1 combines the staged b with its input (from c b + h,
  // r b) and stages the result (c b); the root's own combine (from c b, r a) ends
  // earlier, so its copy of the result (c b) starts at 2 c b + r b + 2h.
  CostModel m = hockney_model(1e-6, 1e-9, 3e-10);
  m.copy_per_byte = 1e-10;
  const std::int64_t count = 3 << 15;
  const Problem problem =
      staged(make_problem(Collective::Reduce, 2, 0, count, 8, true, count * 8, m), 4, std::int64_t{1} << 20);
  const Schedule s = plan_with("shm-reduce-scatter-gather", problem);
  REQUIRE(s.segments.size() == 2);
  const double a = static_cast<double>(s.segment_bytes(0)), b = static_cast<double>(s.segment_bytes(1));
  CHECK(a == Approx(count * 8 / 3.0).margin(8));
  CHECK(b == Approx(2 * count * 8 / 3.0).margin(8));
  const Simulation sim = simulate(s, m);
  REQUIRE(sim.ok);
  CHECK(sim.makespan == Approx(b * (m.gamma + 3 * m.copy_per_byte) + 2 * kStagingHandoffSeconds));
  const double n = static_cast<double>(count) * 8;
  // Pipelined in chunks the two ranks overlap: below the serial copy-then-reduce bound n (c + r).
  const Schedule chunked =
      plan_with("shm-reduce-scatter-gather", staged(make_problem(Collective::Reduce, 2, 0, count, 8, true, 16384, m), 8, 65536));
  const Simulation pipelined = simulate(chunked, m);
  REQUIRE(pipelined.ok);
  CHECK(pipelined.makespan < n * (m.copy_per_byte + m.gamma));
}

// Elements each rank owns: the segments it starts by combining its input with a staged
// operand.
std::vector<std::int64_t> owned_by_rank(const Schedule& s) {
  std::vector<std::int64_t> owned(s.nranks, 0);
  for (int r = 0; r < s.nranks; ++r)
    for (const Step& st : s.steps[r])
      if (st.kind == StepKind::FetchReduce && st.buffer == Buffer::Input) owned[r] += s.segments[st.segment].count;
  return owned;
}

TEST_CASE("shm-reduce-scatter-gather gives the root a smaller slice when copies cost", "[reduce-scatter-gather]") {
  CostModel m = hockney_model(1e-6, 1e-9, 3e-10);
  m.copy_per_byte = 1e-10;
  const int p = 4;
  const std::int64_t count = 1 << 20;
  const Schedule s = plan_with("shm-reduce-scatter-gather",
                               staged(make_problem(Collective::Reduce, p, 1, count, 4, true, 0, m), 2 * p, 1 << 20));
  const std::vector<std::int64_t> owned = owned_by_rank(s);
  // The balance of the comment with r = 3c, p = 4, per byte of the message:
  // root 2 (1 - x) c + 3 x r = 2c + 7cx, others (1 - (1 - x)/3) c + (1 - x) r =
  // 11c/3 - 8cx/3: equal at x = 5/29.
  const double expected = static_cast<double>(count) * 5 / 29;
  CHECK(static_cast<double>(owned[1]) == Approx(expected).margin(1));
  CHECK(owned[1] < owned[0]);
  CHECK(std::accumulate(owned.begin(), owned.end(), std::int64_t{0}) == count);
  REQUIRE(validate(s).ok);
}

TEST_CASE("shm-reduce-scatter-gather on 2 ranks: the root reduces everything when a reduction costs under two copies",
          "[reduce-scatter-gather]") {
  // r = 1.5c: root 2 (1 - x) c + 1.5 x c, rank 1 x c + 1.5 (1 - x) c; the root's is the
  // larger for every x and least at x = 1 (1.5 c per byte against 3c at x = 0).
  CostModel m = hockney_model(1e-6, 1e-9, 1.5e-10);
  m.copy_per_byte = 1e-10;
  const std::int64_t count = 1 << 17;
  const Schedule s =
      plan_with("shm-reduce-scatter-gather", staged(make_problem(Collective::Reduce, 2, 0, count, 8, true, 0, m), 8, 65536));
  REQUIRE(validate(s).ok);
  CHECK(owned_by_rank(s)[0] == count);
  for (const Step& st : s.steps[1]) CHECK((st.kind == StepKind::Stage && st.buffer == Buffer::Input));
  for (const Step& st : s.steps[0]) CHECK((st.kind == StepKind::FetchReduce && st.buffer == Buffer::Input));
  // Pipelined: about the root's n r, far below the split's 1.5 n c + ... and the serial n (c + r).
  const Simulation sim = simulate(s, m);
  REQUIRE(sim.ok);
  const double n = static_cast<double>(count) * 8;
  CHECK(sim.makespan < n * (m.gamma + m.copy_per_byte) * 0.75);
  CHECK(sim.makespan >= n * m.gamma);
}

TEST_CASE("shm-bcast: the root stages each chunk once, every other rank copies it out", "[reduce-scatter-gather]") {
  CostModel m = default_model();
  const int p = 5;
  // 16 entries hold the message in chunks of the 64 KiB asked for.
  const Problem problem = staged(make_problem(Collective::Bcast, p, 3, 1 << 20, 1, true, 65536, m), 16, 1 << 17);
  const Schedule s = plan_with("shm-bcast", problem);
  REQUIRE(s.segments.size() == 16);
  CHECK(s.steps[3].size() == 16);
  for (const Step& st : s.steps[3]) CHECK((st.kind == StepKind::Stage && st.readers == p - 1));
  const Simulation sim = simulate(s, m);
  REQUIRE(sim.ok);
  // n c (1 + 1/q) and one hand-over: the readers keep pace with the root.
  const double n = 1 << 20;
  CHECK(sim.makespan == Approx(n * m.copy_per_byte * (1 + 1.0 / 16) + kStagingHandoffSeconds));
}

TEST_CASE("shm-bcast: chunks never so small that the ring holds less of the message than it can",
          "[reduce-scatter-gather]") {
  const CostModel m = default_model();
  auto chunks = [&](std::int64_t bytes, std::int64_t asked, int entries) {
    const Problem problem = staged(make_problem(Collective::Bcast, 2, 0, bytes, 1, true, asked, m), entries, 65536);
    const Schedule s = plan_with("shm-bcast", problem);
    REQUIRE(validate(s).ok);
    return s.segments.size();
  };
  // 64 KiB: 32 KiB chunks, as asked (and the least asked for), the pipeline's fill short.
  CHECK(chunks(65536, 32768, 16) == 2);
  CHECK(chunks(65536, 1024, 16) == 2);
  // 512 KiB fills 16 entries in 32 KiB chunks; 1 MiB needs 64 KiB, more than 3/4 of an
  // entry: 48 KiB chunks, whatever is asked.
  CHECK(chunks(512 * 1024, 32768, 16) == 16);
  CHECK(chunks(1 << 20, 32768, 16) == 22);
  CHECK(chunks(1 << 20, 0, 16) == 22);
  // 768 KiB on 16 entries: chunks of its 48 KiB share.
  CHECK(chunks(768 * 1024, 32768, 16) == 16);
  // A ring of 32 entries (16 ranks) holds 1 MiB in 32 KiB chunks.
  CHECK(chunks(1 << 20, 32768, 32) == 32);
  // The model, left free, takes the smallest chunks it may, and prices them as such.
  const Problem free = staged(make_problem(Collective::Bcast, 2, 0, 4 << 20, 1, true, 0, m), 16, 65536);
  const Choice best = rank_choices(free, Request{"shm-bcast", -1}).front();
  Problem cut = free;
  cut.segment_bytes = best.segment_bytes;
  CHECK(plan_with("shm-bcast", cut).segments.size() == 86);
}

TEST_CASE("The validator and the simulator refuse a staging ring too small for the schedule's order",
          "[reduce-scatter-gather][validate]") {
  CostModel m = hockney_model(1e-6, 1e-9, 3e-10);  // reductions dearer than copies: every rank owns a slice
  m.copy_per_byte = 1e-10;
  const Problem problem = staged(make_problem(Collective::Reduce, 3, 0, 3000, 4, true, 0, m), 6, 65536);
  Schedule s = plan_with("shm-reduce-scatter-gather", problem);
  REQUIRE(validate(s).ok);
  s.staging_entries = 1;  // every rank's second stage waits for a reader still staging its own
  const Validation v = validate(s);
  CHECK_FALSE(v.ok);
  CHECK_THAT(v.summary(), Catch::Contains("deadlock"));
  const Simulation sim = simulate(s, problem.model);
  CHECK_FALSE(sim.ok);
}

TEST_CASE("The validator catches staging mistakes", "[reduce-scatter-gather][validate]") {
  const Problem problem = staged(make_problem(Collective::Reduce, 3, 1, 3000, 4, false, 0, default_model()), 6, 65536);
  const Schedule good = plan_with("shm-reduce-scatter-gather", problem);
  REQUIRE(validate(good).ok);
  auto first = [](Schedule& s, StepKind kind) -> Step& {
    for (auto& steps : s.steps)
      for (Step& st : steps)
        if (st.kind == kind) return st;
    FAIL("no such step");
    return s.steps[0][0];
  };
  {
    Schedule s = good;
    first(s, StepKind::Stage).readers = 2;
    CHECK_THAT(validate(s).summary(), Catch::Contains("declares 2"));
  }
  {
    Schedule s = good;
    Step& st = first(s, StepKind::FetchReduce);
    st.incoming_is_left = !st.incoming_is_left;
    CHECK_THAT(validate(s).summary(), Catch::Contains("out of rank order"));
  }
  {
    // A segment's first combine must take the input: with the accumulator it reads
    // nothing yet, and a second combine with the input counts this rank twice.
    Schedule s = good;
    Step& start = first(s, StepKind::FetchReduce);
    REQUIRE(start.buffer == Buffer::Input);
    start.buffer = Buffer::Accumulator;
    CHECK_THAT(validate(s).summary(), Catch::Contains("never initialised"));
    Schedule t = good;
    for (auto& steps : t.steps)
      for (std::size_t i = 1; i < steps.size(); ++i)
        if (steps[i].kind == StepKind::FetchReduce && steps[i].buffer == Buffer::Accumulator) {
          steps[i].buffer = Buffer::Input;
          i = steps.size();
        }
    CHECK_THAT(validate(t).summary(), Catch::Contains("combines the input over data already in the accumulator"));
  }
  {
    Schedule s = good;
    first(s, StepKind::Fetch).slot = 9999;
    CHECK_THAT(validate(s).summary(), Catch::Contains("no such stage"));
  }
  {
    Schedule s = good;
    s.staging_entry_bytes = 16;
    CHECK_THAT(validate(s).summary(), Catch::Contains("larger than a staging entry"));
  }
  {
    Schedule s = good;
    s.staging_entries = 0;
    CHECK_THAT(validate(s).summary(), Catch::Contains("no staging ring"));
  }
}

TEST_CASE("Staged schedules survive the JSON form", "[reduce-scatter-gather][json]") {
  const Problem problem = staged(make_problem(Collective::Reduce, 4, 2, 5000, 8, false, 4096, default_model()), 8, 65536);
  const Schedule s = plan_with("shm-reduce-scatter-gather", problem);
  const Schedule back = schedule_from_json(schedule_to_json(s));
  CHECK(back.staging_entries == s.staging_entries);
  CHECK(back.staging_entry_bytes == s.staging_entry_bytes);
  CHECK(back.steps == s.steps);
  CHECK(validate(back).ok);
}

TEST_CASE("The staging ring is offered to 2..32 ranks: at most 4 MiB per rank", "[reduce-scatter-gather]") {
  CHECK_FALSE(staging_ring_allowed(1));
  CHECK(staging_ring_allowed(2));
  CHECK(staging_ring_allowed(kMaxStagingRanks));
  CHECK_FALSE(staging_ring_allowed(kMaxStagingRanks + 1));
  CHECK(staging_ring_bytes_per_rank(2) == 16 * 65536);  // at least kMinStagingEntries
  CHECK(staging_ring_bytes_per_rank(8) == 16 * 65536);
  CHECK(staging_ring_bytes_per_rank(9) == 18 * 65536);
  CHECK(staging_ring_bytes_per_rank(kMaxStagingRanks) == 4 << 20);
  // Enough for shm-reduce-scatter-gather at the largest size offered.
  const Problem problem =
      with_staging_ring(make_problem(Collective::Reduce, kMaxStagingRanks, 5, 1 << 20, 8, true, 0, default_model()));
  CHECK(validate(plan_with("shm-reduce-scatter-gather", problem)).ok);
}

TEST_CASE("The ring of a 2-rank node holds its 1 MiB in 8 entries of 128 KiB, larger chunks, other nodes in 64 KiB "
          "entries, at least 2p",
          "[reduce-scatter-gather]") {
  CHECK(staging_entries_for(2) == 8);
  CHECK(staging_entry_bytes_for(2) == 128 * 1024);
  for (int p = 3; p <= kMaxStagingRanks; ++p) {
    CAPTURE(p);
    CHECK(staging_entry_bytes_for(p) == 64 * 1024);
    CHECK(staging_entries_for(p) == std::max(2 * p, 16));
    CHECK(staging_ring_bytes_per_rank(p) >= staging_ring_bytes_per_rank(2));
  }
  // A 1 MiB reduce and broadcast on 2 ranks: chunks of 3/4 of an entry (96 KiB), half as
  // many hand-overs as in 48 KiB ones; every schedule validates against that ring.
  const Problem reduce =
      with_staging_ring(make_problem(Collective::Reduce, 2, 0, 1 << 17, 8, true, 0, default_model()));
  CHECK(reduce.staging_entries == 8);
  CHECK(reduce.staging_entry_bytes == 128 * 1024);
  for (const char* name : {"shm-flat", "shm-reduce-scatter-gather"}) {
    CAPTURE(name);
    const Schedule s = plan_with(name, reduce);
    CHECK(validate(s).ok);
    CHECK(s.staging_entry_bytes == 128 * 1024);
  }
  CHECK(plan_with("shm-flat", reduce).segments.size() == 11);  // ceil(1 MiB / 96 KiB)
  const Problem bcast = with_staging_ring(make_problem(Collective::Bcast, 2, 0, 1 << 20, 1, true, 0, default_model()));
  const Schedule b = plan_with("shm-bcast", bcast);
  CHECK(validate(b).ok);
  CHECK(b.segments.size() == 11);
}

TEST_CASE("A ring is made only where the ranks the topology puts on one node share memory",
          "[reduce-scatter-gather]") {
  // No topology: every rank must be on one node.
  CHECK(planned_nodes_share_memory({}, {0, 0, 0}).empty());
  CHECK(planned_nodes_share_memory({}, {0, 0, 2}) == "the communicator's ranks are on more than one node");
  // Planned nodes inside physical ones (the test bed: several "nodes" on one machine).
  CHECK(planned_nodes_share_memory({0, 0, 1, 1}, {0, 0, 0, 0}).empty());
  CHECK(planned_nodes_share_memory({0, 1, 0, 1}, {0, 2, 0, 2}).empty());
  // A planned node across two physical ones: named by its first two ranks apart.
  CHECK(planned_nodes_share_memory({0, 0, 1, 0}, {0, 0, 2, 2}) ==
        "ranks 0 and 3 share a node in the topology but not memory (MPI_COMM_TYPE_SHARED)");
  CHECK(planned_nodes_share_memory({0, 0}, {0, 0, 0}) == "the topology describes 2 ranks, not 3");
}

TEST_CASE("The ring on a topology's nodes is sized for its largest node", "[reduce-scatter-gather]") {
  Problem p = make_problem(Collective::Bcast, 7, 0, 1000, 1, true, 0, default_model());
  CHECK(largest_node(p) == 7);
  CHECK(with_staging_ring(p).staging_entries == staging_entries_for(7));
  Topology t;
  t.node = {0, 0, 1, 1, 1, 1, 2};
  t.cluster.assign(7, 0);
  t.links = {default_model()};
  p.topology = std::make_shared<const Topology>(t);
  CHECK(largest_node(p) == 4);
  p = with_staging_ring(p);
  CHECK(p.staging_entries == staging_entries_for(4));
  // The ring spans no node's ranks alone: the shm-* algorithms decline the whole problem.
  CHECK_FALSE(staging_spans_problem(p));
  CHECK_THROWS_AS(plan_with("shm-bcast", p), PlanError);
}

TEST_CASE("The staged algorithms decline a problem without a staging ring", "[reduce-scatter-gather]") {
  const Problem problem = make_problem(Collective::Reduce, 4, 0, 5000, 8, true, 0, default_model());
  CHECK_THROWS_AS(plan_with("shm-reduce-scatter-gather", problem), PlanError);
  Problem bcast = problem;
  bcast.collective = Collective::Bcast;
  CHECK_THROWS_AS(plan_with("shm-bcast", bcast), PlanError);
}

}  // namespace
}  // namespace canopy::planner
