// The staging rings of one communicator: on each node, the memory behind the Stage,
// Fetch and FetchReduce steps of a schedule (planner/schedule.h) between that node's
// ranks. A schedule over one node stages between all its ranks; a hierarchical one
// stages inside each node only (planner/hierarchy.h).
//
// Made once per communicator, on the first call that runs a staged schedule (every rank
// runs the same schedule at the same call, so every rank makes it there): MPI-3
// MPI_Win_allocate_shared on each node's part of Canopy's private communicator, which
// works alike on MPICH and Open MPI and needs no permissions beyond MPI's own, or a
// POSIX shared-memory segment per rank that the node's ranks all map (shm_open in
// /dev/shm, as both MPIs' own shared memory), which needs no blocking collective. Steps name peers by their rank in the
// communicator; the ring translates them to their part of the node's memory.
// Each rank owns `entries` entries of `entry_bytes` (the planner's geometry for the node's
// ranks, planner/staged.h) plus one cache line of flags per entry:
//   published  the tag of the stage the entry holds (written last, with release order);
//   acks       how many reads of the entry have finished, over the ring's life.
// A stage waits until the entry's acks reach the reads its earlier uses promised, copies
// the data in and publishes the tag; a reader waits for the tag, reads the data where
// it lies (copies it out, or reduces it into its accumulator) and adds one to acks.
// A tag is (call number << 24) + stage number + 1: calls on a communicator are ordered
// alike on every rank, so a reader never mistakes a stage of an earlier call.
// Memory per rank: entries x (entry_bytes + 64) bytes, whatever the message.
// A ring in POSIX memory outlives its communicator: when the application frees it, the
// ring is parked (park()), and the next communicator over the same processes in the same
// order takes it over instead of making memory again (create() agrees on it in the
// gather it makes anyway). Making 1 MiB of shared memory costs about 0.5 ms here (page
// faults), so a program that splits a communicator, reduces and frees it, over and over,
// paid that on every communicator. The ring carries on as if the old communicator made
// more calls: its tags count on, and an entry is reused only once its reads are over.
// Waiting is polite: a few spins, then sched_yield, so an oversubscribed node's ranks
// give their core to the rank they wait for.
//
// The ring also carries the direct steps' board (planner/schedule.h: Expose, Read,
// Write): after its entries, each rank's part holds one cache line with the call tag
// and address of the accumulator it exposes, and how many accesses to it have ended
// over the ring's life. A reader or writer copies with process_vm_readv/writev
// (cross-memory attach, Linux 3.2): one copy from one process's memory into another's,
// no staging. create() probes it (CANOPY_CMA): every rank of a node reads and writes a
// word of its next rank's private memory, and the ranks agree; where the kernel refuses
// (kernel.yama.ptrace_scope above 0 without CAP_SYS_PTRACE, a seccomp filter, another
// user's processes) the ring has no direct access, and direct schedules do not run.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "planner/staged.h"

