#include "planner/select.h"

#include <algorithm>

#include "planner/registry.h"
#include "planner/simulate.h"
#include "planner/validate.h"

namespace canopy::planner {

namespace {
constexpr int kMaxCandidateSegmentsLog2 = 8;  // at most 256 segments
constexpr int kHillClimbBudget = 6;           // extra simulations per algorithm
constexpr std::int64_t kMinCandidateSegmentBytes = 1024;
}  // namespace

std::vector<std::int64_t> segment_candidates(std::int64_t bytes) {
  // 004 (Steffenel, section 3): s = m / 2^i. Rounded up so that m / 2^i gives at most
  // 2^i segments; i stops at 8 (256 segments), where simulation cost and the
  // executor's scratch slots stop paying for themselves, and at segments of 1 KiB
  // ("too small messages pay more for their headers than for their content", 004;
  // smaller ones would multiply the planning time of every new message size). 0 is
  // the whole message.
  std::vector<std::int64_t> out{0};
  for (int i = 1; i <= kMaxCandidateSegmentsLog2; ++i) {
    const std::int64_t s = (bytes >> i) + ((bytes & ((std::int64_t{1} << i) - 1)) != 0);  // ceil, no overflow
    if (s < kMinCandidateSegmentBytes || s >= bytes || s == out.back()) break;
    out.push_back(s);
  }
  return out;
}

std::vector<Plan> rank_plans(Problem problem, const Request& request) {
  check_problem(problem);
  std::vector<const Algorithm*> algos;
  if (request.algorithm == "auto") {
    for (const auto& a : algorithms())
      if (a.collective == problem.collective && !(a.topology_aware && request.homogeneous_only))
        algos.push_back(&a);
  } else if (const Algorithm* a = find_algorithm(problem.collective, request.algorithm)) {
    algos.push_back(a);
  } else {
    throw PlanError(std::string("no ") + to_string(problem.collective) + " algorithm named '" +
                    request.algorithm + "'");
  }
  const std::vector<std::int64_t> sizes = request.segment_bytes >= 0
                                              ? std::vector<std::int64_t>{request.segment_bytes}
                                              : segment_candidates(problem.bytes());
  std::vector<Plan> ranked;
  std::string last_error = "no candidate";
  const std::int64_t bytes = problem.bytes();
  for (const Algorithm* a : algos) {
    bool found = false;
    Plan best;
    std::int64_t best_size = 0;
    // Builds and prices one segment size; keeps it if it is the best so far.
    auto consider = [&](std::int64_t size) {
      problem.segment_bytes = size;
      Schedule s;
      try {
        s = a->plan(problem);
      } catch (const PlanError& e) {
        // An algorithm may decline a problem (e.g. it cannot keep rank order for a
        // non-commutative operation); the others still compete.
        last_error = std::string(a->name) + ": " + e.what();
        return false;
      }
      const Simulation sim = simulate(s, problem.model, problem.topology.get());
      if (!sim.ok) {
        last_error = std::string(a->name) + ": " + sim.error;
        return false;
      }
      if (found && sim.makespan >= best.predicted) return false;
      best.schedule = std::move(s);
      best.predicted = sim.makespan;
      best_size = size;
      found = true;
      return true;
    };
    for (std::int64_t size : sizes) consider(size);
    // 004 refines the m/2^i search by local hill-climbing (after Kielmann et al.): step
    // to a neighbouring size while that predicts faster, halving the step when neither
    // neighbour is, within a small budget of extra simulations.
    if (found && request.segment_bytes < 0 && best_size > 0 && problem.segment_counts.empty()) {
      std::int64_t step = best_size / 2;
      for (int budget = kHillClimbBudget; step >= std::max<std::int64_t>(problem.element_bytes, 64) && budget > 0;) {
        bool moved = false;
        for (std::int64_t size : {best_size - step, best_size + step}) {
          if (size < kMinCandidateSegmentBytes || size >= bytes ||
              bytes / size + (bytes % size != 0) > (1 << kMaxCandidateSegmentsLog2))
            continue;
          --budget;
          if (consider(size)) {
            moved = true;
            break;
          }
        }
        if (!moved) step /= 2;
      }
    }
    if (found) ranked.push_back(std::move(best));
  }
  if (ranked.empty()) throw PlanError("no schedule can be priced: " + last_error);
  std::stable_sort(ranked.begin(), ranked.end(), [](const Plan& a, const Plan& b) { return a.predicted < b.predicted; });
  return ranked;
}

Plan make_plan(Problem problem, const Request& request) {
  Plan best = std::move(rank_plans(std::move(problem), request).front());
  const Validation v = validate(best.schedule);
  if (!v) throw PlanError("the " + best.schedule.algorithm + " schedule fails validation: " + v.summary());
  return best;
}

}  // namespace canopy::planner
