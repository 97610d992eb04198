// CANOPY_TRACE: a measured timeline of sampled calls, every step of their schedules on
// every rank, written at MPI_Finalize by world rank 0 in the Chrome trace-event JSON
// format (ui.perfetto.dev, chrome://tracing).
//
// Which calls: CANOPY_TRACE_CALLS=N:M, of each plan (a communicator's calls of one
// collective, root and size class) the first N calls and then one in M, counted by the
// plan's calls, which every rank of the communicator makes alike: a traced call is
// traced on every rank, so each send has its receive in the file.
// Clocks: trace::now(), each rank's monotonic clock (CLOCK_MONOTONIC, one per machine;
// not MPI_Wtime, which Open MPI 4.1 counts from each process's own start), shifted by
// its offset from world rank 0's, measured at MPI_Init the way tracing tools do
// (ping-pongs with rank 0; the offset of the one with the shortest round trip, assuming
// it symmetric), so a send and its receive line up across nodes; the ranks on rank 0's
// node read its clock and take no offset. Under SMPI, the simulated MPI_Wtime.
// Cost when off: one branch a call (trace::on()), one a schedule run.
// Under MPI_THREAD_MULTIPLE nothing is traced: calls on several threads would interleave
// their steps in the one recorder (said once at MPI_Init).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "planner/schedule.h"

namespace canopy::shim::trace {

// What a step did, as the executor ran it (planner::StepKind, and the final wait for the
// messages still in flight).
enum class Kind : std::uint8_t { Send, Recv, Reduce, Copy, Stage, Fetch, FetchReduce, Expose, Read, Write, Wait };
constexpr int kKinds = 11;
const char* name(Kind k);
Kind kind_of(planner::StepKind k);

// One step of one traced call on this rank (plain data: gathered to rank 0 as bytes).
struct Step {
  double start = 0, end = 0;  // now(), this rank's clock
  std::int64_t bytes = 0;
  std::int32_t peer = -1;     // world rank (-1: none)
  std::int32_t segment = -1;
  std::int32_t index = -1;    // the step's index in this rank's steps of the schedule
  std::uint32_t call = 0;     // index of its call in this rank's calls
  Kind kind = Kind::Wait;
};

// One traced call on this rank.
struct Call {
  double start = 0, end = 0;
  std::uint64_t comm = 0;   // the communicator's world ranks, hashed: the same on its every rank
  std::int64_t serial = 0;  // its traced calls before this one: the same on its every rank
  std::int64_t bytes = 0;
  std::int32_t collective = 0;
  std::int32_t root = 0;
  std::int32_t comm_size = 0;
  std::int32_t comm_rank = 0;  // this rank's, in the communicator (the schedule's ranks)
  std::int32_t native = 0;  // native MPI ran it
  char algorithm[48] = {};
  char schedule_id[24] = {};  // the schedule log's id of its schedule (empty: native)
};

// The trace's clock, in seconds (above).
double now();

// Whether CANOPY_TRACE is on in this process (set up): read on every call, so inline.
namespace detail {
extern bool enabled;
}
inline bool on() { return detail::enabled; }
// Whether the plan's call `plan_call` (0 for its first) is sampled (CANOPY_TRACE_CALLS).
bool sampled(long plan_call);

// At MPI_Init, on a private duplicate of MPI_COMM_WORLD, by every rank: measures this
// rank's clock offset from rank 0's (0 where it `shares_rank0_clock`: the same node).
// `first`/`every`: CANOPY_TRACE_CALLS.
void setup(MPI_Comm world, long first, long every, bool shares_rank0_clock);

// Which communicator a traced call ran on, as its ranks know it alike.
struct TracedComm {
  const std::vector<int>* world_ranks = nullptr;  // its ranks' world ranks (for the peers of its steps)
  std::uint64_t id = 0;                           // Call::comm
  int rank = 0;                                   // this process's rank in it
};

// Brackets one traced call (every rank of the communicator traces the same calls).
void begin_call(planner::Collective c, int root, std::int64_t bytes, const std::string& algorithm, bool native,
                const std::string& schedule_id, const TracedComm& comm, std::int64_t serial);
void end_call();

// The call being traced, for the executor; null when none (then it records nothing).
class Recorder {
 public:
  // `peer`: a rank of the call's communicator (-1: none); `index`: the step's in the
  // rank's steps (-1: none, the final wait).
  void step(Kind kind, int peer, int segment, std::int64_t bytes, double start, double end, int index = -1);
};
Recorder* active();

// At MPI_Finalize, on the same communicator as setup(), by every rank: rank 0 writes the
// file (`otf2`: an OTF2 archive in the directory `path`, CANOPY_TRACE_FORMAT). Returns an
// error message ("" when written, or when not rank 0).
std::string write(MPI_Comm world, const std::string& path, bool otf2 = false);

// Whether this build writes OTF2 (Debian's libotf2-trace-dev was found when it was built).
bool otf2_available();
// The OTF2 archive of rank-ordered records (trace_otf2.cpp; only where otf2_available()).
// What the writers share: the earliest aligned call start (a file's time zero) and the
// latest aligned end, both 0 without calls; and a call's name ("MPI_Allreduce ring",
// "MPI_Bcast native MPI").
struct AlignedSpan {
  double origin = 0, last = 0;
};
AlignedSpan aligned_span(const std::vector<std::vector<Call>>& calls, const std::vector<double>& offsets);
std::string call_name(const Call& c);

std::string write_otf2(const std::string& directory, const std::vector<std::vector<Call>>& calls,
                       const std::vector<std::vector<Step>>& steps, const std::vector<double>& offsets);

// The file's JSON for rank-ordered records (what write() gathers), exposed for tests
// and tools: `offsets[r]` is added to rank r's times.
std::string chrome_json(const std::vector<std::vector<Call>>& calls, const std::vector<std::vector<Step>>& steps,
                        const std::vector<double>& offsets);

}  // namespace canopy::shim::trace
