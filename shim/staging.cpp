#include "shim/staging.h"

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

}  // namespace

std::unique_ptr<StagingRing> StagingRing::create(MPI_Comm comm, int entries, const std::vector<int>& node_of,
                                                 bool fail, std::string& why) {
  int size = 0, rank = 0;
  PMPI_Comm_size(comm, &size);
  PMPI_Comm_rank(comm, &rank);
  std::unique_ptr<StagingRing> ring(new StagingRing());
  int ok = 1;
  std::string mine;
  MPI_Comm node = MPI_COMM_NULL;
  // Each rank's node (the lowest communicator rank on it) and its rank in the node's
  // window, known to every rank.
  std::vector<int> where(2 * static_cast<std::size_t>(size), -1);
  if (PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node) != MPI_SUCCESS) {
    ok = 0;
    mine = "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) failed";
    node = MPI_COMM_NULL;
  }
  int mine_where[2] = {rank, -1};
  if (ok) {
    PMPI_Allreduce(&rank, &mine_where[0], 1, MPI_INT, MPI_MIN, node);
    PMPI_Comm_rank(node, &mine_where[1]);
  }
  PMPI_Allgather(mine_where, 2, MPI_INT, where.data(), 2, MPI_INT, comm);
  std::vector<int> physical(size), local(size);
  for (int r = 0; r < size; ++r) {
    physical[r] = where[2 * r];
    local[r] = where[2 * r + 1];
  }
  if (ok && std::find(local.begin(), local.end(), -1) == local.end()) {
    // Every rank computes the same answer from the same data: a node that declines
    // here declines on all its ranks, before its collective allocation.
    mine = planner::planned_nodes_share_memory(node_of, physical);
    if (!mine.empty()) ok = 0;
  } else if (ok) {
    ok = 0;
    mine = "another rank could not split its node";
  }
  if (entries < 1) {
    ok = 0;
    mine = "a ring of no entries";
  }
  const MPI_Aint part = static_cast<MPI_Aint>(entries) * (kFlagBytes + kEntryBytes);
  char* base = nullptr;
  if (ok) {
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
    }
  }
  int all = 0;
  PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
  if (!all) {
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
  // Flags start at zero: no tag is 0, and no read has happened.
  std::memset(ring->base_[rank], 0, static_cast<std::size_t>(entries * kFlagBytes));
  ring->promised_.assign(entries, 0);
  ring->sequence_ = rings_made.fetch_add(1);
  // No rank reads another's flags before they are zeroed.
  PMPI_Barrier(comm);
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
