#include "shim/model_probe.h"

#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "shim/executor.h"
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

// Best time per byte of `work` on a buffer of kLarge bytes.
template <typename Work>
double seconds_per_byte(Work work) {
  double best = 1e300;
  for (int i = 0; i < 5; ++i) {
    const double start = PMPI_Wtime();
    work();
    best = std::min(best, PMPI_Wtime() - start);
  }
  return best / kLarge;
}

}  // namespace

planner::CostModel measure_model() {
  MPI_Comm comm;
  PMPI_Comm_dup(MPI_COMM_WORLD, &comm);
  int rank = 0, size = 1;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &size);
  planner::CostModel m = planner::default_model();
  double params[4] = {m.alpha, m.beta, m.gamma, m.copy_per_byte};
  std::vector<char> buffer(kLarge, 1);
  if (size > 1 && rank < 2) {
    const double small = one_way_seconds(comm, rank, buffer, kSmall);
    const double large = one_way_seconds(comm, rank, buffer, kLarge);
    params[0] = small;
    params[1] = std::max(0.0, (large - small) / (kLarge - kSmall));
  }
  if (rank == 0) {
    std::vector<double> a(kLarge / sizeof(double), 1.0), b(kLarge / sizeof(double), 2.0);
    // γ as the executor combines: with Canopy's loop for doubles.
    const ReduceKernel sum = reduce_kernel(MPI_SUM, MPI_DOUBLE);
    params[2] = seconds_per_byte(
        [&] { combine(sum, a.data(), b.data(), static_cast<int>(a.size()), MPI_DOUBLE, MPI_SUM); });
    params[3] = seconds_per_byte([&] { std::memcpy(b.data(), a.data(), kLarge); });
  }
  MPI_Request req;
  PMPI_Ibcast(params, 4, MPI_DOUBLE, 0, comm, &req);
  wait_politely(&req);
  PMPI_Comm_free(&comm);
  m.alpha = params[0];
  m.beta = params[1];
  m.gamma = params[2];
  m.copy_per_byte = params[3];
  return m;
}

}  // namespace canopy::shim
