// The discrete-event simulator against the closed forms of the papers:
//  * 001_*.txt (Langou, "Greedy Trees for MPI Reductions"), unidirectional system:
//    binomial tree ceil(log2 p)(alpha + beta m + gamma m), pipeline (chain)
//    ((p-1) + 2(q-1))(alpha + beta s + gamma s).
//  * 000_*.txt (Canon & Antoniu), the (d, c) model with overlapping transfers and
//    computations: Proposition 13 (binomial tree) and Proposition 16 (Fibonacci tree).
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <random>

#include "planner/cost_model.h"
#include "planner/topology_json.h"
#include "planner/tree.h"
#include "support.h"

using namespace canopy::planner;
using namespace canopy::planner::testing;

namespace {

// The chain of 001's "Pipeline Tree": rank i sends to rank i - 1, rank 0 is the root.
Tree chain(int p) {
  std::vector<int> parent(p), order(p);
  for (int i = 0; i < p; ++i) {
    parent[i] = i - 1;  // -1 for the root
    order[i] = i;
  }
  return tree_from_parents(0, parent, order);
}

// Definition 15 of 000: a Fibonacci tree of order k > 0 is a Fibonacci tree of order
// k - 2 whose sink is the parent of the sink of a Fibonacci tree of order k - 1; orders
// -1 and 0 are single nodes. The paper's "parent" is the machine that *sends* (its
// spanning tree is a reverse tree and c_i, the "child" of i, is where i sends), as the
// proof of Proposition 16 makes explicit: the final result of order k + 2 is made on
// the sink of the order-(k+1) tree, which receives the order-k tree's result while it
// performs its own last reduction. So, in MPI terms: the sink of F(k) is the sink of
// F(k-1), and the sink of F(k-2) becomes its last child. At each sink the children are
// thus, in receive order, the sinks of F(-1), F(0), F(1), ..., F(k-2): the order in
// which their data becomes ready (0, 0, d + c, d + max(d,c) + c, ...).
struct FibonacciTree {
  std::vector<int> parent;
  std::vector<int> attach_order;  // every non-sink node, in the order it was attached
  int sink = -1;
};

int build_fibonacci(int k, FibonacciTree& t) {
  if (k <= 0) {
    t.parent.push_back(-1);
    return static_cast<int>(t.parent.size()) - 1;
  }
  const int sink = build_fibonacci(k - 1, t);  // its sink keeps the final result
  const int other = build_fibonacci(k - 2, t);
  t.parent[other] = sink;
  t.attach_order.push_back(other);  // received after everything F(k-1) attached to `sink`
  return sink;
}

Tree fibonacci_tree(int k) {
  FibonacciTree t;
  t.sink = build_fibonacci(k, t);
  return tree_from_parents(t.sink, t.parent, t.attach_order);
}

}  // namespace

TEST_CASE("Langou 001, binomial tree: reduce takes ceil(log2 p)(alpha + beta m + gamma m) in the "
          "unidirectional non-overlapping model",
          "[simulate][langou]") {
  const double alpha = 3e-6, beta = 2.5e-10, gamma = 1.5e-10;
  CostModel model = hockney_model(alpha, beta, gamma);
  REQUIRE(model.duplex == Duplex::Half);
  REQUIRE_FALSE(model.overlap);
  const std::int64_t count = 1000, element_bytes = 8;
  const double m = static_cast<double>(count * element_bytes);
  for (int p = 1; p <= 40; ++p) {
    const double expected = ceil_log2(p) * (alpha + beta * m + gamma * m);
    // Relative numbering makes every root cost the same for a commutative operation.
    for (int root : {0, p / 2, p - 1}) {
      CAPTURE(p, root);
      const Schedule s = plan_with(
          "binomial", make_problem(Collective::Reduce, p, root, count, element_bytes, true, 0, model));
      REQUIRE(s.segments.size() == (count > 0 ? 1u : 0u));
      const Simulation sim = simulate_ok(s, model);
      CHECK(sim.makespan == Approx(expected).epsilon(1e-12).margin(1e-18));
    }
  }
}

