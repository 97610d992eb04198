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

// Member i's parent (-1 for member 0) and its children, farthest subtree first.
int tree_of(int i, int n, std::vector<int>& children) {
  int reach = 1;  // 8^q of i's lowest nonzero digit; for member 0 the first power >= n
  while (reach < n && (i / reach) % kRadix == 0) reach *= kRadix;
  children.clear();
  for (int step = reach / kRadix; step >= 1; step /= kRadix)
    for (int d = kRadix - 1; d >= 1; --d)
      if (static_cast<long>(i) + static_cast<long>(d) * step < n) children.push_back(i + d * step);
  return i == 0 ? -1 : i - (i / reach) % kRadix * reach;
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
  std::vector<int> children;
  const int parent = tree_of(index_, size(), children);
  if (parent >= 0) {
    const int err = recv(data, bytes, parent);
    if (err != MPI_SUCCESS) return err;
  }
  std::vector<MPI_Request> sends(children.size(), MPI_REQUEST_NULL);
  int err = MPI_SUCCESS;
  for (std::size_t c = 0; c < children.size() && err == MPI_SUCCESS; ++c)
    err = PMPI_Isend(data, bytes, MPI_BYTE, rank_of(children[c]), tag_, comm_, &sends[c]);
  return wait_all(sends, err);
}

// Member i's subtree is [i, i + reach) cut at n (reach as in tree_of): its children's
// subtrees gathered in place after its own block, then sent to its parent in one message.
int Members::gather(const void* mine, int bytes, void* out) const {
  if (whole_) return gather_politely(mine, bytes, MPI_BYTE, out, 0, comm_);
  const int n = size(), i = index_;
  std::vector<int> children;
  const int parent = tree_of(i, n, children);
  int end = n;  // the subtree's end: the parent's next child, or n
  if (parent >= 0) {
    int reach = 1;
    while ((i / reach) % kRadix == 0) reach *= kRadix;
    end = std::min(n, i + reach);
  }
  const std::size_t block = static_cast<std::size_t>(std::max(bytes, 0));
  std::vector<char> own(parent >= 0 ? static_cast<std::size_t>(end - i) * block : 0);
  char* subtree = parent >= 0 ? own.data() : static_cast<char*>(out);  // block j: member i + j's
  if (block > 0) std::memcpy(subtree, mine, block);
  std::vector<MPI_Request> receives(children.size(), MPI_REQUEST_NULL);
  int err = MPI_SUCCESS;
  for (std::size_t c = 0; c < children.size() && err == MPI_SUCCESS; ++c) {
    // A child's subtree ends where the one before it in the list (the next one up) begins.
    const int child = children[c], child_end = c == 0 ? end : children[c - 1];
    err = PMPI_Irecv(subtree + static_cast<std::size_t>(child - i) * block,
                     static_cast<int>(static_cast<std::size_t>(child_end - child) * block), MPI_BYTE, rank_of(child),
                     tag_, comm_, &receives[c]);
  }
  if ((err = wait_all(receives, err)) != MPI_SUCCESS || parent < 0) return err;
  return send(own.data(), static_cast<int>(own.size()), parent);
}

// Bruck's dissemination: member i holds its own block and the next members' (cyclically,
// in `held`, block j being member i + j's); each round it sends the blocks it holds to
// member i - d and gets as many from member i + d (d: the blocks held so far), so every
// member has every block after ceil(log2 n) rounds of one message each way. A gather
// and a broadcast along the tree take twice as many rounds, and on a grid each round
// that crosses sites costs a wide-area latency (64 leaders on 16 sites: 4 of the 6
// rounds here, 8 of the 12 there).
int Members::allgather(const void* mine, int bytes, void* out) const {
  if (whole_) return allgather_politely(mine, bytes, MPI_BYTE, out, comm_);
  const int n = size(), i = index_;
  const std::size_t block = static_cast<std::size_t>(std::max(bytes, 0));
  std::vector<char> held(static_cast<std::size_t>(n) * block);
  if (block > 0) std::memcpy(held.data(), mine, block);
  for (int have = 1; have < n;) {
    const int count = std::min(have, n - have);  // blocks each way this round
    MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    int err = PMPI_Irecv(held.data() + have * block, static_cast<int>(count * block), MPI_BYTE,
                         rank_of((i + have) % n), tag_, comm_, &r[0]);
    if (err == MPI_SUCCESS)
      err = PMPI_Isend(held.data(), static_cast<int>(count * block), MPI_BYTE, rank_of((i - have + n) % n), tag_,
                       comm_, &r[1]);
    std::vector<MPI_Request> both(r, r + 2);
    if ((err = wait_all(both, err)) != MPI_SUCCESS) return err;
    have += count;
  }
  char* all = static_cast<char*>(out);
  for (int j = 0; j < n && block > 0; ++j)
    std::memcpy(all + static_cast<std::size_t>((i + j) % n) * block, held.data() + j * block, block);
  return MPI_SUCCESS;
}

int Members::barrier() const {
  if (whole_) return barrier_politely(comm_);
  // The allgather's rounds with empty messages: a member leaves once every member's
  // round-0 message has reached it through the others (as a dissemination barrier).
  return allgather(nullptr, 0, nullptr);
}

}  // namespace canopy::shim
