#include "shim/staging.h"

#include "shim/polite.h"
#include "shim/thread_lock.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <mutex>
#include <unordered_map>

namespace canopy::shim {

namespace {

std::atomic<std::uint64_t> rings_made{0};
// About a microsecond of polls (64 to 100,000 measured alike on 2 ranks here).
constexpr int kSpinsBeforeYield = 4096;

// Spins briefly (the next chunk from another core is usually that close, and a
// sched_yield is a system call), then yields the core at every check, so an
// oversubscribed node's ranks give their core to the rank they wait for.
//
// Once it yields, every check also drives MPI's progress engine (an MPI_Iprobe on the
// window's node communicator, where no message is ever sent, or for POSIX memory on
// the communicator the ring serves: a probe receives nothing). A rank waiting here may owe
// MPI progress to a rank that it waits for: a large message of the previous call, sent
// to this rank by rendezvous, completes at its sender only after this rank's MPI
// acknowledges it, and that sender must finish the send before it reads this rank's
// entry. Without the probe the two ranks wait on each other for ever (seen: 3 ranks,
// a point-to-point reduce then a staged broadcast, MPICH ch4:ucx).
template <typename Ready>
void wait_until(Ready ready, MPI_Comm progress) {
  for (int spins = 0; !ready(); ++spins) {
    if (spins >= kSpinsBeforeYield) {
      int flag = 0;
      PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, progress, &flag, MPI_STATUS_IGNORE);
      sched_yield();
    }
  }
}

// The ring's own collectives: nonblocking, waited for politely. Where ranks outnumber
// cores MPICH's blocking collectives busy-poll and starve the ranks they wait for
// (about 8 ms each on this 2-core machine at 4 ranks); one rank per core the two forms
// made rings alike (2 ranks, 12 alternating runs: 0.78-1.17 ms against 0.76-1.24).
bool gather_ints(const int* mine, int n, std::vector<int>& all, MPI_Comm comm) {
  int size = 0;
  PMPI_Comm_size(comm, &size);
  all.assign(static_cast<std::size_t>(n) * size, 0);
  return allgather_politely(mine, n, MPI_INT, all.data(), comm) == MPI_SUCCESS;
}

bool everywhere(int mine, MPI_Comm comm) {
  int all = 0;
  return allreduce_politely(&mine, &all, 1, MPI_INT, MPI_MIN, comm) == MPI_SUCCESS && all;
}

std::string system_error(const std::string& what, int error) { return what + " failed: " + std::strerror(error); }

// Makes the pages of [at, at + bytes) of the segment behind `fd` (from `offset`) exist
// now, so that a full /dev/shm fails here and not with SIGBUS at a later touch: each
// rank its own part, at once (MADV_POPULATE_WRITE, Linux 5.14: faults run in parallel
// on each rank's core, and the pages land near it), or with posix_fallocate where the
// kernel lacks it (one file's fallocates take turns). One process, 32 MiB on this
// machine: fallocate 9-11 ms, populate 28-29 ms by one process and 16-19 by two.
int populate(int fd, char* at, std::int64_t offset, std::int64_t bytes) {
#ifdef MADV_POPULATE_WRITE
  if (madvise(at, static_cast<std::size_t>(bytes), MADV_POPULATE_WRITE) == 0) return 0;
  if (errno != EINVAL) return errno;
#else
  (void)at;
#endif
  return posix_fallocate(fd, static_cast<off_t>(offset), static_cast<off_t>(bytes));
}

// The first access to a page of the ring, by each process, is where this project's VMs
// still have work to do after the kernel has made the page exist, so the ring's making
// does it, once, where MPI programs expect set-up: at MPI_Init for MPI_COMM_WORLD.
// Measured (Firecracker VM, Linux 6.18, AMD EPYC, 2 ranks, Open MPI 4.1.4, 64 KiB
// allreduces through the ring): untouched, each of the first 8 calls (one per ring
// entry) took 315-530 us against 10-14 after: the owner's first copy into each 64 KiB
// of its part 79-173 us even after MADV_POPULATE_WRITE, the peer's first read of it
// 150-280 us even after MADV_POPULATE_READ or _WRITE of its mapping. Auto's trials fall
// in exactly those calls: they priced the ring's schedules at 5-29x their steady time.
// With a write per page of its own part and a read per page of the other's, the first
// calls took 6-15 us. Where the kernel's populate is the whole job (bare metal), this
// is an access per mapped page.
long page_bytes() { return sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096; }

// Rewrites one byte of every page of [at, at + bytes) with its value: this rank's own
// part, before any other rank reads it (flags that start at zero stay zero).
void write_each_page(char* at, std::int64_t bytes) {
  const long page = page_bytes();
  for (std::int64_t offset = 0; offset < bytes; offset += page) {
    volatile char* byte = at + offset;
    *byte = *byte;
  }
}

// Reads one byte of every page of [at, at + bytes).
void read_each_page(const char* at, std::int64_t bytes) {
  char sum = 0;
  const long page = page_bytes();
  for (std::int64_t offset = 0; offset < bytes; offset += page)
    sum = static_cast<char>(sum + *static_cast<const volatile char*>(at + offset));
  [[maybe_unused]] volatile char sink = sum;
}

// Reads the pages of another rank's part (laid out as StagingRing's: the flags, the
// entries, the board) that the ring's first calls read: its flags and board, its first
// entries (the ring's entries go round from the first: StagingRing::entry_of), as many
// as make one part's worth over the node's other ranks, and the first page of each
// later entry, where a small call's data lies. Decision: not all of every part, because
// that grows with the node's ranks: 16 ranks on this 2-core VM (32 entries of 64 KiB
// each) made MPI_COMM_WORLD's ring in 446-467 ms reading every page of the 15 other
// parts, against 43-52 untouched; the later entries' other pages come in at their first
// use. The first page of each entry, because without it every small call through a
// not yet used entry paid for its first touches: 16 ranks on 16 cores, a forced 8 B
// `shm` allreduce took 50-90 us a call from the 5th call to about the 32nd (one pass of
// the ring), 5-8 before and after (docs/performance/sixteen/small-allreduce-2026-12-04.txt),
// and auto's trials, which fall in those calls, measured the ring's 8 B and 1 KiB
// allreduces at 34-66 us against native MPI's 3-4 and kept native MPI where the ring
// runs them in 2.4 and 4.2 (`shm-recursive-doubling`, against 3.4 and 11.1).
void read_first_pages(const char* part, int entries, std::int64_t entry_bytes, std::int64_t flag_bytes,
                      std::int64_t board_bytes, int node_ranks) {
  const int others = std::max(node_ranks - 1, 1);
  const int first = std::min(entries, std::max(1, (entries + others - 1) / others));
  read_each_page(part, entries * flag_bytes + first * entry_bytes);
  const char* entry0 = part + entries * flag_bytes;
  for (int e = first; e < entries; ++e) read_each_page(entry0 + e * entry_bytes, 1);
  read_each_page(part + entries * (flag_bytes + entry_bytes), board_bytes);
}

std::atomic<int> attempts{0};  // rings this process has tried to make (names POSIX segments)

// Rings of freed communicators (StagingRing::park), oldest first, with the world ranks
// of the communicator each served.
struct ParkedRing {
  std::vector<int> world_ranks;
  std::unique_ptr<StagingRing> ring;
};
ThreadLock parked_lock;
std::deque<ParkedRing> parked;

// Takes the ring parked for exactly `world_ranks` with `entries` entries of `entry_bytes`
// out of the pool (null: none). Taken, not looked at: another thread may be making a ring for
// another communicator over the same processes at the same time.
std::unique_ptr<StagingRing> take_parked(const std::vector<int>& world_ranks, int entries, std::int64_t entry_bytes) {
  std::lock_guard<ThreadLock> lock(parked_lock);
  for (auto it = parked.begin(); it != parked.end(); ++it)
    if (it->world_ranks == world_ranks && it->ring->entries() == entries && it->ring->entry_bytes() == entry_bytes) {
      std::unique_ptr<StagingRing> ring = std::move(it->ring);
      parked.erase(it);
      return ring;
    }
  return nullptr;
}

}  // namespace

