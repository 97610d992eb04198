// The validator (symbolic execution of a schedule): every defect it claims to catch is
// caught with a message, and - checked against an independent concrete interpreter -
// every schedule it accepts really computes the collective.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <map>
#include <optional>
#include <random>

#include "planner/cost_model.h"
#include "planner/tree.h"
#include "support.h"

using namespace canopy::planner;
using namespace canopy::planner::testing;

namespace {

Schedule blank(Collective collective, int p, int root, int nseg, bool commutative = true) {
  Schedule s;
  s.collective = collective;
  s.algorithm = "handmade";
  s.nranks = p;
  s.root = root;
  s.count = nseg;
  s.element_bytes = 4;
  s.commutative = commutative;
  for (int k = 0; k < nseg; ++k) s.segments.push_back({k, 1});
  s.steps.assign(p, {});
  s.slots.assign(p, 0);
  return s;
}

// Rank 1 sends its input to the root 0, which combines it on the right.
Schedule two_rank_reduce(int nseg = 1, bool commutative = false) {
  Schedule s = blank(Collective::Reduce, 2, 0, nseg, commutative);
  s.slots[0] = nseg;
  for (int k = 0; k < nseg; ++k) {
    s.steps[1].push_back(Step::send(0, k, Buffer::Input));
    s.steps[0].push_back(Step::recv_into_slot(1, k, k));
  }
  for (int k = 0; k < nseg; ++k) {
    s.steps[0].push_back(Step::copy(k));
    s.steps[0].push_back(Step::reduce(k, k, false));
  }
  return s;
}

Schedule binomial(int p, int root, bool commutative, const CostModel& model = hockney_model(1, 0, 0),
                  std::int64_t count = 1, std::int64_t segment_bytes = 0) {
  return plan_with("binomial",
                   make_problem(Collective::Reduce, p, root, count, 4, commutative, segment_bytes, model));
}

// Index of the first step of rank r matching `pred`.
template <class Pred>
int find_step(const Schedule& s, int r, Pred pred) {
  const auto& steps = s.steps[r];
  const auto it = std::find_if(steps.begin(), steps.end(), pred);
  REQUIRE(it != steps.end());
  return static_cast<int>(it - steps.begin());
}

// ---- an independent concrete interpreter -------------------------------------------
//
// Runs a schedule with real values under MPI semantics, in a random interleaving:
// nonblocking sends and receives, the i-th send from a to b pairs with the i-th
// receive at b from a. A value is the list of (rank, segment) tokens combined into it,
// and "combine" concatenates, so it is associative but not commutative. On a reduce
// root the input is the receive buffer (MPI_IN_PLACE): reading it after the
// accumulator was written reads the partial result.
using Value = std::vector<int>;

struct Interpreted {
  bool ok = true;
  std::string error;
  std::vector<std::vector<std::optional<Value>>> acc;  // [rank][segment]
};

Interpreted interpret(const Schedule& s, std::mt19937& rng) {
  Interpreted out;
  const int p = s.nranks;
  const int nseg = static_cast<int>(s.segments.size());
  auto token = [](int rank, int seg) { return rank * 1000 + seg; };
  out.acc.assign(p, std::vector<std::optional<Value>>(nseg));
  std::vector<std::vector<bool>> acc_pending(p, std::vector<bool>(nseg, false));
  struct SlotState {
    int state = 0;            // 0 free, 1 pending, 2 full
    std::vector<Value> data;  // per segment of the receive that filled it (packed from here)
  };
  std::vector<std::vector<SlotState>> slots(p);
  for (int r = 0; r < p; ++r) slots[r].resize(s.slots[r]);
  if (s.collective == Collective::Bcast)
    for (int k = 0; k < nseg; ++k) out.acc[s.root][k] = Value{token(s.root, k)};
  struct Posted {
    int rank, step;
    std::vector<Value> data;  // per segment the message spans
  };
  std::map<std::pair<int, int>, std::deque<Posted>> sends, recvs;  // (from, to)
  std::vector<int> pc(p, 0);
  auto fail = [&](const std::string& why) {
    out.ok = false;
    out.error = why;
  };
  auto deliver = [&](const std::pair<int, int>& key) {
    auto& ss = sends[key];
    auto& rs = recvs[key];
    while (out.ok && !ss.empty() && !rs.empty()) {
      const Posted snd = ss.front(), rcv = rs.front();
      ss.pop_front();
      rs.pop_front();
      const Step& a = s.steps[snd.rank][snd.step];
      const Step& b = s.steps[rcv.rank][rcv.step];
      if (a.segment != b.segment || a.span != b.span) return fail("segments of a matched message differ");
      if (b.buffer == Buffer::Slot) {
        for (int j = 0; j < b.span; ++j) slots[rcv.rank][b.slot + j].state = 2;
        slots[rcv.rank][b.slot].data = snd.data;
      } else {
        for (int k = b.segment; k <= b.last_segment(); ++k) {
          out.acc[rcv.rank][k] = snd.data[k - b.segment];
          acc_pending[rcv.rank][k] = false;
        }
      }
    }
  };
  // Executes rank r's next step; false when it must wait.
  auto step = [&](int r) -> bool {
    const Step& st = s.steps[r][pc[r]];
    switch (st.kind) {
      case StepKind::Recv:
        if (st.buffer == Buffer::Slot) {
          for (int j = 0; j < st.span; ++j) {
            if (slots[r][st.slot + j].state != 0) return fail("receive into a busy slot"), false;
            slots[r][st.slot + j].state = 1;
          }
        } else {
          for (int k = st.segment; k <= st.last_segment(); ++k) {
            if (acc_pending[r][k]) return fail("two receives into one segment"), false;
            acc_pending[r][k] = true;
          }
        }
        recvs[{st.peer, r}].push_back({r, pc[r], {}});
        ++pc[r];
        deliver({st.peer, r});
        return true;
      case StepKind::Send: {
        std::vector<Value> data;
        // MPI_IN_PLACE: a reduce's root, or any allreduce rank, reads its input from the accumulator.
        const bool in_place = (s.collective == Collective::Reduce && r == s.root) || s.collective == Collective::Allreduce;
        for (int k = st.segment; k <= st.last_segment(); ++k)
          if (!(st.buffer == Buffer::Input && !(in_place && out.acc[r][k])) && acc_pending[r][k]) return false;
        for (int k = st.segment; k <= st.last_segment(); ++k) {
          const auto& acc = out.acc[r][k];
          if (st.buffer == Buffer::Input && !(in_place && acc)) {
            data.push_back(Value{token(r, k)});
          } else {
            if (!acc) return fail("send of an empty buffer"), false;
            data.push_back(*acc);
          }
        }
        sends[{r, st.peer}].push_back({r, pc[r], data});
        ++pc[r];
        deliver({r, st.peer});
        return true;
      }
      case StepKind::Reduce: {
        auto& slot = slots[r][st.slot];
        if (slot.state == 0) return fail("reduce of an empty slot"), false;
        if (slot.state == 1) return false;
        for (int k = st.segment; k <= st.last_segment(); ++k)
          if (acc_pending[r][k]) return false;
        if (static_cast<int>(slot.data.size()) != st.span) return fail("reduce of a slot packed otherwise"), false;
        for (int k = st.segment; k <= st.last_segment(); ++k) {
          auto& acc = out.acc[r][k];
          const Value& incoming = slot.data[k - st.segment];
          if (!acc) return fail("reduce into an empty accumulator"), false;
          Value combined = st.incoming_is_left ? incoming : *acc;
          const Value& right = st.incoming_is_left ? *acc : incoming;
          combined.insert(combined.end(), right.begin(), right.end());
          acc = std::move(combined);
        }
        for (int j = 0; j < st.span; ++j) slots[r][st.slot + j] = SlotState{};
        ++pc[r];
        return true;
      }
      case StepKind::Copy:
        for (int k = st.segment; k <= st.last_segment(); ++k)
          if (acc_pending[r][k]) return false;
        for (int k = st.segment; k <= st.last_segment(); ++k) out.acc[r][k] = Value{token(r, k)};
        ++pc[r];
        return true;
    }
    return false;
  };
  while (out.ok) {
    std::vector<int> runnable;
    for (int r = 0; r < p; ++r)
      if (pc[r] < static_cast<int>(s.steps[r].size())) runnable.push_back(r);
    std::shuffle(runnable.begin(), runnable.end(), rng);
    bool moved = false;
    for (int r : runnable)
      if (step(r)) {
        moved = true;
        break;
      }
    if (!moved) break;
  }
  if (!out.ok) return out;
  for (int r = 0; r < p; ++r)
    if (pc[r] < static_cast<int>(s.steps[r].size())) {
      fail("rank " + std::to_string(r) + " is stuck");
      return out;
    }
  for (int k = 0; k < nseg; ++k) {
    if (s.collective != Collective::Bcast) {
      Value expected;
      for (int r = 0; r < p; ++r) expected.push_back(token(r, k));
      for (int r = 0; r < p; ++r) {
        if (s.collective == Collective::Reduce && r != s.root) continue;
        Value got = out.acc[r][k].value_or(Value{});
        if (s.commutative) std::sort(got.begin(), got.end());
        if (got != expected) fail("rank " + std::to_string(r) + " holds the wrong result in segment " + std::to_string(k));
      }
    } else {
      for (int r = 0; r < p; ++r)
        if (out.acc[r][k] != Value{token(s.root, k)}) fail("rank " + std::to_string(r) + " lacks the data");
    }
  }
  return out;
}

// A random spanning tree: ranks in random order, each hangs below an earlier one.
Tree random_tree(int p, int root, std::mt19937& rng) {
  std::vector<int> order(p);
  for (int i = 0; i < p; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  std::iter_swap(order.begin(), std::find(order.begin(), order.end(), root));
  std::vector<int> parent(p, -1);
  for (int i = 1; i < p; ++i) parent[order[i]] = order[std::uniform_int_distribution<int>(0, i - 1)(rng)];
  std::shuffle(order.begin(), order.end(), rng);  // children order
  return tree_from_parents(root, parent, order);
}

}  // namespace

TEST_CASE("Validator accepts a hand-written two-rank reduce (baseline of the negative tests)", "[validate]") {
  check_valid(two_rank_reduce(1));
  check_valid(two_rank_reduce(3));
  std::mt19937 rng(1);
  const Interpreted run = interpret(two_rank_reduce(3), rng);
  INFO(run.error);
  CHECK(run.ok);
}

// two_rank_reduce with its segments as one message (Step::span): one send, one receive
// packed into slots 0..nseg-1, one copy and one reduce over them all.
Schedule two_rank_spanned_reduce(int nseg, bool commutative = false) {
  Schedule s = blank(Collective::Reduce, 2, 0, nseg, commutative);
  s.slots[0] = nseg;
  s.steps[1] = {Step::send(0, 0, Buffer::Input).spanning(nseg)};
  s.steps[0] = {Step::recv_into_slot(1, 0, 0).spanning(nseg), Step::copy(0).spanning(nseg),
                Step::reduce(0, 0, false).spanning(nseg)};
  return s;
}

TEST_CASE("Validator: a step spanning several segments moves and combines them all as one", "[validate][span]") {
  check_valid(two_rank_spanned_reduce(3));
  std::mt19937 rng(2);
  const Interpreted run = interpret(two_rank_spanned_reduce(3), rng);
  INFO(run.error);
  CHECK(run.ok);
  // A spanned receive split over two reduces of the segments it packed: the second
  // would read slot 1, which holds no segment of its own.
  Schedule s = two_rank_spanned_reduce(2);
  s.steps[0][2] = Step::reduce(0, 0, false);
  s.steps[0].push_back(Step::reduce(1, 1, false));
  check_rejected(s, "holds 2 segments packed, not 1");
  s.steps[0][2] = Step::reduce(1, 1, false);
  check_rejected(s, "part of a receive packed from an earlier slot");
  // The two ends of a message must span the same segments.
  s = two_rank_spanned_reduce(3);
  s.steps[1][0] = Step::send(0, 0, Buffer::Input).spanning(2);
  check_rejected(s, "is segment 0..1 but is received as segment 0..2");
  // A span past the last segment, a span that is not positive, spans of other kinds, and
  // slots that a spanned receive would pack past.
  s = two_rank_spanned_reduce(3);
  s.steps[1][0] = Step::send(0, 1, Buffer::Input).spanning(3);
  check_rejected(s, "spans segments past the last");
  s.steps[1][0] = Step::send(0, 0, Buffer::Input).spanning(0);
  check_rejected(s, "span 0 is not positive");
  s = two_rank_spanned_reduce(3);
  s.slots[0] = 2;
  check_rejected(s, "slots outside 0..1");
  Schedule bcast = blank(Collective::Bcast, 2, 0, 2);
  bcast.staging_entries = 2;
  bcast.staging_entry_bytes = 64;
  bcast.steps[0] = {Step::stage(0, 0, 1, Buffer::Accumulator).spanning(2)};
  bcast.steps[1] = {Step::fetch(0, 0, 0)};
  check_rejected(bcast, "only a send, receive, reduce or copy spans segments");
  // A contribution counted twice in one segment of a span is found there.
  s = two_rank_spanned_reduce(3);
  s.steps[0].insert(s.steps[0].begin() + 1, Step::copy(2));
  check_rejected(s, "copies the input over data already in the accumulator");
}

TEST_CASE("Validator property: spanned schedules mutated (a step dropped, two swapped, a span shortened) are "
          "rejected or still run right",
          "[validate][span]") {
  std::mt19937 rng(77);
  const auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int mutants = 0, still_valid = 0;
  for (int p : {2, 3, 4, 5, 6, 8}) {
    const Schedule base =
        plan_with("rabenseifner", make_problem(Collective::Allreduce, p, 0, 64, 4, pick(0, 1) == 1, 0, default_model()));
    REQUIRE(validate(base));
    REQUIRE(interpret(base, rng).ok);
    for (int m = 0; m < 200; ++m) {
      Schedule s = base;
      const int r = pick(0, p - 1);
      auto& steps = s.steps[r];
      if (steps.size() < 2) continue;
      const int n = static_cast<int>(steps.size()), i = pick(0, n - 1);
      const int how = pick(0, 2);
      if (how == 0) {
        steps.erase(steps.begin() + i);
      } else if (how == 1) {
        std::swap(steps[i], steps[pick(0, n - 1)]);
      } else {
        if (steps[i].span < 2) continue;
        steps[i].span -= 1;
      }
      if (s.steps[r] == base.steps[r]) continue;
      ++mutants;
      const Validation v = validate(s);
      if (!v.ok) continue;
      ++still_valid;
      // Accepted: it must really compute the allreduce. The simulator finishes it, or
      // says its ports (which serve a rank's transfers in program order, stricter than
      // MPI) cannot: a swapped receive can stand behind a send that waits for it.
      const Interpreted run = interpret(s, rng);
      INFO("accepted by the validator, but the concrete run says: " << run.error);
      CHECK(run.ok);
      const Simulation sim = simulate(s, default_model());
      INFO("accepted by the validator, but the simulator says: " << sim.error);
      CHECK((sim.ok || sim.error.find("its ports serve transfers in an order that deadlocks") != std::string::npos));
    }
  }
  CHECK(mutants > 500);
  CHECK(still_valid < mutants);
}

TEST_CASE("Validator rejects a send without a matching receive", "[validate][negative]") {
  Schedule s = two_rank_reduce();
  s.steps[0].clear();  // the root neither receives nor combines
  s.steps[0].push_back(Step::copy(0));
  check_rejected(s, "sends 1 messages to rank 0 which receives 0");
}

TEST_CASE("Validator rejects a message whose two ends name different segments", "[validate][negative]") {
  Schedule s = two_rank_reduce(2);
  REQUIRE(validate(s).ok);
  // The root receives segment 1 first: MPI pairs it with the first send (segment 0).
  std::swap(s.steps[0][0].segment, s.steps[0][1].segment);
  std::swap(s.steps[0][0].slot, s.steps[0][1].slot);
  check_rejected(s, "is segment 0 but is received as segment 1");
}

TEST_CASE("Validator rejects a deadlock: two ranks each reduce before sending what the other waits for",
          "[validate][negative]") {
  Schedule s = blank(Collective::Reduce, 2, 0, 1);
  s.slots = {1, 1};
  for (int r = 0; r < 2; ++r) {
    const int other = 1 - r;
    s.steps[r] = {Step::recv_into_slot(other, 0, 0), Step::copy(0), Step::reduce(0, 0, other < r),
                  Step::send(other, 0, Buffer::Accumulator)};
  }
  check_rejected(s, "deadlock");
  const Validation v = validate(s);
  // Both ranks are named as waiting forever on their reduce.
  CHECK(v.summary().find("rank 0 step 2") != std::string::npos);
  CHECK(v.summary().find("rank 1 step 2") != std::string::npos);
}

TEST_CASE("Validator rejects a non-commutative binomial reduce with any operand order flipped",
          "[validate][negative][noncommutative]") {
  for (const CostModel& model : {hockney_model(1, 0, 0), default_model()})
    for (int p = 3; p <= 12; ++p)
      for (int root : {0, 1, p - 1}) {
        const Schedule base = binomial(p, root, false, model, 6, 8);
        REQUIRE(validate(base).ok);
        for (int r = 0; r < p; ++r)
          for (std::size_t i = 0; i < base.steps[r].size(); ++i) {
            if (base.steps[r][i].kind != StepKind::Reduce) continue;
            CAPTURE(p, root, r, i);
            Schedule flipped = base;
            flipped.steps[r][i].incoming_is_left = !flipped.steps[r][i].incoming_is_left;
            check_rejected(flipped, "out of rank order for a non-commutative operation");
            // The same flip is harmless when the operation commutes.
            flipped.commutative = true;
            check_valid(flipped);
          }
      }
}

TEST_CASE("Validator rejects a contribution counted twice (a duplicated reduce)", "[validate][negative]") {
  Schedule s = binomial(4, 0, true);
  REQUIRE(validate(s).ok);
  // Rank 1 is a leaf of rank 0. Duplicate its message and the root's reduce of it.
  const int send = find_step(s, 1, [](const Step& st) { return st.kind == StepKind::Send; });
  s.steps[1].insert(s.steps[1].begin() + send, s.steps[1][send]);
  const int extra_slot = s.slots[0]++;
  s.steps[0].insert(s.steps[0].begin(), Step::recv_into_slot(1, 0, extra_slot));
  s.steps[0].push_back(Step::reduce(0, extra_slot, false));
  check_rejected(s, "contributions {1} counted twice");

  // Duplicating only the reduce step reduces a slot that was already consumed.
  Schedule t = binomial(4, 0, true);
  const int red = find_step(t, 0, [](const Step& st) { return st.kind == StepKind::Reduce; });
  t.steps[0].insert(t.steps[0].begin() + red, t.steps[0][red]);
  check_rejected(t, "reduces a slot that no receive fills");
}

TEST_CASE("Validator rejects a scratch slot overwritten before it is reduced", "[validate][negative]") {
  // With overlap, rank 0 posts both receives (from 1 into slot 0, from 2 into slot 1)
  // before it reduces either.
  Schedule s = binomial(3, 0, true, overlap_model(1, 1));
  REQUIRE(validate(s).ok);
  REQUIRE(s.steps[0][0].kind == StepKind::Recv);
  REQUIRE(s.steps[0][1].kind == StepKind::Recv);
  for (Step& st : s.steps[0])
    if (st.slot == 1) st.slot = 0;
  check_rejected(s, "slot still holds an operand not yet reduced");
}

TEST_CASE("Validator rejects a missing contribution (a leaf's message dropped with its reduce)",
          "[validate][negative]") {
  Schedule s = binomial(4, 0, true);
  REQUIRE(validate(s).ok);
  s.steps[1].clear();  // leaf 1 no longer sends
  const int recv = find_step(s, 0, [](const Step& st) { return st.kind == StepKind::Recv && st.peer == 1; });
  const int slot = s.steps[0][recv].slot;
  s.steps[0].erase(s.steps[0].begin() + recv);
  const int red = find_step(s, 0, [&](const Step& st) { return st.kind == StepKind::Reduce && st.slot == slot; });
  s.steps[0].erase(s.steps[0].begin() + red);
  check_rejected(s, "root ends segment 0 with contributions {0,2..3} instead of {0..3}");
}

TEST_CASE("Validator rejects reading the input after the accumulator was written (MPI_IN_PLACE)",
          "[validate][negative]") {
  // Chain 2 -> 1 -> 0: rank 1 combines 2 into its accumulator, then sends its input.
  Schedule s = blank(Collective::Reduce, 3, 0, 1);
  s.slots = {1, 1, 0};
  s.steps[2] = {Step::send(1, 0, Buffer::Input)};
  s.steps[1] = {Step::recv_into_slot(2, 0, 0), Step::copy(0), Step::reduce(0, 0, false),
                Step::send(0, 0, Buffer::Accumulator)};
  s.steps[0] = {Step::recv_into_slot(1, 0, 0), Step::copy(0), Step::reduce(0, 0, false)};
  REQUIRE(validate(s).ok);
  s.steps[1][3].buffer = Buffer::Input;
  check_rejected(s, "reads the input after the accumulator was written");
}

TEST_CASE("Validator rejects other lost or uninitialised data", "[validate][negative]") {
  SECTION("a received operand that is never reduced") {
    Schedule s = two_rank_reduce();
    s.steps[0].pop_back();
    check_rejected(s, "receives an operand that is never reduced");
  }
  SECTION("a reduce into an accumulator that was never initialised") {
    Schedule s = two_rank_reduce();
    s.steps[0].erase(s.steps[0].begin() + 1);  // the copy
    check_rejected(s, "never initialised");
  }
  SECTION("a broadcast rank that never receives") {
    Schedule s = blank(Collective::Bcast, 3, 0, 1);
    s.steps[0] = {Step::send(1, 0)};
    s.steps[1] = {Step::recv_into_accumulator(0, 0)};
    check_rejected(s, "rank 2 never receives segment 0");
  }
  SECTION("segments that do not cover the message") {
    Schedule s = two_rank_reduce(2);
    s.count = 3;
    check_rejected(s, "segments cover 2 of 3 elements");
  }
}

TEST_CASE("Validator property: mutated schedules (a step dropped or two swapped) are rejected or "
          "really compute the collective, and whatever validates simulates under full duplex + overlap",
          "[validate][property]") {
  // A fresh seed each run explores more schedules; CANOPYTEST_SEED=N replays run N.
  const char* fixed = std::getenv("CANOPYTEST_SEED");
  const std::uint32_t seed =
      fixed ? static_cast<std::uint32_t>(std::strtoul(fixed, nullptr, 10)) : std::random_device{}();
  INFO("seed " << seed << " (replay with CANOPYTEST_SEED=" << seed << ")");
  std::mt19937 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  CostModel full = default_model();
  REQUIRE(full.duplex == Duplex::Full);
  REQUIRE(full.overlap);
  const CostModel half = hockney_model(1, 0.5, 0.25);
  int mutants = 0, still_valid = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int p = pick(1, 8);
    const int root = pick(0, p - 1);
    const bool bcast = pick(0, 3) == 0;
    const bool commutative = bcast || pick(0, 1) == 1;
    const int nseg = pick(1, 3);
    const CostModel& plan_model = pick(0, 1) ? full : half;
    Problem problem = make_problem(bcast ? Collective::Bcast : Collective::Reduce, p, root, nseg * 2, 4,
                                   commutative, 8, plan_model);
    Schedule base;
    if (!commutative || pick(0, 2) == 0) {
      base = plan_with("binomial", problem);
    } else if (bcast) {
      base = tree_bcast_schedule(problem, random_tree(p, root, rng), "random");
    } else {
      base = tree_reduce_schedule(problem, random_tree(p, pick(0, p - 1), rng), "random");
    }
    CAPTURE(trial, label(base));
    REQUIRE(static_cast<int>(base.segments.size()) == nseg);
    {
      const Validation v = validate(base);
      INFO(v.summary());
      REQUIRE(v.ok);
      const Interpreted run = interpret(base, rng);
      INFO(run.error);
      REQUIRE(run.ok);
    }
    std::vector<int> busy;
    for (int r = 0; r < p; ++r)
      if (!base.steps[r].empty()) busy.push_back(r);
    if (busy.empty()) continue;  // p = 1 broadcast: nothing to do

    for (int m = 0; m < 6; ++m) {
      Schedule s = base;
      const int r = busy[pick(0, static_cast<int>(busy.size()) - 1)];
      auto& steps = s.steps[r];
      const int n = static_cast<int>(steps.size());
      const bool drop = pick(0, 2) == 0 || n < 2;
      std::string what;
      if (drop) {
        const int i = pick(0, n - 1);
        what = "drop rank " + std::to_string(r) + " step " + std::to_string(i);
        steps.erase(steps.begin() + i);
      } else {
        const int i = pick(0, n - 1);
        const int j = pick(0, 1) ? std::min(i + 1, n - 1) : pick(0, n - 1);
        what = "swap rank " + std::to_string(r) + " steps " + std::to_string(i) + ", " + std::to_string(j);
        std::swap(steps[i], steps[j]);
        if (steps[i] == steps[j]) continue;  // no change
      }
      CAPTURE(what);
      ++mutants;
      const Validation v = validate(s);
      if (!v.ok) {
        CHECK_FALSE(v.errors.empty());
        CHECK_FALSE(v.summary().empty());
        continue;
      }
      ++still_valid;
      // Every step of a tree schedule is needed: dropping one can never leave it valid.
      CHECK_FALSE(drop);
      const Interpreted run = interpret(s, rng);
      INFO("accepted by the validator, but the concrete run says: " << run.error);
      CHECK(run.ok);
      const Simulation sim = simulate(s, full);
      INFO("accepted by the validator, but the simulator says: " << sim.error);
      CHECK(sim.ok);
    }
  }
  // The property is not vacuous: both outcomes occur.
  CHECK(mutants > 1000);
  CHECK(still_valid > 0);
  CHECK(still_valid < mutants);
}
