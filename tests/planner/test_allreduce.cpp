// Allreduce (schedule.h): the validator's outcome and its rule that a segment is
// overwritten only once the sends reading it were received, the compositions of a reduce
// and a broadcast (algorithms/reduce_bcast.cpp), recursive doubling, Rabenseifner's and
// the ring (algorithms/recursive_doubling.cpp, rabenseifner.cpp, ring.cpp).
#include <algorithm>
#include <map>
#include <memory>

#include "planner/algorithms/allreduce_slices.h"
#include "planner/algorithms/fold.h"
#include "planner/algorithms/reduce_bcast.h"
#include "planner/hierarchy.h"
#include "planner/schedule_json.h"
#include "planner/select.h"
#include "planner/staged.h"
#include "planner/topology.h"
#include "sites.h"
#include "support.h"

namespace canopy::planner {
namespace {

using testing::make_problem;
using testing::plan_with;
using testing::Sweep;

Schedule allreduce_frame(int p, int segments, bool commutative = true) {
  Schedule s;
  s.collective = Collective::Allreduce;
  s.algorithm = "hand";
  s.nranks = p;
  s.count = segments;
  s.element_bytes = 4;
  s.commutative = commutative;
  for (int k = 0; k < segments; ++k) s.segments.push_back({k, 1});
  s.steps.assign(p, {});
  s.slots.assign(p, 0);
  return s;
}

// Two ranks, one segment: each sends its input to the other and combines what it gets.
Schedule exchange_of_two() {
  Schedule s = allreduce_frame(2, 1, false);
  s.steps[0] = {Step::recv_into_slot(1, 0, 0), Step::send(1, 0, Buffer::Input), Step::copy(0), Step::reduce(0, 0, false)};
  s.steps[1] = {Step::recv_into_slot(0, 0, 0), Step::send(0, 0, Buffer::Input), Step::copy(0), Step::reduce(0, 0, true)};
  s.slots = {1, 1};
  return s;
}

TEST_CASE("Allreduce validation: every rank must end with every contribution", "[allreduce][validate]") {
  CHECK(validate(exchange_of_two()));
  // Rank 1 keeps its own input and never hears from rank 0.
  Schedule missing = exchange_of_two();
  missing.steps[0] = {Step::send(1, 0, Buffer::Input), Step::copy(0)};
  missing.steps[1] = {Step::recv_into_slot(0, 0, 0), Step::copy(0), Step::reduce(0, 0, true)};
  missing.slots = {0, 1};
  // Rank 0 ends with {0} only.
  testing::check_rejected(missing, "rank 0 ends segment 0 with contributions");
  // A reduce's outcome is not enough: rank 0 holds everything, rank 1 its own input.
  Schedule reduce_only = allreduce_frame(2, 1);
  reduce_only.steps[0] = {Step::recv_into_slot(1, 0, 0), Step::copy(0), Step::reduce(0, 0, false)};
  reduce_only.steps[1] = {Step::send(0, 0, Buffer::Input)};
  reduce_only.slots = {1, 0};
  testing::check_rejected(reduce_only, "rank 1 ends segment 0");
  reduce_only.collective = Collective::Reduce;
  CHECK(validate(reduce_only));
  // Operands out of rank order for a non-commutative operation.
  Schedule disorder = exchange_of_two();
  disorder.steps[1].back().incoming_is_left = false;
  testing::check_rejected(disorder, "out of rank order");
  // Reading the input after writing the accumulator (MPI_IN_PLACE makes them one buffer).
  Schedule late = exchange_of_two();
  late.steps[0] = {Step::recv_into_slot(1, 0, 0), Step::copy(0), Step::send(1, 0, Buffer::Input), Step::reduce(0, 0, false)};
  testing::check_rejected(late, "reads the input after the accumulator was written");
}

// Three ranks, two segments (s0, s1). Rank 0 sends its s0 partial result to rank 1 and
// then receives the final s0 into that segment; rank 1 posts the receive of that send
// only after combining s1, which waits for rank 2, which waits for rank 0's s1, which
// rank 0 sends after its receive of s0. The executor's receive into s0 first waits for
// rank 0's send of s0 to complete (before_write), and an MPI send (a large one, by
// rendezvous) does not complete before its receive is posted: a cycle, a real deadlock.
// Without the rule that a segment is overwritten only once the sends reading it were
// received, the symbolic run would post rank 0's receive and go on, and accept it.
Schedule send_completion_cycle(bool rank1_posts_early) {
  Schedule s = allreduce_frame(3, 2);
  s.steps[0] = {Step::copy(0),  Step::send(1, 0),  // A: s0 = {0}
                Step::recv_into_accumulator(1, 0),  // B: the final s0 (waits for A's receive)
                Step::send(2, 1, Buffer::Input),    // C: s1 = {0}
                Step::recv_into_accumulator(1, 1)};
  std::vector<Step> one = {Step::copy(0), Step::copy(1)};
  if (rank1_posts_early) one.push_back(Step::recv_into_slot(0, 0, 1));  // A
  one.push_back(Step::recv_into_slot(2, 1, 0));                          // D
  one.push_back(Step::reduce(1, 0, false));                              // waits for D
  if (!rank1_posts_early) one.push_back(Step::recv_into_slot(0, 0, 1));  // A, only now
  for (const Step& st : {Step::recv_into_slot(2, 0, 2), Step::reduce(0, 1, false), Step::reduce(0, 2, false),
                         Step::send(0, 0), Step::send(0, 1), Step::send(2, 0), Step::send(2, 1)})
    one.push_back(st);
  s.steps[1] = one;
  s.steps[2] = {Step::recv_into_slot(0, 1, 0), Step::copy(1), Step::reduce(1, 0, false),
                Step::send(1, 1),                    // D: s1 = {0, 2}, once C came
                Step::send(1, 0, Buffer::Input),     // s0 = {2}
                Step::recv_into_accumulator(1, 0), Step::recv_into_accumulator(1, 1)};
  s.slots = {0, 3, 1};
  return s;
}

TEST_CASE("Allreduce validation: a segment is overwritten only once its sends were received (deadlock otherwise)",
          "[allreduce][validate]") {
  CHECK(validate(send_completion_cycle(true)));
  testing::check_rejected(send_completion_cycle(false), "deadlock: rank 0 step 2");
  // The same holds for a send of the input in an allreduce (it may be the accumulator).
  Schedule from_input = send_completion_cycle(false);
  from_input.steps[0][0] = Step::send(1, 0, Buffer::Input);
  from_input.steps[0].erase(from_input.steps[0].begin() + 1);  // (the send of the accumulator)
  testing::check_rejected(from_input, "deadlock");
}

TEST_CASE("Allreduce JSON: a schedule reads back as an allreduce", "[allreduce][json]") {
  const Schedule s = plan_with("recursive-doubling", make_problem(Collective::Allreduce, 3, 0, 10, 4, true, 0,
                                                                  default_model()));
  const nlohmann::json j = schedule_to_json(s);
  CHECK(j["collective"] == "allreduce");
  const Schedule back = schedule_from_json(j);
  CHECK(back.collective == Collective::Allreduce);
  CHECK(back.steps == s.steps);
  CHECK(validate(back));
}

// (The wide-area forms plan over a port= topology only: test_reduce_scatter_gather.cpp.)
bool needs_topology(const Algorithm& a) { return a.topology_aware || a.wide_area; }

// The homogeneous allreduces (not staged, no topology), by name.
std::vector<const Algorithm*> homogeneous_allreduces() {
  std::vector<const Algorithm*> out;
  for (const Algorithm& a : algorithms())
    if (a.collective == Collective::Allreduce && !needs_topology(a) && !a.staged) out.push_back(&a);
  return out;
}

TEST_CASE("Allreduce registry: the compositions and the exchanges are there", "[allreduce][registry]") {
  for (const char* name : {"binomial", "binary", "chain", "greedy", "snf", "hierarchical", "grid-ecef", "grid-ecef-la",
                           "grid-bottomup", "shm", "recursive-doubling", "rabenseifner", "ring"}) {
    CAPTURE(name);
    const Algorithm* a = find_algorithm(Collective::Allreduce, name);
    REQUIRE(a != nullptr);
    CHECK_FALSE(a->summary.empty());
    CHECK_FALSE(a->composable);  // a hierarchy's levels are reduces and broadcasts
    CHECK(a->whole_steps != nullptr);
  }
  CHECK(find_algorithm(Collective::Allreduce, "shm")->staged);
  CHECK(homogeneous_allreduces().size() == 7);
}

TEST_CASE("Allreduce algorithms validate and simulate: p = 1..17, 33, 64, commutative or not, uneven counts, "
          "several segment sizes",
          "[allreduce]") {
  Sweep sweep;
  int checked = 0, declined = 0;
  std::vector<int> sizes;
  for (int p = 1; p <= 17; ++p) sizes.push_back(p);
  sizes.push_back(33);
  sizes.push_back(64);
  for (const Algorithm* a : homogeneous_allreduces())
    for (int p : sizes)
      for (bool commutative : {true, false})
        for (std::int64_t count : {std::int64_t{1}, std::int64_t{p > 1 ? p - 1 : 1}, std::int64_t{1001},
                                   std::int64_t{77777}})
          for (std::int64_t seg : {std::int64_t{0}, std::int64_t{512}, std::int64_t{8192}}) {
            if (p > 17 && seg == 512) continue;  // the sweep stays quick
            const Problem problem = make_problem(Collective::Allreduce, p, 0, count, 4, commutative, seg, default_model());
            const std::string what = std::string(a->name) + " p=" + std::to_string(p) + " count=" +
                                     std::to_string(count) + " seg=" + std::to_string(seg) +
                                     (commutative ? "" : " non-commutative");
            const int p2 = Fold(p).p2;
            // Which problems an algorithm must decline, and only those.
            const bool must_decline = (a->name == "ring" && (!commutative || count < p)) ||
                                      (a->name == "rabenseifner" && count < p2);
            Schedule s;
            try {
              s = a->plan(problem);
            } catch (const PlanError& e) {
              ++declined;
              sweep.check(must_decline, what + ": declined: " + e.what());
              continue;
            }
            sweep.check(!must_decline, what + ": planned what it must decline");
            sweep.check(s.collective == Collective::Allreduce && s.root == 0, what + ": not an allreduce rooted at 0");
            const Validation v = validate(s);
            sweep.check(v.ok, what + ": " + v.summary());
            const Simulation sim = simulate(s, default_model());
            sweep.check(sim.ok, what + ": " + sim.error);
            if (p > 1) sweep.check(sim.makespan > 0, what + ": no time");
            ++checked;
          }
  INFO(sweep.first);
  CHECK(sweep.failures == 0);
  CHECK(checked > 2500);
  CHECK(declined > 100);
}

TEST_CASE("Allreduce: segments asked are honoured where the algorithm pipelines, slices where it scatters",
          "[allreduce]") {
  const Problem problem = make_problem(Collective::Allreduce, 6, 0, 10000, 4, true, 4000, default_model());
  // 40000 B in 4000 B segments.
  CHECK(plan_with("recursive-doubling", problem).segments.size() == 10);
  CHECK(plan_with("binomial", problem).segments.size() == 10);
  CHECK(plan_with("chain", problem).segments.size() == 10);
  // A slice per rank (6) or per exchanging rank (p' = 4), whatever the size asked.
  CHECK(plan_with("ring", problem).segments.size() == 6);
  CHECK(plan_with("rabenseifner", problem).segments.size() == 4);
  // Slices differ by one element at most.
  const AllreduceSlices sl = cut_allreduce_slices(10001, 4, "test");
  REQUIRE(sl.segments.size() == 4);
  CHECK(sl.segments[0].count == 2501);
  CHECK(sl.segments[3].count == 2500);
  CHECK_THROWS_AS(cut_allreduce_slices(3, 4, "test"), PlanError);
  // Past an MPI message's int count a slice is several segments.
  const AllreduceSlices big = cut_allreduce_slices(3 * kMaxSegmentCount, 2, "test");
  CHECK(big.pieces == 2);
  CHECK(big.segments.size() == 4);
}

TEST_CASE("Recursive doubling: rank order always (identical bits on every rank), MPICH's fold", "[allreduce]") {
  for (int p : {1, 2, 3, 5, 6, 7, 8, 12, 13}) {
    CAPTURE(p);
    const Schedule s = plan_with("recursive-doubling", make_problem(Collective::Allreduce, p, 0, 100, 8, true, 0,
                                                                    default_model()));
    // Combined in rank order even for a commutative operation, and the validator checks that order.
    CHECK_FALSE(s.commutative);
    CHECK(validate(s));
    const Fold fold(p);
    for (int r = 0; r < p; ++r) {
      int sends = 0, reduces = 0;
      for (const Step& st : s.steps[r]) {
        sends += st.kind == StepKind::Send;
        reduces += st.kind == StepKind::Reduce;
      }
      if (fold.id(r) < 0) {  // folded away: sends its input, receives the result
        CHECK(sends == 1);
        CHECK(reduces == 0);
      } else {
        CHECK(sends == fold.rounds() + (r < 2 * fold.rem ? 1 : 0));
        CHECK(reduces == fold.rounds() + (r < 2 * fold.rem ? 1 : 0));
      }
    }
  }
}

TEST_CASE("Ring and Rabenseifner: each slice is combined on one rank only, then copied", "[allreduce]") {
  for (const char* name : {"ring", "rabenseifner"})
    for (int p : {2, 3, 4, 5, 8, 11}) {
      CAPTURE(name, p);
      const Schedule s = plan_with(name, make_problem(Collective::Allreduce, p, 0, 1000, 4, true, 0, default_model()));
      // The number of reduces of each segment over all ranks: the p contributions meet
      // in p-1 combines, plus the fold's (one per folded rank).
      std::vector<int> combines(s.segments.size(), 0);
      for (const auto& steps : s.steps)
        for (const Step& st : steps)
          if (st.kind == StepKind::Reduce)
            for (int k = st.segment; k <= st.last_segment(); ++k) ++combines[k];
      for (int c : combines) CHECK(c == p - 1);
      CHECK(validate(s));
    }
  // The ring needs a commutative operation.
  CHECK_THROWS_AS(plan_with("ring", make_problem(Collective::Allreduce, 4, 0, 100, 4, false, 0, default_model())),
                  PlanError);
}

TEST_CASE("Rabenseifner sends one message a round, as MPICH does, not one a slice, unless a segment size caps it", "[allreduce]") {
  // p' = 8: 3 halving and 3 doubling rounds, each one range of slices sent as one
  // spanned message. With p = 11, rank 0 also folds rank 1 in and sends it the result.
  for (int p : {8, 11}) {
    CAPTURE(p);
    const Schedule s = plan_with("rabenseifner", make_problem(Collective::Allreduce, p, 0, 1000, 4, true, 0, default_model()));
    REQUIRE(s.segments.size() == 8);
    REQUIRE(validate(s));
    int sends = 0;
    std::int64_t received = 0;
    for (const Step& st : s.steps[0]) {
      if (st.kind == StepKind::Send && !(p == 11 && st.peer == 1)) ++sends;
      if (st.kind == StepKind::Recv) received += s.span_bytes(st);
    }
    CHECK(sends == 6);
    // Halving receives 1/2 + 1/4 + 1/8 of the 4000 bytes, doubling as much again; the
    // fold in the whole message once more.
    CHECK(received == 7000 + (p == 11 ? 4000 : 0));
  }
  // A segment size asked caps a message at whole slices (8 slices of 125 floats here):
  // 1000 bytes are two slices, so the first halving round's four slices go as two
  // messages; under one slice, every slice is a message (2 (p'-1) sends).
  for (const auto& [segment_bytes, sends_expected] : {std::pair<std::int64_t, int>{1000, 8}, {100, 14}, {0, 6}}) {
    CAPTURE(segment_bytes);
    const Problem problem = make_problem(Collective::Allreduce, 8, 0, 1000, 4, false, segment_bytes, default_model());
    const Schedule s = plan_with("rabenseifner", problem);
    REQUIRE(validate(s));
    int sends = 0;
    for (const Step& st : s.steps[3]) sends += st.kind == StepKind::Send;
    CHECK(sends == sends_expected);
    CHECK(find_algorithm(Collective::Allreduce, "rabenseifner")->cut_segment_bytes(problem) ==
          (segment_bytes == 0 ? 0 : segment_bytes == 1000 ? 1000 : 500));
  }
  // 1024 ranks, one rank's view: 10 sends in each phase.
  const Problem big = make_problem(Collective::Allreduce, 1024, 0, 131072, 8, true, 0, default_model());
  const Schedule v = plan_view(*find_algorithm(Collective::Allreduce, "rabenseifner"), big, 77);
  int sends = 0;
  for (const Step& st : v.steps[0]) sends += st.kind == StepKind::Send;
  CHECK(sends == 20);
}

TEST_CASE("Rabenseifner's reduce validates: p = 1..17, every root, commutative or not, capped or not, and "
          "simulates under half-duplex ports",
          "[allreduce][rabenseifner]") {
  Sweep sweep;
  int checked = 0;
  const CostModel half = hockney_model(3e-6, 1e-9, 5e-10);  // duplex half: one transfer at a time
  for (int p = 1; p <= 17; ++p)
    for (int root = 0; root < p; ++root)
      for (bool commutative : {true, false})
        for (std::int64_t seg : {std::int64_t{0}, std::int64_t{400}}) {
          const Problem problem = make_problem(Collective::Reduce, p, root, 1000 + p, 4, commutative, seg, default_model());
          const Schedule s = plan_with("rabenseifner", problem);
          const std::string what = testing::label(s) + " root " + std::to_string(root);
          const Validation v = validate(s);
          sweep.check(v.ok, what + ": " + v.summary());
          const Simulation sim = simulate(s, half);
          sweep.check(sim.ok, what + " (half duplex): " + sim.error);
          ++checked;
        }
  INFO(sweep.first);
  CHECK(sweep.failures == 0);
  CHECK(checked == 17 * 18 / 2 * 4);
}

TEST_CASE("Rabenseifner's reduce: the allreduce's halving, then a gather of one message a rank to the root",
          "[allreduce][rabenseifner]") {
  // p' = 8, 8 slices of 125 floats: the root receives 3 gather messages (1, 2 and 4
  // slices), every other rank sends one; the halving is the allreduce's (3 messages each
  // way). No rank but the root receives more than the halving and its gather rounds.
  for (int root : {0, 3, 6}) {
    CAPTURE(root);
    const Schedule s = plan_with("rabenseifner", make_problem(Collective::Reduce, 8, root, 1000, 4, true, 0, default_model()));
    REQUIRE(validate(s));
    int total_gather_sends = 0;
    for (int r = 0; r < 8; ++r) {
      int sends = 0, recvs = 0;
      std::int64_t received = 0;
      for (const Step& st : s.steps[r]) {
        sends += st.kind == StepKind::Send;
        recvs += st.kind == StepKind::Recv;
        if (st.kind == StepKind::Recv) received += s.span_bytes(st);
      }
      // Halving: 3 sends and 3 receives (2000 + 1000 + 500 bytes in).
      total_gather_sends += sends - 3;
      if (r == root) {
        CHECK(sends == 3);
        CHECK(recvs == 6);
        CHECK(received == 3500 + 3500);  // the gather brings in the other 7 slices
      } else {
        CHECK(sends == 4);
        CHECK(recvs <= 6);
      }
    }
    CHECK(total_gather_sends == 7);
  }
  // p = 11 (p' = 8, three ranks folded away). A root folded away (1, 3, 5) sends its input
  // to its left neighbour, which gathers the result and sends it the whole; a root that
  // folds (0) or does not (9) keeps it, and no rank folded away receives anything.
  for (int root : {0, 1, 3, 5, 9}) {
    CAPTURE(root);
    const Schedule s = plan_with("rabenseifner", make_problem(Collective::Reduce, 11, root, 1000, 4, false, 0, default_model()));
    REQUIRE(validate(s));
    for (int folded : {1, 3, 5}) {
      std::int64_t received = 0;
      for (const Step& st : s.steps[folded])
        if (st.kind == StepKind::Recv) received += s.span_bytes(st);
      CHECK(received == (folded == root ? 4000 : 0));
    }
  }
  // 1024 ranks, one rank's view: 10 sends and receives in the halving; in the gather
  // a rank receives in the rounds (from the highest bit down) where it agrees with the
  // root, and sends once at the first where it does not (the root: 10 receives).
  const Problem big = make_problem(Collective::Reduce, 1024, 5, 131072, 8, true, 0, default_model());
  const Algorithm& a = *find_algorithm(Collective::Reduce, "rabenseifner");
  for (int r : {77, 5, 4, 517}) {
    CAPTURE(r);
    int agree = 0;
    while (agree < 10 && ((r >> (9 - agree)) & 1) == ((5 >> (9 - agree)) & 1)) ++agree;
    const Schedule v = plan_view(a, big, r);
    int sends = 0, recvs = 0;
    for (const Step& st : v.steps[0]) {
      sends += st.kind == StepKind::Send;
      recvs += st.kind == StepKind::Recv;
    }
    CHECK(sends == (r == 5 ? 10 : 11));
    CHECK(recvs == 10 + agree);
  }
}

// 2 clusters of 2 nodes of 4 ranks (as test_registry.cpp's).
std::shared_ptr<const Topology> two_clusters() {
  Topology t;
  for (int r = 0; r < 16; ++r) {
    t.node.push_back(r / 4);
    t.cluster.push_back(r / 8);
  }
  t.clusters = 2;
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 2; ++b) t.links.push_back(hockney_model(a == b ? 5e-6 : 1e-3, a == b ? 8e-10 : 8e-8, 0));
  check_topology(t);
  return std::make_shared<const Topology>(t);
}

TEST_CASE("Allreduce compositions over a topology and through the ring validate", "[allreduce]") {
  Sweep sweep;
  int checked = 0;
  for (const Algorithm& a : algorithms()) {
    if (a.collective != Collective::Allreduce || !(a.topology_aware || a.staged)) continue;
    for (bool ring : {false, true})
      for (std::int64_t count : {std::int64_t{10}, std::int64_t{5000}, std::int64_t{300000}})
        for (std::int64_t seg : {std::int64_t{0}, std::int64_t{4096}}) {
          const int p = a.staged ? 6 : 16;
          Problem problem = make_problem(Collective::Allreduce, p, 0, count, 4, true, seg, default_model());
          if (a.topology_aware) problem.topology = a.name == "snf" ? std::make_shared<const Topology>(slowdown_topology(
                                                                         default_model(), {1, 2, 1, 4, 1, 1, 3, 1, 1, 1,
                                                                                           1, 2, 1, 1, 1, 1}))
                                                                   : two_clusters();
          if (ring) problem = with_staging_ring(problem);
          const std::string what = std::string(a.name) + " count=" + std::to_string(count) + " seg=" +
                                   std::to_string(seg) + (ring ? " ring" : "");
          Schedule s;
          try {
            s = a.plan(problem);
          } catch (const PlanError& e) {
            sweep.check(a.staged && !ring, what + ": declined: " + e.what());  // shm needs the ring
            continue;
          }
          const Validation v = validate(s);
          sweep.check(v.ok, what + ": " + v.summary());
          const Simulation sim = simulate(s, problem.model, problem.topology.get());
          sweep.check(sim.ok && sim.makespan > 0, what + ": " + sim.error);
          ++checked;
        }
  }
  INFO(sweep.first);
  CHECK(sweep.failures == 0);
  CHECK(checked >= 30);
  // Non-commutative: the topology-aware ones decline, as their reduces do.
  Problem problem = make_problem(Collective::Allreduce, 16, 0, 100, 4, false, 0, default_model());
  problem.topology = two_clusters();
  CHECK_THROWS_AS(plan_with("hierarchical", problem), PlanError);
}

// `clusters` clusters of two ranks, each rank a node: alpha_in/beta_in inside a cluster,
// alpha_wan/beta_wan between any two.
std::shared_ptr<const Topology> pairs_in_clusters(int clusters, double alpha_in, double beta_in, double alpha_wan,
                                                  double beta_wan) {
  Topology t;
  for (int r = 0; r < 2 * clusters; ++r) {
    t.node.push_back(r);
    t.cluster.push_back(r / 2);
  }
  t.clusters = clusters;
  for (int a = 0; a < clusters; ++a)
    for (int b = 0; b < clusters; ++b)
      t.links.push_back(a == b ? hockney_model(alpha_in, beta_in, 0) : hockney_model(alpha_wan, beta_wan, 0));
  check_topology(t);
  return std::make_shared<const Topology>(t);
}

TEST_CASE("hierarchical-leaders: clusters reduce to their leaders, the leaders allreduce, the leaders broadcast back",
          "[allreduce][hierarchy]") {
  const double alpha_in = 5e-6, beta_in = 1e-9, alpha_wan = 5e-5, beta_wan = 4e-8;
  Problem problem = make_problem(Collective::Allreduce, 8, 0, 1, 8, true, 0, default_model());
  problem.topology = pairs_in_clusters(4, alpha_in, beta_in, alpha_wan, beta_wan);
  const Schedule s = plan_with("hierarchical-leaders", problem);
  const Validation v = validate(s);
  INFO(v.summary());
  REQUIRE(v.ok);
  // Only the leaders (the lowest rank of each pair) cross between clusters.
  for (int r = 0; r < 8; ++r)
    for (const Step& st : s.steps[r])
      if (st.is_message() && st.peer / 2 != r / 2) {
        CAPTURE(r, describe(st));
        CHECK(r % 2 == 0);
        CHECK(st.peer % 2 == 0);
      }
  // 8 bytes: a message inside each pair, the leaders' recursive doubling (two rounds over
  // the wide area), a message back inside each pair; reductions and copies of 8 bytes
  // add under 0.1%. A reduce to rank 0 and a broadcast back (the `hierarchical`
  // composition) cross the wide area in four rounds.
  const double expected = 2 * (alpha_in + 8 * beta_in) + 2 * (alpha_wan + 8 * beta_wan);
  const Simulation sim = simulate(s, problem.model, problem.topology.get());
  REQUIRE(sim.ok);
  CHECK(sim.makespan == Approx(expected).epsilon(0.001));
  const Schedule via_root = plan_with("hierarchical", problem);
  CHECK(simulate(via_root, problem.model, problem.topology.get()).makespan > 1.5 * sim.makespan);

  // Longer messages, counts that do not divide, segments asked for, and the node levels
  // through the ring: still an allreduce.
  for (std::int64_t count : {std::int64_t{7}, std::int64_t{1001}, std::int64_t{131073}})
    for (std::int64_t seg : {std::int64_t{0}, std::int64_t{4096}}) {
      CAPTURE(count, seg);
      Problem q = make_problem(Collective::Allreduce, 8, 0, count, 8, true, seg, default_model());
      q.topology = problem.topology;
      const Validation w = validate(plan_with("hierarchical-leaders", q));
      INFO(w.summary());
      CHECK(w.ok);
    }

  // What it declines: no topology, a non-commutative op, groups of one rank each.
  Problem plain = make_problem(Collective::Allreduce, 8, 0, 100, 8, true, 0, default_model());
  CHECK_THROWS_AS(plan_with("hierarchical-leaders", plain), PlanError);
  Problem ordered = problem;
  ordered.commutative = false;
  CHECK_THROWS_AS(plan_with("hierarchical-leaders", ordered), PlanError);
  Problem singles = make_problem(Collective::Allreduce, 4, 0, 100, 8, true, 0, default_model());
  Topology one_each = *pairs_in_clusters(2, alpha_in, beta_in, alpha_wan, beta_wan);
  one_each.cluster = {0, 1, 2, 3};
  one_each.clusters = 4;
  one_each.links.assign(16, hockney_model(alpha_wan, beta_wan, 0));
  singles.topology = std::make_shared<const Topology>(one_each);
  CHECK_THROWS_AS(plan_with("hierarchical-leaders", singles), PlanError);
}

TEST_CASE("hierarchical-leaders over 16 sites far apart: the leaders' allreduce is reduce-scatter-allgather-wide, "
          "and the whole beats a reduce to one site and a broadcast back",
          "[allreduce][hierarchy]") {
  // 16 sites of one node of 4 ranks (sixteen_sites_apart: 1-15 ms and 56-336 Mbit/s
  // apart, port= at the cards' 1 Gbit/s), 1 MiB of doubles, 16 segments: a slice a leader.
  const auto t = testing::sixteen_sites_apart(4, 4);
  Problem problem = make_problem(Collective::Allreduce, 64, 0, (1 << 20) / 8, 8, true, (1 << 20) / 16, default_model());
  problem.topology = t;
  const Hierarchy h = make_hierarchy(problem, hierarchy_groups(*t));
  Request over_leaders;
  over_leaders.segment_bytes = problem.segment_bytes;
  over_leaders.homogeneous_only = true;
  CHECK(plan_level(upper_problem(problem, h), over_leaders).schedule.algorithm == "reduce-scatter-allgather-wide");
  const Schedule leaders = plan_with("hierarchical-leaders", problem);
  const Validation v = validate(leaders);
  INFO(v.summary());
  REQUIRE(v.ok);
  const double wide = simulate(leaders, problem.model, t.get()).makespan;
  const double via_root = simulate(plan_with("hierarchical", problem), problem.model, t.get()).makespan;
  INFO("hierarchical-leaders " << wide << " s, hierarchical " << via_root << " s");
  CHECK(wide * 1.5 < via_root);
}

TEST_CASE("compose_allreduce_hierarchy refuses a leaders' schedule that reads its input after writing it",
          "[allreduce][hierarchy]") {
  Problem problem = make_problem(Collective::Allreduce, 4, 0, 1, 4, true, 0, default_model());
  problem.topology = pairs_in_clusters(2, 5e-6, 1e-9, 5e-5, 4e-8);
  const Hierarchy h = make_hierarchy(problem, problem.topology->cluster);
  REQUIRE(h.groups() == 2);
  // Over the two leaders: each copies its input, then sends its input (not its
  // accumulator) and reduces what it gets. With the group's partial result standing in
  // for the input, the send would carry the leader's own contribution alone. The
  // validator refuses such a schedule anyway (with MPI_IN_PLACE the input is the
  // accumulator), and the composition, which relies on that rule, checks it itself.
  Schedule upper = allreduce_frame(2, 1);
  upper.steps[0] = {Step::copy(0), Step::recv_into_slot(1, 0, 0), Step::send(1, 0, Buffer::Input),
                    Step::reduce(0, 0, false)};
  upper.steps[1] = {Step::copy(0), Step::recv_into_slot(0, 0, 0), Step::send(0, 0, Buffer::Input),
                    Step::reduce(0, 0, true)};
  upper.slots = {1, 1};
  CHECK_FALSE(validate(upper));
  Problem reduce = problem;
  reduce.collective = Collective::Reduce;
  Problem bcast = problem;
  bcast.collective = Collective::Bcast;
  std::vector<Schedule> lower_reduce, lower_bcast;
  for (int g = 0; g < 2; ++g) {
    lower_reduce.push_back(plan_with("binomial", level_problem(reduce, h.members[g], h.leader_index(g))));
    lower_bcast.push_back(plan_with("binomial", level_problem(bcast, h.members[g], h.leader_index(g))));
  }
  CHECK_THROWS_AS(compose_allreduce_hierarchy(problem, h, lower_reduce, upper, lower_bcast, "test"), PlanError);
  // The same exchange sending its input before it copies it composes, and validates.
  upper.steps[0] = {Step::recv_into_slot(1, 0, 0), Step::send(1, 0, Buffer::Input), Step::copy(0),
                    Step::reduce(0, 0, false)};
  upper.steps[1] = {Step::recv_into_slot(0, 0, 0), Step::send(0, 0, Buffer::Input), Step::copy(0),
                    Step::reduce(0, 0, true)};
  const Schedule composed = compose_allreduce_hierarchy(problem, h, lower_reduce, upper, lower_bcast, "test");
  const Validation v = validate(composed);
  INFO(v.summary());
  CHECK(v.ok);
}

TEST_CASE("shm allreduce: the broadcast's stages follow each rank's reduce stages through one ring",
          "[allreduce]") {
  for (int p : {2, 3, 4, 8})
    for (bool commutative : {true, false}) {
      CAPTURE(p, commutative);
      const Problem problem = with_staging_ring(
          make_problem(Collective::Allreduce, p, 0, 1 << 20, 4, commutative, 0, default_model()));
      const Schedule s = plan_with("shm", problem);
      CHECK(s.uses_staging());
      CHECK_FALSE(s.uses_direct());
      CHECK(s.staging_entries == problem.staging_entries);
      const Validation v = validate(s);
      INFO(v.summary());
      CHECK(v.ok);
      // Every stage number of a rank appears once, in order (the validator's rule too).
      for (const auto& steps : s.steps) {
        int next = 0;
        for (const Step& st : steps)
          if (st.kind == StepKind::Stage) CHECK(st.slot == next++);
      }
      // The reduce part's layout is the schedule's: the bcast follows it.
      const Schedule reduce = plan_with("shm-reduce-scatter-gather", reduce_part(problem));
      CHECK(segment_counts_of(reduce.segments) == segment_counts_of(s.segments));
    }
}

// shm-reduce-scatter-allgather: each byte staged once for its owner, reduced once where
// it lies, staged once more reduced and fetched by every other rank.
TEST_CASE("shm-reduce-scatter-allgather validates, and every rank fetches every other slice once", "[allreduce]") {
  for (int p : {1, 2, 3, 4, 5, 8})
    for (bool commutative : {true, false})
      for (std::int64_t count : {std::int64_t{7}, std::int64_t{1} << 18}) {
        CAPTURE(p, commutative, count);
        const Problem problem = with_staging_ring(
            make_problem(Collective::Allreduce, p, 0, count, 4, commutative, 0, default_model()));
        const Schedule s = plan_with("shm-reduce-scatter-allgather", problem);
        const Validation v = validate(s);
        INFO(v.summary());
        CHECK(v.ok);
        const std::int64_t nseg = static_cast<std::int64_t>(s.segments.size());
        for (int r = 0; r < p; ++r) {
          std::int64_t fetched = 0, staged_results = 0;
          for (const Step& st : s.steps[r]) {
            fetched += st.kind == StepKind::Fetch;
            staged_results += st.kind == StepKind::Stage && st.buffer == Buffer::Accumulator;
          }
          CHECK(fetched + staged_results == (p > 1 ? nseg : 0));  // all but its own slice, fetched
        }
        CHECK(simulate(s, default_model()).makespan > 0);
      }
  // Not a reduce's: the algorithm is registered for allreduces only.
  CHECK(find_algorithm(Collective::Reduce, "shm-reduce-scatter-allgather") == nullptr);
}

namespace {

// Runs a staged allreduce on symbols: rank r's input is "xr", a combine writes "(a.b)"
// with its operands in the step's order, a stage and a fetch copy what they find. Ranks
// take turns, each running its next steps while what they read has been staged. Returns
// every rank's accumulator per segment; fails the test where no rank can go on.
std::vector<std::vector<std::string>> evaluate_staged(const Schedule& s) {
  const std::size_t nseg = s.segments.size();
  std::vector<std::vector<std::string>> acc(s.nranks, std::vector<std::string>(nseg));
  std::map<std::pair<int, int>, std::string> staged;  // (writer, stage number)
  std::vector<std::size_t> next(s.nranks, 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < s.nranks; ++r)
      for (; next[r] < s.steps[r].size(); ++next[r], progress = true) {
        const Step& st = s.steps[r][next[r]];
        const std::string input = "x" + std::to_string(r);
        std::string& mine = acc[r][st.segment];
        const std::string own = st.buffer == Buffer::Input ? input : mine;
        const auto found = staged.find({st.peer, st.slot});
        if (st.kind == StepKind::Copy) {
          mine = input;
        } else if (st.kind == StepKind::Stage) {
          REQUIRE_FALSE(own.empty());
          staged[{r, st.slot}] = own;
        } else if (st.kind == StepKind::Fetch || st.kind == StepKind::FetchReduce) {
          if (found == staged.end()) break;  // not staged yet: the next rank's turn
          if (st.kind == StepKind::Fetch) {
            mine = found->second;
          } else {
            REQUIRE_FALSE(own.empty());
            mine = st.incoming_is_left ? "(" + found->second + "." + own + ")" : "(" + own + "." + found->second + ")";
          }
        } else {
          FAIL("not a staged step: " << describe(st));
        }
      }
  }
  for (int r = 0; r < s.nranks; ++r) REQUIRE(next[r] == s.steps[r].size());  // else stuck
  return acc;
}

std::string without_parentheses(std::string text) {
  text.erase(std::remove_if(text.begin(), text.end(), [](char c) { return c == '(' || c == ')'; }), text.end());
  return text;
}

}  // namespace

