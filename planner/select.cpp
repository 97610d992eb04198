#include "planner/select.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "planner/hierarchy.h"
#include "planner/registry.h"
#include "planner/segments.h"
#include "planner/simulate.h"
#include "planner/staged.h"
#include "planner/validate.h"

namespace canopy::planner {

namespace {
constexpr int kMaxCandidateSegmentsLog2 = 8;  // at most 256 segments
constexpr int kHillClimbBudget = 6;           // extra simulations per algorithm
constexpr int kPricesPastTheValley = 2;       // see rank_choices
constexpr double kValleyRise = 0.1;
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

namespace {

// Prices equal up to rounding compare equal (40 bits of mantissa), so that a formula
// and a simulation of the same makespan, or two trees of one shape, tie and the
// registry's order decides, as it did when everything was simulated.
double quantized(double x) {
  int e = 0;
  const double m = std::frexp(x, &e);
  return std::ldexp(std::round(std::ldexp(m, 40)), e - 40);
}

// Whether a price beats `than`: an exact price beats any estimate (estimates come from
// simpler models, often optimistic ones, and must not displace what the simulator
// confirmed); then the lower price wins.
bool better(bool exact, double makespan, const Choice& than) {
  if (exact != than.exact) return exact;
  return quantized(makespan) < quantized(than.predicted);
}

// Whether `price` is past the valley of a search whose best so far is `best`: it loses
// by more than kValleyRise (an estimate against an exact price always).
bool past_the_valley(const Price& price, const Choice& best) {
  if (price.exact != best.exact) return best.exact;
  return price.makespan > best.predicted * (1 + kValleyRise);
}

// Why `a` declines `q` whatever its segment size, or empty: what every topology-aware
// algorithm declines, a staged one without a ring over all the ranks, a wide-area one
// without links that keep their latency in flight, and a direct one
// without cross-memory attach (a ring made with CANOPY_CMA=off: cma-bcast threw once per
// segment size of every broadcast's plan). Asked before
// anything is built or priced, and without an exception: 2 ranks, one communicator's
// first 64 KiB reduce and bcast threw 152 of them (about 2.5 us each, most of the
// planning time), almost all of these declines, once per segment size.
std::string declines(const Algorithm& a, const Problem& q) {
  if (a.topology_aware)
    if (std::string why = topology_aware_declines(q); !why.empty()) return std::string(a.name) + " " + why;
  if (a.staged && !staging_spans_problem(q))
    return std::string(a.name) + ": it needs a staging ring over all its ranks (one node, CANOPY_SHM not off)";
  if (a.direct && !q.direct_access)
    return std::string(a.name) + ": it needs cross-memory attach between all its ranks (CANOPY_CMA not off)";
  if (a.wide_area)
    if (std::string why = wide_area_declines(q.topology.get(), std::string(a.name)); !why.empty()) return why;
  return {};
}

// One candidate's price, the cheapest way that is exact, else an estimate (select.h);
// false when it cannot be priced (then `why` says why). An estimate whose lower bound is
// above `bound_above` is not simulated: it stands, and `*bounded` says so.
bool price_candidate(const Algorithm& a, const Problem& q, Price& out, std::string& why,
                     double bound_above = std::numeric_limits<double>::infinity(), bool* bounded = nullptr) {
  if (bounded) *bounded = false;
  if (std::string declined = declines(a, q); !declined.empty()) {
    why = std::move(declined);
    return false;
  }
  try {
    if (a.price) {
      out = a.price(q);
      if (out.exact) return true;
      if (out.lower_bound > 0 && quantized(out.lower_bound) > quantized(bound_above)) {
        if (bounded) *bounded = true;
        return true;
      }
    }
    if (simulation_affordable(a, q)) {
      const Schedule schedule = a.plan(q);
      const Simulation sim = simulate(schedule, q.model, q.topology.get());
      if (!sim.ok) {
        why = std::string(a.name) + ": " + sim.error;
        return false;
      }
      out = {sim.makespan, true};
      // A flat algorithm's messages between clusters share their links (topology.h,
      // busiest_link), which the simulator does not see; a topology-aware one sends
      // what it sends across one message at a time on each link.
      if (q.topology && !a.topology_aware) out.makespan = std::max(out.makespan, busiest_link(schedule, *q.topology));
      return true;
    }
    if (a.price) {  // the estimate
      // Over a topology a flat algorithm's estimate is priced as if every message took
      // the slowest link (topology.h, slowest_link): its price function knows one model,
      // and the one inside a node made wide-area schedules look fastest by far.
      if (q.topology && !a.topology_aware) {
        Problem flat = q;
        flat.model = slowest_link(*q.topology, q.model, q.bytes());
        flat.topology.reset();
        const double bound = out.lower_bound;
        out = a.price(flat);
        out.exact = false;
        out.lower_bound = bound;
      }
      return true;
    }
    why = std::string(a.name) + ": no formula prices it and its schedule (about " +
          std::to_string(estimated_whole_steps(a, q)) + " steps) is too large to simulate";
    return false;
  } catch (const PlanError& e) {
    // An algorithm may decline a problem (e.g. it cannot keep rank order for a
    // non-commutative operation); the others still compete.
    // (Most errors already begin with the algorithm's name: not said twice.)
    const std::string what = e.what(), name(a.name);
    why = what.rfind(name + ":", 0) == 0 ? what : name + ": " + what;
    return false;
  }
}

}  // namespace

bool simulation_affordable(const Algorithm& algorithm, const Problem& problem) {
  const std::int64_t budget = algorithm.topology_aware ? kTopologySimulationBudget : kSimulationBudget;
  return algorithm.staged || estimated_whole_steps(algorithm, problem) <= budget;
}

namespace {

const Algorithm& algorithm_of(const Problem& problem, const Choice& choice) {
  const Algorithm* a = find_algorithm(problem.collective, choice.algorithm);
  if (!a) throw PlanError(std::string("no ") + to_string(problem.collective) + " algorithm named '" + choice.algorithm + "'");
  return *a;
}

}  // namespace

std::vector<Choice> rank_choices(const Problem& original, const Request& request) {
  check_problem(original);
  Problem problem = original;
  std::vector<const Algorithm*> algos;
  if (request.algorithm == "auto") {
    for (const auto& a : algorithms())
      if (a.collective == problem.collective && !(a.topology_aware && request.homogeneous_only) &&
          !(request.composable_only && !a.composable) &&
          // Inside a group (Problem::inside_group), at any depth of hierarchies: no
          // algorithm composable over leaders only.
          !(problem.inside_group && a.leaders_only) &&
          !(a.global && problem.nranks > kGlobalPlanningLimit))
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
  std::string last_error = "no candidate";
  const std::int64_t bytes = problem.bytes();
  // Bounding (Request::bounded): the best exact price of each algorithm searched so far;
  // a choice whose estimate's lower bound is above the kBoundedPlaces-th of these (with
  // the current algorithm's best) cannot enter that many first places, so it keeps its
  // estimate instead of being built and simulated. Decision: algorithms whose estimates
  // carry a bound (the allreduces composed of a reduce and a broadcast, the dearest to
  // simulate: 16 ranks, 1 MiB, 28 of 30 ms of a plan) are searched after the others, so
  // that the others' exact prices bound them; the ranking keeps the registry's order for
  // ties whatever the order of the search.
  std::vector<double> exact_bests;
  auto bound_for = [&](const Choice* current) {
    std::vector<double> prices = exact_bests;
    if (current && current->exact) prices.push_back(current->predicted);
    if (!request.bounded || static_cast<int>(prices.size()) < kBoundedPlaces)
      return std::numeric_limits<double>::infinity();
    std::nth_element(prices.begin(), prices.begin() + (kBoundedPlaces - 1), prices.end());
    return prices[kBoundedPlaces - 1];
  };
  // The algorithm's best choice, or nothing where it declines or cannot be priced.
  auto search = [&](const Algorithm* a) -> std::optional<Choice> {
    if (std::string why = declines(*a, problem); !why.empty()) {
      last_error = std::move(why);
      return std::nullopt;
    }
    bool found = false;
    Choice best;
    std::vector<std::int64_t> priced;  // segment sizes as the algorithm cuts them
    // Prices one segment size, unless one cut the same way was priced before (the
    // hill-climb may come back to a size; Algorithm::cut_segment_bytes); keeps it if it
    // is the best so far.
    enum class Outcome { kBest, kWorse, kNeither };
    auto consider = [&](std::int64_t size) {
      problem.segment_bytes = size;
      const std::int64_t cut = a->cut_segment_bytes ? a->cut_segment_bytes(problem) : size;
      if (std::find(priced.begin(), priced.end(), cut) != priced.end()) return Outcome::kNeither;
      Price price;
      bool bounded = false;
      // (A size that cannot be priced, e.g. one whose schedule looks too large to
      // simulate before it is cut, leaves the way open to another cut alike.)
      if (!price_candidate(*a, problem, price, last_error, bound_for(found ? &best : nullptr), &bounded))
        return Outcome::kNeither;
      priced.push_back(cut);
      const bool improves = !found || better(price.exact, price.makespan, best);
      if (improves) {
        best = {std::string(a->name), size, price.makespan, price.exact};
        found = true;
      }
      // A bounded size neither counts towards the valley nor resets it: its estimate
      // says little of the curve of exact prices the search follows.
      if (bounded) return Outcome::kNeither;
      if (!improves) return past_the_valley(price, best) ? Outcome::kWorse : Outcome::kNeither;
      return Outcome::kBest;
    };
    // The m/2^i sizes in order, from the whole message to the most segments. Decision
    // (004 prices them all): stop once kPricesPastTheValley sizes in a row price more
    // than kValleyRise above the best so far. A pipeline's price falls while more
    // segments shorten its fill and rises once each message's own cost dominates; the
    // sizes skipped are the largest schedules, the costliest to build and simulate.
    // Why 10% and two: Langou's greedy trees change shape with the segment count, so
    // their curves have bumps of a few percent (greedy-bidirectional, 32 ranks, 15.6
    // MB: 5.11, 5.43, 5.39, 5.17, 5.01 ms from 8 to 128 segments), and hierarchical
    // over four sites rises once by more before its best (3.1 MB: unsegmented 5.69 ms,
    // then a rise, then 4.53); the test "the search over m / 2^i stops past the
    // valley" fails with either looser rule. Against pricing every size, over about
    // 3,000 problems (2-64 ranks, 8 B-16 MiB, four models, with and without a ring,
    // rank-ordered operations, two topologies) no choice and no algorithm's best size
    // changed. Sizes that tie the best (a ring caps every size above its entry) or
    // cannot be priced neither count nor reset the count.
    int worse_in_a_row = 0;
    for (std::int64_t size : sizes) {
      const Outcome o = consider(size);
      if (o == Outcome::kBest) worse_in_a_row = 0;
      else if (o == Outcome::kWorse && ++worse_in_a_row == kPricesPastTheValley) break;
    }
    // 004 refines the m/2^i search by local hill-climbing (after Kielmann et al.): step
    // to a neighbouring size while that predicts faster, halving the step when neither
    // neighbour is, within a small budget of extra prices.
    const std::int64_t best_size = best.segment_bytes;
    if (found && request.segment_bytes < 0 && best_size > 0 && problem.segment_counts.empty()) {
      std::int64_t at = best_size, step = best_size / 2;
      for (int budget = kHillClimbBudget; step >= std::max<std::int64_t>(problem.element_bytes, 64) && budget > 0;) {
        bool moved = false;
        for (std::int64_t size : {at - step, at + step}) {
          if (size < kMinCandidateSegmentBytes || size >= bytes ||
              bytes / size + (bytes % size != 0) > (1 << kMaxCandidateSegmentsLog2))
            continue;
          --budget;
          if (consider(size) == Outcome::kBest) {
            at = size;
            moved = true;
            break;
          }
        }
        if (!moved) step /= 2;
      }
    }
    if (!found) return std::nullopt;
    if (best.exact) exact_bests.push_back(best.predicted);
    return best;
  };
  // Whether `a`'s estimates carry a lower bound (it is searched in the second pass).
  auto bounds_itself = [&](const Algorithm* a) {
    if (!request.bounded || !a->price || !declines(*a, problem).empty()) return false;
    try {
      problem.segment_bytes = sizes.front();
      const Price p = a->price(problem);
      return !p.exact && p.lower_bound > 0;
    } catch (const PlanError&) {
      return false;
    }
  };
  std::vector<std::optional<Choice>> bests(algos.size());
  std::vector<std::size_t> second;
  for (std::size_t i = 0; i < algos.size(); ++i)
    if (bounds_itself(algos[i])) second.push_back(i);
    else bests[i] = search(algos[i]);
  for (std::size_t i : second) bests[i] = search(algos[i]);
  std::vector<Choice> ranked;
  for (std::optional<Choice>& b : bests)
    if (b) ranked.push_back(std::move(*b));
  if (ranked.empty()) throw PlanError("no schedule can be priced: " + last_error);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const Choice& a, const Choice& b) { return better(a.exact, a.predicted, b); });
  return ranked;
}

bool price_choice(const Problem& problem, const Choice& choice, Price& out) {
  const Algorithm* a = find_algorithm(problem.collective, choice.algorithm);
  if (!a) return false;
  Problem q = problem;
  q.segment_bytes = choice.segment_bytes;
  std::string why;
  return price_candidate(*a, q, out, why);
}

std::int64_t whole_steps_of(const Problem& problem, const Choice& choice) {
  Problem q = problem;
  q.segment_bytes = choice.segment_bytes;
  return estimated_whole_steps(algorithm_of(problem, choice), q);
}

Schedule build_schedule(const Problem& problem, const Choice& choice) {
  Problem q = problem;
  q.segment_bytes = choice.segment_bytes;
  return algorithm_of(problem, choice).plan(q);
}

Schedule build_view(const Problem& problem, const Choice& choice, int rank) {
  Problem q = problem;
  q.segment_bytes = choice.segment_bytes;
  return plan_view(algorithm_of(problem, choice), q, rank);
}

std::vector<Plan> rank_plans(const Problem& problem, const Request& request) {
  std::vector<Plan> out;
  for (const Choice& c : rank_choices(problem, request)) out.push_back({build_schedule(problem, c), c.predicted});
  return out;
}

Plan make_plan(const Problem& problem, const Request& request) {
  const Choice best = rank_choices(problem, request).front();
  Plan plan{build_schedule(problem, best), best.predicted};
  const Validation v = validate(plan.schedule);
  if (!v) throw PlanError("the " + plan.schedule.algorithm + " schedule fails validation: " + v.summary());
  return plan;
}

std::size_t bring_staged_forward(std::vector<Choice>& ranked, std::size_t first, Collective collective) {
  // Places the best choice of the staged algorithms that `direct` selects at `at`, where
  // it is not already before it.
  auto place = [&](std::size_t at, bool want_direct, bool any_staged) {
    const auto found = std::find_if(ranked.begin(), ranked.end(), [&](const Choice& c) {
      const Algorithm* a = find_algorithm(collective, c.algorithm);
      return a && a->staged && (any_staged || a->direct == want_direct);
    });
    if (found == ranked.end() || static_cast<std::size_t>(found - ranked.begin()) < at) return std::pair{false, found};
    std::rotate(ranked.begin() + static_cast<std::ptrdiff_t>(at), found, found + 1);
    return std::pair{true, ranked.begin() + static_cast<std::ptrdiff_t>(at)};
  };
  // The best staged choice of either mechanism first, then the other mechanism's.
  const auto [moved, best] = place(first, false, true);
  if (best == ranked.end()) return 0;
  const bool best_direct = find_algorithm(collective, best->algorithm)->direct;
  const std::size_t next = first + (moved ? 1 : 0);
  return (moved ? 1 : 0) + (place(next, !best_direct, false).first ? 1 : 0);
}

std::size_t drop_point_to_point_behind_ring(std::vector<Choice>& ranked, Collective collective) {
  const auto staged = [&](const Choice& c) {
    const Algorithm* a = find_algorithm(collective, c.algorithm);
    return a && a->staged;
  };
  const auto first_staged = std::find_if(ranked.begin(), ranked.end(), staged);
  if (first_staged == ranked.end()) return 0;
  const auto kept = std::stable_partition(first_staged, ranked.end(), staged);
  const auto dropped = static_cast<std::size_t>(ranked.end() - kept);
  ranked.erase(kept, ranked.end());
  return dropped;
}

std::size_t bring_estimate_forward(std::vector<Choice>& ranked, std::size_t first) {
  if (ranked.empty() || !ranked.front().exact) return 0;  // no exact price to be under
  // (Estimates come after the exact prices, cheapest first: the first is the best.)
  const auto found = std::find_if(ranked.begin(), ranked.end(), [](const Choice& c) { return !c.exact; });
  if (found == ranked.end() || static_cast<std::size_t>(found - ranked.begin()) < first ||
      !(found->predicted < ranked.front().predicted))
    return 0;
  std::rotate(ranked.begin() + static_cast<std::ptrdiff_t>(first), found, found + 1);
  return 1;
}

bool below_trial_threshold(const Problem& problem, const Choice& best, const CostModel& prior, double threshold) {
  if (!(best.predicted < threshold)) return false;
  Problem unlearnt = problem;
  unlearnt.model = prior;
  Price price;
  // (A choice the starting model cannot price is judged by the price it has.)
  return !price_choice(unlearnt, best, price) || price.makespan < threshold;
}

}  // namespace canopy::planner
