#include "planner/select.h"

#include <algorithm>

#include "planner/registry.h"
#include "planner/simulate.h"
#include "planner/validate.h"

namespace canopy::planner {

std::vector<std::int64_t> segment_candidates(std::int64_t bytes) {
  std::vector<std::int64_t> out{0};
  for (std::int64_t s = 4096; s < bytes; s *= 2)
    if ((bytes + s - 1) / s <= 256) out.push_back(s);
  return out;
}

std::vector<Plan> rank_plans(Problem problem, const Request& request) {
  check_problem(problem);
  std::vector<const Algorithm*> algos;
  if (request.algorithm == "auto") {
    for (const auto& a : algorithms())
      if (a.collective == problem.collective) algos.push_back(&a);
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
  for (const Algorithm* a : algos) {
    bool found = false;
    Plan best;
    for (std::int64_t size : sizes) {
      problem.segment_bytes = size;
      Schedule s;
      try {
        s = a->plan(problem);
      } catch (const PlanError& e) {
        // An algorithm may decline a problem (e.g. it cannot keep rank order for a
        // non-commutative operation); the others still compete.
        last_error = std::string(a->name) + ": " + e.what();
        continue;
      }
      const Simulation sim = simulate(s, problem.model);
      if (!sim.ok) {
        last_error = std::string(a->name) + ": " + sim.error;
        continue;
      }
      if (!found || sim.makespan < best.predicted) {
        best.schedule = std::move(s);
        best.predicted = sim.makespan;
        found = true;
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
