// What an algorithm is asked to plan: every field is identical on all ranks of the
// communicator (MPI requires the same count, datatype, op and root for MPI_Reduce; a
// broadcast is planned in bytes), so every rank builds the same schedule.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "planner/cost_model.h"
#include "planner/schedule.h"
#include "planner/topology.h"

namespace canopy::planner {

struct Problem {
  Collective collective = Collective::Reduce;
  int nranks = 1;
  int root = 0;                    // an allreduce has none: its schedules are rooted at 0
  std::int64_t count = 0;          // elements (bytes for a broadcast)
  std::int64_t element_bytes = 1;  // size of one element
  bool commutative = true;         // false: operands must combine in rank order
  std::int64_t segment_bytes = 0;  // pipeline segment size; 0 = one segment
  // An explicit layout, elements per segment in message order (Langou's nonuniform
  // segmentation, 001_*.txt); it must sum to count. Empty: uniform from segment_bytes.
  // Every algorithm that segments takes its layout from problem_segments() (segments.h).
  std::vector<std::int64_t> segment_counts;
  // The K of the limited variants of 000_*.txt Section 6: the most concurrent
  // transfers (greedy-transfers, Algorithm 2) or the most reducing ranks
  // (greedy-reducers, Algorithm 3). 0 means no limit beyond the model's own:
  // floor(nranks/2) transfers (one port per rank), nranks reducers. Values above
  // those are clamped to them; other algorithms ignore the field.
  int limit = 0;
  CostModel model = default_model();
  // The network beyond one node (topology.h): clusters, links between them, slower
  // ranks. Null: every message follows `model`. Shared because candidates copy the
  // problem; never modified once planning starts.
  std::shared_ptr<const Topology> topology;
  // The staging ring the shim can give this communicator (shim/staging.h): every rank on
  // one node, CANOPY_SHM not off. 0 entries: none, and the shm-* algorithms decline.
  int staging_entries = 0;
  std::int64_t staging_entry_bytes = 0;
  // Whether the ranks of that ring may also read and write each other's memory
  // (cross-memory attach, CANOPY_CMA): the cma-* algorithms decline without it.
  bool direct_access = false;
  // It is a group's level inside a hierarchy (lower_problem, hierarchy.h), or a level of
  // one (a hierarchy inside a group plans its own levels from it): the root's result for
  // a segment must be complete once its last step on it has run, because the level
  // above is merged in right there. Algorithms composable over leaders only
  // (Algorithm::leaders_only) are not candidates for it, at any depth.
  bool inside_group = false;

  std::int64_t bytes() const { return count * element_bytes; }
};

// A schedule's predicted makespan, in the model's units. Exact: what simulate() gives
// for the schedule, up to rounding; otherwise an estimate (planner/select.h says when
// each is used).
struct Price {
  double makespan = 0;
  bool exact = false;
  // For an estimate: no schedule of this choice simulates faster (0: none known). The
  // selector skips simulating a choice whose bound already loses (select.h).
  double lower_bound = 0;
};

// Raised when a problem cannot be planned; the shim falls back to native MPI.
struct PlanError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Checks the fields every algorithm relies on; throws PlanError.
void check_problem(const Problem& problem);

// A schedule of `problem` by `algorithm` over `segments` with no steps yet: the header
// (collective, ranks, root, count, element size, commutativity) and an empty step list
// and no slots for every rank, or for `view_rank` alone where it is one (a rank's view:
// nothing in it grows with p, 24 MB of empty step lists at 1,048,576 ranks otherwise).
Schedule empty_schedule(const Problem& problem, const std::string& algorithm, std::vector<Segment> segments,
                        int view_rank = -1);

}  // namespace canopy::planner
