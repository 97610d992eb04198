// Collectives among some ranks of a communicator, without a communicator of their own:
// the node leaders of CANOPY_TOPOLOGY=auto's probe (shim/topology_probe.cpp).
//
// Why not MPI_Comm_create_group: the leaders' communicator was made once at MPI_Init and
// freed after the probe, so its making was pure cost. Under SimGrid's SMPI it grows with
// the whole communicator, not the group: 0.38 s of simulated time for 16 leaders of 256
// ranks and 1.65 s for 64 of 1024 on a generated 16-site grid (MPI_Comm_split alike,
// 0.43 and 1.69 s), half of the probe's 3.2 s at 1024 ranks (docs/simulation.md). Here
// the members' collectives are point-to-point messages on the parent communicator under
// a tag of their own: a broadcast and a gather along a tree of radix 8 rooted at
// member 0 (log8(members) levels: a level costs a latency, a wide-area one on a grid; see
// members.cpp), an allgather as the two in turn; a whole communicator keeps the MPI's own
// collectives (politely: shim/executor.h).
//
// Decisions:
//  * Every member calls the same collectives in the same order (as with a communicator),
//    and messages between two ranks on one tag arrive in the order sent (MPI's
//    non-overtaking rule), so one tag serves every collective. The probe's own receives
//    with MPI_ANY_TAG (echo(): from one peer, until that peer's stop) cannot take a
//    members' message: the peer sends its stop before any later collective's message.
//  * allgather is the gather and then a broadcast of the whole (and barrier their empty
//    version): 2 log8(n) levels, fewer than a dissemination's log2(n) rounds, for any n;
//    each member's memory is the result it gets anyway.
//  * Sends and receives are nonblocking and waited for politely (wait_politely), like
//    the rest of the probe: on an oversubscribed node MPICH's blocking calls busy-poll.
#pragma once

#include <mpi.h>

#include <vector>

namespace canopy::shim {

class Members {
 public:
  // Every rank of `comm`, in its order: the MPI's own collectives.
  static Members whole(MPI_Comm comm);
  // Ranks `ranks` of `comm` (distinct), member i being ranks[i]: point-to-point on `comm`
  // with tag `tag`, which nothing else on `comm` may use while they run.
  Members(MPI_Comm comm, std::vector<int> ranks, int tag);

  MPI_Comm comm() const { return comm_; }
  int size() const { return static_cast<int>(ranks_.size()); }
  // This rank's index among the members; -1 where it is not one.
  int index() const { return index_; }
  // The rank in comm() of member i.
  int rank_of(int i) const { return ranks_[static_cast<std::size_t>(i)]; }

  // Each collective is called by every member alike; MPI's error code, MPI_SUCCESS.
  // `bytes` from member 0 to every member.
  int bcast(void* data, int bytes) const;
  // `bytes` from each member into member 0's `out` (size() x bytes, member i's at
  // i x bytes; not written elsewhere), along the broadcast's tree.
  int gather(const void* mine, int bytes, void* out) const;
  // `bytes` from each member into `out` (size() x bytes, member i's at i x bytes).
  int allgather(const void* mine, int bytes, void* out) const;
  int barrier() const;

 private:
  Members() = default;
  int send(const void* data, int bytes, int member) const;
  int recv(void* data, int bytes, int member) const;

  MPI_Comm comm_ = MPI_COMM_NULL;
  std::vector<int> ranks_;
  int index_ = -1;
  int tag_ = 0;
  bool whole_ = false;
};

}  // namespace canopy::shim
