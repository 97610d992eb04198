// The JSON form of a schedule (what the schedule log records and tools read back).
#include <catch2/catch.hpp>

#include <stdexcept>

#include "planner/cost_model.h"
#include "planner/schedule_json.h"
#include "planner/staged.h"
#include "planner/tree.h"
#include "support.h"

using namespace canopy::planner;
using namespace canopy::planner::testing;
using nlohmann::json;

namespace {

void check_equal(const Schedule& a, const Schedule& b) {
  CHECK(a.collective == b.collective);
  CHECK(a.algorithm == b.algorithm);
  CHECK(a.nranks == b.nranks);
  CHECK(a.root == b.root);
  CHECK(a.count == b.count);
  CHECK(a.element_bytes == b.element_bytes);
  CHECK(a.commutative == b.commutative);
  REQUIRE(a.segments.size() == b.segments.size());
  for (std::size_t k = 0; k < a.segments.size(); ++k) {
    CHECK(a.segments[k].first == b.segments[k].first);
    CHECK(a.segments[k].count == b.segments[k].count);
  }
  CHECK(a.slots == b.slots);
  CHECK(a.staging_entries == b.staging_entries);
  CHECK(a.staging_entry_bytes == b.staging_entry_bytes);
  CHECK(a.direct == b.direct);
  REQUIRE(a.steps.size() == b.steps.size());
  for (std::size_t r = 0; r < a.steps.size(); ++r) {
    REQUIRE(a.steps[r].size() == b.steps[r].size());
    for (std::size_t i = 0; i < a.steps[r].size(); ++i) {
      CAPTURE(r, i, describe(a.steps[r][i]), describe(b.steps[r][i]));
      CHECK(a.steps[r][i] == b.steps[r][i]);
    }
  }
}

std::vector<Schedule> samples() {
  std::vector<Schedule> out;
  for (const CostModel& model : {default_model(), hockney_model(1, 0.5, 0.25)}) {
    out.push_back(plan_with("binomial", make_problem(Collective::Reduce, 7, 3, 100, 4, true, 40, model)));
    out.push_back(plan_with("binomial", make_problem(Collective::Reduce, 6, 5, 9, 8, false, 16, model)));
    out.push_back(plan_with("binomial", make_problem(Collective::Bcast, 5, 2, 1000, 1, true, 300, model)));
    out.push_back(plan_with("binomial", make_problem(Collective::Reduce, 1, 0, 0, 4, true, 0, model)));
  }
  // Every step kind and buffer, including a send of the input and a reduce on the left.
  Schedule s = out[1];
  s.steps[0].push_back(Step::reduce(0, 1, true));
  out.push_back(s);
  // The direct steps (expose, read, write) and the ring and flag they come with.
  Problem direct = with_staging_ring(make_problem(Collective::Bcast, 4, 1, 50000, 1, true, 0, default_model()));
  direct.direct_access = true;
  out.push_back(plan_with("cma-bcast", direct));
  // Steps spanning several segments (Rabenseifner's ranges, its fold on 5 ranks).
  out.push_back(plan_with("rabenseifner", make_problem(Collective::Allreduce, 5, 0, 40, 4, false, 0, default_model())));
  return out;
}

// A valid document to break, one field at a time.
json sample_json() { return schedule_to_json(samples()[1]); }

void check_rejected(const json& j, const std::string& needle) {
  CAPTURE(j.dump().substr(0, 200));
  try {
    schedule_from_json(j);
    FAIL_CHECK("schedule_from_json accepted it");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    CAPTURE(what, needle);
    CHECK(what.find(needle) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("Schedule JSON: from_json(to_json(s)) equals s, also through the text form", "[json]") {
  for (const Schedule& s : samples()) {
    CAPTURE(label(s));
    check_equal(schedule_from_json(schedule_to_json(s)), s);
    const std::string text = schedule_to_json(s).dump();
    check_equal(schedule_from_json(json::parse(text)), s);
    CHECK(schedule_to_json(schedule_from_json(json::parse(text))) == schedule_to_json(s));
  }
}

TEST_CASE("Schedule JSON: the documented compact step tuples", "[json]") {
  Schedule s;
  s.nranks = 1;
  s.steps = {{Step::send(1, 2, Buffer::Input), Step::send(3, 4, Buffer::Accumulator), Step::recv_into_slot(5, 6, 7),
              Step::recv_into_accumulator(8, 9), Step::reduce(10, 11, true), Step::reduce(12, 13, false),
              Step::copy(14), Step::expose(15), Step::read(16, 17), Step::write(18, 19)}};
  s.slots = {0};
  const json j = schedule_to_json(s);
  CHECK(j["steps"][0] == json::parse(R"([["send",1,2,"input"],["send",3,4,"acc"],["recv",5,6,"slot",7],
                                         ["recv",8,9,"acc"],["reduce",10,11,"left"],["reduce",12,13,"right"],
                                         ["copy",14],["expose",15],["read",16,17],["write",18,19]])"));
  CHECK(j["collective"] == "reduce");
  check_equal(schedule_from_json(j), s);
}

TEST_CASE("Schedule JSON: a step spanning segments writes them as [first, last]", "[json][span]") {
  Schedule s;
  s.nranks = 1;
  s.steps = {{Step::send(1, 2, Buffer::Input).spanning(3), Step::recv_into_slot(5, 6, 7).spanning(2),
              Step::recv_into_accumulator(8, 9).spanning(4), Step::reduce(6, 7, true).spanning(2),
              Step::copy(14).spanning(5)}};
  s.slots = {0};
  const json j = schedule_to_json(s);
  CHECK(j["steps"][0] == json::parse(R"([["send",1,[2,4],"input"],["recv",5,[6,7],"slot",7],["recv",8,[9,12],"acc"],
                                         ["reduce",[6,7],7,"left"],["copy",[14,18]]])"));
  check_equal(schedule_from_json(j), s);
}

TEST_CASE("Schedule JSON: malformed input throws std::invalid_argument naming the problem", "[json]") {
  check_rejected(json::array(), "object");
  check_rejected(json("text"), "object");
  for (const char* field : {"collective", "algorithm", "nranks", "root", "count", "element_bytes", "commutative",
                            "segments", "slots", "steps"}) {
    json j = sample_json();
    j.erase(field);
    check_rejected(j, field);
  }
  auto with = [](const char* field, json value) {
    json j = sample_json();
    j[field] = std::move(value);
    return j;
  };
  check_rejected(with("collective", "allgather"), "collective");
  check_rejected(with("collective", "Reduce"), "collective");
  check_rejected(with("collective", 1), "collective");
  check_rejected(with("algorithm", 3), "algorithm");
  check_rejected(with("nranks", "4"), "nranks");
  check_rejected(with("root", 1.5), "root");
  check_rejected(with("count", "9"), "count");
  check_rejected(with("element_bytes", 2.5), "element_bytes");
  check_rejected(with("commutative", 1), "commutative");
  check_rejected(with("segments", json::parse("[[0,1,2]]")), "segment");
  check_rejected(with("segments", json::parse("[[0,\"1\"]]")), "segment");
  check_rejected(with("segments", json::parse("[5]")), "segment");
  check_rejected(with("slots", json::parse("[1,\"x\"]")), "slots");
  check_rejected(with("steps", json::parse("[5]")), "steps");
  check_rejected(with("steps", json::parse("[[[\"jump\",1,0]]]")), "jump");
  check_rejected(with("steps", json::parse("[[[]]]")), "step");
  check_rejected(with("steps", json::parse("[[[1,2,3]]]")), "step");
  check_rejected(with("steps", json::parse("[[[\"send\",1,0]]]")), "send");
  check_rejected(with("steps", json::parse("[[[\"send\",1,[0,1,2],\"acc\"]]]")), "segment range");
  check_rejected(with("steps", json::parse("[[[\"copy\",[3,3]]]]")), "segment range's last must follow");
  check_rejected(with("steps", json::parse("[[[\"copy\",[3,\"4\"]]]]")), "segment");
  check_rejected(with("steps", json::parse("[[[\"send\",1,0,\"slot\"]]]")), "input or acc");
  check_rejected(with("steps", json::parse("[[[\"send\",\"1\",0,\"acc\"]]]")), "peer");
  check_rejected(with("steps", json::parse("[[[\"recv\",1,0,\"input\"]]]")), "recv");
  check_rejected(with("steps", json::parse("[[[\"recv\",1,0,\"slot\"]]]")), "recv");
  check_rejected(with("steps", json::parse("[[[\"recv\",1,0,\"slot\",0.5]]]")), "slot");
  check_rejected(with("steps", json::parse("[[[\"reduce\",0,0,\"middle\"]]]")), "left or right");
  check_rejected(with("steps", json::parse("[[[\"reduce\",0,0]]]")), "reduce");
  check_rejected(with("steps", json::parse("[[[\"copy\",0,1]]]")), "copy");
  check_rejected(with("steps", json::parse("[[[\"copy\",-0.5]]]")), "segment");
  // Integers the IR cannot hold are malformed, not silently wrapped.
  check_rejected(with("nranks", json(std::int64_t{1} << 32 | 4)), "nranks");
  check_rejected(with("root", json(std::uint64_t{3000000000u})), "root");
  check_rejected(with("slots", json::parse("[4294967298]")), "slots");
  check_rejected(with("steps", json::parse("[[[\"send\",4294967297,0,\"acc\"]]]")), "peer");
}
