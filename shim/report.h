// CANOPY_REPORT: at MPI_Finalize world rank 0 writes one summary of the whole job,
// gathered from every rank over Canopy's private duplicate of MPI_COMM_WORLD: calls
// per collective and size, what ran (algorithms, fallbacks and their reasons), time
// spent in the collectives, and the model's prediction next to the measured time.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace canopy::shim {

// What the report says about the job besides the calls.
struct JobFacts {
  int ranks = 1;
  int nodes = 1;
  int max_ranks_per_node = 1;
  long cores_per_node = 0;
  bool oversubscribed = false;
  std::string topology_source = "none";  // CANOPY_TOPOLOGY: "none", "measured" or "file"
  std::string model_source = "built-in";  // Runtime::model_source
  std::string topology;                  // planner::describe_topology, or "" when none
  int clusters = 1;
  std::string model;
  std::string learned_model;  // CANOPY_LEARN: MPI_COMM_WORLD's model at the end, or ""
  double startup_seconds = 0;  // rank 0's part of MPI_Init that was Canopy's (Runtime::startup_seconds)
  double probe_seconds = 0;    // of which probing the network and fitting the model
  double ring_seconds = 0;     // of which MPI_COMM_WORLD's private duplicate and staging ring
  double code_seconds = 0;     // of which reading Canopy's code once (shim/warm_code.h)
  std::string config_file;
  int rules = 0;
  std::vector<std::pair<std::string, std::string>> settings;  // the CANOPY_* in force
};

// Pure: the job's report from every rank's CallStats::to_json() array (index = world
// rank). Calls of one kind are counted once per collective call (a call on a
// communicator of n ranks appears in n ranks' records). `caches`, when given, holds
// every rank's plan cache counts (plan_cache_json), summed into "plan_cache".
nlohmann::json build_report(const JobFacts& job, const std::vector<nlohmann::json>& per_rank,
                            const std::vector<nlohmann::json>& caches = {});

// This rank's plan cache counts (CommState::cache_stats) as JSON.
nlohmann::json plan_cache_json();

// Pure: the report as text for a terminal or an editor.
std::string report_text(const nlohmann::json& report);

// Collective over runtime().report_comm: gathers the ranks' records to rank 0, which
// writes the report to `path` in `format` ("text" or "json"). Returns an error
// message for rank 0 to log, or "".
std::string write_report(const std::string& path, const std::string& format, const JobFacts& job);

}  // namespace canopy::shim
