#include "shim/gather_text.h"

namespace canopy::shim {

std::vector<std::string> gather_text(MPI_Comm comm, const std::string& mine) {
  int rank = 0, size = 1;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &size);
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(rank == 0 ? size : 0), offsets(rank == 0 ? size : 0);
  if (PMPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, comm) != MPI_SUCCESS) return {};
  std::vector<char> all;
  if (rank == 0) {
    long total = 0;
    for (int r = 0; r < size; ++r) {
      offsets[r] = static_cast<int>(total);
      total += lengths[r];
    }
    all.resize(static_cast<std::size_t>(total));
  }
  if (PMPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0, comm) !=
      MPI_SUCCESS)
    return {};
  std::vector<std::string> out;
  if (rank != 0) return out;
  for (int r = 0; r < size; ++r) out.emplace_back(all.begin() + offsets[r], all.begin() + offsets[r] + lengths[r]);
  return out;
}

}  // namespace canopy::shim
