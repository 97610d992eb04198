#include "shim/staging.h"

#include "shim/executor.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstring>

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
// ring's own communicator, where no message is ever sent). A rank waiting here may owe
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
  MPI_Request request = MPI_REQUEST_NULL;
  return PMPI_Iallgather(mine, n, MPI_INT, all.data(), n, MPI_INT, comm, &request) == MPI_SUCCESS &&
         wait_politely(&request) == MPI_SUCCESS;
}

bool everywhere(int mine, MPI_Comm comm) {
  int all = 0;
  MPI_Request request = MPI_REQUEST_NULL;
  return PMPI_Iallreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm, &request) == MPI_SUCCESS &&
         wait_politely(&request) == MPI_SUCCESS && all;
}

// The node's part of `comm`, its ranks in world order. MPI_Comm_split_type blocks
// (50-67 ms of a 4-rank ring's 124-189 on this machine), so where the world's node
// communicator was kept (only where ranks outnumber cores: runtime.h) and `comm` has
// the world's size (so holds all of MPI_COMM_WORLD's ranks, and its node's part is the
// world's node) it is a nonblocking duplicate of that. Every rank takes the same branch
// (sizes and settings are alike everywhere).
MPI_Comm node_part(MPI_Comm comm, const WorldNode& world) {
  int size = 0, world_size = 0;
  PMPI_Comm_size(comm, &size);
  PMPI_Comm_size(MPI_COMM_WORLD, &world_size);
  MPI_Comm node = MPI_COMM_NULL;
  if (world.may_duplicate && world.comm != MPI_COMM_NULL && size == world_size) {
    MPI_Request request = MPI_REQUEST_NULL;
    if (PMPI_Comm_idup(world.comm, &node, &request) != MPI_SUCCESS || wait_politely(&request) != MPI_SUCCESS)
      return MPI_COMM_NULL;
    return node;
  }
  if (PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, world.rank, MPI_INFO_NULL, &node) != MPI_SUCCESS)
    return MPI_COMM_NULL;
  return node;
}

}  // namespace

