#include "config/settings.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "config/config_file.h"
#include "planner/cost_model.h"
#include "planner/fnv1a.h"
#include "planner/registry.h"

extern char** environ;

namespace canopy::config {

namespace {

const char* const kLogLevels[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
const char* const kFaults[] = {"none", "planner-error", "invalid-schedule", "view-rejected-on-rank-1",
                               "shm-unavailable", "shm-posix-unavailable", "cma-unavailable"};
const char* const kShmAllowed = "auto, window, posix, off";
const char* const kCmaAllowed = "auto, on, off";
const char* const kTopologyAllowed = "auto, none, or a path to a JSON topology file";
const char* const kBooleanAllowed = "1, 0, true, false, on, off, yes, no";
// 64 MiB: a probe that large already takes over a second on a 500 Mbit/s link.
constexpr long long kMaxProbeBytes = 64ll * 1024 * 1024;

// "1 true on yes" / "0 false off no", any case; false when `value` is neither.
bool parse_boolean(const std::string& value, bool& out) {
  std::string x = value;
  std::transform(x.begin(), x.end(), x.begin(), ::tolower);
  if (x == "1" || x == "true" || x == "on" || x == "yes") out = true;
  else if (x == "0" || x == "false" || x == "off" || x == "no") out = false;
  else return false;
  return true;
}

// `text` with control characters escaped (\n, \t, \xNN): every message stays one line,
// whatever a variable or a settings file holds.
// `text` as a number, all of it (no trailing characters, nothing out of range); NaN
// parses, for the caller's range check to refuse.
bool parse_number(const std::string& text, double& out) {
  char* end = nullptr;
  errno = 0;
  out = std::strtod(text.c_str(), &end);
  return !text.empty() && *end == '\0' && errno == 0;
}

std::string printable(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else out += static_cast<char>(c);
  }
  return out;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

}  // namespace

std::string resolve_model(const std::string& value, std::string& error) {
  error.clear();
  if (value.empty() || value == "default") return "";
  if (value == "measure") return "measure";
  std::string spec = value;
  if (value.rfind("hockney:", 0) != 0 && value.rfind("overlap:", 0) != 0 && value.rfind("plogp:", 0) != 0) {
    // A file: its first line that is neither blank nor a # comment is the spec.
    std::ifstream in(value);
    if (!in) {
      error = "no such model and no readable file of that name";
      return "";
    }
    spec.clear();
    for (std::string line; std::getline(in, line);) {
      line.erase(0, line.find_first_not_of(" \t"));
      line.erase(line.find_last_not_of(" \t\r") + 1);
      if (!line.empty() && line[0] != '#') {
        spec = line;
        break;
      }
    }
  }
  try {
    planner::parse_model(spec);
  } catch (const std::invalid_argument& e) {
    error = e.what();
    return "";
  }
  return spec;
}

const std::vector<SettingSpec>& setting_specs() {
  static const std::vector<SettingSpec> specs = {
      {"CANOPY_ENABLE", "boolean", "1", kBooleanAllowed,
       "Master switch; 0 passes every call to native MPI", "CANOPY_ENABLE=0"},
      {"CANOPY_REDUCE_ALGO", "name", "auto", algorithm_choices(planner::Collective::Reduce),
       "MPI_Reduce algorithm; auto picks the cheapest predicted by the cost model", "CANOPY_REDUCE_ALGO=binomial"},
      {"CANOPY_BCAST_ALGO", "name", "auto", algorithm_choices(planner::Collective::Bcast),
       "MPI_Bcast algorithm; auto picks the cheapest predicted by the cost model", "CANOPY_BCAST_ALGO=native"},
      {"CANOPY_ALLREDUCE_ALGO", "name", "auto", algorithm_choices(planner::Collective::Allreduce),
       "MPI_Allreduce algorithm; auto picks the cheapest predicted by the cost model",
       "CANOPY_ALLREDUCE_ALGO=recursive-doubling"},
      {"CANOPY_SEGMENT_BYTES", "bytes", "auto", "auto, or an integer >= 0 (0: no segmentation)",
       "Pipeline segment size; auto lets the planner choose per message size (class). A forced size makes Canopy "
       "plan per exact count, as CANOPY_CONFIG rules that split a size class do",
       "CANOPY_SEGMENT_BYTES=65536"},
      {"CANOPY_LOG_LEVEL", "level", "warn", join({std::begin(kLogLevels), std::end(kLogLevels)}),
       "What Canopy prints to stderr; info shows every new schedule", "CANOPY_LOG_LEVEL=info"},
      {"CANOPY_SCHEDULE_LOG", "path", "none", "a writable file path; %r expands to the world rank",
       "JSON lines, one per distinct schedule used; without %r only world rank 0 writes",
       "CANOPY_SCHEDULE_LOG=/tmp/canopy-%r.jsonl"},
      {"CANOPY_MODEL", "model", "default",
       "default, measure, hockney:alpha=A,beta=B[,gamma=G,copy=C,direct=D,direct_fixed=S,port=P,port_fixed=F,"
       "duplex=half|full,overlap=0|1], "
       "plogp:L=L,g=BYTES:SECONDS/...[,gamma=G,port=P,port_fixed=F] or plogp:FILE, or a file holding such a spec",
       "Cost model the planner predicts with (seconds, seconds per byte; direct, direct_fixed: a "
       "cross-memory-attach copy's per byte, 1.35x copy when not given, and per copy, 1.4e-6; port: seconds per "
       "byte a message holds the ports, its latency in flight, as for a CANOPY_TOPOLOGY link between sites, and "
       "port_fixed seconds more a message); "
       "measure fits it at "
       "MPI_Init with a ping-pong between ranks 0 and 1, a MPI_Reduce_local timing and, where the two share a "
       "node, process_vm_readv timings, shared by rank 0; default (unset): the built-in model on one node, and "
       "where the job spans several nodes and CANOPY_TOPOLOGY=auto probes them, measured as with measure (the "
       "ping-pong only where ranks 0 and 1 share a node)",
       "CANOPY_MODEL=hockney:alpha=2e-6,beta=1e-10,gamma=1e-10,duplex=full,overlap=1"},
      {"CANOPY_AUTO_TRIALS", "integer", "2", "an integer from 0 to 100",
       "With auto: measured rounds of back-to-back calls of native MPI, the model's best schedule and those it "
       "prices within 2x of it (the best with 4x larger segments when it has 8 or more); native stays unless a "
       "schedule is 10% faster; 0 trusts the model alone",
       "CANOPY_AUTO_TRIALS=0"},
      {"CANOPY_AUTO_NATIVE_BELOW", "seconds", "5e-6", "a number of seconds from 0 to 1",
       "With auto, where native MPI may compete: calls whose best schedule the model prices under this (the "
       "starting model and, with CANOPY_LEARN, the learnt one) keep native MPI with no trial (and the shortcut "
       "past Canopy's lookups); allreduces until the communicator has a staging "
       "ring and native MPI has run them 256 times (16 from 2 us), reduces priced from 2 us alike where a node "
       "holds more than 2 ranks, other reduces and broadcasts for good; not where the topology puts the "
       "communicator on several nodes (there such calls are trialled); 0 trials every size",
       "CANOPY_AUTO_NATIVE_BELOW=0"},
      {"CANOPY_AUTO_NATIVE_FIRST", "boolean", "1", kBooleanAllowed,
       "With auto, where native MPI may compete: native MPI runs a size class's first calls, and the trials "
       "begin only once those calls have cost (on the slowest rank; past the first call, their count times the "
       "mean of the calls after the first, which pays one-time costs) what the model prices the schedules' trial "
       "calls at (calls of a millisecond or more: at what they would cost beyond native's, if three times "
       "their price; sizes the model prices under 2 us: 8 times that, timing one call in 16); native is then "
       "measured in every measured round, and a schedule replaces it only where measured faster by 10%. 0: the "
       "trials begin at the first call, native's waiting for "
       "CANOPY_AUTO_NATIVE_AFTER",
       "CANOPY_AUTO_NATIVE_FIRST=0"},
      {"CANOPY_AUTO_NATIVE_AFTER", "integer", "256", "an integer from 0 to 1000000000",
       "With auto and CANOPY_AUTO_NATIVE_FIRST=0, where native MPI may compete: its trial waits until a size "
       "class's calls reach this, while "
       "the schedules are trialled against each other and the best of them runs; then native MPI is measured "
       "against that one (native MPI's first calls of a size are often its slowest: a short job never pays "
       "for them); 0 trials native MPI with the schedules from the first call",
       "CANOPY_AUTO_NATIVE_AFTER=0"},
      {"CANOPY_AUTO_RECHECK", "fraction", "0.02", "a number from 0 to 0.5",
       "With auto: after a size class's trials have decided, the choice is measured against its rivals (native "
       "MPI where it lost, and the best other schedule measured: beside native, only one within 1.5x of the "
       "choice) again now and then, in rounds as in the trials, and any may win; the waits between rechecks keep "
       "their cost under this share of the class's time and double each time; 0 makes a decision final",
       "CANOPY_AUTO_RECHECK=0"},
      {"CANOPY_RING_AFTER", "seconds", "0.01", "a number of seconds from 0 to 3600, or off",
       "With auto, on communicators other than MPI_COMM_WORLD (whose ring MPI_Init makes): once a "
       "communicator's allreduces (and reduces priced from 2 us, more than 2 ranks a node) kept native for being "
       "cheap (CANOPY_AUTO_NATIVE_BELOW) add up to this, as the model prices them, its staging ring is made for them "
       "(CANOPY_SHM) and they are trialled against native MPI through it, which small calls on one node often "
       "beat; a larger call makes the ring earlier. off: only larger calls make it",
       "CANOPY_RING_AFTER=off"},
      {"CANOPY_LEARN", "boolean", "1", kBooleanAllowed,
       "Refit the cost model's alpha, beta, gamma, copy and direct (cross-memory-attach) copies, per "
       "communicator, from the times of Canopy's own calls that the ranks agree on (trial rounds, and a sample "
       "every so many calls)",
       "CANOPY_LEARN=0"},
      {"CANOPY_CONFIG", "path", "none", "a readable JSON file (format: docs/configuration.md)",
       "Settings file: the CANOPY_* keys above plus \"rules\" that force an algorithm or segment size by "
       "collective, message size, communicator size and (reduces) whether the operation commutes; the "
       "environment overrides the file",
       "CANOPY_CONFIG=$HOME/canopy.json"},
      {"CANOPY_TIMING", "boolean", "0", kBooleanAllowed,
       "Time every call Canopy handles; the schedule log then gets min/mean/max per schedule at MPI_Finalize",
       "CANOPY_TIMING=1"},
      {"CANOPY_REPORT", "path", "none", "a writable file path; - for standard error (also 1, true, on, yes); 0, "
       "false, off, no: none",
       "At MPI_Finalize world rank 0 writes a summary of the whole job there: calls per collective and size, "
       "algorithms chosen, fallbacks and why, time in collectives, predicted vs measured",
       "CANOPY_REPORT=canopy-report.txt"},
      {"CANOPY_REPORT_FORMAT", "name", "text", "text, json", "Format of the CANOPY_REPORT file",
       "CANOPY_REPORT_FORMAT=json"},
      {"CANOPY_TRACE", "path", "none", "a writable file path; none: no trace",
       "At MPI_Finalize world rank 0 writes a timeline of the sampled calls (CANOPY_TRACE_CALLS) on every rank "
       "there, in the Chrome trace-event JSON format that ui.perfetto.dev and chrome://tracing open: each call, "
       "each step of its schedule (send, receive, reduce, copy, stage, fetch, read, write, and the final wait) "
       "with its peer, segment and bytes, on clocks aligned to world rank 0's at MPI_Init; messages as arrows",
       "CANOPY_TRACE=canopy-trace.json"},
      {"CANOPY_TRACE_FORMAT", "name", "json", "json, otf2",
       "What CANOPY_TRACE writes: json, one file of Chrome trace events; otf2, an OTF2 archive (CANOPY_TRACE "
       "names its directory, which gets traces.otf2 and traces/) for Vampir and otf2-print, where Canopy was "
       "built with Debian's libotf2-trace-dev",
       "CANOPY_TRACE_FORMAT=otf2"},
      {"CANOPY_TRACE_CALLS", "sampling", "8:64", "N:M, two integers from 0 to 1000000000",
       "Which calls CANOPY_TRACE records: of each communicator's calls of one collective, root and size class, "
       "the first N, then one in M (M 0: none after the first N); the same calls on every rank",
       "CANOPY_TRACE_CALLS=100:0"},
      {"CANOPY_SAVE_RULES", "path", "none", "a writable file path; none: not saved",
       "At MPI_Finalize world rank 0 writes what auto's trials decided in this job as a CANOPY_CONFIG settings "
       "file: a rule per collective, communicator size and run of size classes (sizes whose trials did not "
       "decide, such as those whose native MPI trial never came, only as comments), then the rules of "
       "CANOPY_CONFIG in force. A later job with CANOPY_CONFIG set to that file runs each decided size's "
       "choice from its first call, without trials",
       "CANOPY_SAVE_RULES=$HOME/canopy-rules.json"},
      {"CANOPY_FAULT", "name", "none", join({std::begin(kFaults), std::end(kFaults)}),
       "Testing only: planner-error makes the planner fail and invalid-schedule corrupts every schedule so "
       "the validator rejects it; either way native MPI runs, with the reason counted and logged. "
       "view-rejected-on-rank-1 builds every schedule as rank views (as beyond 2^18 steps) and corrupts rank 1's, "
       "so that its check alone rejects them: the ranks agree on native MPI. "
       "shm-unavailable makes the staging ring's creation fail (CANOPY_SHM), shm-posix-unavailable only its POSIX "
       "shared memory, cma-unavailable the ring's probe of cross-memory attach (CANOPY_CMA)",
       "CANOPY_FAULT=planner-error"},
      {"CANOPY_VERIFY", "boolean", "0", kBooleanAllowed,
       "Before each call the ranks compare a hash of its arguments and plan (one 16-byte MPI_Allreduce per "
       "call); on a mismatch every rank logs an error and returns MPI_ERR_ARG through the communicator's "
       "error handler instead of hanging",
       "CANOPY_VERIFY=1"},
      {"CANOPY_TOPOLOGY", "topology", "auto", kTopologyAllowed,
       "The network beyond one node: auto measures it at MPI_Init when MPI_COMM_WORLD spans several nodes "
       "(one-way times between nodes, Lowekamp's clusters, a link model per cluster pair), and the packages "
       "(sockets) of a node whose bound ranks lie on several (hwloc; a link between packages); none prices "
       "every message with CANOPY_MODEL; a file gives the clusters (and links; those it leaves out are measured)",
       "CANOPY_TOPOLOGY=$HOME/sites.json"},
      {"CANOPY_RHO", "number", "0.2", "a number > 0 and <= 10",
       "Lowekamp's tolerance for CANOPY_TOPOLOGY=auto: nodes join a cluster while their distance stays within "
       "(1 + rho) times the cluster's smallest",
       "CANOPY_RHO=0.3"},
      {"CANOPY_PROBE_BYTES", "bytes", "65536", "an integer from 1 to 67108864",
       "Size of the probe message whose one-way time between two nodes is their distance for "
       "CANOPY_TOPOLOGY=auto (large enough that bandwidth, not only latency, tells sites apart)",
       "CANOPY_PROBE_BYTES=1048576"},
      {"CANOPY_SHM", "name", "auto", kShmAllowed,
       "Ranks that share a node may move data through a staging ring in shared memory (2 x the node's ranks "
       "entries of 64 KiB per rank, at least 16; 8 of 128 KiB on a node of 2 ranks), made on a communicator's first schedule that uses it: auto, window and posix "
       "offer the shm-* algorithms where every rank of the communicator is on one node, and the node levels of "
       "hierarchical and grid-* a ring on each node where a topology names the nodes. window takes the memory "
       "from MPI-3 MPI_Win_allocate_shared, posix from POSIX shared memory (shm_open), and both warn once where "
       "the ring cannot be made; auto takes POSIX memory, and the window where that cannot be made. off keeps every "
       "message "
       "point-to-point. Where the ring cannot be made, that call and the communicator's later ones run without it",
       "CANOPY_SHM=off"},
      {"CANOPY_CMA", "name", "auto", kCmaAllowed,
       "Cross-memory attach (process_vm_readv/writev) between the ranks of a staging ring (CANOPY_SHM): each rank "
       "copies its share of a broadcast straight from the root's buffer, one copy per byte (cma-bcast). auto and "
       "on probe it when the ring is made (the kernel may refuse: kernel.yama.ptrace_scope above 0, seccomp) and "
       "offer cma-bcast where it works; on also warns once where it does not. off: never",
       "CANOPY_CMA=off"},
      {"CANOPY_FINALIZE_PROGRESS", "boolean", "1", kBooleanAllowed,
       "With MPICH over UCX: a helper thread keeps UCX progressing while MPI_Finalize waits for the other "
       "ranks, so a rank still closing its connections gets its peers' answers (MPICH 4.0.x otherwise hangs "
       "there over tcp, pmodels/mpich#6596); independent of CANOPY_ENABLE, since it changes no call",
       "CANOPY_FINALIZE_PROGRESS=0"},
  };
  return specs;
}

ParseResult parse_settings(const Environment& env) {
  ParseResult out;
  Settings& s = out.settings;
  Environment& effective = out.effective;
  effective = env;
  std::vector<std::string> from_file;  // names whose value the settings file gave
  if (auto it = env.find("CANOPY_CONFIG"); it != env.end()) {
    s.config_file = it->second;
    effective.erase("CANOPY_CONFIG");
    ConfigFile file = read_config_file(it->second);
    out.errors.insert(out.errors.end(), file.errors.begin(), file.errors.end());
    for (const auto& [name, value] : file.settings) {
      if (effective.count(name)) continue;  // the environment overrides the file
      effective[name] = value;
      from_file.push_back(name);
    }
    s.rules = std::move(file.rules);
  }
  // A setting the environment gives overrides the file, its rules included.
  for (Rule& rule : s.rules) {
    if (env.count(Settings::algorithm_variable(rule.collective))) rule.algorithm.clear();
    if (env.count("CANOPY_SEGMENT_BYTES")) rule.segment_bytes = Rule::kUnset;
  }
  s.rules.erase(std::remove_if(s.rules.begin(), s.rules.end(),
                               [](const Rule& r) { return r.algorithm.empty() && r.segment_bytes == Rule::kUnset; }),
                s.rules.end());

  auto bad = [&](const std::string& name, const std::string& value, const std::string& allowed,
                 const std::string& instead) {
    const bool in_file = std::find(from_file.begin(), from_file.end(), name) != from_file.end();
    out.errors.push_back(name + "='" + printable(value) + "'" + (in_file ? " (from CANOPY_CONFIG='" + s.config_file + "')" : "") +
                         " is not valid (allowed: " + allowed + "); " + instead);
  };
  auto find = [&](const char* name) -> const std::string* {
    auto it = effective.find(name);
    return it == effective.end() ? nullptr : &it->second;
  };
  // A boolean setting: a bad value leaves `fallback` and says `consequence`.
  auto boolean = [&](const char* name, bool& field, bool fallback, const char* consequence) {
    const auto* v = find(name);
    if (v && !parse_boolean(*v, field)) {
      field = fallback;
      bad(name, *v, kBooleanAllowed, consequence);
    }
  };

  boolean("CANOPY_ENABLE", s.enable, false, "Canopy is disabled, native MPI runs");
  boolean("CANOPY_TIMING", s.timing, false, "no timing");
  boolean("CANOPY_FINALIZE_PROGRESS", s.finalize_progress, true, "MPI_Finalize keeps UCX progressing (the default)");
  if (const auto* v = find("CANOPY_REPORT")) {
    // Switched on or off as a boolean, as CANOPY_TIMING is, rather than a file named "1"
    // or "0" in the working directory: on means standard error.
    if (*v == "1" || *v == "true" || *v == "on" || *v == "yes" || *v == "-" || *v == "stderr") s.report = "-";
    else if (*v == "0" || *v == "false" || *v == "off" || *v == "no") s.report.clear();
    else s.report = *v;
  }
  if (const auto* v = find("CANOPY_REPORT_FORMAT")) {
    if (*v == "text" || *v == "json") s.report_format = *v;
    else bad("CANOPY_REPORT_FORMAT", *v, "text, json", "using text");
  }
  if (const auto* v = find("CANOPY_SAVE_RULES")) s.save_rules = *v == "none" ? "" : *v;
  if (const auto* v = find("CANOPY_TRACE")) s.trace = *v == "none" ? "" : *v;
  if (const auto* v = find("CANOPY_TRACE_FORMAT")) {
    if (*v == "json" || *v == "otf2") s.trace_format = *v;
    else bad("CANOPY_TRACE_FORMAT", *v, "json, otf2", "using json");
  }
  if (const auto* v = find("CANOPY_TRACE_CALLS")) {
    long long first = 0, every = 0;
    char tail = 0;
    if (std::sscanf(v->c_str(), "%lld:%lld%c", &first, &every, &tail) != 2 || first < 0 || every < 0 ||
        first > 1000000000 || every > 1000000000 || v->find_first_of(" +-") != std::string::npos)
      bad("CANOPY_TRACE_CALLS", *v, "N:M, two integers from 0 to 1000000000", "using 8:64");
    else {
      s.trace_first = first;
      s.trace_every = every;
    }
  }
  for (planner::Collective c : {planner::Collective::Reduce, planner::Collective::Bcast, planner::Collective::Allreduce}) {
    const char* name = Settings::algorithm_variable(c);
    if (const auto* v = find(name)) {
      if (is_algorithm_choice(c, *v)) s.algorithm_of(c) = *v;
      else {
        s.algorithm_of(c) = "native";
        bad(name, *v, algorithm_choices(c), std::string("native ") + planner::mpi_function_name(c) + " runs");
      }
    }
  }
  if (const auto* v = find("CANOPY_SEGMENT_BYTES")) {
    if (*v == "auto") s.segment_bytes = -1;
    else {
      char* end = nullptr;
      errno = 0;
      const long long n = std::strtoll(v->c_str(), &end, 10);
      if (v->empty() || *end != '\0' || errno != 0 || n < 0) {
        s.reduce_algorithm = s.bcast_algorithm = "native";
        bad("CANOPY_SEGMENT_BYTES", *v, "auto, or an integer >= 0", "native MPI_Reduce and MPI_Bcast run");
      } else {
        s.segment_bytes = n;
      }
    }
  }
  if (const auto* v = find("CANOPY_AUTO_TRIALS")) {
    char* end = nullptr;
    errno = 0;
    const long n = std::strtol(v->c_str(), &end, 10);
    if (v->empty() || *end != '\0' || errno != 0 || n < 0 || n > 100)
      bad("CANOPY_AUTO_TRIALS", *v, "an integer from 0 to 100", "using 2");
    else
      s.auto_trials = static_cast<int>(n);
  }
  if (const auto* v = find("CANOPY_AUTO_NATIVE_BELOW")) {
    double x = 0;
    if (!parse_number(*v, x) || !(x >= 0) || x > 1)
      bad("CANOPY_AUTO_NATIVE_BELOW", *v, "a number of seconds from 0 to 1", "using 5e-6");
    else
      s.auto_native_below = x;
  }
  if (const auto* v = find("CANOPY_AUTO_NATIVE_AFTER")) {
    char* end = nullptr;
    errno = 0;
    const long long n = std::strtoll(v->c_str(), &end, 10);
    if (v->empty() || *end != '\0' || errno != 0 || n < 0 || n > 1000000000)
      bad("CANOPY_AUTO_NATIVE_AFTER", *v, "an integer from 0 to 1000000000", "using 256");
    else
      s.auto_native_after = static_cast<int>(n);
  }
  if (const auto* v = find("CANOPY_AUTO_RECHECK")) {
    double x = 0;
    if (!parse_number(*v, x) || !(x >= 0) || x > 0.5)
      bad("CANOPY_AUTO_RECHECK", *v, "a number from 0 to 0.5", "using 0.02");
    else
      s.auto_recheck = x;
  }
  if (const auto* v = find("CANOPY_RING_AFTER")) {
    double x = 0;
    if (*v == "off") s.ring_after = -1;
    else if (!parse_number(*v, x) || !(x >= 0) || x > 3600)
      bad("CANOPY_RING_AFTER", *v, "a number of seconds from 0 to 3600, or off", "using 0.01");
    else
      s.ring_after = x;
  }
  boolean("CANOPY_AUTO_NATIVE_FIRST", s.auto_native_first, true, "native MPI first");
  boolean("CANOPY_LEARN", s.learn, true, "learning");
  if (const auto* v = find("CANOPY_LOG_LEVEL")) {
    if (std::find(std::begin(kLogLevels), std::end(kLogLevels), *v) != std::end(kLogLevels)) s.log_level = *v;
    else bad("CANOPY_LOG_LEVEL", *v, join({std::begin(kLogLevels), std::end(kLogLevels)}), "using warn");
  }
  if (const auto* v = find("CANOPY_SCHEDULE_LOG")) s.schedule_log = *v;
  if (const auto* v = find("CANOPY_FAULT")) {
    if (std::find(std::begin(kFaults), std::end(kFaults), *v) != std::end(kFaults)) s.fault = *v;
    else bad("CANOPY_FAULT", *v, join({std::begin(kFaults), std::end(kFaults)}), "no fault is injected");
  }
  boolean("CANOPY_VERIFY", s.verify, false, "calls are not verified");
  if (const auto* v = find("CANOPY_SHM")) {
    if (*v == "auto" || *v == "window" || *v == "posix" || *v == "off") s.shm = *v;
    else bad("CANOPY_SHM", *v, kShmAllowed, "no staging ring (as off)"), s.shm = "off";
  }
  if (const auto* v = find("CANOPY_CMA")) {
    if (*v == "auto" || *v == "on" || *v == "off") s.cma = *v;
    else bad("CANOPY_CMA", *v, kCmaAllowed, "no cross-memory attach (as off)"), s.cma = "off";
  }
  if (const auto* v = find("CANOPY_TOPOLOGY")) {
    // A path is only read at MPI_Init (by world rank 0, which knows the ranks and nodes).
    if (v->empty()) bad("CANOPY_TOPOLOGY", *v, kTopologyAllowed, "no topology (as none)");
    s.topology = v->empty() ? "none" : *v;
  }
  if (const auto* v = find("CANOPY_RHO")) {
    double x = 0;
    if (!parse_number(*v, x) || !(x > 0) || x > 10)
      bad("CANOPY_RHO", *v, "a number > 0 and <= 10", "using 0.2");
    else
      s.rho = x;
  }
  if (const auto* v = find("CANOPY_PROBE_BYTES")) {
    char* end = nullptr;
    errno = 0;
    const long long n = std::strtoll(v->c_str(), &end, 10);
    if (v->empty() || *end != '\0' || errno != 0 || n < 1 || n > kMaxProbeBytes)
      bad("CANOPY_PROBE_BYTES", *v, "an integer from 1 to " + std::to_string(kMaxProbeBytes), "using 65536");
    else
      s.probe_bytes = n;
  }
  if (const auto* v = find("CANOPY_MODEL")) {
    std::string error;
    s.model = resolve_model(*v, error);
    if (!error.empty()) {
      s.reduce_algorithm = s.bcast_algorithm = "native";
      out.errors.push_back("CANOPY_MODEL='" + printable(*v) + "' is not valid: " + printable(error) +
                           " (allowed: default, measure, a model spec, or a file holding one); "
                           "native MPI_Reduce and MPI_Bcast run");
    }
  }
  for (const auto& [name, value] : effective) {
    if (name.rfind("CANOPY_", 0) != 0) continue;
    const auto& specs = setting_specs();
    const bool known = std::any_of(specs.begin(), specs.end(), [&n = name](const SettingSpec& sp) { return sp.name == n; });
    if (!known) {
      std::vector<std::string> names;
      for (const auto& sp : specs) names.push_back(sp.name);
      out.warnings.push_back("unknown setting " + printable(name) + " ignored (known: " + join(names) + ")");
    }
  }
  return out;
}

Environment process_environment() {
  Environment env;
  for (char** e = environ; e && *e; ++e) {
    if (std::strncmp(*e, "CANOPY_", 7) != 0) continue;
    const char* eq = std::strchr(*e, '=');
    if (!eq) continue;
    env.emplace(std::string(static_cast<const char*>(*e), eq), std::string(eq + 1));
  }
  return env;
}

std::uint64_t fingerprint(const Environment& env) {
  // FNV-1a over "name=value\n" of the known settings in sorted order (std::map is
  // sorted). Unknown names change nothing Canopy does, so they may differ.
  planner::Fnv1a h;
  const auto& specs = setting_specs();
  for (const auto& [k, v] : env) {
    // Settings a rank may legitimately differ in: where it logs and how verbosely, and
    // whether its MPI_Finalize keeps UCX progressing (that sends nothing of Canopy's).
    if (k == "CANOPY_SCHEDULE_LOG" || k == "CANOPY_LOG_LEVEL" || k == "CANOPY_FINALIZE_PROGRESS") continue;
    if (std::none_of(specs.begin(), specs.end(), [&key = k](const SettingSpec& s) { return s.name == key; })) continue;
    h.bytes(k + "=" + v + "\n");
  }
  return h.value();
}

std::uint64_t fingerprint_in_force(const ParseResult& parsed) {
  Environment env = parsed.effective;
  // The rules travel in the fingerprint under a name no environment variable has.
  env["CANOPY_CONFIG"] = canonical(parsed.settings.rules);
  return fingerprint(env);
}

std::string& Settings::algorithm_of(planner::Collective c) {
  switch (c) {
    case planner::Collective::Reduce: return reduce_algorithm;
    case planner::Collective::Bcast: return bcast_algorithm;
    case planner::Collective::Allreduce: break;
  }
  return allreduce_algorithm;
}

const std::string& Settings::algorithm_of(planner::Collective c) const {
  return const_cast<Settings*>(this)->algorithm_of(c);
}

const char* Settings::algorithm_variable(planner::Collective c) {
  switch (c) {
    case planner::Collective::Reduce: return "CANOPY_REDUCE_ALGO";
    case planner::Collective::Bcast: return "CANOPY_BCAST_ALGO";
    case planner::Collective::Allreduce: break;
  }
  return "CANOPY_ALLREDUCE_ALGO";
}

Choice Settings::choice_for(planner::Collective c, std::int64_t bytes, int nranks, bool commutative) const {
  Choice choice{algorithm_of(c), segment_bytes};
  choice.algorithm_origin = std::string(algorithm_variable(c)) + "=" + choice.algorithm;
  bool algorithm_set = false, segment_set = false;
  for (const Rule& r : rules) {
    if (!r.matches(c, bytes, nranks, commutative)) continue;
    if (!algorithm_set && !r.algorithm.empty()) {
      choice.algorithm = r.algorithm;
      choice.algorithm_origin = "CANOPY_CONFIG " + (r.origin.empty() ? std::string("rule") : r.origin) +
                                " (algorithm " + r.algorithm + ")";
      algorithm_set = true;
    }
    if (!segment_set && r.segment_bytes != Rule::kUnset) {
      choice.segment_bytes = r.segment_bytes;
      segment_set = true;
    }
  }
  return choice;
}

bool Settings::always_native(planner::Collective c) const {
  if (algorithm_of(c) != "native") return false;
  return std::none_of(rules.begin(), rules.end(), [&](const Rule& r) {
    return r.collective == c && !r.algorithm.empty() && r.algorithm != "native";
  });
}

std::string settings_markdown() {
  // Pipes inside cells would split them; the allowed lists use "|" for alternatives.
  auto cell = [](std::string text) {
    std::string out;
    for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
    return out;
  };
  std::ostringstream out;
  out << "| variable | type | default | allowed | meaning | example |\n|---|---|---|---|---|---|\n";
  for (const auto& s : setting_specs())
    out << "| `" << s.name << "` | " << s.type << " | `" << s.default_value << "` | " << cell(s.allowed) << " | "
        << cell(s.description) << " | `" << s.example << "` |\n";
  return out.str();
}

std::string settings_table() {
  std::ostringstream out;
  for (const auto& s : setting_specs()) {
    out << s.name << "  (" << s.type << ", default " << s.default_value << ")\n"
        << "    " << s.description << "\n"
        << "    allowed: " << s.allowed << "\n"
        << "    example: " << s.example << "\n";
  }
  return out.str();
}

}  // namespace canopy::config