namespace canopy::shim {

// This rank's node within MPI_COMM_WORLD, found at MPI_Init (shim/runtime.h).
struct WorldNode {
  int leader = 0;  // world rank of the node's lowest rank: names the node
  int rank = 0;    // this rank's rank among the world's ranks on its node
};

// Where a ring's memory comes from (CANOPY_SHM): MPI-3 MPI_Win_allocate_shared, POSIX
// shared memory (shm_open), or auto: POSIX, and the window where that cannot be made.
enum class RingMemory { Auto, Window, Posix };

// CANOPY_FAULT's failures of the two kinds of memory (shm-unavailable: both;
// shm-posix-unavailable: POSIX only).
struct RingFaults {
  bool window = false;
  bool posix = false;
  bool direct = false;  // cma-unavailable: the probe of cross-memory attach fails
};

class StagingRing {
 public:
  // Collective over `comm`: every rank gets a ring of `entries` entries of `entry_bytes`
  // (the sizes a schedule names, planner/staged.h, so plans fit it), or every rank
  // gets null and `why` (the same answer everywhere: the ranks agree on the outcome).
  // `node_of[r]` is the node the planner puts rank r on (a topology's labels); empty:
  // one node. Declines when ranks the planner puts on one node do not share memory (by
  // the nodes found at MPI_Init: `world`), so no schedule reads memory it cannot reach;
  // and where the memory cannot be shared after all (a segment one rank cannot open, a
  // window whose MPI_COMM_TYPE_SHARED node differs from those nodes). `memory` says
  // where the memory may come from; `fail` injects failures (CANOPY_FAULT). Its own
  // collectives are nonblocking and wait politely (on an oversubscribed node MPICH's
  // blocking ones busy-poll, tens of milliseconds each); MPI_Win_allocate_shared and
  // MPI_Comm_split_type have no nonblocking form, one reason auto prefers POSIX memory.
  // `world_ranks[r]` is the MPI_COMM_WORLD rank of rank r of `comm` (empty: some are not
  // in it): a ring parked for exactly these processes is taken over where every rank
  // has the same one parked.
  static std::unique_ptr<StagingRing> create(MPI_Comm comm, int entries, std::int64_t entry_bytes,
                                             const std::vector<int>& node_of,
                                             const std::vector<int>& world_ranks, const WorldNode& world,
                                             RingMemory memory, const RingFaults& fail, std::string& why,
                                             bool probe_direct = false);
  // The application freed the communicator of `ring`, made over `world_ranks` by create():
  // a ring in POSIX memory is kept for the next communicator over the same processes (at
  // most kParkedRings of them, the oldest unmapped first); any other is freed (a window's
  // free is collective over the node, like its creation, and every rank frees it here).
  static void park(std::unique_ptr<StagingRing> ring, std::vector<int> world_ranks);
  // Unmaps every parked ring (MPI_Finalize).
  static void clear_parked();
  static constexpr std::size_t kParkedRings = 2;
  ~StagingRing();  // MPI_Win_free (collective over the node, like the creation) or munmap
  StagingRing(const StagingRing&) = delete;
  StagingRing& operator=(const StagingRing&) = delete;

  int entries() const { return entries_; }
  std::int64_t entry_bytes() const { return entry_bytes_; }
  std::int64_t bytes_held() const { return static_cast<std::int64_t>(entries_) * (entry_bytes_ + kFlagBytes); }
  // The order in which rings were made in this process: MPI_Finalize frees them in it
  // (the frees are collective, so every rank must take them in one order).
  std::uint64_t sequence() const { return sequence_; }
  // How long this rank spent making the memory that worked (for the debug log: at 16
  // ranks the ring's creation is most of a first call's cost), and which it is.
  double allocate_seconds() const { return allocate_seconds_; }
  // "MPI_Win_allocate_shared", or "POSIX shared memory /canopy-<pid>-<n> ..." (a segment
  // per rank, the node's first rank's named first; names already removed from /dev/shm
  // once the ring exists).
  std::string memory() const {
    return mappings_.empty() ? "MPI_Win_allocate_shared" : "POSIX shared memory " + posix_name_;
  }
  // Whether create() took over a parked ring rather than making memory.
  bool reused() const { return reused_; }

