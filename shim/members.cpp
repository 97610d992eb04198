#include "shim/members.h"

#include <algorithm>
#include <cstring>

#include "shim/polite.h"

namespace canopy::shim {

Members Members::whole(MPI_Comm comm) {
  Members m;
  m.comm_ = comm;
  int size = 1;
  PMPI_Comm_size(comm, &size);
  PMPI_Comm_rank(comm, &m.index_);
  m.ranks_.resize(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) m.ranks_[static_cast<std::size_t>(r)] = r;
  m.whole_ = true;
  return m;
}

Members::Members(MPI_Comm comm, std::vector<int> ranks, int tag) : comm_(comm), ranks_(std::move(ranks)), tag_(tag) {
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  const auto at = std::find(ranks_.begin(), ranks_.end(), rank);
  index_ = at == ranks_.end() ? -1 : static_cast<int>(at - ranks_.begin());
}

int Members::send(const void* data, int bytes, int member) const {
  MPI_Request r = MPI_REQUEST_NULL;
  const int err = PMPI_Isend(data, bytes, MPI_BYTE, rank_of(member), tag_, comm_, &r);
  return err != MPI_SUCCESS ? err : wait_politely(&r);
}

int Members::recv(void* data, int bytes, int member) const {
  MPI_Request r = MPI_REQUEST_NULL;
  const int err = PMPI_Irecv(data, bytes, MPI_BYTE, rank_of(member), tag_, comm_, &r);
  return err != MPI_SUCCESS ? err : wait_politely(&r);
}

// The binomial tree rooted at member 0: member i's parent is i without its lowest set
// bit; its children are i + m for the powers of two m below that bit (all of them for
// member 0) that stay under n. Member i's subtree is [i, i + lowbit(i)) cut at n.
int Members::bcast(void* data, int bytes) const {
  if (whole_) return bcast_politely(data, bytes, MPI_BYTE, 0, comm_);
  const int n = size(), i = index_;
  int mask = 1;
  while (mask < n && !(i & mask)) mask <<= 1;
  if (i != 0) {
    const int err = recv(data, bytes, i - mask);
    if (err != MPI_SUCCESS) return err;
  }
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (i + mask < n) {
      const int err = send(data, bytes, i + mask);
      if (err != MPI_SUCCESS) return err;
    }
  return MPI_SUCCESS;
}

int Members::gather(char* out, int bytes) const {
  const int n = size(), i = index_;
  for (int mask = 1; mask < n; mask <<= 1) {
    if (i & mask) {  // the subtree gathered so far goes to the parent, in one message
      const int blocks = std::min(mask, n - i);
      return send(out + static_cast<std::size_t>(i) * bytes, blocks * bytes, i - mask);
    }
    if (i + mask < n) {
      const int child = i + mask, blocks = std::min(mask, n - child);
      const int err = recv(out + static_cast<std::size_t>(child) * bytes, blocks * bytes, child);
      if (err != MPI_SUCCESS) return err;
    }
  }
  return MPI_SUCCESS;
}

int Members::allgather(const void* mine, int bytes, void* out) const {
  if (whole_) return allgather_politely(mine, bytes, MPI_BYTE, out, comm_);
  char* all = static_cast<char*>(out);
  if (bytes > 0) std::memcpy(all + static_cast<std::size_t>(index_) * bytes, mine, static_cast<std::size_t>(bytes));
  const int err = gather(all, bytes);
  return err != MPI_SUCCESS ? err : bcast(all, size() * bytes);
}

int Members::reduce_max(const double* in, double* out, int n) const {
  if (whole_) return reduce_politely(in, out, n, MPI_DOUBLE, MPI_MAX, 0, comm_);
  const int members = size(), i = index_;
  std::vector<double> acc(in, in + n), theirs(static_cast<std::size_t>(n));
  const int bytes = n * static_cast<int>(sizeof(double));
  for (int mask = 1; mask < members; mask <<= 1) {
    if (i & mask) return send(acc.data(), bytes, i - mask);
    if (i + mask < members) {
      const int err = recv(theirs.data(), bytes, i + mask);
      if (err != MPI_SUCCESS) return err;
      for (int k = 0; k < n; ++k) acc[k] = std::max(acc[k], theirs[k]);
    }
  }
  std::copy(acc.begin(), acc.end(), out);  // member 0 alone gets here
  return MPI_SUCCESS;
}

int Members::barrier() const {
  if (whole_) return barrier_politely(comm_);
  // Up the tree with empty messages, then down: no member leaves before every one came.
  const int err = gather(nullptr, 0);
  return err != MPI_SUCCESS ? err : bcast(nullptr, 0);
}

}  // namespace canopy::shim
