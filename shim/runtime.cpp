#include "shim/runtime.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "planner/describe.h"
#include "planner/fnv1a.h"
#include "planner/registry.h"
#include "planner/staged.h"
#include "planner/topology.h"
#include "shim/collectives.h"
#include "shim/comm_state.h"
#include "shim/model_probe.h"
#include "shim/native_reduce.h"
#include "shim/platform.h"
#include "shim/polite.h"
#include "shim/report.h"
#include "shim/save_rules.h"
#include "shim/topology_probe.h"
#include "shim/trace.h"
#include "shim/warm_code.h"

namespace canopy::shim {

std::atomic<Runtime*> detail::made_runtime{nullptr};

Runtime& detail::make_runtime() {
  static Runtime instance;
  made_runtime.store(&instance, std::memory_order_release);
  return instance;
}

namespace {

std::shared_ptr<spdlog::logger> make_logger(int world_rank, const std::string& level) {
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  auto log = std::make_shared<spdlog::logger>("canopy", sink);
  log->set_pattern("canopy[" + std::to_string(world_rank) + "] %l: %v");
  log->set_level(spdlog::level::from_str(level));
  log->flush_on(spdlog::level::trace);
  return log;
}

// Ranks that read different CANOPY_* settings would plan different message patterns
// and deadlock: compare a fingerprint once, and switch Canopy off everywhere if any
// rank differs.
// Nonblocking and polite, like every collective of Canopy's MPI_Init: whether ranks
// outnumber cores is not known yet, and where they do MPICH's blocking collectives
// busy-poll (16-40 ms for this one at 8 ranks on 2 cores).
bool settings_agree(std::uint64_t mine) {
  std::uint64_t both[2] = {mine, ~mine};
  std::uint64_t max[2] = {0, 0};
  if (allreduce_politely(both, max, 2, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS) return false;
  return max[0] == mine && max[1] == ~mine;  // the maximum of x and of ~x are both ours only if all equal
}

// Every rank's node name and online cores, gathered politely over MPI_COMM_WORLD, and
// the nodes they make seen from this rank. Where the gather fails every rank is a node
// of its own (as where a node cannot be found), so nothing is shared.
planner::NodeMap gather_nodes(std::uint64_t name, long cores_here, int world_rank) {
  int size = 1;
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::uint64_t mine[2] = {name, static_cast<std::uint64_t>(std::max(cores_here, 0L))};
  std::vector<std::uint64_t> all(2 * static_cast<std::size_t>(size));
  std::vector<std::uint64_t> names(size);
  std::vector<long> cores(size, 0);
  for (int r = 0; r < size; ++r) names[r] = static_cast<std::uint64_t>(r);
  if (allgather_politely(mine, 2, MPI_UINT64_T, all.data(), MPI_COMM_WORLD) == MPI_SUCCESS) {
    for (int r = 0; r < size; ++r) {
      names[r] = all[2 * r];
      cores[r] = static_cast<long>(all[2 * r + 1]);
    }
  }
  return planner::map_nodes(names, cores, world_rank);
}

// This rank's rank and the ranks on its node as its launcher placed them (MPICH's
// Hydra: MPI_LOCALRANKID, MPI_LOCALNRANKS; Open MPI: OMPI_COMM_WORLD_LOCAL_RANK and
// _SIZE); false where neither says.
bool launcher_placement(int& rank, int& size) {
  for (const auto& [r, n] : {std::pair{"MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
                             std::pair{"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"}}) {
    const char* a = std::getenv(r);
    const char* b = std::getenv(n);
    if (a && b) {
      rank = std::atoi(a);
      size = std::atoi(b);
      return size > 0;
    }
  }
  return false;
}

// The nodes as MPI's own MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) groups the ranks:
// each rank learns its node's lowest world rank, and those are gathered as names.
planner::NodeMap nodes_from_split_type(const Runtime& rt) {
  MPI_Comm node = MPI_COMM_NULL;
  int leader = rt.world_rank;
  if (PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
    // Key 0 keeps world order: the node's rank 0 is its lowest world rank.
    bcast_politely(&leader, 1, MPI_INT, 0, node);
    PMPI_Comm_free(&node);
  }
  return gather_nodes(static_cast<std::uint64_t>(leader), rt.cores_per_node, rt.world_rank);
}

// Where MPI_COMM_WORLD's ranks are, from processor names and the launcher's placement.
// false where some rank's launcher did not place it as its processor name says.
bool nodes_from_processor_names(const Runtime& rt, planner::NodeMap& map) {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  PMPI_Get_processor_name(name, &length);
  planner::Fnv1a hash;
  hash.bytes(std::string_view(name, static_cast<std::size_t>(length)));
  map = gather_nodes(hash.value(), rt.cores_per_node, rt.world_rank);
  int placed_rank = -1, placed_size = 0;
  int agrees = launcher_placement(placed_rank, placed_size) && placed_rank == map.local_rank &&
               placed_size == map.local_size;
  int all_agree = 0;
  if (allreduce_politely(&agrees, &all_agree, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD) != MPI_SUCCESS) all_agree = 0;
  return all_agree != 0;
}

// The node structure of MPI_COMM_WORLD, and whether any node runs more ranks than it
// has online cores. MPICH busy-polls while it waits, so there its collectives starve
// the ranks they wait for; its first calls are still fast (shared-memory cells not yet
// full), so trials would mislead auto.
// Nodes are the ranks with one processor name (MPI_Get_processor_name, hashed; one
// polite gather, planner::map_nodes) where every rank's launcher placed it so (same
// local rank and size). Elsewhere (no such placement, or a launcher that made several
// nodes of one host, as the emulated test bed's network namespaces do) MPI's own
// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED): that blocks, 240 ms of Canopy's 315-380 ms
// in MPI_Init at 8 ranks on 2 cores, so it is the fallback. Under SMPI
// (shim/platform.h) split_type alone, which groups the ranks by simulated host, and the
// host's cores from the platform description.
void discover_nodes(Runtime& rt) {
  rt.cores_per_node = cores_of_this_node();
  planner::NodeMap map;
  if (!platform().nodes_from_processor_names || !nodes_from_processor_names(rt, map)) map = nodes_from_split_type(rt);
  rt.node_leader = map.leader;
  rt.node_rank = map.local_rank;
  rt.oversubscribed = map.oversubscribed;
  rt.max_ranks_per_node = map.max_ranks_per_node;
  rt.nodes = map.nodes;
}

bool every_call_native(const Runtime& rt) {
  return rt.settings.always_native(planner::Collective::Reduce) &&
         rt.settings.always_native(planner::Collective::Bcast) &&
         rt.settings.always_native(planner::Collective::Allreduce);
}

// Whether a job without CANOPY_MODEL measures its model at MPI_Init: where it spans
// several nodes and CANOPY_TOPOLOGY=auto probes the network there anyway (tens of
// milliseconds at 256-1024 ranks; the model's figures, a few more). The built-in model
// is a placeholder for one shared-memory node (alpha 2 us, 10 GB/s transfers and
// reductions): beside measured links its reductions and copies are a guess, and the
// links take them (discover_topology). Measured 2026-12-06 under SimGrid's SMPI
// (cluster-edr, 256 ranks, a 1 MiB allreduce, docs/performance-history.md section 30):
// SMPI charges no time for computation there, the built-in gamma priced a pipelined
// hierarchical-leaders at 991 us where it took 531, so it joined the trials and native
// ran first for 16 calls (524.2 us a call); measured (gamma about 0), it was priced
// 675 us, took 685, and the run took 491.5 us a call. One node keeps the placeholder:
// MPI_Init's budget there is a few milliseconds (issue 49) and the node level's
// figures are learned from its calls (CANOPY_LEARN). The same on every rank: settings
// agreed, nodes found alike.
bool measures_model_with_network(const Runtime& rt) {
  return rt.nodes > 1 && rt.settings.topology == "auto" && !every_call_native(rt);
}

// CANOPY_TOPOLOGY (collective, after the model: links take its reduction and copy
// costs). Skipped when every call runs natively anyway. A file that cannot be used
// makes both collectives native, as a bad CANOPY_MODEL does: the user said the network
// is not one homogeneous cluster, so Canopy's plans without it could be far off.
void discover_topology(Runtime& rt) {
  if (every_call_native(rt)) return;
  TopologyProbe probe = probe_topology(rt.settings, rt.model, rt.nodes, rt.node_leader);
  const bool lead = rt.world_rank == 0;
  if (probe.failed) {
    if (lead) rt.log->error("{}", probe.error);
    rt.settings.reduce_algorithm = rt.settings.bcast_algorithm = rt.settings.allreduce_algorithm = "native";
    rt.settings.rules.clear();
    return;
  }
  rt.topology = std::move(probe.topology);
  rt.topology_source = probe.source;
  rt.topology_description = probe.description;
  if (lead && !probe.summary.empty()) rt.log->info("topology: {}", probe.summary);
}

// One-time costs where MPI programs expect them: MPI_COMM_WORLD's state, its private
// duplicate and its node's staging ring, made here, collectively, rather than inside the
// first call that needs them. Made in a call, they were paid in the middle of a user's
// timing loop: the ring's 0.5 ms at 2 ranks (1.6-2.7 ms at 16) inside an OSU row of 100
// calls of 8 KiB, whose CANOPY_RING_AFTER budget was spent there, came to 20 us a call
// against native's 2. Every condition below is the same on every rank (settings agreed,
// nodes found alike, one world), so either every rank makes it or none does. Other
// communicators still make theirs on first use (CANOPY_RING_AFTER): MPI_Comm_dup and
// the like are not intercepted, and most programs do their collectives on the world.
// Whether a call may run a schedule that uses the node's ring: one on auto, or one
// forced (by a variable or a CANOPY_CONFIG rule) to an algorithm that stages, reaches
// into other ranks' memory, or plans node levels (topology-aware ones). Forced
// point-to-point schedules never make a ring: it is collective and holds memory.
bool may_use_ring(const planner::Collective collective, const std::string& algorithm) {
  if (algorithm == "auto") return true;
  const planner::Algorithm* a = planner::find_algorithm(collective, algorithm);
  return a && (a->staged || a->direct || a->topology_aware);
}

bool ring_wanted(const Runtime& rt) {
  for (int c = 0; c < planner::kCollectives; ++c) {
    const auto collective = static_cast<planner::Collective>(c);
    if (!rt.native_only[c] && may_use_ring(collective, rt.settings.algorithm_of(collective))) return true;
  }
  return std::any_of(rt.settings.rules.begin(), rt.settings.rules.end(),
                     [](const config::Rule& r) { return may_use_ring(r.collective, r.algorithm); });
}

// MPI_COMM_WORLD's private duplicate in MPI_Init, where a job expects its set-up, not
// inside its first call that sends Canopy's own messages (where the ring is wanted,
// make_world_ring makes it here anyway). Communicators the application makes keep
// theirs for their first such call (CommState::of says why). Decision: under SMPI
// MPI_Comm_dup takes rounds that grow with the ranks (4.4 ms of simulated time at 1024
// ranks on cluster-edr), and made at the first call it was most of a 100-call run of 8 B
// reduces (docs/simulation.md); on a real MPI it is one MPI_Comm_idup, made at the
// first call of nearly every job anyway. Not where every collective is native.
void make_world_duplicate(const Runtime& rt) {
  if (std::all_of(std::begin(rt.native_only), std::end(rt.native_only), [](bool native) { return native; })) return;
  int size = 1;
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) return;
  if (CommState* world = CommState::of(MPI_COMM_WORLD)) world->private_ready();
}

void make_world_ring(Runtime& rt) {
  if (rt.settings.shm == "off" || !ring_wanted(rt)) return;
  int size = 1;
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) return;
  const double started = PMPI_Wtime();
  CommState* world = CommState::of(MPI_COMM_WORLD);
  if (!world || !world->staging_offered() || !world->private_ready()) return;
  const int per_node = world->topology() ? planner::largest_node(*world->topology()) : world->size();
  world->staging_ring(planner::staging_entries_for(per_node), planner::staging_entry_bytes_for(per_node));
  rt.ring_seconds = PMPI_Wtime() - started;
}

// Canopy's code read once at MPI_Init (shim/warm_code.h says why), where a call may run
// a schedule: not where every collective is native, nor under SMPI (simulated time does
// not see a first touch), nor where a node's ranks outnumber its cores. Decision: there
// the ranks' reads take turns on the cores (8 ranks on 2 cores: about 8 x 0.9 ms over 2
// cores, 4 ms more in every rank's MPI_Init, estimated), against calls of milliseconds
// whose first runs they would speed by tens of microseconds. Nothing here is collective.
void warm_code(Runtime& rt) {
  if (every_call_native(rt) || platform().simulated || rt.oversubscribed) return;
  const double started = PMPI_Wtime();
  rt.code_bytes = warm_code_around(reinterpret_cast<const void*>(&warm_code)).bytes;
  rt.code_seconds = PMPI_Wtime() - started;
}

}  // namespace

void initialize(int thread_level) {
  Runtime& rt = runtime();
  const double started = PMPI_Wtime();
  PMPI_Comm_rank(MPI_COMM_WORLD, &rt.world_rank);
  rt.thread_level = thread_level;
  rt.copy_in_place_at_nonzero_root = this_mpi_crashes_on_in_place_reduce_at_nonzero_root();
  const config::Environment env = config::process_environment();
  config::ParseResult parsed = config::parse_settings(env);
  rt.settings = parsed.settings;
  rt.log = make_logger(rt.world_rank, rt.settings.log_level);
  const bool lead = rt.world_rank == 0;
  if (lead) {
    for (const auto& e : parsed.errors) rt.log->error("{}", e);
    for (const auto& w : parsed.warnings) rt.log->warn("{}", w);
  }
  // What the platform cannot do is off whatever the settings say (shim/platform.h); on
  // every rank alike, so the fingerprint below still compares what the user set.
  if (!platform().shared_memory_ring && rt.settings.shm != "off") {
    if (lead && (rt.settings.shm == "window" || rt.settings.shm == "posix"))
      rt.log->warn("CANOPY_SHM={}: no staging ring under {} (shim/platform.h); point-to-point only",
                   rt.settings.shm, platform().name);
    rt.settings.shm = "off";
  }
  if (!platform().cross_memory_attach && rt.settings.cma != "off") {
    if (lead && rt.settings.cma == "on")
      rt.log->warn("CANOPY_CMA=on: no cross-memory attach under {} (shim/platform.h)", platform().name);
    rt.settings.cma = "off";
  }
  rt.effective_settings = parsed.effective;
  if (!settings_agree(config::fingerprint_in_force(parsed))) {
    if (lead) rt.log->error("CANOPY_* settings differ between ranks; Canopy is disabled and native MPI runs");
    return;
  }
  if (!rt.settings.enable) return;
  discover_nodes(rt);
  // Only after the ranks agree on the settings: measuring is collective.
  const double probing = PMPI_Wtime();
  // (A cross-memory-attach copy is timed only where direct schedules may run.)
  const bool direct_wanted =
      rt.settings.cma != "off" && rt.settings.shm != "off" && rt.settings.fault != "cma-unavailable";
  if (rt.settings.model == "measure") {
    rt.model = measure_model(rt.node_leader == 0, direct_wanted);
    rt.model_source = "measured, CANOPY_MODEL=measure";
  } else if (rt.settings.model.empty() && measures_model_with_network(rt)) {
    rt.model = measure_model(rt.node_leader == 0, direct_wanted, false);
    rt.model_source = "measured: the job spans " + std::to_string(rt.nodes) + " nodes";
  } else {
    rt.model = rt.settings.model.empty() ? planner::default_model() : planner::parse_model(rt.settings.model);
    rt.model_source = rt.settings.model.empty() ? "built-in" : "CANOPY_MODEL";
  }
  discover_topology(rt);
  rt.probe_seconds = PMPI_Wtime() - probing;
  if (!rt.settings.schedule_log.empty()) {
    const std::string error = rt.schedule_log.open(rt.settings.schedule_log, rt.world_rank);
    if (!error.empty()) rt.log->error("{}", error);
  }
  if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &CommState::delete_attribute_callback, &rt.keyval, nullptr) !=
      MPI_SUCCESS) {
    if (lead) rt.log->error("cannot create a communicator attribute; Canopy is disabled");
    return;
  }
  if (rt.settings.timing || !rt.settings.report.empty()) rt.stats.enable();
  // The report and the saved rules are gathered at MPI_Finalize on a communicator of their own.
  // So is CANOPY_TRACE's timeline, whose clocks are aligned here. Not under
  // MPI_THREAD_MULTIPLE: calls on several threads would mix their steps (shim/trace.h).
  if (!rt.settings.trace.empty() && rt.concurrent_calls()) {
    if (lead) rt.log->warn("CANOPY_TRACE='{}': not traced under MPI_THREAD_MULTIPLE", rt.settings.trace);
    rt.settings.trace.clear();
  }
  if (!rt.settings.trace.empty() && rt.settings.trace_format == "otf2" && !trace::otf2_available()) {
    if (lead)
      rt.log->error("CANOPY_TRACE_FORMAT=otf2: this libcanopy.so was built without OTF2 (Debian's "
                    "libotf2-trace-dev; rebuild with it installed); no trace");
    rt.settings.trace.clear();
  }
  if ((!rt.settings.report.empty() || !rt.settings.save_rules.empty() || !rt.settings.trace.empty()) &&
      PMPI_Comm_dup(MPI_COMM_WORLD, &rt.report_comm) != MPI_SUCCESS) {
    if (lead)
      rt.log->error("CANOPY_REPORT, CANOPY_SAVE_RULES, CANOPY_TRACE: cannot duplicate MPI_COMM_WORLD; no report, "
                    "no rules saved, no trace");
    rt.report_comm = MPI_COMM_NULL;
  }
  if (rt.report_comm != MPI_COMM_NULL && !rt.settings.trace.empty())
    trace::setup(rt.report_comm, rt.settings.trace_first, rt.settings.trace_every, rt.node_leader == 0);
  // Last: a CANOPY_TOPOLOGY file that cannot be used has made both collectives native.
  rt.native_only = {rt.settings.always_native(planner::Collective::Reduce),
                    rt.settings.always_native(planner::Collective::Bcast),
                    rt.settings.always_native(planner::Collective::Allreduce)};
  // A forced segment size, or rules that split a size class, apply per exact count; rules
  // of whole classes (those CANOPY_SAVE_RULES writes) keep the plans per class.
  rt.exact_plans = rt.settings.segment_bytes >= 0 || !config::rules_keep_size_classes(rt.settings.rules);
  rt.active = true;
  make_world_duplicate(rt);
  make_world_ring(rt);
  warm_code(rt);
  rt.startup_seconds = PMPI_Wtime() - started;
  if (lead)
    rt.log->info("active: reduce={} bcast={} allreduce={} segment_bytes={}{} model {}; Canopy's part of MPI_Init {} "
                 "(probing {}{}{})",
                 rt.settings.reduce_algorithm, rt.settings.bcast_algorithm, rt.settings.allreduce_algorithm,
                 rt.settings.segment_bytes < 0 ? std::string("auto") : std::to_string(rt.settings.segment_bytes),
                 rt.oversubscribed ? " (oversubscribed: native MPI does not compete)" : "", rt.model.spec(),
                 planner::format_seconds(rt.startup_seconds), planner::format_seconds(rt.probe_seconds),
                 rt.ring_seconds > 0 ? ", MPI_COMM_WORLD's staging ring " + planner::format_seconds(rt.ring_seconds)
                                     : std::string(),
                 rt.code_bytes > 0 ? fmt::format(", reading its {} KiB of code once {}", rt.code_bytes / 1024,
                                                 planner::format_seconds(rt.code_seconds))
                                   : std::string());
}

