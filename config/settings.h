// Canopy's settings: one spec table, parsed once from an environment map into one
// immutable, validated struct. Parsing takes the map as an argument so it is tested
// without touching the real environment.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "config/rules.h"

namespace canopy::config {

// What to run for one call, after rules: an algorithm name ("native", "auto" or a
// planner name) and a segment size (-1: the planner chooses).
struct Choice {
  std::string algorithm;
  std::int64_t segment_bytes;
  // Where the algorithm came from, for messages: "CANOPY_REDUCE_ALGO=chain" or
  // "CANOPY_CONFIG rules[2] of /etc/canopy.json (algorithm chain)".
  std::string algorithm_origin = {};
};

struct Settings {
  bool enable = true;                  // CANOPY_ENABLE
  std::string reduce_algorithm = "auto";  // CANOPY_REDUCE_ALGO: native, auto or a planner name
  std::string bcast_algorithm = "auto";   // CANOPY_BCAST_ALGO
  std::string allreduce_algorithm = "auto";  // CANOPY_ALLREDUCE_ALGO
  // The setting of collective `c` above, and its variable's name ("CANOPY_REDUCE_ALGO").
  std::string& algorithm_of(planner::Collective c);
  const std::string& algorithm_of(planner::Collective c) const;
  static const char* algorithm_variable(planner::Collective c);
  std::int64_t segment_bytes = -1;     // CANOPY_SEGMENT_BYTES: -1 lets the planner choose
  std::string log_level = "warn";      // CANOPY_LOG_LEVEL: spdlog level name
  std::string schedule_log;            // CANOPY_SCHEDULE_LOG: path, %r expands to the rank
  std::string model;                   // CANOPY_MODEL: a model spec, "measure", or empty = built-in
  int auto_trials = 2;                 // CANOPY_AUTO_TRIALS: measured rounds per new call kind
  double auto_native_below = 5e-6;     // CANOPY_AUTO_NATIVE_BELOW: seconds; native without trials below
  int auto_native_after = 256;         // CANOPY_AUTO_NATIVE_AFTER: a size class's calls before native's trial
  bool auto_native_first = true;       // CANOPY_AUTO_NATIVE_FIRST: native runs first, until its calls pay for the trials
  double auto_recheck = 0.02;          // CANOPY_AUTO_RECHECK: share of a decided class's time for rechecks
  // CANOPY_RING_AFTER: seconds of reduces and broadcasts kept native for being cheap (the
  // model's prices) after which a communicator's staging ring is made for them; negative:
  // never (off).
  double ring_after = 0.01;
  bool learn = true;                   // CANOPY_LEARN: refit the model from Canopy's timed calls
  std::string config_file;             // CANOPY_CONFIG: the settings file read, if any
  std::vector<Rule> rules;             // from CANOPY_CONFIG, minus what the environment overrides
  bool timing = false;                 // CANOPY_TIMING: time every call, log min/mean/max per schedule
  std::string report;                  // CANOPY_REPORT: path of the end-of-run report ("-": stderr; empty: none)
  std::string report_format = "text";  // CANOPY_REPORT_FORMAT: text or json
  std::string save_rules;              // CANOPY_SAVE_RULES: where auto's decisions are written (empty: nowhere)
  std::string trace;                   // CANOPY_TRACE: where the sampled calls' timeline goes (empty: no trace)
  long trace_first = 8;                // CANOPY_TRACE_CALLS N: each plan's first calls traced
  long trace_every = 64;               // ... M: then one in M (0: none)
  std::string trace_format = "json";   // CANOPY_TRACE_FORMAT: json (Chrome trace events) or otf2

  // The algorithm and segment size for a call: for each of the two, the first rule
  // matching (collective, bytes, ranks) that sets it, else the global setting.
  // `commutative`: whether the call's operation is (a broadcast's: true).
  Choice choice_for(planner::Collective c, std::int64_t bytes, int nranks, bool commutative = true) const;
  // True when every call of `c` runs natively whatever its size (no rule says otherwise),
  // so the shim can skip all work.
  bool always_native(planner::Collective c) const;
  std::string fault = "none";          // CANOPY_FAULT: test-only fault injection (see the spec table)
  bool verify = false;                 // CANOPY_VERIFY: ranks compare each call before running it
  // CANOPY_TOPOLOGY: "auto" (discover the network when MPI_COMM_WORLD spans several
  // nodes), "none", or the path of a JSON topology file (planner/topology_json.h).
  std::string topology = "auto";
  double rho = 0.2;                    // CANOPY_RHO: Lowekamp's clustering tolerance
  std::int64_t probe_bytes = 65536;    // CANOPY_PROBE_BYTES: message whose one-way time is a distance
  // CANOPY_FINALIZE_PROGRESS: keep MPICH's UCX worker progressing while MPI_Finalize
  // waits for the other ranks (shim/finalize_progress.h).
  bool finalize_progress = true;
  // CANOPY_SHM: "auto", "window" or "posix" (the ring's memory from that only, and warn
  // where the staging ring cannot be made) or "off" (no staging ring: every message
  // point-to-point). shim/staging.h.
  std::string shm = "auto";
  // CANOPY_CMA: "auto" (probe cross-memory attach when a ring is made, use it where it
  // works), "on" (the same, and warn where it does not) or "off". shim/staging.h.
  std::string cma = "auto";
};

// One row of the spec table: what --list-settings and docs/configuration.md show.
struct SettingSpec {
  std::string name;
  std::string type;
  std::string default_value;
  std::string allowed;  // algorithm lists come from the planner's registry
  std::string description;
  std::string example;
};

const std::vector<SettingSpec>& setting_specs();

using Environment = std::map<std::string, std::string>;

struct ParseResult {
  Settings settings;
  // One line per bad value: names the variable, the value, what is allowed and what
  // Canopy does instead. Printed once (by rank 0) at MPI_Init.
  std::vector<std::string> errors;
  std::vector<std::string> warnings;  // unknown CANOPY_* names, overridden file entries
  // The settings in force: the CANOPY_CONFIG file's entries overridden by the
  // environment's (CANOPY_CONFIG itself removed).
  Environment effective;
};


// Parses the CANOPY_* entries of `env`, and the file CANOPY_CONFIG names, if any
// (the environment overrides the file, its rules included). A bad value never aborts: the setting takes
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
// The fingerprint of what a parse put in force: its effective entries and its rules
// (ranks compare this one at MPI_Init).
std::uint64_t fingerprint_in_force(const ParseResult& parsed);

// The settings table as aligned text (for canopy-info and --list-settings).
std::string settings_table();
// The same table in Markdown, as docs/configuration.md holds it (canopy-info --markdown).
std::string settings_markdown();

}  // namespace canopy::config
