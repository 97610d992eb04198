#include "shim/model_probe.h"

#include <mpi.h>

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include "shim/polite.h"
#include "shim/reduce_kernels.h"

namespace canopy::shim {

namespace {

constexpr int kSmall = 8;
constexpr int kLarge = 256 * 1024;
constexpr int kRepeats = 10;
constexpr int kTag = 1;

// Half the best round trip of `bytes` between ranks 0 and 1 of `comm`.
double one_way_seconds(MPI_Comm comm, int rank, std::vector<char>& buffer, int bytes) {
  double best = 1e300;
  const int peer = 1 - rank;
  for (int i = 0; i < kRepeats + 2; ++i) {  // two warm-up round trips
    MPI_Request req;
    const double start = PMPI_Wtime();
    if (rank == 0) {
      PMPI_Isend(buffer.data(), bytes, MPI_BYTE, peer, kTag, comm, &req);
      wait_politely(&req);
      PMPI_Irecv(buffer.data(), bytes, MPI_BYTE, peer, kTag, comm, &req);
      wait_politely(&req);
    } else {
      PMPI_Irecv(buffer.data(), bytes, MPI_BYTE, peer, kTag, comm, &req);
      wait_politely(&req);
      PMPI_Isend(buffer.data(), bytes, MPI_BYTE, peer, kTag, comm, &req);
      wait_politely(&req);
    }
    if (i >= 2) best = std::min(best, (PMPI_Wtime() - start) / 2);
  }
  return best;
}

// The best of `runs` timings of `work` after `warm_ups` untimed ones; negative where
// `work` fails (returns false).
template <typename Work>
double best_seconds(int warm_ups, int runs, Work work) {
  double best = 1e300;
  for (int i = 0; i < warm_ups + runs; ++i) {
    const double start = PMPI_Wtime();
    if (!work()) return -1;
    if (i >= warm_ups) best = std::min(best, PMPI_Wtime() - start);
  }
  return best;
}

// Best time per byte of `work` on a buffer of kLarge bytes.
template <typename Work>
double seconds_per_byte(Work work) {
  return best_seconds(0, 5, [&] {
           work();
           return true;
         }) /
         kLarge;
}

// A cross-memory-attach copy timed by rank 1: process_vm_readv of kDirectSmall and of
// kLarge bytes of rank 0's `buffer` into its own, each the best of five after one, as
// {seconds per copy, seconds per byte} (the line through the two). Rank 0 sends its
// process and buffer and waits for the answer, which is {-1, -1} where nothing was
// measured: the ranks are on different nodes (`same_node` on rank 1: its node's lowest
// rank is 0), the copy is not wanted (`wanted`, the same on both), or the kernel refuses
// it (yama's ptrace_scope, seccomp). Decision: timed here, between the two ranks that
// time the network, rather than when a node's ring is made, where every rank would have
// to agree on the figures before any plan could use them; CANOPY_LEARN refits them from
// the calls as well.
constexpr int kDirectSmall = 16 * 1024;
std::array<double, 2> direct_copy_seconds(MPI_Comm comm, int rank, std::vector<char>& buffer, bool same_node,
                                          bool wanted) {
  std::array<double, 2> result{-1, -1};
  if (!wanted) return result;
  std::uint64_t where[2] = {static_cast<std::uint64_t>(getpid()),
                            static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(buffer.data()))};
  auto transfer = [&](bool send, void* data, int count, MPI_Datatype type) {
    MPI_Request req;
    if (send) PMPI_Isend(data, count, type, 1 - rank, kTag, comm, &req);
    else PMPI_Irecv(data, count, type, 1 - rank, kTag, comm, &req);
    wait_politely(&req);
  };
  if (rank == 0) {
    transfer(true, where, 2, MPI_UINT64_T);
    transfer(false, result.data(), 2, MPI_DOUBLE);
    return result;
  }
  transfer(false, where, 2, MPI_UINT64_T);
  // Best seconds of one copy of `bytes`; negative where the kernel did not copy them.
  auto best_of = [&](int bytes) {
    const iovec local{buffer.data(), static_cast<std::size_t>(bytes)};
    void* theirs = reinterpret_cast<void*>(static_cast<std::uintptr_t>(where[1]));
    const iovec remote{theirs, static_cast<std::size_t>(bytes)};
    return best_seconds(1, 5, [&] {
      return process_vm_readv(static_cast<pid_t>(where[0]), &local, 1, &remote, 1, 0) == bytes;
    });
  };
  if (same_node) {
    const double small = best_of(kDirectSmall);
    const double large = small < 0 ? -1.0 : best_of(kLarge);
    if (large >= 0) {
      const double per_byte = std::max(0.0, (large - small) / (kLarge - kDirectSmall));
      result = {std::max(0.0, small - per_byte * kDirectSmall), per_byte};
    }
  }
  transfer(true, result.data(), 2, MPI_DOUBLE);
  return result;
}

}  // namespace

planner::CostModel measure_model(bool same_node_as_rank_0, bool direct_wanted, bool network_or_node) {
  MPI_Comm comm;
  PMPI_Comm_dup(MPI_COMM_WORLD, &comm);
  int rank = 0, size = 1;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &size);
  planner::CostModel m = planner::default_model();
  double params[6] = {m.alpha, m.beta, m.gamma, m.copy_per_byte, m.direct_per_byte, m.direct_fixed};
  std::array<double, 2> direct{-1, -1};  // seconds per copy and per byte, where measured
  std::vector<char> buffer(kLarge, 1);
  if (size > 1 && rank < 2) {
    // Rank 1 knows whether it shares rank 0's node; rank 0 learns it where it matters.
    int timed = network_or_node || same_node_as_rank_0 ? 1 : 0;
    if (!network_or_node) {
      MPI_Request req;
      if (rank == 1) PMPI_Isend(&timed, 1, MPI_INT, 0, kTag, comm, &req);
      else PMPI_Irecv(&timed, 1, MPI_INT, 1, kTag, comm, &req);
      wait_politely(&req);
    }
    if (timed) {
      const double small = one_way_seconds(comm, rank, buffer, kSmall);
      const double large = one_way_seconds(comm, rank, buffer, kLarge);
      params[0] = small;
      params[1] = std::max(0.0, (large - small) / (kLarge - kSmall));
    }
    direct = direct_copy_seconds(comm, rank, buffer, same_node_as_rank_0, direct_wanted);
  }
  if (rank == 0) {
    std::vector<double> a(kLarge / sizeof(double), 1.0), b(kLarge / sizeof(double), 2.0);
    // γ as the executor combines: with Canopy's loop for doubles.
    const ReduceKernel sum = reduce_kernel(MPI_SUM, MPI_DOUBLE);
    params[2] = seconds_per_byte(
        [&] { combine(sum, a.data(), b.data(), static_cast<int>(a.size()), MPI_DOUBLE, MPI_SUM); });
    params[3] = seconds_per_byte([&] { std::memcpy(b.data(), a.data(), kLarge); });
    if (direct[1] > 0) {  // (0 would read as derived from copy)
      params[4] = direct[1];
      params[5] = direct[0];
    }
  }
  bcast_politely(params, 6, MPI_DOUBLE, 0, comm);
  PMPI_Comm_free(&comm);
  m.alpha = params[0];
  m.beta = params[1];
  m.gamma = params[2];
  m.copy_per_byte = params[3];
  m.direct_per_byte = params[4];
  m.direct_fixed = params[5];
  return m;
}

}  // namespace canopy::shim
