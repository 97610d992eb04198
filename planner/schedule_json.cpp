#include "planner/schedule_json.h"

#include <cstdint>
#include <limits>
#include <stdexcept>

namespace canopy::planner {

using nlohmann::json;

namespace {

// A step's segment: its index, or [first, last] for a step that spans several
// (schedule.h: Send, Recv, Reduce and Copy may).
json segments_to_json(const Step& s) {
  if (s.span == 1) return s.segment;
  return json::array({s.segment, s.last_segment()});
}

json step_to_json(const Step& s) {
  switch (s.kind) {
    case StepKind::Send:
      return json::array({"send", s.peer, segments_to_json(s), s.buffer == Buffer::Input ? "input" : "acc"});
    case StepKind::Recv:
      if (s.buffer == Buffer::Slot) return json::array({"recv", s.peer, segments_to_json(s), "slot", s.slot});
      return json::array({"recv", s.peer, segments_to_json(s), "acc"});
    case StepKind::Reduce:
      return json::array({"reduce", segments_to_json(s), s.slot, s.incoming_is_left ? "left" : "right"});
    case StepKind::Copy:
      return json::array({"copy", segments_to_json(s)});
    case StepKind::Stage:
      return json::array({"stage", s.segment, s.buffer == Buffer::Input ? "input" : "acc", s.slot, s.readers});
    case StepKind::Fetch:
      return json::array({"fetch", s.peer, s.segment, s.slot});
    case StepKind::FetchReduce:
      if (s.buffer == Buffer::Input)
        return json::array({"fetch-reduce", s.peer, s.segment, s.slot, s.incoming_is_left ? "left" : "right", "input"});
      return json::array({"fetch-reduce", s.peer, s.segment, s.slot, s.incoming_is_left ? "left" : "right"});
    case StepKind::Expose:
      return json::array({"expose", s.readers});  // the whole accumulator: no segment
    case StepKind::Read:
      return json::array({"read", s.peer, s.segment});
    case StepKind::Write:
      return json::array({"write", s.peer, s.segment});
  }
  return json();
}

[[noreturn]] void bad(const std::string& what) { throw std::invalid_argument("schedule JSON: " + what); }

int as_int(const json& j, const std::string& what) {
  if (!j.is_number_integer()) bad(what + " must be an integer");
  const bool fits = j.is_number_unsigned()
                        ? j.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<int>::max())
                        : j.get<std::int64_t>() >= std::numeric_limits<int>::min() &&
                              j.get<std::int64_t>() <= std::numeric_limits<int>::max();
  if (!fits) bad(what + " " + j.dump() + " is out of range");
  return j.get<int>();
}

// A segment field of a Send, Recv, Reduce or Copy: an index, or [first, last] with
// last >= first; `span` gets how many segments it names.
int segments_from_json(const json& j, int& span) {
  span = 1;
  if (!j.is_array()) return as_int(j, "segment");
  if (j.size() != 2) bad("a segment range must be [first, last]: " + j.dump());
  const int first = as_int(j[0], "segment"), last = as_int(j[1], "segment");
  if (last <= first) bad("a segment range's last must follow its first: " + j.dump());
  span = static_cast<int>(static_cast<std::int64_t>(last) - first + 1);
  return first;
}

Step step_from_json(const json& j) {
  if (!j.is_array() || j.empty() || !j[0].is_string()) bad("a step must be an array starting with its kind");
  const std::string kind = j[0];
  auto need = [&](std::size_t n) {
    if (j.size() != n) bad("step '" + kind + "' needs " + std::to_string(n) + " fields: " + j.dump());
  };
  auto text = [&](std::size_t i) {
    if (!j[i].is_string()) bad("field " + std::to_string(i) + " of " + j.dump() + " must be a string");
    return j[i].get<std::string>();
  };
  int span = 1;
  if (kind == "send") {
    need(4);
    const std::string buf = text(3);
    if (buf != "input" && buf != "acc") bad("send buffer must be input or acc: " + j.dump());
    const int segment = segments_from_json(j[2], span);
    return Step::send(as_int(j[1], "peer"), segment, buf == "input" ? Buffer::Input : Buffer::Accumulator)
        .spanning(span);
  }
  if (kind == "recv") {
    if (j.size() == 4 && text(3) == "acc") {
      const int segment = segments_from_json(j[2], span);
      return Step::recv_into_accumulator(as_int(j[1], "peer"), segment).spanning(span);
    }
    need(5);
    if (text(3) != "slot") bad("recv target must be acc or slot: " + j.dump());
    const int segment = segments_from_json(j[2], span);
    return Step::recv_into_slot(as_int(j[1], "peer"), segment, as_int(j[4], "slot")).spanning(span);
  }
  if (kind == "reduce") {
    need(4);
    const std::string side = text(3);
    if (side != "left" && side != "right") bad("reduce side must be left or right: " + j.dump());
    const int segment = segments_from_json(j[1], span);
    return Step::reduce(segment, as_int(j[2], "slot"), side == "left").spanning(span);
  }
  if (kind == "copy") {
    need(2);
    const int segment = segments_from_json(j[1], span);
    return Step::copy(segment).spanning(span);
  }
  if (kind == "stage") {
    need(5);
    const std::string buf = text(2);
    if (buf != "input" && buf != "acc") bad("stage buffer must be input or acc: " + j.dump());
    return Step::stage(as_int(j[1], "segment"), as_int(j[3], "stage"), as_int(j[4], "readers"),
                       buf == "input" ? Buffer::Input : Buffer::Accumulator);
  }
  if (kind == "fetch") {
    need(4);
    return Step::fetch(as_int(j[1], "peer"), as_int(j[2], "segment"), as_int(j[3], "stage"));
  }
  if (kind == "fetch-reduce") {
    // A sixth field "input": the staged operand combines with the rank's input.
    if (j.size() != 6) need(5);
    const std::string side = text(4);
    if (side != "left" && side != "right") bad("fetch-reduce side must be left or right: " + j.dump());
    if (j.size() == 6 && text(5) != "input") bad("fetch-reduce's sixth field must be input: " + j.dump());
    return Step::fetch_reduce(as_int(j[1], "peer"), as_int(j[2], "segment"), as_int(j[3], "stage"), side == "left",
                              j.size() == 6 ? Buffer::Input : Buffer::Accumulator);
  }
  if (kind == "expose") {
    need(2);
    return Step::expose(as_int(j[1], "readers"));
  }
  if (kind == "read" || kind == "write") {
    need(3);
    const int peer = as_int(j[1], "peer"), segment = as_int(j[2], "segment");
    return kind == "read" ? Step::read(peer, segment) : Step::write(peer, segment);
  }
  bad("unknown step kind '" + kind + "'");
}

}  // namespace