std::unique_ptr<StagingRing> StagingRing::create(MPI_Comm comm, int entries, const std::vector<int>& node_of,
                                                 const WorldNode& world, bool fail, std::string& why) {
  int size = 0, rank = 0;
  PMPI_Comm_size(comm, &size);
  PMPI_Comm_rank(comm, &rank);
  std::unique_ptr<StagingRing> ring(new StagingRing());
  MPI_Comm node = node_part(comm, world);
  // Every rank's node (its leader's world rank), its rank among the world's ranks there
  // and whether it has its node's communicator, known to every rank.
  const int mine_where[3] = {world.leader, world.rank, node != MPI_COMM_NULL};
  std::vector<int> where;
  const bool gathered = gather_ints(mine_where, 3, where, comm);
  std::vector<int> physical(size), local(size);
  bool every_node_split = gathered;
  for (int r = 0; r < size && gathered; ++r) {
    physical[r] = where[3 * r];
    every_node_split = every_node_split && where[3 * r + 2] == 1;
  }
  // Rank r's rank in its node's communicator: how many of `comm`'s ranks on its node
  // come before it in world order.
  std::vector<int> order(size);
  for (int r = 0; r < size; ++r) order[r] = r;
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return std::pair(physical[a], where[3 * a + 1]) < std::pair(physical[b], where[3 * b + 1]);
  });
  for (int i = 0; i < size; ++i) {
    const bool same_node = i > 0 && physical[order[i - 1]] == physical[order[i]];
    local[order[i]] = same_node ? local[order[i - 1]] + 1 : 0;
  }
  // Up to here every rank computes the same answer from the same data: a ring declined
  // now is declined on every rank, before the collective allocation.
  std::string mine;
  if (!every_node_split) mine = "a rank could not make its node's communicator";
  else if (entries < 1) mine = "a ring of no entries";
  else mine = planner::planned_nodes_share_memory(node_of, physical);
  if (!mine.empty()) {
    why = mine;
    if (node != MPI_COMM_NULL) PMPI_Comm_free(&node);
    return nullptr;
  }
  int ok = 1;
  const MPI_Aint part = static_cast<MPI_Aint>(entries) * (kFlagBytes + kEntryBytes);
  char* base = nullptr;
  if (fail) {
    ok = 0;
    mine = "CANOPY_FAULT=shm-unavailable";
  }
  // Every rank of the node takes part in the allocation (it is collective), even one
  // that will decline: the agreement below then tells every rank.
  MPI_Info info;
  PMPI_Info_create(&info);
  PMPI_Info_set(info, "alloc_shared_noncontig", "true");
  const double start = PMPI_Wtime();
  const int err = PMPI_Win_allocate_shared(part, 1, info, node, &base, &ring->win_);
  ring->allocate_seconds_ = PMPI_Wtime() - start;
  PMPI_Info_free(&info);
  if (err != MPI_SUCCESS) {
    ok = 0;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    PMPI_Error_string(err, text, &len);
    mine = std::string("MPI_Win_allocate_shared of ") + std::to_string(part) + " bytes failed: " + text;
    ring->win_ = MPI_WIN_NULL;
  } else {
    // Flags start at zero: no tag is 0, and no read has happened. Before the agreement,
    // which is then also the barrier: no rank reads another's flags before they are
    // zeroed.
    std::memset(base, 0, static_cast<std::size_t>(entries * kFlagBytes));
  }
  if (!everywhere(ok, comm)) {
    why = mine.empty() ? "another rank could not make its part of the ring" : mine;
    if (ring->win_ != MPI_WIN_NULL) PMPI_Win_free(&ring->win_);
    if (node != MPI_COMM_NULL) PMPI_Comm_free(&node);
    return nullptr;
  }
  ring->node_ = node;
  ring->rank_ = rank;
  ring->entries_ = entries;
  ring->base_.assign(size, nullptr);
  for (int r = 0; r < size; ++r) {
    if (physical[r] != physical[rank]) continue;
    MPI_Aint bytes = 0;
    int disp = 0;
    void* at = nullptr;
    PMPI_Win_shared_query(ring->win_, local[r], &bytes, &disp, &at);
    ring->base_[r] = static_cast<char*>(at);
  }
  ring->promised_.assign(entries, 0);
  ring->sequence_ = rings_made.fetch_add(1);
  return ring;
}

StagingRing::~StagingRing() {
  if (win_ != MPI_WIN_NULL) PMPI_Win_free(&win_);
  if (node_ != MPI_COMM_NULL) PMPI_Comm_free(&node_);
}

std::uint64_t* StagingRing::published(int rank, int entry) const {
  return reinterpret_cast<std::uint64_t*>(base_[rank] + entry * kFlagBytes);
}

std::uint64_t* StagingRing::acks(int rank, int entry) const {
  return reinterpret_cast<std::uint64_t*>(base_[rank] + entry * kFlagBytes + sizeof(std::uint64_t));
}

char* StagingRing::claim(int stage) {
  const int entry = stage % entries_;
  std::uint64_t* done = acks(rank_, entry);
  const std::uint64_t needed = promised_[entry];
  wait_until([&] { return __atomic_load_n(done, __ATOMIC_ACQUIRE) >= needed; }, node_);
  return base_[rank_] + entries_ * kFlagBytes + entry * kEntryBytes;
}

void StagingRing::publish(int stage, int readers) {
  const int entry = stage % entries_;
  promised_[entry] += static_cast<std::uint64_t>(readers);
  __atomic_store_n(published(rank_, entry), tag(stage), __ATOMIC_RELEASE);
}

const char* StagingRing::wait_for(int writer, int stage) {
  const int entry = stage % entries_;
  const std::uint64_t* flag = published(writer, entry);
  const std::uint64_t want = tag(stage);
  wait_until([&] { return __atomic_load_n(flag, __ATOMIC_ACQUIRE) == want; }, node_);
  return base_[writer] + entries_ * kFlagBytes + entry * kEntryBytes;
}

void StagingRing::release(int writer, int stage) {
  __atomic_fetch_add(acks(writer, stage % entries_), 1, __ATOMIC_RELEASE);
}

}  // namespace canopy::shim