TEST_CASE("Langou 001, binomial tree: a non-commutative reduce is rank ordered, so a root other "
          "than 0 pays one more message alpha + beta m",
          "[simulate][langou]") {
  const double alpha = 3e-6, beta = 2.5e-10, gamma = 1.5e-10;
  const CostModel model = hockney_model(alpha, beta, gamma);
  const std::int64_t count = 1000, element_bytes = 8;
  const double m = static_cast<double>(count * element_bytes);
  for (int p = 1; p <= 40; ++p)
    for (int root : {0, p - 1}) {
      CAPTURE(p, root);
      const Schedule s = plan_with(
          "binomial", make_problem(Collective::Reduce, p, root, count, element_bytes, false, 0, model));
      const double expected =
          ceil_log2(p) * (alpha + beta * m + gamma * m) + (root != 0 ? alpha + beta * m : 0.0);
      CHECK(simulate_ok(s, model).makespan == Approx(expected).epsilon(1e-12).margin(1e-18));
    }
}

TEST_CASE("Langou 001, binomial tree: bcast takes ceil(log2 p)(alpha + beta m)", "[simulate][langou]") {
  const double alpha = 3e-6, beta = 2.5e-10;
  const CostModel model = hockney_model(alpha, beta, 1e-9);  // gamma is irrelevant to a broadcast
  const std::int64_t count = 4096, element_bytes = 1;
  const double m = static_cast<double>(count * element_bytes);
  for (int p = 1; p <= 40; ++p) {
    const double expected = ceil_log2(p) * (alpha + beta * m);
    for (int root : {0, p / 3, p - 1}) {
      CAPTURE(p, root);
      const Schedule s = plan_with(
          "binomial", make_problem(Collective::Bcast, p, root, count, element_bytes, true, 0, model));
      CHECK(simulate_ok(s, model).makespan == Approx(expected).epsilon(1e-12).margin(1e-18));
    }
  }
}

TEST_CASE("Langou 001, pipeline tree: a chain with gamma = 0 takes exactly "
          "((p-1) + 2(q-1))(alpha + beta s)",
          "[simulate][langou][pipeline]") {
  // Dyadic parameters: every sum the simulator forms is exact in binary floating point,
  // so the comparison can be exact.
  const double alpha = 3.0, beta = 0.25;
  const CostModel model = hockney_model(alpha, beta, 0);
  const std::int64_t element_bytes = 4;
  // The formula counts, per segment, a receive and a send on every intermediate rank:
  // it needs one (p >= 3). With p = 2 the leaf streams straight into the root.
  for (int p : {3, 4, 5, 8, 13, 32})
    for (int q : {1, 2, 3, 7, 20})
      for (std::int64_t per : {1, 16}) {  // s = per * element_bytes bytes
        CAPTURE(p, q, per);
        Problem problem =
            make_problem(Collective::Reduce, p, 0, q * per, element_bytes, true, per * element_bytes, model);
        const Schedule s = tree_reduce_schedule(problem, chain(p), "chain");
        REQUIRE(static_cast<int>(s.segments.size()) == q);
        check_valid(s);
        const double s_bytes = static_cast<double>(per * element_bytes);
        const double expected = ((p - 1) + 2.0 * (q - 1)) * (alpha + beta * s_bytes);
        CHECK(simulate_ok(s, model).makespan == expected);
      }
  // p = 2: no rank forwards, so the q transfers follow one another: q(alpha + beta s).
  for (int q : {1, 2, 5}) {
    const Schedule s = tree_reduce_schedule(
        make_problem(Collective::Reduce, 2, 0, q, element_bytes, true, element_bytes, model), chain(2),
        "chain");
    CHECK(simulate_ok(s, model).makespan == q * (alpha + beta * element_bytes));
  }
}