// The same expression on every rank is the same bits on every rank, whatever the
// rounding; its operands in rank order is what a non-commutative operation needs.
TEST_CASE("Staged allreduces: every rank computes the same expression, its operands in rank order", "[allreduce]") {
  int checked = 0;
  for (const Algorithm& a : algorithms()) {
    if (a.collective != Collective::Allreduce || !a.staged) continue;
    for (int p : {1, 2, 3, 4, 5, 6, 7, 8, 9, 16})
      for (bool commutative : {true, false})
        for (std::int64_t count : {std::int64_t{1}, std::int64_t{7}, std::int64_t{300000}}) {
          CAPTURE(a.name, p, commutative, count);
          const Problem problem = with_staging_ring(
              make_problem(Collective::Allreduce, p, 0, count, 4, commutative, 0, default_model()));
          Schedule s;
          try {
            s = a.plan(problem);
          } catch (const PlanError&) {
            continue;  // (shm-reduce-scatter-allgather: fewer elements than ranks)
          }
          const auto acc = evaluate_staged(s);
          std::string rank_order = "x0";
          for (int r = 1; r < p; ++r) rank_order += ".x" + std::to_string(r);
          for (std::size_t g = 0; g < s.segments.size(); ++g)
            for (int r = 0; r < p; ++r) {
              CHECK(acc[r][g] == acc[0][g]);
              CHECK(without_parentheses(acc[r][g]) == rank_order);
            }
          ++checked;
        }
  }
  CHECK(checked > 150);
}