void StagingRing::park(std::unique_ptr<StagingRing> ring, std::vector<int> world_ranks) {
  // A window is freed at once (collectively: every rank of the node frees it here).
  if (!ring || ring->mappings_.empty() || world_ranks.empty()) return;
  ring->progress_ = MPI_COMM_NULL;  // the freed communicator's duplicate goes next
  std::unique_ptr<StagingRing> evicted;  // unmapped outside the lock
  std::lock_guard<ThreadLock> lock(parked_lock);
  parked.push_back({std::move(world_ranks), std::move(ring)});
  if (parked.size() > kParkedRings) {
    evicted = std::move(parked.front().ring);
    parked.pop_front();
  }
}

void StagingRing::clear_parked() {
  std::deque<ParkedRing> all;
  std::lock_guard<ThreadLock> lock(parked_lock);
  all.swap(parked);
}

// Where every rank of `comm` lives: its node (the world rank of the node's lowest rank)
// and its rank among its node's ranks of `comm` (their order in the world); and, for
// naming a POSIX segment, each rank's process id and attempt number.
struct StagingRing::Layout {
  int rank = 0;
  std::vector<int> node, local, pid, attempt;
  bool same_node(int r) const { return node[r] == node[rank]; }
  int node_size() const { return static_cast<int>(std::count(node.begin(), node.end(), node[rank])); }
  // The communicator rank of this rank's node's first rank (local 0).
  int first_of_node() const {
    for (int r = 0; r < static_cast<int>(node.size()); ++r)
      if (same_node(r) && local[r] == 0) return r;
    return rank;
  }
};