TEST_CASE("Langou 001, pipeline tree with gamma > 0: between the exact critical-path bound and "
          "((p-1) + 2(q-1))(alpha + beta s + gamma s)",
          "[simulate][langou][pipeline]") {
  const double alpha = 3.0, beta = 0.25, gamma = 0.125;
  const CostModel model = hockney_model(alpha, beta, gamma);
  const std::int64_t element_bytes = 8;
  for (int p : {3, 4, 6, 9, 17})
    for (int q : {1, 2, 4, 9})
      for (std::int64_t per : {1, 5}) {
        CAPTURE(p, q, per);
        const Schedule s = tree_reduce_schedule(
            make_problem(Collective::Reduce, p, 0, q * per, element_bytes, true, per * element_bytes, model),
            chain(p), "chain");
        REQUIRE(static_cast<int>(s.segments.size()) == q);
        const double sb = static_cast<double>(per * element_bytes);
        const double T = alpha + beta * sb;  // one segment transfer
        const double G = gamma * sb;         // one segment reduction
        const double langou = ((p - 1) + 2.0 * (q - 1)) * (T + G);
        // Lower bound, valid for any execution of this chain in the unidirectional,
        // non-overlapping model. Rank 1 (an intermediate rank since p >= 3) owns one port
        // that serves, one at a time, its q receives (T each), q reductions (G each) and
        // q sends (T each): q(2T + G). Its first receive cannot start before segment 0
        // went through ranks p-2 .. 2, each of which must receive it, reduce it and only
        // then send it: (p-3)(T + G) after time 0. After rank 1's last send, the root
        // still reduces that segment: G. In all:
        //   (p-3)(T+G) + q(2T+G) + G  =  (p-1)(T+G) + (q-1)(2T+G).
        // The bound is attained by the schedule (every rank forwards a segment as soon as
        // it can), so the simulation must match it; Langou's formula, which charges the
        // reduction on both sides of every pipelined step, is an upper bound.
        const double lower = (p - 3) * (T + G) + q * (2 * T + G) + G;
        const double makespan = simulate_ok(s, model).makespan;
        CHECK(makespan <= Approx(langou).epsilon(1e-12));
        CHECK(makespan >= Approx(lower).epsilon(1e-12));
        CHECK(makespan == Approx(lower).epsilon(1e-12));
        CHECK(lower <= langou);
      }
}

TEST_CASE("Canon & Antoniu 000, Proposition 13: a binomial tree of order k reduces 2^k elements "
          "in k(d + c)",
          "[simulate][dc-model]") {
  const std::vector<std::pair<double, double>> costs = {{1, 1}, {1, 2}, {2, 1}, {3, 1}, {1, 0}, {0, 1}, {0.5, 4}};
  for (const auto& [d, c] : costs) {
    const CostModel model = overlap_model(d, c);
    for (int k = 0; k <= 8; ++k) {
      const int n = 1 << k;
      CAPTURE(d, c, k);
      // One indivisible element per rank: count 1, one byte, beta = 0.
      const Schedule s =
          plan_with("binomial", make_problem(Collective::Reduce, n, 0, 1, 1, true, 0, model));
      check_valid(s);
      CHECK(simulate_ok(s, model).makespan == Approx(k * (d + c)).epsilon(1e-12).margin(1e-12));
    }
  }
}

TEST_CASE("Canon & Antoniu 000, Proposition 16: a Fibonacci tree of order k has F(k+2) nodes and "
          "length d + (k-1) max(d, c) + c",
          "[simulate][dc-model][fibonacci]") {
  const std::vector<std::pair<double, double>> costs = {{1, 1}, {1, 2}, {2, 1}, {3, 1}};
  for (int k = 1; k <= 10; ++k) {
    const Tree tree = fibonacci_tree(k);
    CAPTURE(k);
    REQUIRE(tree.size() == fibonacci(k + 2));
    for (const auto& [d, c] : costs) {
      CAPTURE(d, c);
      const CostModel model = overlap_model(d, c);
      const Problem problem =
          make_problem(Collective::Reduce, tree.size(), tree.root, 1, 1, true, 0, model);
      const Schedule s = tree_reduce_schedule(problem, tree, "fibonacci");
      check_valid(s);
      const double expected = d + (k - 1) * std::max(d, c) + c;
      CHECK(simulate_ok(s, model).makespan == Approx(expected).epsilon(1e-12));
    }
  }
}

