// The JSON form of a schedule: what the schedule log records and tools read back.
//
//   {"collective":"reduce","algorithm":"binomial","nranks":4,"root":0,"count":1024,
//    "element_bytes":4,"commutative":true,"segments":[[0,512],[512,512]],
//    "slots":[2,0,2,0],
//    "steps":[[["recv",1,0,"slot",0],["copy",0],["reduce",0,0,"right"],...],...]}
//
// Steps are compact tuples: ["send",peer,segment,"input"|"acc"],
// ["recv",peer,segment,"acc"], ["recv",peer,segment,"slot",slot],
// ["reduce",segment,slot,"left"|"right"] (which side the received operand is on),
// ["copy",segment]; through the staging ring ["stage",segment,"input"|"acc",stage,readers],
// ["fetch",peer,segment,stage], ["fetch-reduce",peer,segment,stage,"left"|"right"] (a
// sixth field "input": it combines with the input), and "staging":{"entries":N,
// "entry_bytes":B}; the direct steps ["expose",readers], ["read",peer,segment] and
// ["write",peer,segment], and "direct":true. A rank view (Schedule::view_rank) adds
// "view_rank": r and lists that rank's steps and slots alone.
#pragma once

#include <nlohmann/json.hpp>

#include "planner/schedule.h"

namespace canopy::planner {

nlohmann::json schedule_to_json(const Schedule& schedule);
// Throws std::invalid_argument (with the offending field) on malformed input.
Schedule schedule_from_json(const nlohmann::json& json);

}  // namespace canopy::planner