std::unique_ptr<StagingRing> StagingRing::create(MPI_Comm comm, int entries, std::int64_t entry_bytes,
                                                 const std::vector<int>& node_of,
                                                 const std::vector<int>& world_ranks, const WorldNode& world,
                                                 RingMemory memory, const RingFaults& fail, std::string& why,
                                                 bool probe_direct) {
  int size = 0, rank = 0;
  PMPI_Comm_size(comm, &size);
  PMPI_Comm_rank(comm, &rank);
  // A ring parked for these processes, offered by what names it (its node's first
  // rank's process id and attempt, the same on every rank that has it).
  std::unique_ptr<StagingRing> offered =
      world_ranks.empty() || memory == RingMemory::Window ? nullptr : take_parked(world_ranks, entries, entry_bytes);
  // Every rank's node, its rank among the world's ranks there, process id and attempt,
  // and its offer, known to every rank.
  constexpr int kFields = 6;
  const int mine_where[kFields] = {world.leader,
                                   world.rank,
                                   static_cast<int>(getpid()),
                                   attempts.fetch_add(1),
                                   offered ? offered->segment_pid_ : 0,
                                   offered ? offered->segment_attempt_ : -1};
  std::vector<int> where;
  const bool gathered = gather_ints(mine_where, kFields, where, comm);
  Layout layout;
  layout.rank = rank;
  layout.node.assign(size, 0);
  layout.local.assign(size, 0);
  layout.pid.assign(size, 0);
  layout.attempt.assign(size, 0);
  for (int r = 0; r < size && gathered; ++r) {
    layout.node[r] = where[kFields * r];
    layout.pid[r] = where[kFields * r + 2];
    layout.attempt[r] = where[kFields * r + 3];
  }
  // Rank r's rank among its node's ranks: how many of `comm`'s ranks on its node come
  // before it in world order.
  std::vector<int> order(size);
  for (int r = 0; r < size; ++r) order[r] = r;
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return std::pair(layout.node[a], where[kFields * a + 1]) < std::pair(layout.node[b], where[kFields * b + 1]);
  });
  for (int i = 0; i < size; ++i) {
    const bool same_node = i > 0 && layout.node[order[i - 1]] == layout.node[order[i]];
    layout.local[order[i]] = same_node ? layout.local[order[i - 1]] + 1 : 0;
  }
  // Up to here every rank computes the same answer from the same data: a ring declined
  // now is declined on every rank, before any memory is made.
  if (!gathered) why = "MPI_Iallgather of the ranks' nodes failed";
  else if (entries < 1 || entry_bytes < 1) why = "a ring of no entries";
  else why = planner::planned_nodes_share_memory(node_of, layout.node);
  if (!why.empty()) return nullptr;

  // The parked ring is taken over where every rank offers one and every rank of a node
  // offers its node's first rank's: then all of them are the same ring, left by the
  // same calls of one freed communicator. Otherwise every rank makes memory anew (and
  // unmaps what it offered).
  std::unordered_map<int, int> first_of_node;  // node -> its first rank
  for (int r = 0; r < size; ++r)
    if (layout.local[r] == 0) first_of_node[layout.node[r]] = r;
  bool reuse = true;
  for (int r = 0; r < size && reuse; ++r) {
    const int* offer = &where[kFields * r + 4];
    const int* firsts = &where[kFields * first_of_node[layout.node[r]] + 4];
    reuse = offer[1] >= 0 && offer[0] == firsts[0] && offer[1] == firsts[1];
  }
  if (reuse) {
    offered->progress_ = comm;
    offered->reused_ = true;
    offered->allocate_seconds_ = 0;
    return offered;
  }
  offered.reset();

  // Where the memory comes from. auto: POSIX shared memory, then the MPI window where
  // that cannot be made. Measured here: 8 ranks on 2 cores, a ring in 8-10 ms against
  // 265-279 (MPI_Win_allocate_shared busy-polls where ranks outnumber cores); 2 ranks,
  // 0.38-0.59 ms against 0.82-1.34. Every rank tries the same in the same order: each
  // try ends in an agreement.
  std::vector<RingMemory> tries;
  if (memory == RingMemory::Window) tries = {RingMemory::Window};
  else if (memory == RingMemory::Posix) tries = {RingMemory::Posix};
  else tries = {RingMemory::Posix, RingMemory::Window};
  const std::int64_t part = static_cast<std::int64_t>(entries) * (kFlagBytes + entry_bytes) + kBoardBytes;
  std::string reasons;
  for (RingMemory from : tries) {
    std::unique_ptr<StagingRing> ring(new StagingRing());
    ring->rank_ = rank;
    ring->entries_ = entries;
    ring->entry_bytes_ = entry_bytes;
    ring->base_.assign(size, nullptr);
    std::string mine;
    const double start = PMPI_Wtime();
    const bool made = from == RingMemory::Posix ? ring->map_posix(comm, layout, part, fail.posix, mine)
                                                : ring->allocate_window(comm, layout, part, fail.window, mine);
    ring->allocate_seconds_ = PMPI_Wtime() - start;
    if (made) {
      ring->promised_.assign(entries, 0);
      ring->claimed_offset_.assign(entries, 0);
      ring->published_offset_.assign(entries, -1);  // unknown: the first publish writes it
      ring->uses_ = planner::EntryUses(size, entries, entry_bytes);
      ring->node_ranks_ = static_cast<int>(
          std::count_if(ring->base_.begin(), ring->base_.end(), [](const char* part) { return part != nullptr; }));
      ring->sequence_ = rings_made.fetch_add(1);
      ring->pid_ = layout.pid;
      if (probe_direct) ring->probe_direct(comm, layout, fail.direct);
      why.clear();
      return ring;
    }
    if (!reasons.empty()) reasons += "; ";
    reasons += mine.empty() ? std::string("another rank could not make its part of the ring") : mine;
  }
  why = reasons;
  return nullptr;
}