TEST_CASE("Canon & Antoniu 000, Theorem 17 (d = c): the Fibonacci tree of order k beats the "
          "binomial tree on F(k+2) elements once k >= 4",
          "[simulate][dc-model][fibonacci]") {
  // With d = c = 1 the binomial tree on n elements takes at most ceil(log2 n)(d + c)
  // (Proposition 13; proof of Theorem 18), the Fibonacci tree d + (k-1) + c = k + 1
  // (Proposition 16), and Theorem 17 makes the Fibonacci tree the only tree that reduces
  // F(k+2) elements that fast; for k >= 4 the binomial tree is not isomorphic to it (its
  // root has ceil(log2 n) < k children), so it must be strictly slower.
  const CostModel model = overlap_model(1, 1);
  for (int k = 4; k <= 10; ++k) {
    const Tree tree = fibonacci_tree(k);
    const int n = tree.size();
    const Problem problem = make_problem(Collective::Reduce, n, tree.root, 1, 1, true, 0, model);
    const double fib = simulate_ok(tree_reduce_schedule(problem, tree, "fibonacci"), model).makespan;
    const double bin = simulate_ok(plan_with("binomial", problem), model).makespan;
    CAPTURE(k, n, fib, bin);
    CHECK(bin <= Approx(2.0 * ceil_log2(n)));
    CHECK(fib == Approx(k + 1.0));
    CHECK(fib < bin);
  }
}

TEST_CASE("Simulator: records a start and end for every step and refuses unmatched messages",
          "[simulate]") {
  const CostModel model = default_model();
  const Schedule s = plan_with("binomial", make_problem(Collective::Reduce, 7, 3, 100, 4, true, 40, model));
  const Simulation sim = simulate_ok(s, model);
  REQUIRE(sim.timing.size() == 7u);
  double latest = 0;
  for (int r = 0; r < 7; ++r) {
    REQUIRE(sim.timing[r].size() == s.steps[r].size());
    for (const StepTiming& t : sim.timing[r]) {
      CHECK(t.start >= 0);
      CHECK(t.end >= t.start);
      latest = std::max(latest, t.end);
    }
  }
  CHECK(sim.makespan == latest);

  Schedule broken = s;
  for (auto& rank : broken.steps) {
    auto it = std::find_if(rank.begin(), rank.end(), [](const Step& st) { return st.kind == StepKind::Send; });
    if (it != rank.end()) {
      rank.erase(it);
      break;
    }
  }
  const Simulation bad = simulate(broken, model);
  CHECK_FALSE(bad.ok);
  CHECK_FALSE(bad.error.empty());
}

TEST_CASE("Simulator: every tree schedule simulates under the model it was planned for (half and "
          "full duplex, with and without overlap)",
          "[simulate]") {
  // Regression: the worklist simulator once forgot to wake the sender of the receive
  // that a half-duplex port serves next after one of its own sends started, and
  // reported about 7% of these valid schedules as port deadlocks.
  CostModel half_full = hockney_model(1, 0.5, 0.25);
  half_full.duplex = Duplex::Full;
  const std::vector<CostModel> models = {hockney_model(1, 0.5, 0.25), overlap_model(1, 2), half_full,
                                         default_model()};
  std::mt19937 rng(20240601);  // fixed: the sweep is deterministic
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int trial = 0; trial < 1500; ++trial) {
    const int p = pick(1, 9);
    std::vector<int> order(p), parent(p, -1);
    for (int i = 0; i < p; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    for (int i = 1; i < p; ++i) parent[order[i]] = order[pick(0, i - 1)];
    const int tree_root = order[0];
    std::shuffle(order.begin(), order.end(), rng);
    const Tree tree = tree_from_parents(tree_root, parent, order);
    const CostModel& model = models[pick(0, static_cast<int>(models.size()) - 1)];
    const bool bcast = pick(0, 1) == 1;
    const int nseg = pick(0, 4);
    const int root = bcast ? tree_root : pick(0, p - 1);
    const Problem problem = make_problem(bcast ? Collective::Bcast : Collective::Reduce, p, root, nseg, 4, true, 4, model);
    const Schedule s = bcast ? tree_bcast_schedule(problem, tree, "random") : tree_reduce_schedule(problem, tree, "random");
    CAPTURE(trial, label(s), model.spec());
    check_valid(s);
    simulate_ok(s, model);
  }
}