TEST_CASE("shm-recursive-doubling: one hand-over each way on two ranks, MPICH's fold, views of each rank",
          "[allreduce]") {
  for (int p : {1, 2, 3, 4, 5, 6, 7, 8, 12, 13})
    for (bool commutative : {true, false})
      for (std::int64_t count : {std::int64_t{1}, std::int64_t{100}, std::int64_t{300000}}) {
        CAPTURE(p, commutative, count);
        const Problem problem = with_staging_ring(
            make_problem(Collective::Allreduce, p, 0, count, 4, commutative, 0, default_model()));
        const Schedule s = plan_with("shm-recursive-doubling", problem);
        CHECK_FALSE(s.commutative);  // rank order always
        const Validation v = validate(s);
        INFO(v.summary());
        CHECK(v.ok);
        CHECK(simulate(s, default_model()).ok);
        const std::int64_t nseg = static_cast<std::int64_t>(s.segments.size());
        const std::int64_t chunk = find_algorithm(Collective::Allreduce, "shm-recursive-doubling")->cut_segment_bytes(problem);
        CHECK(nseg == (count * 4 + chunk - 1) / chunk);  // whole entries' worth, as the other staged reductions
        const Fold fold(p);
        for (int r = 0; r < p; ++r) {
          std::int64_t stages = 0, combines = 0, fetches = 0;
          for (const Step& st : s.steps[r]) {
            stages += st.kind == StepKind::Stage;
            combines += st.kind == StepKind::FetchReduce;
            fetches += st.kind == StepKind::Fetch;
          }
          const bool folds = r < 2 * fold.rem;
          if (fold.id(r) < 0) {  // folded away: stages its input, copies the result out
            CHECK(stages == nseg);
            CHECK(combines == 0);
            CHECK(fetches == nseg);
          } else {
            CHECK(stages == nseg * (fold.rounds() + (folds ? 1 : 0)));
            CHECK(combines == nseg * (fold.rounds() + (folds ? 1 : 0)));
            CHECK(fetches == 0);
          }
          const Schedule view = find_algorithm(Collective::Allreduce, "shm-recursive-doubling")->view(problem, r);
          CHECK(view.steps == project(s, r).steps);
          CHECK(view.staging_entries == s.staging_entries);
        }
      }
  // Without a ring over all its ranks it declines.
  CHECK_THROWS_AS(plan_with("shm-recursive-doubling",
                            make_problem(Collective::Allreduce, 4, 0, 100, 4, true, 0, default_model())),
                  PlanError);
}

