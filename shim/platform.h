// What the MPI underneath lets Canopy do: one struct, filled once, in one file
// (platform.cpp), so that the rest of the shim asks a question ("may I poll?") instead of
// testing which MPI it was built for. Two platforms exist: a real MPI (MPICH, Open MPI),
// where every capability is there, and SimGrid's SMPI (CANOPY_MPI=smpi), where the
// ranks are simulated actors of one process and time is the simulator's.
#pragma once

namespace canopy::shim {

struct Platform {
  const char* name;  // "mpi" or "smpi", for logs and the report
  // Ranks are simulated (SMPI): PMPI_Wtime is simulated time, and only MPI calls let
  // other ranks run.
  bool simulated;
  // Waits may poll (PMPI_Test, then sched_yield) so an oversubscribed node's ranks give
  // their core away. SMPI prices every MPI_Test and MPI_Iprobe at 100 us of simulated
  // time (smpi/test, smpi/iprobe) and spends its wall time on them: there a wait blocks
  // in PMPI_Wait, which SMPI turns into one simulated event.
  bool polling_waits;
  // Canopy's own collectives (agreements, gathers, the probes' broadcasts) may be
  // nonblocking and waited for politely (MPICH's blocking ones busy-poll where ranks
  // outnumber cores). SMPI 3.32 implements nonblocking collectives with every rank
  // sending to every other (p^2 messages: 65,536 for one allgather at 256 ranks, which
  // kept 256 simulated ranks in MPI_Init for over 3 minutes of wall time); its blocking
  // ones follow the selector's algorithms (log p rounds). There they block.
  bool nonblocking_collectives;
  // PMPI_Comm_idup exists (SMPI 3.32 aborts with "Not yet implemented"; its
  // PMPI_Comm_dup blocks no core anyway).
  bool nonblocking_dup;
  // The topology probe at MPI_Init runs on a duplicate of MPI_COMM_WORLD. A real MPI's
  // MPI_Comm_dup is about one allreduce, and the duplicate keeps the probe's messages
  // apart from any a PMPI tool stacked after Canopy may have left on MPI_COMM_WORLD.
  // SMPI's costs rounds that grow with the ranks (simulated: 2.0 s for 88 ranks on
  // 004's grid, 4.2 s for 256 and 15.1 s for 1024 ranks on a generated grid of 16
  // sites, where Canopy's own probing took 1.1-1.7 s), and no tool is stacked there:
  // the probe runs on MPI_COMM_WORLD itself, inside MPI_Init, before the application can
  // send anything, and completes every message it sends.
  bool probe_duplicates_world;
  // Every rank builds, validates and logs each candidate's whole schedule where it has
  // up to 2^18 steps (shim/plan_cache.cpp), beyond that its own view, shape-checked
  // (views are proven against whole schedules by tests/planner/test_views.cpp). Under
  // SMPI the ranks plan one after another in one process, so whole schedules cost p
  // ranks x (p x segments) steps: views only (256 ranks, 1 MiB reduces with trials: 46
  // s of wall time with whole schedules, docs/simulation.md).
  bool builds_whole_schedules;
  // The ranks are one process (SMPI: simulated actors), so the planner's prices, pure
  // functions of what every rank passes alike, are computed once and shared by all
  // (shim/process_memo.h says what that saves and how the ranks' privatized copies of
  // the library reach one store).
  bool shares_plans_between_ranks;
  // Cross-memory attach (process_vm_readv/writev) between ranks: ranks are processes.
  // SMPI's ranks share one process, and the simulator would not see the copies.
  bool cross_memory_attach;
  // The node's staging ring in shared memory (CANOPY_SHM). Its waits spin on flags in
  // memory: under SMPI a spinning actor lets no other run (only its MPI_Iprobe does,
  // priced 100 us each) and copies in memory take no simulated time, so a node level
  // would be both slow to simulate and priced wrong. Off there.
  bool shared_memory_ring;
  // A helper thread may run beside the rank (shim/finalize_progress.cpp). SMPI gives
  // MPI_THREAD_SINGLE only; its actors are not threads the helper could share.
  bool helper_threads;
  // hwloc describes the rank's machine (packages, binding). Under SMPI it describes the
  // real machine, not the simulated host.
  bool hwloc_describes_node;
  // Nodes are found from processor names and the launcher's placement first, with
  // MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) the fallback. Under SMPI the launcher
  // places nothing and the simulated host is what split_type groups by: it alone.
  bool nodes_from_processor_names;
};

// The platform this libcanopy.so was built for (decided at build time, never changes).
const Platform& platform();

// Online cores of this rank's node: sysconf on a real machine, the simulated host's
// core count under SMPI (the real machine's would call every simulated node
// oversubscribed).
long cores_of_this_node();

}  // namespace canopy::shim
