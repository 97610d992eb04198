// The schedule IR: the one representation of a collective that the planner emits,
// the validator proves, the simulator times, the executor runs and the log records.
//
// A schedule is plain data. The message is cut into segments (element ranges); every
// rank has an ordered list of steps over three kinds of buffer:
//   Input        the rank's own contribution (reduce) or the user buffer (bcast);
//   Accumulator  where the rank builds its result: the root's receive buffer, a
//                workspace on other reducing ranks, the user buffer for bcast;
//   Slot s       a segment-sized scratch buffer that a received operand lands in.
// Ranks that share a node may also move data through a staging ring (shim/staging.h):
// each rank owns `staging_entries` entries of `staging_entry_bytes` in memory every
// rank of the node can read. A Stage step copies a segment into the rank's ring once,
// for one or more readers; a Fetch copies it out, a FetchReduce combines it into the
// reader's accumulator where it lies. The k-th Stage of a rank in a call (k from 0,
// Step::slot) uses entry (origin + k) mod staging_entries, and waits until every reader
// of that entry's previous use has released it; readers name the stage by (peer, slot).
// origin is where the ring's previous call left off (shim/staging.h): within one call it
// only renames entries, so the validator and the simulator take it as 0.
// Ranks of one node whose processes may also read and write each other's memory
// (cross-memory attach: process_vm_readv/writev, probed when the ring is made) can move
// a segment with one copy instead of two: a rank Exposes its accumulator for `readers`
// Read and Write steps of other ranks; a Read copies a segment of the exposer's
// accumulator into the reader's, a Write copies one of the writer's into the exposer's.
// The exposer's call does not end before those steps are over. Its own steps do not
// write a segment others read from it after the Expose, and do not touch one others
// write into it; no segment is written into it twice, or both written into it and read
// from it (the validator checks all four). Broadcasts only, for now: there the
// accumulator is the user's bytes on every rank (shim/collectives.cpp packs other types).
// A Send, Recv, Reduce or Copy may span several consecutive segments (Step::span): one
// message, one combine or one copy over segments segment .. segment + span - 1, which
// are consecutive elements of the buffers. Rabenseifner's halving sends a block of
// slices as one message, not one message a slice. A spanned receive into a slot lands
// the segments packed from slot `slot`'s start over slots slot .. slot + span - 1; only
// a Reduce of the same segments and slot reads it (the validator checks that).
// Steps run in list order. Sends and receives are nonblocking when issued; a step
// that needs data (a send of the accumulator, a reduce of a slot) waits for the
// receive that produces it. That is exactly how shim/executor interprets it.
//
// The same struct also holds a rank view: one rank's steps only (view_rank >= 0), what
// that rank runs. A view is the projection of the whole schedule onto one rank
// (project()), and algorithms can build it directly (planner/view.h) in time and
// memory that follow that rank's steps, not nranks x segments. The validator and the
// simulator need every rank; the executor and the log take either.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace canopy::planner {

// Allreduce: every rank ends with the reduction of all inputs in its Accumulator (its
// receive buffer); Input is its send buffer (the receive buffer itself with MPI_IN_PLACE
// on any rank). Root is 0 by convention: the rank a composed schedule reduces to.
enum class Collective { Reduce, Bcast, Allreduce };
// How many collectives there are, for tables indexed by Collective.
inline constexpr int kCollectives = 3;
// The MPI function a collective is: "MPI_Reduce", "MPI_Bcast", "MPI_Allreduce".
const char* mpi_function_name(Collective c);
// Parses "reduce", "bcast" or "allreduce"; false for anything else.
bool parse_collective(const std::string& text, Collective& out);

// Where a step reads or writes its data.
enum class Buffer : std::uint8_t { Input, Accumulator, Slot };

enum class StepKind : std::uint8_t {
  Send,    // send segment `segment` of `buffer` (Input or Accumulator) to `peer`
  Recv,    // receive segment `segment` from `peer` into `buffer` (Accumulator or Slot `slot`)
  Reduce,  // Accumulator[segment] = combine(Slot[slot], Accumulator[segment])
  Copy,    // Accumulator[segment] = Input[segment]
  // Staging ring steps, between ranks of one node (see the top of this file):
  Stage,        // copy segment `segment` of `buffer` (Input or Accumulator) into this rank's
                // ring as stage number `slot`, read by `readers` Fetch/FetchReduce steps
  Fetch,        // Accumulator[segment] = stage `slot` of rank `peer`
  FetchReduce,  // Accumulator[segment] = combine(stage `slot` of rank `peer`, X[segment]),
                // the staged operand on the left when `incoming_is_left`; X is `buffer`:
                // the Accumulator, or this rank's Input (the segment's first write, in
                // place of a Copy before it: one pass over the data instead of two)
  // Direct steps, between ranks of one node (see the top of this file):
  Expose,  // this rank's Accumulator may be read and written by `readers` Read/Write steps
           // of other ranks from here on, in this call; at most one Expose per rank
  Read,    // Accumulator[segment] = rank `peer`'s exposed Accumulator[segment]
  Write,   // rank `peer`'s exposed Accumulator[segment] = this rank's Accumulator[segment]
};

