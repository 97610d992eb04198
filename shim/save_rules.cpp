#include "shim/save_rules.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <mutex>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config_file.h"
#include "shim/canopy.h"
#include "shim/gather_text.h"
#include "shim/runtime.h"
#include "shim/thread_lock.h"

namespace canopy::shim {

namespace {

ThreadLock noted_mutex;
std::vector<config::Decision> noted;
long dropped = 0;

}  // namespace

std::size_t note_decision(config::Decision decision, std::size_t replaces) {
  std::lock_guard<ThreadLock> lock(noted_mutex);
  if (replaces < noted.size()) {
    noted[replaces] = std::move(decision);
    return replaces;
  }
  if (noted.size() < kMaxNotedDecisions) {
    noted.push_back(std::move(decision));
    return noted.size() - 1;
  }
  ++dropped;
  return kNotNoted;
}

std::string save_rules(const std::string& path, MPI_Comm comm, int* rules) {
  using nlohmann::json;
  json mine = json::array();
  long mine_dropped = 0;
  {
    std::lock_guard<ThreadLock> lock(noted_mutex);
    for (const config::Decision& d : noted) mine.push_back(config::to_json(d));
    mine_dropped = dropped;
  }
  const std::vector<std::string> all = gather_text(comm, json{{"decisions", mine}, {"dropped", mine_dropped}}.dump());
  int rank = 0, size = 1;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &size);
  if (rank != 0) return "";
  if (all.empty()) return "CANOPY_SAVE_RULES: gathering the ranks' decisions failed; no rules saved";
  std::vector<config::Decision> decisions;
  long all_dropped = 0;
  try {
    for (const std::string& text : all) {
      const json one = json::parse(text);
      for (const json& d : one.at("decisions")) decisions.push_back(config::decision_from_json(d));
      all_dropped += one.at("dropped").get<long>();
    }
  } catch (const std::exception& e) {
    // Inside MPI_Finalize: nothing may escape to the application.
    return std::string("CANOPY_SAVE_RULES: a rank's decisions could not be read (") + e.what() + "); no rules saved";
  }
  const Runtime& rt = runtime();
  std::string header = std::string("Written by Canopy ") + CANOPY_VERSION_STRING +
                       " at MPI_Finalize (CANOPY_SAVE_RULES): what auto's trials decided in a job of " +
                       std::to_string(size) + " ranks.\n" +
                       "Run the next job on this machine with CANOPY_CONFIG set to this file: each size below runs "
                       "its choice\nfrom its first call, without trials; other sizes stay with auto.";
  if (all_dropped > 0)
    header += "\n" + std::to_string(all_dropped) + " decisions beyond the first " +
              std::to_string(kMaxNotedDecisions) + " of a rank were not kept.";
  const std::string text = config::saved_rules_text(decisions, rt.settings.rules, header);
  // What a later job will read: the file must parse as the rules it was written as.
  const config::ConfigFile check = config::parse_config_text(text, path);
  if (!check.errors.empty()) return "CANOPY_SAVE_RULES: the rules made do not read back (" + check.errors.front() + "); no rules saved";
  *rules = static_cast<int>(check.rules.size());
  // Written beside it and renamed into place, so that a job starting meanwhile with
  // CANOPY_CONFIG=path reads the old file or the new one, never half of one.
  const std::string temporary = path + ".tmp-" + std::to_string(static_cast<long>(getpid()));
  {
    std::ofstream file(temporary);
    if (!file) return "CANOPY_SAVE_RULES='" + path + "': cannot open the file for writing; no rules saved";
    file << text;
    file.close();
    if (!file) {
      std::remove(temporary.c_str());
      return "CANOPY_SAVE_RULES='" + path + "': writing failed; no rules saved";
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    return "CANOPY_SAVE_RULES='" + path + "': cannot replace the file; no rules saved";
  }
  return "";
}

}  // namespace canopy::shim