void finalize() {
  flush_native_shortcuts();  // the calls they counted, for the report and the log below
  Runtime& rt = runtime();
  if (rt.settings.timing)
    for (const CallRecord* r : rt.stats.records())
      if (!r->kind().schedule_id.empty()) rt.schedule_log.record_timing(*r);
  if (rt.active) CommState::stamp_all();
  if (rt.report_comm != MPI_COMM_NULL && !rt.settings.report.empty()) {
    JobFacts job;
    PMPI_Comm_size(MPI_COMM_WORLD, &job.ranks);
    job.nodes = rt.nodes;
    job.max_ranks_per_node = rt.max_ranks_per_node;
    job.cores_per_node = rt.cores_per_node;
    job.oversubscribed = rt.oversubscribed;
    job.topology_source = rt.topology_source;
    job.topology = rt.topology_description;
    job.clusters = rt.topology ? rt.topology->clusters : 1;
    job.model = rt.model.spec();
    job.model_source = rt.model_source;
    job.startup_seconds = rt.startup_seconds;
    job.probe_seconds = rt.probe_seconds;
    job.ring_seconds = rt.ring_seconds;
    job.code_seconds = rt.code_seconds;
    if (const CommState* world = CommState::existing(MPI_COMM_WORLD); world && world->learning())
      job.learned_model = world->model().spec();
    job.config_file = rt.settings.config_file;
    job.rules = static_cast<int>(rt.settings.rules.size());
    job.settings.assign(rt.effective_settings.begin(), rt.effective_settings.end());
    const std::string error = write_report(rt.settings.report, rt.settings.report_format, job);
    if (!error.empty()) rt.log->error("{}", error);
  }
  if (rt.report_comm != MPI_COMM_NULL && !rt.settings.save_rules.empty()) {
    int rules = 0;
    const std::string error = save_rules(rt.settings.save_rules, rt.report_comm, &rules);
    if (!error.empty()) rt.log->error("{}", error);
    else if (rt.world_rank == 0)
      rt.log->info("CANOPY_SAVE_RULES: {} rule(s) of auto's decisions written to {}; run the next job with "
                   "CANOPY_CONFIG={}",
                   rules, rt.settings.save_rules, rt.settings.save_rules);
  }
  if (rt.report_comm != MPI_COMM_NULL && trace::on()) {
    const std::string error = trace::write(rt.report_comm, rt.settings.trace, rt.settings.trace_format == "otf2");
    if (!error.empty()) rt.log->error("{}", error);
    else if (rt.world_rank == 0)
      rt.log->info("CANOPY_TRACE: the sampled calls' timeline written to {}", rt.settings.trace_format == "otf2"
                                                                                  ? rt.settings.trace + "/traces.otf2"
                                                                                  : rt.settings.trace +
                                                                                        " (open it in ui.perfetto.dev)");
  }
  if (rt.report_comm != MPI_COMM_NULL) PMPI_Comm_free(&rt.report_comm);
  if (rt.active) {
    CommState::release_all();
    PMPI_Comm_free_keyval(&rt.keyval);
    rt.active = false;
  }
  rt.schedule_log.close();
  if (rt.log) rt.log->flush();
}

}  // namespace canopy::shim