TEST_CASE("Allreduce compositions: pipelined, the broadcast of a segment overlaps the reduction of the next",
          "[allreduce]") {
  for (const char* name : {"chain", "binary", "binomial"}) {
    CAPTURE(name);
    const Problem problem = make_problem(Collective::Allreduce, 8, 0, 1 << 18, 4, true, 1 << 14, default_model());
    const Schedule s = plan_with(name, problem);
    REQUIRE(s.segments.size() == 64);
    CHECK(validate(s));
    const double whole = simulate(s, problem.model).makespan;
    Problem reduce = reduce_part(problem);
    Problem bcast = bcast_part(problem, s.segments);
    const double parts = simulate(find_algorithm(Collective::Reduce, name)->plan(reduce), problem.model).makespan +
                         simulate(find_algorithm(Collective::Bcast, name)->plan(bcast), problem.model).makespan;
    INFO("composed " << whole << " s, the parts one after the other " << parts << " s");
    // Never slower than the parts in turn; the trees gain from overlapping them. (The
    // chain does not, under this model: reduce and broadcast both send on every rank.)
    CHECK(whole <= parts * (1 + 1e-9));
    if (std::string(name) != "chain") CHECK(whole < 0.9 * parts);
    // The price is the parts' sum, an estimate.
    const Price price = find_algorithm(Collective::Allreduce, name)->price(problem);
    CHECK_FALSE(price.exact);
    CHECK(price.makespan > 0);
  }
  // A part that does not exist is a PlanError, not a crash.
  CHECK_THROWS_AS(compose_reduce_bcast(make_problem(Collective::Allreduce, 4, 0, 10, 4, true, 0, default_model()),
                                       "no-such", "binomial", "x"),
                  PlanError);
  CHECK_THROWS_AS(compose_reduce_bcast(make_problem(Collective::Reduce, 4, 0, 10, 4, true, 0, default_model()),
                                       "binomial", "binomial", "x"),
                  PlanError);
}

