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

namespace {

// The members' trees have radix 8: member i's parent is i with its lowest nonzero
// base-8 digit cleared; its children are i + d x 8^q for the digits q below that one
// (every q for member 0) and d = 1..7, those under n. log8(n) levels instead of a
// binomial tree's log2(n), for 7 messages a level from a parent instead of 1: the
// probe's messages are a few bytes, so a level costs a latency, and on a grid the
// levels that cross sites cost a wide-area one (64 leaders on 16 sites of 4: the
// binomial tree crossed sites at 4 levels, this one at 2).
constexpr int kRadix = 8;

// Member i's place in the tree: its parent (-1 for member 0), the end of its subtree
// [i, end), and its children, farthest subtree first (so a child's subtree ends where
// the one before it in the list begins, the first's at `end`).
struct TreePlace {
  int parent = -1;
  int end = 0;
  std::vector<int> children;
};

TreePlace tree_place(int i, int n) {
  int reach = 1;  // 8^q of i's lowest nonzero digit; for member 0 the first power >= n
  while (reach < n && (i / reach) % kRadix == 0) reach *= kRadix;
  TreePlace t;
  t.parent = i == 0 ? -1 : i - (i / reach) % kRadix * reach;
  t.end = i == 0 ? n : static_cast<int>(std::min<long>(n, static_cast<long>(i) + reach));
  for (int step = reach / kRadix; step >= 1; step /= kRadix)
    for (int d = kRadix - 1; d >= 1; --d)
      if (static_cast<long>(i) + static_cast<long>(d) * step < n) t.children.push_back(i + d * step);
  return t;
}

// Waits for every request, politely; the first error, or MPI_SUCCESS.
int wait_all(std::vector<MPI_Request>& requests, int err) {
  for (MPI_Request& r : requests)
    if (r != MPI_REQUEST_NULL) {
      const int waited = wait_politely(&r);
      if (err == MPI_SUCCESS) err = waited;
    }
  return err;
}

}  // namespace

int Members::bcast(void* data, int bytes) const {
  if (whole_) return bcast_politely(data, bytes, MPI_BYTE, 0, comm_);
  const TreePlace t = tree_place(index_, size());
  if (t.parent >= 0) {
    const int err = recv(data, bytes, t.parent);
    if (err != MPI_SUCCESS) return err;
  }
  std::vector<MPI_Request> sends(t.children.size(), MPI_REQUEST_NULL);
  int err = MPI_SUCCESS;
  for (std::size_t c = 0; c < t.children.size() && err == MPI_SUCCESS; ++c)
    err = PMPI_Isend(data, bytes, MPI_BYTE, rank_of(t.children[c]), tag_, comm_, &sends[c]);
  return wait_all(sends, err);
}

// Member i's children's subtrees are gathered in place after its own block, then sent
// to its parent in one message.
int Members::gather(const void* mine, int bytes, void* out) const {
  if (whole_) return gather_politely(mine, bytes, MPI_BYTE, out, 0, comm_);
  const int i = index_;
  const TreePlace t = tree_place(i, size());
  const std::size_t block = static_cast<std::size_t>(std::max(bytes, 0));
  std::vector<char> own(t.parent >= 0 ? static_cast<std::size_t>(t.end - i) * block : 0);
  char* subtree = t.parent >= 0 ? own.data() : static_cast<char*>(out);  // block j: member i + j's
  if (block > 0) std::memcpy(subtree, mine, block);
  std::vector<MPI_Request> receives(t.children.size(), MPI_REQUEST_NULL);
  int err = MPI_SUCCESS;
  for (std::size_t c = 0; c < t.children.size() && err == MPI_SUCCESS; ++c) {
    const int child = t.children[c], child_end = c == 0 ? t.end : t.children[c - 1];
    err = PMPI_Irecv(subtree + static_cast<std::size_t>(child - i) * block,
                     static_cast<int>(static_cast<std::size_t>(child_end - child) * block), MPI_BYTE, rank_of(child),
                     tag_, comm_, &receives[c]);
  }
  if ((err = wait_all(receives, err)) != MPI_SUCCESS || t.parent < 0) return err;
  return send(own.data(), static_cast<int>(own.size()), t.parent);
}

int Members::allgather(const void* mine, int bytes, void* out) const {
  if (whole_) return allgather_politely(mine, bytes, MPI_BYTE, out, comm_);
  const int err = gather(mine, bytes, out);
  return err != MPI_SUCCESS ? err : bcast(out, size() * bytes);
}

int Members::barrier() const {
  if (whole_) return barrier_politely(comm_);
  // Up the tree with empty messages, then down: no member leaves before every one came.
  const int err = gather(nullptr, 0, nullptr);
  return err != MPI_SUCCESS ? err : bcast(nullptr, 0);
}

}  // namespace canopy::shim