// POSIX shared memory: a segment per rank. Each rank creates its own part (shm_open in
// /dev/shm, ftruncate, mmap) and makes its pages exist (populate); once every rank has,
// each maps the parts of its node's other ranks, and once every rank has done that, each
// removes its own name, so nothing is left behind when the job ends however it ends
// (unless it dies in between). Fresh pages are zero: the flags start at zero. Every
// wait is a polite collective, so an oversubscribed node makes it in milliseconds.
// A segment per rank rather than one for the node: the pages of one tmpfs file come in
// one at a time, whoever asks (16 processes each populating 2 MiB of one shared file:
// 6.0-6.7 ms for the slowest on the lent 16-core machine; of a file each: 1.6-1.7 ms).
bool StagingRing::map_posix(MPI_Comm comm, const Layout& layout, std::int64_t part_bytes, bool fail,
                            std::string& mine) {
  const long page = page_bytes();
  const std::int64_t part = (part_bytes + page - 1) / page * page;  // whole pages
  const int first = layout.first_of_node();
  auto name_of = [&](int r) {
    return "/canopy-" + std::to_string(layout.pid[r]) + "-" + std::to_string(layout.attempt[r]);
  };
  // Maps `part` bytes of `fd` as rank r's part, or says why not in `mine`.
  auto map_part = [&](int fd, int r, const std::string& name) {
    void* p = mmap(nullptr, static_cast<std::size_t>(part), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      mine = system_error("mmap of " + std::to_string(part) + " bytes of " + name, errno);
      return false;
    }
    mappings_.push_back({static_cast<char*>(p), static_cast<std::size_t>(part)});
    base_[r] = static_cast<char*>(p);
    return true;
  };
  // Its own part.
  const std::string own = name_of(layout.rank);
  bool created = false;
  int ok = 1;
  if (fail && layout.rank == first) {
    ok = 0;
    mine = "shm_open refused (CANOPY_FAULT)";
  } else if (const int fd = shm_open(own.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600); fd < 0) {
    ok = 0;
    mine = system_error("shm_open(" + own + ")", errno);
  } else {
    created = true;
    if (ftruncate(fd, static_cast<off_t>(part)) != 0) {
      ok = 0;
      mine = system_error("ftruncate of " + own + " to " + std::to_string(part) + " bytes", errno);
    } else if (!map_part(fd, layout.rank, own)) {
      ok = 0;
    } else if (const int e = populate(fd, base_[layout.rank], 0, part); e != 0) {
      ok = 0;
      // MADV_POPULATE_WRITE says EFAULT (or ENOMEM) where tmpfs has no pages left.
      const bool no_room = e == EFAULT || e == ENOMEM || e == ENOSPC;
      mine = no_room ? "no room for " + std::to_string(part) + " bytes of " + own + " in /dev/shm"
                     : system_error("making " + std::to_string(part) + " bytes of " + own + " exist", e);
    } else {
      write_each_page(base_[layout.rank], part);  // (only once the pages exist: no SIGBUS)
    }
    close(fd);
  }
  if (everywhere(ok, comm)) {
    // The other parts of this node.
    for (int r = 0; r < static_cast<int>(layout.node.size()) && ok; ++r) {
      if (r == layout.rank || !layout.same_node(r)) continue;
      const std::string name = name_of(r);
      if (const int fd = shm_open(name.c_str(), O_RDWR, 0); fd < 0) {
        ok = 0;
        mine = system_error("shm_open(" + name + ") of another rank's part", errno);
      } else {
        ok = map_part(fd, r, name);
        if (ok) read_first_pages(base_[r], entries_, entry_bytes_, kFlagBytes, kBoardBytes, layout.node_size());
        close(fd);
      }
    }
    ok = everywhere(ok, comm);
  } else {
    ok = 0;
  }
  if (created) shm_unlink(own.c_str());  // every rank that maps it has (or the ring is off)
  if (!ok) {
    unmap_posix();
    std::fill(base_.begin(), base_.end(), nullptr);
    return false;
  }
  posix_name_ = name_of(first);
  for (int r = 0, named = 0; r < static_cast<int>(layout.node.size()); ++r)
    if (r != first && layout.same_node(r) && named++ < kNamedSegments) posix_name_ += " " + name_of(r);
  if (layout.node_size() - 1 > kNamedSegments)
    posix_name_ += " and " + std::to_string(layout.node_size() - 1 - kNamedSegments) + " more";
  segment_pid_ = layout.pid[first];
  segment_attempt_ = layout.attempt[first];
  progress_ = comm;
  return true;
}