TEST_CASE("Allreduce rank views equal the whole schedule's ranks", "[allreduce][views]") {
  Sweep sweep;
  int compared = 0;
  for (const Algorithm* a : homogeneous_allreduces()) {
    if (!a->view) continue;  // the compositions are projected (plan_view)
    for (int p : {1, 2, 3, 5, 8, 13, 16})
      for (bool commutative : {true, false})
        for (std::int64_t seg : {std::int64_t{0}, std::int64_t{64}}) {
          const Problem problem = make_problem(Collective::Allreduce, p, 0, 100, 4, commutative, seg, default_model());
          Schedule whole;
          try {
            whole = a->plan(problem);
          } catch (const PlanError&) {
            continue;
          }
          for (int r = 0; r < p; ++r) {
            const Schedule view = a->view(problem, r);
            const Schedule projected = project(whole, r);
            sweep.check(view.steps == projected.steps && view.slots == projected.slots && view.root == 0 &&
                            view.commutative == whole.commutative,
                        std::string(a->name) + " p=" + std::to_string(p) + " rank " + std::to_string(r));
            ++compared;
          }
        }
  }
  INFO(sweep.first);
  CHECK(sweep.failures == 0);
  CHECK(compared > 300);
}

// The model's verdicts (default_model(): hockney, alpha-beta-gamma) for p = 16.
TEST_CASE("Allreduce under the model: recursive doubling wins short messages, ring and Rabenseifner long ones",
          "[allreduce][simulate]") {
  auto makespan = [](const char* name, std::int64_t count, std::int64_t seg) {
    const Problem problem = make_problem(Collective::Allreduce, 16, 0, count, 8, true, seg, default_model());
    const Simulation sim = simulate(plan_with(name, problem), problem.model);
    INFO(name << ": " << sim.error);
    REQUIRE(sim.ok);
    return sim.makespan;
  };
  // 64 B: log2(16) = 4 exchanges against 4 reduce and 4 broadcast rounds.
  const double rd_small = makespan("recursive-doubling", 8, 0);
  const double binomial_small = makespan("binomial", 8, 0);
  INFO("64 B: recursive-doubling " << rd_small << " s, binomial " << binomial_small << " s");
  CHECK(rd_small < binomial_small);
  // 16 MiB of doubles: the binomial composition (with its best of a few segment sizes)
  // moves the whole message 8 times on the root's critical path; ring and Rabenseifner
  // about twice.
  const std::int64_t big = (std::int64_t{16} << 20) / 8;
  double binomial_big = makespan("binomial", big, 0);
  for (std::int64_t seg : {std::int64_t{1} << 20, std::int64_t{1} << 18, std::int64_t{1} << 16})
    binomial_big = std::min(binomial_big, makespan("binomial", big, seg));
  const double ring_big = makespan("ring", big, 0);
  const double rab_big = makespan("rabenseifner", big, 0);
  INFO("16 MiB: ring " << ring_big << " s, rabenseifner " << rab_big << " s, binomial " << binomial_big << " s");
  CHECK(ring_big < binomial_big);
  CHECK(rab_big < binomial_big);
}