TEST_CASE("Simulator: a message spanning segments pays one latency for all their bytes", "[simulate][span]") {
  // Rank 1 sends 3 segments of 1000 elements to rank 0, which combines them: as three
  // messages, or as one spanned message (Step::span), under alpha = 1 ms.
  const CostModel model = hockney_model(1e-3, 1e-9, 1e-10);
  const auto two_ranks = [](bool spanned) {
    Schedule s;
    s.collective = Collective::Reduce;
    s.algorithm = "handmade";
    s.nranks = 2;
    s.count = 3000;
    s.element_bytes = 4;
    for (int k = 0; k < 3; ++k) s.segments.push_back({k * 1000, 1000});
    s.slots = {3, 0};
    s.steps.assign(2, {});
    if (spanned) {
      s.steps[1] = {Step::send(0, 0, Buffer::Input).spanning(3)};
      s.steps[0] = {Step::recv_into_slot(1, 0, 0).spanning(3), Step::copy(0).spanning(3),
                    Step::reduce(0, 0, false).spanning(3)};
    } else {
      for (int k = 0; k < 3; ++k) {
        s.steps[1].push_back(Step::send(0, k, Buffer::Input));
        s.steps[0].push_back(Step::recv_into_slot(1, k, k));
      }
      for (int k = 0; k < 3; ++k) {
        s.steps[0].push_back(Step::copy(k));
        s.steps[0].push_back(Step::reduce(k, k, false));
      }
    }
    return s;
  };
  const Simulation one = simulate(two_ranks(true), model), three = simulate(two_ranks(false), model);
  REQUIRE(one.ok);
  REQUIRE(three.ok);
  const double bytes = 12000, transfer = model.transfer(static_cast<std::int64_t>(bytes));
  // One message: alpha + 12000 beta, then the copy and the combine of all 12000 bytes.
  CHECK(one.makespan == Approx(transfer + model.copy(12000) + model.reduce(12000)).epsilon(1e-9));
  // Three: every message pays alpha, one after another on the ports.
  CHECK(three.makespan >= 3 * model.transfer(4000) - 1e-12);
  CHECK(three.makespan - one.makespan >= 1.9e-3);
}

TEST_CASE("A link whose latency is in flight (port=) frees the ports after the bytes at the cards' rate, and "
          "passes one message's bytes at a time between two ranks",
          "[simulate]") {
  // Two sites 10 ms apart, 1e-7 s a byte end to end, 1e-9 at the cards. Rank 0 sends two
  // segments of 1000 B to rank 1, and (a broadcast over three ranks, flat) one to each
  // of two ranks.
  const auto sites = [](int p) {
    nlohmann::json t;
    for (int r = 0; r < p; ++r) t["ranks"].push_back("s" + std::to_string(r));
    for (int a = 0; a < p; ++a)
      for (int b = a + 1; b < p; ++b)
        t["links"]["s" + std::to_string(a) + "-s" + std::to_string(b)] = "hockney:alpha=1e-2,beta=1e-7,port=1e-9";
    return std::make_shared<const Topology>(topology_from_json(t).topology);
  };
  const CostModel model = hockney_model(1e-6, 1e-10, 0);
  {
    Problem problem = make_problem(Collective::Bcast, 2, 0, 2000, 1, true, 1000, model);
    problem.topology = sites(2);
    const Simulation sim = simulate(plan_with("chain", problem), model, problem.topology.get());
    REQUIRE(sim.ok);
    // The second segment's bytes follow the first's on the link: 10 ms + 2 x 0.1 ms. (With
    // the ports alone it would leave after the first's 1 us at the cards: 10.101 ms.)
    CHECK(sim.makespan == Approx(1e-2 + 2 * 1000 * 1e-7));
  }
  {
    Problem problem = make_problem(Collective::Bcast, 3, 0, 1000, 1, true, 0, model);
    problem.topology = sites(3);
    const Simulation sim = simulate(plan_with("flat", problem), model, problem.topology.get());
    REQUIRE(sim.ok);
    // Two links: the second message leaves once the cards have passed the first's bytes
    // (1 us), its latency in flight beside the first's. (Held throughout: 2 x 10.1 ms.)
    CHECK(sim.makespan == Approx(1000 * 1e-9 + 1e-2 + 1000 * 1e-7));
  }
}