// MPI-3 MPI_Win_allocate_shared on the node's part of `comm` (MPI_Comm_split_type, in
// world order). Every rank of the node takes part in the allocation (it is collective),
// even one that will decline: the agreement then tells every rank.
bool StagingRing::allocate_window(MPI_Comm comm, const Layout& layout, std::int64_t part, bool fail,
                                  std::string& mine) {
  MPI_Comm node = MPI_COMM_NULL;
  const int world_rank_on_node = layout.local[layout.rank];
  if (PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, world_rank_on_node, MPI_INFO_NULL, &node) != MPI_SUCCESS)
    node = MPI_COMM_NULL;
  // MPI's node must be the one Canopy found at MPI_Init (runtime.cpp), by which the
  // window's parts are translated: every rank of MPI's node is on this rank's node, and
  // as many ranks share it.
  int node_size = 0, node_rank = -1;
  bool same = false;
  if (node != MPI_COMM_NULL) {
    PMPI_Comm_size(node, &node_size);
    PMPI_Comm_rank(node, &node_rank);
    const int id = layout.node[layout.rank];
    int ids[2] = {id, -id}, widest[2] = {0, 0};  // the largest id and minus the smallest
    const bool agreed = allreduce_politely(ids, widest, 2, MPI_INT, MPI_MAX, node) == MPI_SUCCESS;
    same = agreed && widest[0] == id && -widest[1] == id && node_size == layout.node_size() &&
           node_rank == layout.local[layout.rank];
  }
  if (!everywhere(node != MPI_COMM_NULL && same, comm)) {
    mine = node == MPI_COMM_NULL ? "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) failed"
           : same                ? "another rank's MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) failed or disagreed"
                                 : "MPI_COMM_TYPE_SHARED groups the ranks otherwise than Canopy's nodes";
    if (node != MPI_COMM_NULL) PMPI_Comm_free(&node);
    return false;
  }
  int ok = 1;
  if (fail) {
    ok = 0;
    mine = "MPI_Win_allocate_shared refused (CANOPY_FAULT)";
  }
  char* base = nullptr;
  MPI_Info info;
  PMPI_Info_create(&info);
  PMPI_Info_set(info, "alloc_shared_noncontig", "true");
  const int err = PMPI_Win_allocate_shared(static_cast<MPI_Aint>(part), 1, info, node, &base, &win_);
  PMPI_Info_free(&info);
  if (err != MPI_SUCCESS) {
    ok = 0;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    PMPI_Error_string(err, text, &len);
    mine = "MPI_Win_allocate_shared of " + std::to_string(part) + " bytes failed: " + text;
    win_ = MPI_WIN_NULL;
  } else {
    // Flags start at zero: no tag is 0, and no read has happened. Before the agreement,
    // which is then also the barrier: no rank reads another's flags before they are
    // zeroed.
    std::memset(base, 0, static_cast<std::size_t>(entries_ * kFlagBytes));
    std::memset(base + entries_ * (kFlagBytes + entry_bytes_), 0, static_cast<std::size_t>(kBoardBytes));
    write_each_page(base, part);
  }
  if (!everywhere(ok, comm)) {
    if (win_ != MPI_WIN_NULL) PMPI_Win_free(&win_);
    PMPI_Comm_free(&node);
    return false;
  }
  node_ = node;
  progress_ = node;
  for (int r = 0; r < static_cast<int>(layout.node.size()); ++r) {
    if (!layout.same_node(r)) continue;
    MPI_Aint bytes = 0;
    int disp = 0;
    void* at = nullptr;
    PMPI_Win_shared_query(win_, layout.local[r], &bytes, &disp, &at);
    base_[r] = static_cast<char*>(at);
    if (r != layout.rank)
      read_first_pages(base_[r], entries_, entry_bytes_, kFlagBytes, kBoardBytes, layout.node_size());
  }
  return true;
}