  // A new call begins: its stages get new tags, and its stage k uses entry (origin + k)
  // mod entries, origin where the previous call of `stages` stages (its segments, the
  // same on every rank) left it (planner::next_staging_origin says where and why).
  void begin_call(int stages) {
    ++call_;
    first_touch_ = false;
    origin_ = next_origin_;
    next_origin_ = planner::next_staging_origin(origin_, stages, entries_, node_ranks_);
  }
  // Stage number `stage` of this rank: claim() waits for its entry and returns where to
  // fill it (with `bytes`, at most entry_bytes(); -1: the whole entry); publish() then
  // hands it to `readers` reads. With `like` (the buffer the data are copied from), the
  // data start as far past a cache line as `like` does, where the entry has room: its
  // readers copy and combine between their own buffers and the entry, and where those
  // lie alike against cache lines (one program's buffers of one size, on every rank) the
  // copies and combines run on whole lines. The offset travels in the entry's flags, so
  // readers need no agreement on it. Measured: 2 ranks, shm-reduce-scatter-allgather of
  // 1 MiB between buffers 16 bytes past a page (where glibc's malloc puts a large
  // block), the bare shape (canopy-bench-floor) ran 8-12% slower than between page-
  // aligned buffers, and Canopy's executor as slow as that bare shape.
  char* claim(int stage, std::int64_t bytes = -1, const void* like = nullptr);
  void publish(int stage, int readers);
  // Rank `writer`'s stage number `stage` of this call, once published (waits for it), of
  // which `bytes` will be read.
  const char* wait_for(int writer, int stage, std::int64_t bytes = -1);
  // The read of `writer`'s stage is over: its entry may be reused.
  void release(int writer, int stage);
  // Whether this call used a part of an entry (of this rank's part of the ring or
  // another's) that this rank had used fewer than twice: auto's trials do not measure such calls (planner/trials.h).
  // On a virtualised machine a process's first access to each page of shared memory can
  // cost microseconds even once its page tables are filled (MADV_POPULATE_WRITE,
  // MAP_POPULATE): on the 2-core AMD EPYC VM a throwaway two-process copy through a
  // populated 1 MiB segment took 45-50 us per 32 KiB chunk on the first pass, writer and
  // reader alike, and 1.5-3 after, with no page faults counted. So a ring's first pass is
  // slow (2 ranks, 64 KiB broadcasts: 90-190 us a call for the first 8, 2-3 after), and
  // on the second a writer waits for the entries its readers are still reading for the
  // first time (the root's calls 15 and 16: 90-110 us). Measured, they made auto keep
  // native MPI (shm-bcast's trial 29-118 us a call, native 6-9). A first try at touching
  // every page when the ring is made was not kept (it touched whole entries one rank at
  // a time: the ring's making 0.9 -> 4.5 ms, the first 30 calls 4.3 -> 7.8 ms). Now each
  // rank writes a byte of each page of its own part and reads the first pages of the
  // others' at the making (staging.cpp says what and why; 2 ranks, MPICH, 64 KiB, mean
  // over the first 30 calls: shm-bcast 53-65 -> 34-44 us, shm-reduce-scatter-gather
  // 67-84 -> 33-43), and the first page of every entry of the others' (16 ranks: auto's
  // trials measured the 8 B shm allreduce at 4.5-5.9 us a call, 56-66 before). The
  // trials still leave such calls out: the later pages of later entries of a ring of
  // many ranks, and rings made inside a call, still warm up in calls.
  bool touched_new_entries() const { return first_touch_; }
  // Cross-memory attach between this ring's ranks: whether create() was asked to probe
  // it and every rank's probe worked (the same answer on every rank); if not, this
  // rank's reason.
  bool direct() const { return direct_; }
  const std::string& direct_why() const { return direct_why_; }
  // This call exposes this rank's accumulator at `address` to `accesses` Read and Write
  // steps of other ranks.
  void expose(void* address, int accesses);
  // Copies `bytes` between `local` and the bytes at `offset` of rank `exposer`'s exposed
  // accumulator of this call (waiting for it to be exposed): a Read (into `local`) or a
  // Write (from it). Either way the access then counts as over for the exposer. False,
  // with the system's reason in `error`, if the kernel did not copy all of it.
  bool read(int exposer, std::int64_t offset, void* local, std::size_t bytes, std::string& error);
  bool write(int exposer, std::int64_t offset, const void* local, std::size_t bytes, std::string& error);
  // Waits until every access this rank's exposures promised is over (the end of a call
  // that exposed: until then the others may still be copying from or into it).
  void wait_exposed();

