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
// Chunks: staged_chunk_bytes (staged.h).
#include <algorithm>

#include "planner/segments.h"
#include "planner/staged.h"

namespace canopy::planner {

std::int64_t cut_shm_bcast_bcast(const Problem& problem) { return staged_chunk_bytes(problem); }

Schedule plan_shm_bcast_bcast(const Problem& problem) {
  check_problem(problem);
  constexpr const char* kName = "shm-bcast";
  if (problem.collective != Collective::Bcast) throw PlanError(std::string(kName) + " plans broadcasts");
  if (!staging_spans_problem(problem) || problem.staging_entries < 2)
    throw PlanError(std::string(kName) + " needs a staging ring over all its ranks (one node, CANOPY_SHM not off)");
  const std::int64_t chunk = staged_chunk_bytes(problem);
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