void StagingRing::unmap_posix() {
  for (const Mapping& m : mappings_) munmap(m.at, m.bytes);
  mappings_.clear();
}

StagingRing::~StagingRing() {
  unmap_posix();
  if (win_ != MPI_WIN_NULL) PMPI_Win_free(&win_);
  if (node_ != MPI_COMM_NULL) PMPI_Comm_free(&node_);
}

std::uint64_t* StagingRing::published(int rank, int entry) const {
  return reinterpret_cast<std::uint64_t*>(base_[rank] + entry * kFlagBytes);
}

std::uint64_t* StagingRing::acks(int rank, int entry) const {
  return reinterpret_cast<std::uint64_t*>(base_[rank] + entry * kFlagBytes + sizeof(std::uint64_t));
}

std::uint64_t* StagingRing::data_offset(int rank, int entry) const {
  return reinterpret_cast<std::uint64_t*>(base_[rank] + entry * kFlagBytes + 2 * sizeof(std::uint64_t));
}

char* StagingRing::claim(int stage, std::int64_t bytes, const void* like) {
  const int entry = entry_of(stage);
  std::uint64_t* done = acks(rank_, entry);
  const std::uint64_t needed = promised_[entry];
  // Entries start on cache lines (the flags are whole lines, entry_bytes a multiple of
  // one); a segment fills at most 3/4 of an entry (planner::staged_segment_bytes), so
  // the offset fits but for a whole-entry claim.
  std::int64_t offset = like ? static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(like) % kLine) : 0;
  if (bytes < 0 || bytes + offset > entry_bytes_) offset = 0;
  use(rank_, entry, bytes + offset);  // (offset 0 for a whole-entry claim, bytes -1)
  wait_until([&] { return __atomic_load_n(done, __ATOMIC_ACQUIRE) >= needed; }, progress_);
  claimed_offset_[entry] = offset;
  return base_[rank_] + entries_ * kFlagBytes + entry * entry_bytes_ + offset;
}

