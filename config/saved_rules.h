// CANOPY_SAVE_RULES: what auto's trials decided in one job, written as a CANOPY_CONFIG
// settings file for the next. Trials cost a size's first calls (a short job, such as
// OSU's 110 calls of a size, never earns them back), and a program that runs again on
// the same machine meets the same sizes: with the saved rules each decided size runs
// its choice from its first call, without trials. The role of Intel MPI's autotuner
// dump (I_MPI_TUNING_BIN_DUMP, read back with I_MPI_TUNING_BIN), in the rules format
// Canopy already reads. Pure: the shim gathers the decisions and writes the text.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/rules.h"

namespace canopy::config {

// One plan's trials, as the communicator's rank 0 saw them end.
struct Decision {
  planner::Collective collective = planner::Collective::Reduce;
  int comm_size = 0;
  int root = 0;
  std::int64_t first_bytes = 0;  // the sizes the plan serves: its size class, or one size
  std::int64_t last_bytes = 0;
  // A reduce's operation: 1 commutative, 0 not; -1 for a broadcast. The rule written
  // says it (Rule::commutative), so that an ordered operation of the same size is not
  // forced onto an algorithm chosen for commutative ones.
  int commutative = -1;
  // False where the schedules' trials chose the best schedule and native MPI's trial
  // (CANOPY_AUTO_NATIVE_AFTER) never came: not a decision against native MPI.
  bool decided = true;
  std::string algorithm;  // "native" or a planner name (decided)
  std::string measured;   // the trials' times, for the file's comment ("shm-flat/22 47.0 us, native 51.2 us")
};

nlohmann::json to_json(const Decision& d);
// Throws nlohmann::json::exception on a malformed record.
Decision decision_from_json(const nlohmann::json& j);

// The settings file for `decisions` (in any order; several may be of one collective,
// communicator size and sizes, made on different communicators or at different roots):
// one rule per collective, communicator size and run of adjacent sizes with the same
// choice; where decisions of the same sizes differ, the one made most often (on a tie,
// the first). A comment above each rule says what was measured; sizes only undecided
// get a comment and no rule, so they stay with auto. Rules set no segment size: the
// planner cuts a forced algorithm as it would, and the plans stay per size class
// (rules_keep_size_classes). After them come the `carried` rules (those the job ran
// with), so that a file read and saved again keeps them. `header` is written as comment
// lines at the top.
std::string saved_rules_text(const std::vector<Decision>& decisions, const std::vector<Rule>& carried,
                             const std::string& header);

// True where every rule's sizes are whole size classes (planner/size_class.h) and no
// rule forces a segment size: then every count of a class gets the same choice, and
// plans may serve a class instead of one count.
bool rules_keep_size_classes(const std::vector<Rule>& rules);

}  // namespace canopy::config
