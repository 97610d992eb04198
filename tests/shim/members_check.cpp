// members_check: the node leaders' collectives without a communicator (shim/members.h)
// give what MPI's own collectives over those ranks would: for subsets of every size of
// MPI_COMM_WORLD, in rank order and shuffled (member 0 not rank 0), a broadcast from
// member 0, a gather to member 0 and an allgather of blocks of several sizes (0 bytes
// included) and a barrier; and the same through Members::whole (the MPI's own
// collectives). Ranks outside a subset take no part, as the probe's non-leaders.
// Prints "N subsets checked, F failures" on rank 0.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "shim/members.h"
#include "tests/shim/check_failures.h"

namespace {

using canopy_test::check;
using canopy_test::failures;

// A value only member `i` of the case `c` would make, element k.
int value(int c, int i, int k) { return 1000 * c + 10 * i + k + 1; }

void check_members(const canopy::shim::Members& m, int c, const std::string& name) {
  const int i = m.index(), n = m.size();
  if (i < 0) return;
  // Broadcast: member 0's values everywhere, at a few lengths.
  for (int len : {0, 1, 7, 1000}) {
    std::vector<int> data(static_cast<std::size_t>(len), -1);
    if (i == 0)
      for (int k = 0; k < len; ++k) data[k] = value(c, 0, k);
    check(m.bcast(data.data(), len * static_cast<int>(sizeof(int))) == MPI_SUCCESS, name + ": bcast's status");
    for (int k = 0; k < len; ++k)
      if (data[k] != value(c, 0, k)) {
        check(false, name + ": bcast of " + std::to_string(len) + " ints, member " + std::to_string(i));
        break;
      }
  }
  // Gather and allgather: member j's block at j, on member 0 or on every member.
  for (const bool to_all : {false, true})
    for (int len : {0, 1, 3, 300}) {
      const std::string what = std::string(to_all ? "allgather" : "gather") + " of " + std::to_string(len) + " ints";
      std::vector<int> mine(static_cast<std::size_t>(len)), all(static_cast<std::size_t>(len) * n, -1);
      for (int k = 0; k < len; ++k) mine[k] = value(c, i, k);
      const int bytes = len * static_cast<int>(sizeof(int));
      const int err = to_all ? m.allgather(mine.data(), bytes, all.data()) : m.gather(mine.data(), bytes, all.data());
      check(err == MPI_SUCCESS, name + ": " + what + ", its status");
      bool ok = true;
      for (int j = 0; j < n && (to_all || i == 0); ++j)
        for (int k = 0; k < len; ++k) ok = ok && all[static_cast<std::size_t>(j) * len + k] == value(c, j, k);
      check(ok, name + ": " + what + ", member " + std::to_string(i));
    }
  check(m.barrier() == MPI_SUCCESS, name + ": barrier's status");
}

std::string list(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ",") + std::to_string(r);
  return "{" + s + "}";
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // The same draw on every rank: every rank builds the same subsets.
  std::mt19937 draw(7);
  int cases = 0;
  for (int n = 1; n <= size; ++n)
    for (int shuffled = 0; shuffled < 2; ++shuffled) {
      std::vector<int> all(static_cast<std::size_t>(size));
      std::iota(all.begin(), all.end(), 0);
      std::shuffle(all.begin(), all.end(), draw);
      std::vector<int> ranks(all.begin(), all.begin() + n);
      if (!shuffled) std::sort(ranks.begin(), ranks.end());
      const canopy::shim::Members m(MPI_COMM_WORLD, ranks, 5);
      check((m.index() >= 0) == (std::find(ranks.begin(), ranks.end(), rank) != ranks.end()),
            "index of rank " + std::to_string(rank) + " in " + list(ranks));
      check_members(m, cases, "members " + list(ranks));
      ++cases;
      MPI_Barrier(MPI_COMM_WORLD);  // every case's messages are over before the next
    }
  check_members(canopy::shim::Members::whole(MPI_COMM_WORLD), cases++, "whole MPI_COMM_WORLD");
  int all_failures = 0;
  MPI_Reduce(&failures, &all_failures, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) std::printf("%d subsets checked, %d failures\n", cases, all_failures);
  MPI_Finalize();
  return all_failures == 0 ? 0 : 1;
}