void StagingRing::publish(int stage, int readers) {
  const int entry = entry_of(stage);
  promised_[entry] += static_cast<std::uint64_t>(readers);
  // The offset goes into the flags line with the tag, and only where it changed: a store
  // to the line while its reader polls it moves the line between the cores once more
  // (written at claim(), every time: 2 ranks, 1 MiB shm-reduce-scatter-allgather, 24
  // stages a call, 4% slower between page-aligned buffers, 12 alternating pairs).
  if (claimed_offset_[entry] != published_offset_[entry]) {
    __atomic_store_n(data_offset(rank_, entry), static_cast<std::uint64_t>(claimed_offset_[entry]), __ATOMIC_RELAXED);
    published_offset_[entry] = claimed_offset_[entry];
  }
  __atomic_store_n(published(rank_, entry), tag(stage), __ATOMIC_RELEASE);  // orders the offset before it
}

const char* StagingRing::wait_for(int writer, int stage, std::int64_t bytes) {
  const int entry = entry_of(stage);
  const std::uint64_t* flag = published(writer, entry);
  const std::uint64_t want = tag(stage);
  wait_until([&] { return __atomic_load_n(flag, __ATOMIC_ACQUIRE) == want; }, progress_);
  // (The writer claims this entry again only once this read has released it.)
  const auto offset = static_cast<std::int64_t>(__atomic_load_n(data_offset(writer, entry), __ATOMIC_RELAXED));
  use(writer, entry, bytes < 0 ? bytes : bytes + offset);
  return base_[writer] + entries_ * kFlagBytes + entry * entry_bytes_ + offset;
}

void StagingRing::release(int writer, int stage) {
  __atomic_fetch_add(acks(writer, entry_of(stage)), 1, __ATOMIC_RELEASE);
}

// The probe's word: each process's own id, read and written back by its node's
// previous rank.
namespace {
volatile std::uint64_t probe_word = 0;

std::string ptrace_scope() {
  char text[8] = {0};
  const int fd = open("/proc/sys/kernel/yama/ptrace_scope", O_RDONLY);
  if (fd < 0) return {};
  const ssize_t n = ::read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return {};
  std::string v(text, static_cast<std::size_t>(n));
  while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.pop_back();
  return v;
}
}  // namespace

