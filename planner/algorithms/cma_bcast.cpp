// Broadcast by cross-memory attach (schedule.h, the direct steps): every rank copies
// the message once, straight from the root's buffer into its own, and the root's own
// core copies a share of it into the other ranks' buffers at the same time.
//
// Source: issue 15 (the node level: "cross-memory attach is a possible second
// mechanism ... use it only where it measures faster"). The staging ring moves each
// byte twice (into the ring, out of it); both MPIs' own broadcasts on one node move it
// once (a single copy through the kernel), so on a machine whose copies are slow past
// the caches the ring cannot beat them (docs/performance-history.md, section 7, "A second
// machine"). One copy per byte split over every core can: on that 2-core Intel Xeon VM a
// throwaway 2-rank broadcast, the root writing half and the other rank reading half,
// took 5.2-6.2 us at 256 KiB, 18-22 at 1 MiB and 168-174 at 4 MiB, against 9.2-9.8,
// 47-51 and 327-351 for MPICH's and Open MPI's own (docs/performance/issue15/
// cma-2026-11-28.txt, lines A).
//
// Shape: the message is cut into p segments (p ranks), one per non-root rank and one
// more. The i-th non-root rank (in rank order from the root) gets segment i written by
// the root and reads every other segment from the root's buffer. The root writes
// (p-1) segments of n/p bytes, each other rank reads (p-1) of them: every core copies
// (p-1) n / p bytes. Cost, with the simulator's price d(b) of a direct copy of b bytes
// (cost_model.h): T = (p-1) d(n/p), the root's writes and the readers' reads running
// at once. Decision: equal segments, rounded to whole pages where the message allows,
// so that no page is copied into by two ranks at once (a page's lines would then move
// between two cores' caches).
#include <algorithm>

#include "planner/segments.h"
#include "planner/staged.h"

namespace canopy::planner {

namespace {

constexpr std::int64_t kPageBytes = 4096;

// p segments of about n/p elements, each starting on a page where an element size
// allows (a page holds whole elements); the last takes what is left.
std::vector<Segment> direct_shares(const Problem& problem) {
  const std::int64_t parts = problem.nranks;
  std::int64_t share = (problem.count + parts - 1) / parts;
  if (kPageBytes % problem.element_bytes == 0) {
    const std::int64_t page = kPageBytes / problem.element_bytes;
    if (problem.count >= parts * page) share = (share + page - 1) / page * page;
  }
  share = std::min(std::max<std::int64_t>(share, 1), kMaxSegmentCount);
  std::vector<Segment> out;
  for (std::int64_t first = 0; first < problem.count; first += share)
    out.push_back({first, std::min(share, problem.count - first)});
  return out;
}

}  // namespace

Schedule plan_cma_bcast_bcast(const Problem& problem) {
  check_problem(problem);
  constexpr const char* kName = "cma-bcast";
  if (problem.collective != Collective::Bcast) throw PlanError(std::string(kName) + " plans broadcasts");
  if (!staging_spans_problem(problem) || !problem.direct_access)
    throw PlanError(std::string(kName) +
                    " needs every rank on one node with cross-memory attach between them (CANOPY_CMA not off)");
  Schedule s = empty_schedule(problem, kName, direct_shares(problem));
  s.staging_entries = problem.staging_entries;  // the ring holds the exposers' addresses
  s.staging_entry_bytes = problem.staging_entry_bytes;
  s.direct = true;
  const int p = problem.nranks;
  if (p == 1 || problem.count == 0) return s;
  const int nseg = static_cast<int>(s.segments.size());
  // Non-root rank k (k = 1 .. p-1 counting from the root) is written segment k-1 by the
  // root, if the message has that many segments, and reads the others.
  auto written_to = [&](int k) { return k - 1 < nseg ? k - 1 : -1; };
  int reads_of_root = 0;
  for (int k = 1; k < p; ++k) reads_of_root += nseg - (written_to(k) >= 0 ? 1 : 0);
  std::vector<Step>& root = s.steps[problem.root];
  if (reads_of_root > 0) root.push_back(Step::expose(reads_of_root));
  for (int k = 1; k < p; ++k) {
    const int rank = (problem.root + k) % p;
    const int mine = written_to(k);
    std::vector<Step>& steps = s.steps[rank];
    if (mine >= 0) {
      steps.push_back(Step::expose(1));
      root.push_back(Step::write(rank, mine));
    }
    // From the segment after its own on, so that the readers start on different pages.
    const int start = mine >= 0 ? mine + 1 : 0;
    for (int j = 0; j < nseg; ++j) {
      const int g = (start + j) % nseg;
      if (g != mine) steps.push_back(Step::read(problem.root, g));
    }
  }
  return s;
}

}  // namespace canopy::planner