TEST_CASE("Allreduce through the selector: auto ranks every homogeneous allreduce and plans a valid best",
          "[allreduce][select]") {
  for (std::int64_t count : {std::int64_t{4}, std::int64_t{1} << 18}) {
    const Problem problem = make_problem(Collective::Allreduce, 12, 0, count, 8, true, 0, default_model());
    const std::vector<Choice> ranked = rank_choices(problem, Request{});
    // Short, ring (p = 12 slices) and Rabenseifner (p' = 8) decline: fewer elements than ranks.
    CHECK(ranked.size() == homogeneous_allreduces().size() - (count < 12 ? 2 : 0));
    const Plan plan = make_plan(problem, Request{});  // validated
    CHECK(plan.schedule.collective == Collective::Allreduce);
    CHECK(plan.predicted > 0);
  }
}

// At many ranks a rank must plan only its own view: the compositions (no view) are left
// out above kGlobalPlanningLimit, and the view algorithms are priced in closed form
// (their whole schedules are too large to simulate), so auto still has a choice.
TEST_CASE("Allreduce at 4096 and a million ranks: auto picks a rank-view algorithm priced in closed form",
          "[allreduce][select]") {
  for (int p : {4096, 1 << 20})
    for (std::int64_t count : {std::int64_t{1}, std::int64_t{1} << 21}) {
      INFO(p << " ranks, " << count << " doubles");
      const Problem problem = make_problem(Collective::Allreduce, p, 0, count, 8, true, 0, default_model());
      const std::vector<Choice> ranked = rank_choices(problem, Request{});
      REQUIRE(!ranked.empty());
      for (const Choice& c : ranked) {
        const Algorithm* a = find_algorithm(Collective::Allreduce, c.algorithm);
        REQUIRE(a);
        CHECK(a->view != nullptr);
        CHECK(c.predicted > 0);
      }
      const Schedule view = plan_view(*find_algorithm(Collective::Allreduce, ranked.front().algorithm),
                                      [&] { Problem q = problem; q.segment_bytes = ranked.front().segment_bytes; return q; }(),
                                      p - 1);
      CHECK(view.is_view());
      CHECK(view.steps[0].size() < 200000);  // a rank's steps, not p x segments
    }
  // Small messages: recursive doubling's log2 p rounds beat everything else priced.
  const Problem tiny = make_problem(Collective::Allreduce, 4096, 0, 1, 8, true, 0, default_model());
  CHECK(rank_choices(tiny, Request{}).front().algorithm == "recursive-doubling");
}

}  // namespace
}  // namespace canopy::planner