void StagingRing::probe_direct(MPI_Comm comm, const Layout& layout, bool fail) {
  probe_word = static_cast<std::uint64_t>(getpid());
  // Every rank's probe word's address, through the board (the ring's memory is there).
  board(rank_)[1] = reinterpret_cast<std::uint64_t>(&probe_word);
  std::string mine;
  int ok = everywhere(1, comm) ? 1 : 0;  // (a barrier: every address is on its board)
  // The next rank of this node in the node's order, if the node has another.
  const int size = static_cast<int>(layout.node.size());
  int next = -1;
  for (int k = 1; k < size && next < 0 && ok; ++k) {
    const int r = (layout.rank + k) % size;
    if (layout.same_node(r)) next = r;
  }
  if (ok && next >= 0) {
    std::uint64_t got = 0;
    const std::uint64_t want = static_cast<std::uint64_t>(pid_[next]);
    iovec local{&got, sizeof got};
    iovec remote{reinterpret_cast<void*>(board(next)[1]), sizeof got};
    if (fail) {
      ok = 0;
      mine = "process_vm_readv refused (CANOPY_FAULT=cma-unavailable)";
    } else if (process_vm_readv(pid_[next], &local, 1, &remote, 1, 0) != static_cast<ssize_t>(sizeof got)) {
      ok = 0;
      mine = system_error("process_vm_readv of process " + std::to_string(pid_[next]), errno);
    } else if (got != want) {
      ok = 0;
      mine = "process_vm_readv of process " + std::to_string(pid_[next]) + " read " + std::to_string(got) +
             " where it wrote " + std::to_string(want);
    } else if (iovec back{&got, sizeof got};
               process_vm_writev(pid_[next], &back, 1, &remote, 1, 0) != static_cast<ssize_t>(sizeof got)) {
      ok = 0;
      mine = system_error("process_vm_writev into process " + std::to_string(pid_[next]), errno);
    }
    if (!ok) {
      const std::string scope = ptrace_scope();
      if (!scope.empty() && scope != "0") mine += " (kernel.yama.ptrace_scope=" + scope + ")";
    }
  }
  direct_ = everywhere(ok, comm);  // (after it, no rank reads a probe word's address)
  board(rank_)[1] = 0;
  if (direct_) {
    direct_why_.clear();
    return;
  }
  // Each rank keeps its own reason, or, where its own probe worked, that another rank's
  // failed: naming the failing rank's reason everywhere would take another collective,
  // and only rank 0's line is printed (node_resources.cpp).
  direct_why_ = mine.empty() ? std::string("cross-memory attach failed on another rank of the node") : mine;
}

void StagingRing::expose(void* address, int accesses) {
  std::uint64_t* line = board(rank_);
  promised_accesses_ += static_cast<std::uint64_t>(std::max(accesses, 0));
  line[1] = reinterpret_cast<std::uint64_t>(address);
  __atomic_store_n(&line[0], call_, __ATOMIC_RELEASE);
}

bool StagingRing::access(int exposer, std::int64_t offset, void* local, std::size_t bytes, bool write,
                         std::string& error) {
  std::uint64_t* line = board(exposer);
  const std::uint64_t want = call_;
  wait_until([&] { return __atomic_load_n(&line[0], __ATOMIC_ACQUIRE) == want; }, progress_);
  char* remote_at = reinterpret_cast<char*>(line[1]) + offset;
  bool ok = true;
  // The kernel may copy less than asked (it stops at a page it cannot pin): go on from there.
  for (std::size_t done = 0; done < bytes;) {
    iovec mine{static_cast<char*>(local) + done, bytes - done};
    iovec theirs{remote_at + done, bytes - done};
    const ssize_t n = write ? process_vm_writev(pid_[exposer], &mine, 1, &theirs, 1, 0)
                            : process_vm_readv(pid_[exposer], &mine, 1, &theirs, 1, 0);
    if (n <= 0) {
      error = system_error(std::string(write ? "process_vm_writev into" : "process_vm_readv of") + " rank " +
                               std::to_string(exposer) + "'s buffer",
                           n < 0 ? errno : EFAULT);
      ok = false;
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  // Over, copied or not: the exposer must not wait for ever.
  __atomic_fetch_add(&line[2], 1, __ATOMIC_RELEASE);
  return ok;
}

bool StagingRing::read(int exposer, std::int64_t offset, void* local, std::size_t bytes, std::string& error) {
  return access(exposer, offset, local, bytes, false, error);
}

bool StagingRing::write(int exposer, std::int64_t offset, const void* local, std::size_t bytes, std::string& error) {
  return access(exposer, offset, const_cast<void*>(local), bytes, true, error);
}

void StagingRing::wait_exposed() {
  const std::uint64_t* done = &board(rank_)[2];
  wait_until([&] { return __atomic_load_n(done, __ATOMIC_ACQUIRE) >= promised_accesses_; }, progress_);
}

}  // namespace canopy::shim