  // A private buffer of at least `bytes` (an operand unpacked or combined on the right).
  char* scratch(std::size_t bytes) {
    if (scratch_.size() < bytes) scratch_.resize(bytes);
    return scratch_.data();
  }

 private:
  static constexpr std::int64_t kFlagBytes = 64;
  static constexpr std::int64_t kBoardBytes = 64;  // the direct steps' line, after the entries
  struct Layout;
  // The board of `rank`: exposed call tag, address, accesses ended.
  std::uint64_t* board(int rank) const {
    return reinterpret_cast<std::uint64_t*>(base_[rank] + entries_ * (kFlagBytes + entry_bytes_));
  }
  bool access(int exposer, std::int64_t offset, void* local, std::size_t bytes, bool write, std::string& error);
  // Collective over `comm`: every rank reads and writes a word of its node's next rank.
  void probe_direct(MPI_Comm comm, const Layout& layout, bool fail);
  StagingRing() = default;
  // One try at the ring's memory, collective over `comm`; true on every rank or on none.
  bool map_posix(MPI_Comm comm, const Layout& layout, std::int64_t part_bytes, bool fail, std::string& mine);
  bool allocate_window(MPI_Comm comm, const Layout& layout, std::int64_t part, bool fail, std::string& mine);
  std::uint64_t tag(int stage) const { return (call_ << 24) + static_cast<std::uint64_t>(stage) + 1; }
  std::uint64_t* published(int rank, int entry) const;
  std::uint64_t* acks(int rank, int entry) const;
  std::uint64_t* data_offset(int rank, int entry) const;  // where claim() put the data
  static constexpr std::int64_t kLine = 64;                // the cache line claim() matches

  MPI_Comm node_ = MPI_COMM_NULL;      // the window's communicator (owned)
  MPI_Comm progress_ = MPI_COMM_NULL;  // probed while waiting: node_, or the ring's communicator
  MPI_Win win_ = MPI_WIN_NULL;
  struct Mapping {
    char* at;
    std::size_t bytes;
  };
  std::vector<Mapping> mappings_;  // POSIX memory: the node's ranks' segments, this rank's first
  void unmap_posix();              // unmaps them all
  std::string posix_name_;         // their names (for the log; removed from /dev/shm by then)
  static constexpr int kNamedSegments = 7;  // named in the log besides the node's first rank's
  // POSIX memory: the node's first rank's process id and attempt, which name the ring
  // when it is parked and offered again.
  int segment_pid_ = 0, segment_attempt_ = -1;
  bool reused_ = false;
  int rank_ = 0;
  int entries_ = 0;
  std::int64_t entry_bytes_ = 0;
  std::vector<char*> base_;              // each rank's part of its node's memory (null: another node)
  std::vector<std::uint64_t> promised_;  // reads promised so far per own entry
  // Per own entry: the data's offset claim() chose, and the one last written to the
  // entry's flags for its readers (publish()).
  std::vector<std::int64_t> claimed_offset_, published_offset_;
  std::vector<char> scratch_;
  std::uint64_t call_ = 0;
  int origin_ = 0, next_origin_ = 0;  // this call's entry of stage 0, and the next call's
  int entry_of(int stage) const { return (origin_ + stage) % entries_; }
  // This rank's uses of each entry of each part, and whether this call warmed one up
  // (touched_new_entries()).
  planner::EntryUses uses_;
  bool first_touch_ = false;
  void use(int rank, int entry, std::int64_t bytes) {
    if (uses_.use(rank, entry, bytes)) first_touch_ = true;
  }
  int node_ranks_ = 0;  // the ranks that share this ring (those with a part in base_)
  std::uint64_t sequence_ = 0;
  double allocate_seconds_ = 0;
  bool direct_ = false;
  std::string direct_why_ = "not probed (CANOPY_CMA=off)";
  std::vector<int> pid_;                     // each rank's process id
  std::uint64_t promised_accesses_ = 0;      // accesses this rank's exposures promised, over the ring's life
};

}  // namespace canopy::shim