namespace {

// Ranks 8..15 each send their input to rank r - 8 at once, then ranks 1..7 pass their
// sums to rank 0: a reduce whose first messages all leave together. `node_of` places
// each rank on a node of one cluster whose link between nodes is 1 us + 1e-9 s a byte.
struct EightAtOnce {
  Schedule schedule;
  std::shared_ptr<const Topology> topology;
};
EightAtOnce eight_at_once(const std::function<std::string(int)>& node_of, std::int64_t bytes) {
  Schedule s;
  s.collective = Collective::Reduce;
  s.algorithm = "hand";
  s.nranks = 16;
  s.root = 0;
  s.count = bytes;
  s.element_bytes = 1;
  s.segments.push_back({0, bytes});
  s.steps.assign(16, {});
  s.slots.assign(16, 1);
  s.steps[0] = {Step::recv_into_slot(8, 0, 0), Step::copy(0), Step::reduce(0, 0, false)};
  for (int r = 1; r < 8; ++r) {
    s.steps[0].push_back(Step::recv_into_slot(r, 0, 0));
    s.steps[0].push_back(Step::reduce(0, 0, false));
    s.steps[r] = {Step::recv_into_slot(r + 8, 0, 0), Step::copy(0), Step::reduce(0, 0, false), Step::send(0, 0)};
  }
  for (int r = 8; r < 16; ++r) s.steps[r] = {Step::send(r - 8, 0, Buffer::Input)};
  nlohmann::json t;
  for (int r = 0; r < 16; ++r) {
    t["ranks"].push_back("c0");
    t["nodes"].push_back(node_of(r));
  }
  t["links"]["c0-c0"] = "hockney:alpha=1e-6,beta=1e-9";
  return {s, std::make_shared<const Topology>(topology_from_json(t).topology)};
}

// When the first messages (ranks 8..15's sends) started, in increasing order.
std::vector<double> first_message_starts(const EightAtOnce& e, const CostModel& model) {
  const Simulation sim = simulate(e.schedule, model, e.topology.get());
  REQUIRE(sim.ok);
  std::vector<double> starts;
  for (int r = 8; r < 16; ++r) starts.push_back(sim.timing[r][0].start);
  std::sort(starts.begin(), starts.end());
  return starts;
}

}  // namespace

TEST_CASE("Node cards: messages between two nodes of several ranks pass their bytes through each "
          "node's card one after another, where inside a node or from nodes of one rank none waits",
          "[simulate][cards]") {
  const CostModel model = hockney_model(1e-7, 1e-10, 0);
  const std::int64_t m = 100000;  // 100 us a message's bytes at the link's 1e-9 s a byte
  const double bytes_time = 1e-9 * static_cast<double>(m);
  SECTION("eight senders on one node, eight receivers on another: the k-th starts after k messages' bytes") {
    const auto starts = first_message_starts(eight_at_once([](int r) { return r < 8 ? "n0" : "n1"; }, m), model);
    for (int k = 0; k < 8; ++k) CHECK(starts[k] == Approx(k * bytes_time));
  }
  SECTION("eight senders on eight nodes, eight receivers on one node: its receiving card serves them in turn") {
    const auto starts = first_message_starts(
        eight_at_once([](int r) { return r < 8 ? std::string("n0") : "s" + std::to_string(r); }, m), model);
    for (int k = 0; k < 8; ++k) CHECK(starts[k] == Approx(k * bytes_time));
  }
  SECTION("every rank its own node: all start at once") {
    const auto starts = first_message_starts(eight_at_once([](int r) { return "n" + std::to_string(r); }, m), model);
    for (const double start : starts) CHECK(start == 0);
  }
  SECTION("every pair on a node of its own (sender and receiver together): no card, all at once") {
    const auto starts = first_message_starts(eight_at_once([](int r) { return "n" + std::to_string(r % 8); }, m), model);
    for (const double start : starts) CHECK(start == 0);
  }
  SECTION("two nodes each way: pairs split over four nodes share two cards each way") {
    // Senders 8..11 on n2, 12..15 on n3; receivers 0..3 on n0, 4..7 on n1: each card passes four.
    const auto starts = first_message_starts(
        eight_at_once([](int r) { return r < 4 ? "n0" : r < 8 ? "n1" : r < 12 ? "n2" : "n3"; }, m), model);
    for (int k = 0; k < 8; ++k) CHECK(starts[k] == Approx((k / 2) * bytes_time));
  }
}
