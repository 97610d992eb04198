// Broadcast through the node's staging ring (schedule.h): the root copies each chunk
// into its ring once and every other rank copies it out, all at the same time, chunk
// after chunk, so the root's copy of chunk t+1 overlaps the readers' copies of chunk t.
//
// Source: issue 15 (the node level); the shape is 003_*.txt's pipelined broadcast with
// the transfer replaced by one shared copy. Cost with per-byte copy c, q chunks of
// n/q bytes and a ring of E >= 2 entries: the root stages q chunks (n c), a reader's
// last copy ends one chunk after the root's last stage:
//   T = n c + (n/q) c = n c (1 + 1/q)
// when readers keep pace (each copies what the root copies); the simulator prices it.
// Chunks: staged_chunk_bytes (staged.h), and never so small that the ring holds less of
// the message than it could (shm_bcast_chunk_bytes).
#include <algorithm>

#include "planner/segments.h"
#include "planner/staged.h"

namespace canopy::planner {

namespace {

// Decision: a chunk is at least the message's share of the ring's entries (bytes /
// entries, within staged_chunk_bytes' bounds), whatever segment size is asked. The
// formula above prices a pipeline that only its copies pace, so the model always asks
// for the smallest chunks, but the ring's entries bound the bytes in flight, and a
// pipeline through shared memory also runs at the pace of those: on a 2-core AMD EPYC
// (KVM), 2 ranks, 16 entries, forced shm-bcast took 77-95 us per 1 MiB in 32 KiB chunks
// (16 x 32 KiB in flight) and 58 in 48 KiB chunks, 290-380 against 195-288 at 4 MiB
// (docs/performance-history.md, section 7). Smaller messages keep the asked-for chunks, which
// shorten the pipeline's fill (64 KiB, 2 ranks, on the Xeon: 32 KiB chunks 3.1 us, 48
// KiB 4.7).
std::int64_t shm_bcast_chunk_bytes(const Problem& problem) {
  const std::int64_t entries = std::max(problem.staging_entries, 1);
  const std::int64_t share = (problem.bytes() + entries - 1) / entries;
  return staged_chunk_bytes(problem, std::max(kMinStagedChunkBytes, share));
}

}  // namespace

std::int64_t cut_shm_bcast_bcast(const Problem& problem) { return shm_bcast_chunk_bytes(problem); }

Schedule plan_shm_bcast_bcast(const Problem& problem) {
  check_problem(problem);
  constexpr const char* kName = "shm-bcast";
  if (problem.collective != Collective::Bcast) throw PlanError(std::string(kName) + " plans broadcasts");
  if (!staging_spans_problem(problem) || problem.staging_entries < 2)
    throw PlanError(std::string(kName) + " needs a staging ring over all its ranks (one node, CANOPY_SHM not off)");
  const std::int64_t chunk = shm_bcast_chunk_bytes(problem);
  if (chunk < problem.element_bytes) throw PlanError(std::string(kName) + ": an element is larger than a staging entry");
  Schedule s = empty_schedule(problem, kName,
                              problem.segment_counts.empty()
                                  ? uniform_segments(problem.count, problem.element_bytes, chunk)
                                  : problem_segments(problem));
  for (const Segment& seg : s.segments)
    if (seg.count * problem.element_bytes > problem.staging_entry_bytes)
      throw PlanError(std::string(kName) + ": a segment of the layout is larger than a staging entry");
  s.staging_entries = problem.staging_entries;
  s.staging_entry_bytes = problem.staging_entry_bytes;
  const int readers = problem.nranks - 1;
  if (readers == 0) return s;
  for (int g = 0; g < static_cast<int>(s.segments.size()); ++g) {
    s.steps[problem.root].push_back(Step::stage(g, g, readers, Buffer::Accumulator));
    for (int r = 0; r < problem.nranks; ++r)
      if (r != problem.root) s.steps[r].push_back(Step::fetch(problem.root, g, g));
  }
  return s;
}

}  // namespace canopy::planner