struct Step {
  StepKind kind = StepKind::Send;
  std::int32_t peer = -1;     // Send/Recv: the other rank
  std::int32_t segment = 0;   // index into Schedule::segments
  Buffer buffer = Buffer::Accumulator;
  std::int32_t slot = -1;     // Recv into a slot, and Reduce: which slot
  // Reduce only: true when the received operand comes first in rank order, so the
  // result is slot (op) accumulator; false gives accumulator (op) slot. Matters only
  // for non-commutative operations, and the validator checks it.
  bool incoming_is_left = false;
  std::int32_t readers = 0;   // Stage: how many steps read the staged segment; Expose: how
                              // many Read and Write steps of other ranks use the accumulator
  // Send, Recv, Reduce, Copy: how many consecutive segments from `segment` the step
  // moves or combines as one (see the top of this file); 1 for every other kind.
  std::int32_t span = 1;

  static Step send(int peer, int segment, Buffer from = Buffer::Accumulator);
  static Step recv_into_slot(int peer, int segment, int slot);
  static Step recv_into_accumulator(int peer, int segment);
  static Step reduce(int segment, int slot, bool incoming_is_left);
  static Step copy(int segment);
  static Step stage(int segment, int stage_number, int readers, Buffer from);
  static Step fetch(int writer, int segment, int stage_number);
  static Step fetch_reduce(int writer, int segment, int stage_number, bool incoming_is_left,
                           Buffer with = Buffer::Accumulator);
  static Step expose(int accessors);
  static Step read(int exposer, int segment);
  static Step write(int exposer, int segment);

  // The same step over `segments` consecutive segments from its own (span).
  Step spanning(int segments) const {
    Step s = *this;
    s.span = segments;
    return s;
  }
  int last_segment() const { return segment + span - 1; }
  bool covers(int seg) const { return seg >= segment && seg < segment + span; }

  bool is_message() const { return kind == StepKind::Send || kind == StepKind::Recv; }
  bool is_staging() const { return kind == StepKind::Stage || kind == StepKind::Fetch || kind == StepKind::FetchReduce; }
  bool is_direct() const { return kind == StepKind::Expose || kind == StepKind::Read || kind == StepKind::Write; }

  bool operator==(const Step& other) const;
};

// A contiguous range of elements of the message.
struct Segment {
  std::int64_t first = 0;  // element offset
  std::int64_t count = 0;  // elements
};

struct Schedule {
  Collective collective = Collective::Reduce;
  std::string algorithm;           // registry name of the algorithm that built it
  int nranks = 0;
  int root = 0;
  std::int64_t count = 0;          // elements in the whole message
  std::int64_t element_bytes = 1;  // bytes per element (the datatype's size)
  bool commutative = true;         // whether the reduction may reorder operands
  std::vector<Segment> segments;
  std::vector<std::vector<Step>> steps;  // steps[rank], in execution order (a view: steps[0])
  std::vector<int> slots;                // slots[rank]: scratch slots that rank needs (a view: slots[0])
  // -1: every rank's steps (the whole schedule). r >= 0: a rank view holding rank r's
  // steps and slots alone, at index 0.
  int view_rank = -1;
  // The staging ring the Stage steps use (0 entries: the schedule stages nothing).
  int staging_entries = 0;
  std::int64_t staging_entry_bytes = 0;
  // Whether its steps read or write other ranks' memory (Expose, Read, Write): it needs
  // a ring (for the exposers' addresses and counters) whose ranks may do that.
  bool direct = false;

  bool is_view() const { return view_rank >= 0; }
  // Whether this schedule holds `rank`'s steps (every rank, or the view's rank).
  bool holds(int rank) const { return is_view() ? rank == view_rank : rank >= 0 && rank < nranks; }
  // `rank`'s steps and slots, in a whole schedule or in the view of that rank; throws
  // std::out_of_range for a rank the schedule does not hold.
  const std::vector<Step>& steps_of(int rank) const;
  int slots_of(int rank) const;

  std::int64_t bytes() const { return count * element_bytes; }
  std::int64_t segment_bytes(int segment) const { return segments[segment].count * element_bytes; }
  // The elements and bytes a step moves or combines: its segments, all `span` of them.
  std::int64_t span_count(const Step& st) const {
    return segments[st.last_segment()].first + segments[st.last_segment()].count - segments[st.segment].first;
  }
  std::int64_t span_bytes(const Step& st) const { return span_count(st) * element_bytes; }
  std::int64_t largest_segment_count() const;
  std::size_t total_steps() const;
  bool uses_staging() const { return staging_entries > 0; }
  bool uses_direct() const { return direct; }
};

// The rank view of `schedule` (a whole schedule, or already that rank's view): the
// same header and segments, `rank`'s steps and slots. Throws std::out_of_range for a
// rank it does not hold.
Schedule project(const Schedule& schedule, int rank);

const char* to_string(Collective c);
const char* to_string(StepKind k);
const char* to_string(Buffer b);

// A one-line human description of a step, e.g. "recv seg 3 from 5 -> slot 1".
std::string describe(const Step& step);

}  // namespace canopy::planner