json schedule_to_json(const Schedule& s) {
  json segments = json::array();
  for (const auto& seg : s.segments) segments.push_back(json::array({seg.first, seg.count}));
  json steps = json::array();
  for (const auto& rank : s.steps) {
    json list = json::array();
    for (const auto& st : rank) list.push_back(step_to_json(st));
    steps.push_back(std::move(list));
  }
  json out{{"collective", to_string(s.collective)},
           {"algorithm", s.algorithm},
           {"nranks", s.nranks},
           {"root", s.root},
           {"count", s.count},
           {"element_bytes", s.element_bytes},
           {"commutative", s.commutative},
           {"segments", std::move(segments)},
           {"slots", s.slots},
           {"steps", std::move(steps)}};
  if (s.is_view()) out["view_rank"] = s.view_rank;
  if (s.uses_staging()) out["staging"] = {{"entries", s.staging_entries}, {"entry_bytes", s.staging_entry_bytes}};
  if (s.uses_direct()) out["direct"] = true;  // absent: false, as in logs written before it
  return out;
}

Schedule schedule_from_json(const json& j) {
  if (!j.is_object()) bad("a schedule must be an object");
  auto field = [&](const char* name) -> const json& {
    auto it = j.find(name);
    if (it == j.end()) bad(std::string("missing field '") + name + "'");
    return *it;
  };
  Schedule s;
  const json& coll = field("collective");
  if (!coll.is_string() || !parse_collective(coll.get<std::string>(), s.collective))
    bad("collective must be reduce, bcast or allreduce");
  if (!field("algorithm").is_string()) bad("algorithm must be a string");
  s.algorithm = field("algorithm");
  s.nranks = as_int(field("nranks"), "nranks");
  s.root = as_int(field("root"), "root");
  if (!field("count").is_number_integer() || !field("element_bytes").is_number_integer())
    bad("count and element_bytes must be integers");
  s.count = field("count");
  s.element_bytes = field("element_bytes");
  if (!field("commutative").is_boolean()) bad("commutative must be true or false");
  s.commutative = field("commutative");
  for (const auto& seg : field("segments")) {
    if (!seg.is_array() || seg.size() != 2 || !seg[0].is_number_integer() || !seg[1].is_number_integer())
      bad("a segment must be [first, count]");
    s.segments.push_back({seg[0].get<std::int64_t>(), seg[1].get<std::int64_t>()});
  }
  if (auto it = j.find("view_rank"); it != j.end()) {
    s.view_rank = as_int(*it, "view_rank");
    if (s.view_rank < 0) bad("view_rank must not be negative");
  }
  if (auto it = j.find("staging"); it != j.end()) {
    if (!it->is_object() || !it->contains("entries") || !it->contains("entry_bytes") ||
        !(*it)["entry_bytes"].is_number_integer())
      bad("staging must be {\"entries\": N, \"entry_bytes\": B}");
    s.staging_entries = as_int((*it)["entries"], "staging entries");
    s.staging_entry_bytes = (*it)["entry_bytes"].get<std::int64_t>();
    if (s.staging_entries < 1 || s.staging_entry_bytes < 1) bad("staging entries and entry_bytes must be positive");
  }
  if (auto it = j.find("direct"); it != j.end()) {
    if (!it->is_boolean()) bad("direct must be true or false");
    s.direct = it->get<bool>();
  }
  for (const auto& n : field("slots")) s.slots.push_back(as_int(n, "slots entry"));
  for (const auto& rank : field("steps")) {
    if (!rank.is_array()) bad("steps must be a list per rank");
    std::vector<Step> list;
    for (const auto& st : rank) list.push_back(step_from_json(st));
    s.steps.push_back(std::move(list));
  }
  return s;
}

}  // namespace canopy::planner
