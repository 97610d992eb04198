// Proves a schedule correct before anyone runs it.
//
// The validator executes the schedule symbolically with the executor's semantics:
// sends and receives are posted without blocking; a send of the accumulator waits for
// the receive that fills it; a reduce waits for the receive into its slot. Instead of
// data it tracks which ranks' contributions each buffer holds. It rejects a schedule
// when sends and receives do not pair up, when the step order can deadlock, when a
// contribution would be lost or counted twice, when a scratch slot is overwritten
// before use, when an input could be read after an in-place root overwrote it, or
// when a non-commutative operation would combine operands out of rank order. Staging
// ring steps (schedule.h) run with the executor's semantics too: a Stage waits until
// its ring entry's previous use has been read by all its readers, a Fetch or
// FetchReduce waits for its Stage; a ring too small for the schedule's order deadlocks
// and is rejected. Direct steps too: an Expose waits until no receive into the rank's
// accumulator is pending, a Read or Write waits for its peer's Expose; a Read must find
// data in the segment it copies, a Write must have it.
// A step that writes an accumulator segment (a receive into it, a reduce, copy, fetch,
// fetch-reduce or read) waits until every send still reading that segment (of the
// accumulator; in an allreduce, of the input too, which MPI_IN_PLACE makes the
// accumulator) has had its receive posted: the executor waits for those sends to
// complete before it overwrites the segment, and an MPI send may not complete before
// its receive is posted. Only an allreduce writes a segment after sending it.
// Outcome: a reduce's root holds every rank's contribution in every segment; a
// broadcast's ranks all hold the root's; an allreduce's ranks all hold every rank's.
#pragma once

#include <string>
#include <vector>

#include "planner/schedule.h"

namespace canopy::planner {

struct Validation {
  bool ok = true;
  std::vector<std::string> errors;  // each names the rank and step at fault
  explicit operator bool() const { return ok; }
  std::string summary() const;      // first errors joined, for one log line
};

// A rank view is rejected: proving it takes every rank's steps.
Validation validate(const Schedule& schedule);

// The checks every other one relies on: ranks, root, a segment layout covering the
// message, and every peer, segment and slot index in range (in a rank view, that
// rank's). Returns false and appends
// to `errors` when one fails. validate() and simulate() start with it, so a schedule
// read from anywhere (a log, a file) cannot make them index out of range.
bool check_shape(const Schedule& schedule, std::vector<std::string>& errors);

// Pairs every send with its receive: the i-th send from a to b matches the i-th
// receive at b from a, and both must name the same segment (MPI's non-overtaking
// rule makes that the matching the executor gets). partner[rank][step] is the
// (rank, step) at the other end, or {-1, -1} for local steps.
struct StepRef {
  int rank = -1;
  int index = -1;
};
struct Matching {
  // A Fetch or FetchReduce: the Stage it reads; a Read or Write: the Expose it uses.
  std::vector<std::vector<StepRef>> partner;
  // stage[r][k]: rank r's k-th Stage step; readers_of[r][k]: the steps that read it.
  std::vector<std::vector<int>> stage;
  std::vector<std::vector<std::vector<StepRef>>> readers_of;
  // expose[r]: rank r's Expose step (-1: none); accessors_of[r]: the Read and Write
  // steps of other ranks that use its accumulator.
  std::vector<int> expose;
  std::vector<std::vector<StepRef>> accessors_of;
};
// Staged segments pair by name: a Fetch or FetchReduce of (peer w, stage k) reads w's
// k-th Stage, which must be of the same segment and declare exactly that many readers;
// a rank's Stage steps are numbered 0, 1, 2, ... in order.
// Direct steps pair by rank: a Read or Write of peer e uses e's one Expose, which must
// declare exactly as many accessors as name it. The rules that make the accesses race
// with nothing are checked here too, since they need no run: after its Expose a rank
// writes no segment that others read from it, no rank touches a segment others write
// into it, no two Writes fill one segment, and no segment is both written into a rank
// and read from it (nothing orders the Write before the Read).
// Returns false and appends to `errors` when messages do not pair up.
bool match_messages(const Schedule& schedule, Matching& out, std::vector<std::string>& errors);

}  // namespace canopy::planner
