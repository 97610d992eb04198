// Canopy's settings: one spec table, parsed once from an environment map into one
// immutable, validated struct. Parsing takes the map as an argument so it is tested
// without touching the real environment.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace canopy::config {

struct Settings {
  bool enable = true;                  // CANOPY_ENABLE
  std::string reduce_algorithm = "auto";  // CANOPY_REDUCE_ALGO: native, auto or a planner name
  std::string bcast_algorithm = "auto";   // CANOPY_BCAST_ALGO
  std::int64_t segment_bytes = -1;     // CANOPY_SEGMENT_BYTES: -1 lets the planner choose
  std::string log_level = "warn";      // CANOPY_LOG_LEVEL: spdlog level name
  std::string schedule_log;            // CANOPY_SCHEDULE_LOG: path, %r expands to the rank
  std::string model;                   // CANOPY_MODEL: a model spec, "measure", or empty = built-in
  int auto_trials = 2;                 // CANOPY_AUTO_TRIALS: measured rounds per new call kind
  std::string fault = "none";          // CANOPY_FAULT: test-only fault injection (see the spec table)
  bool verify = false;                 // CANOPY_VERIFY: ranks compare each call before running it
};

// One row of the spec table: what --list-settings and the README show.
struct SettingSpec {
  std::string name;
  std::string type;
  std::string default_value;
  std::string allowed;  // algorithm lists come from the planner's registry
  std::string description;
  std::string example;
};

const std::vector<SettingSpec>& setting_specs();

struct ParseResult {
  Settings settings;
  // One line per bad value: names the variable, the value, what is allowed and what
  // Canopy does instead. Printed once (by rank 0) at MPI_Init.
  std::vector<std::string> errors;
  std::vector<std::string> warnings;  // unknown CANOPY_* names
};

using Environment = std::map<std::string, std::string>;

// Parses the CANOPY_* entries of `env`. A bad value never aborts: the setting takes
// the safe behaviour the error line announces (a bad algorithm, segment size or model
// makes the collectives it affects use native MPI; a bad log level keeps "warn").
ParseResult parse_settings(const Environment& env);

// A CANOPY_MODEL value as the runtime uses it: "" for the built-in model, "measure",
// or a validated model spec (read from the file when the value names one). Sets
// `error` when the value is none of these.
std::string resolve_model(const std::string& value, std::string& error);

// The CANOPY_* variables of the process environment.
Environment process_environment();

// A stable fingerprint of the CANOPY_* entries: ranks compare it at start-up, since
// ranks that planned with different settings would deadlock.
std::uint64_t fingerprint(const Environment& env);

// The settings table as aligned text (for canopy-info and --list-settings).
std::string settings_table();

}  // namespace canopy::config
