// Runs one rank's part of a schedule with PMPI point-to-point calls.
//
// Steps run in order. Sends and receives are nonblocking; a step that needs data
// (sending the accumulator, reducing a slot) first waits for the receive that
// produces it, and a step that overwrites a segment first waits for the sends still
// reading it. Waiting is polite: test, then yield the core, so oversubscribed runs
// (more ranks than cores) do not starve the ranks that would complete the message.
// One local shortcut keeps the messages and operands but saves a pass over the data:
// a segment's first operand may be received straight into the accumulator and this
// rank's input reduced into it, instead of copying the input in and reducing a slot
// (executor.cpp, find_fusions, says when). Likewise a segment copied in, combined with
// staged operands and then staged is built in its ring entry itself (one copy less).
// Staging ring steps (planner/schedule.h) copy with memcpy and reduce with
// MPI_Reduce_local straight from the writer's entry (StagingRing waits politely).
// An MPI error does not stop the walk: the rank still posts every message so its
// peers cannot hang, and the first error code is returned.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "planner/schedule.h"
#include "shim/datatype.h"
#include "shim/polite.h"  // the executor waits politely, as Canopy's own collectives
#include "shim/staging.h"

namespace canopy::shim {

// The local shortcut of a step (executor.cpp, find_fusions): run as written, or fused
// with its neighbours. It depends only on the rank's steps, the operation's
// commutativity and whether the input is the accumulator, so a plan computes it once
// (fusions_for) and every call reuses it.
enum class Fused : unsigned char { No, RecvIntoAccumulator, SkipCopy, ReduceInput, CopyIntoEntry, ReduceInEntry, PublishEntry };
std::vector<Fused> fusions_for(const planner::Schedule& schedule, int rank, bool input_is_accumulator);

// The executor's bookkeeping, kept from call to call (one per communicator: MPI runs
// one collective at a time on it), so that a call allocates nothing once warm.
struct ExecutorScratch {
  std::vector<MPI_Request> acc_recv;              // every receive into the accumulator posted, in order
  std::vector<int> acc_owner;                     // per segment: the acc_recv filling it last (-1: none)
  std::vector<MPI_Request> slot_recv;             // pending receive into each slot
  std::vector<MPI_Request> sends;                 // every send posted, completed at the end
  std::vector<std::vector<std::size_t>> readers;  // sends indices reading each segment
  std::string direct_error;                       // the last call's failed Read or Write, if any
};

struct ExecutionBuffers {
  const void* input = nullptr;        // this rank's contribution (reduce)
  void* accumulator = nullptr;        // root: recvbuf; bcast: the user buffer; else workspace
  bool input_is_accumulator = false;  // MPI_IN_PLACE at the root
  std::vector<void*> slots;           // one scratch buffer per slot, largest segment each
  // The node's staging ring, for schedules with Stage/Fetch/FetchReduce steps: the
  // caller has checked that it exists, has the schedule's entries, that every segment
  // fits an entry and that the datatype's elements are contiguous bytes.
  StagingRing* ring = nullptr;
};

// Runs `rank`'s steps of `schedule` (the whole schedule or that rank's view) over the
// message cut into `segments` (the schedule's own, or the same number of segments cut
// for this call's count: planner::rescale_segments).
int execute(const planner::Schedule& schedule, const std::vector<planner::Segment>& segments, int rank,
            const ExecutionBuffers& buffers, const DatatypeLayout& layout, MPI_Op op, MPI_Comm comm,
            const std::vector<Fused>& fusions, ExecutorScratch& scratch);

}  // namespace canopy::shim
