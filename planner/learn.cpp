#include "planner/learn.h"

#include <algorithm>
#include <cmath>

#include "planner/registry.h"
#include "planner/segments.h"
#include "planner/simulate.h"

namespace canopy::planner {

namespace {

// The pull towards the prior: the weight of (x_k - 1)^2 against a sample's squared
// relative error. One sample 100% off then moves a parameter by about 90%, ten samples
// agreeing by 99%.
constexpr double kPull = 0.1;
// A refitted parameter stays within this factor of its prior either way.
constexpr double kMaxFactor = 50;
// The relative step of the finite differences (the price is piecewise linear: any step
// that stays on the critical path's piece gives its exact slope).
constexpr double kStep = 1e-6;
// Where the slopes are taken, relative to the model (price_gradient says why): distinct
// per parameter, and large against kStep so that a nudge stays on the path chosen.
constexpr Parameters kTieBreak = {1.1e-4, 2.3e-4, 3.7e-4, 5.3e-4, 7.1e-4, 8.9e-4};
constexpr int kDirect = 4;  // the index of direct_per_byte (then direct_fixed)

// The direct copies' price per byte as the model prices them: its own, or derived.
Parameters parameters(const CostModel& m) {
  return {m.alpha, m.beta, m.gamma, m.copy_per_byte, m.direct_per_byte_or_derived(), m.direct_fixed};
}

void set_parameters(CostModel& m, const Parameters& p) {
  m.alpha = p[0];
  m.beta = p[1];
  m.gamma = p[2];
  m.copy_per_byte = p[3];
  m.direct_per_byte = p[kDirect];
  m.direct_fixed = p[kDirect + 1];
}

// Solves a x = b for a symmetric positive definite a (Gaussian elimination with
// partial pivoting); false when singular.
bool solve(std::array<Parameters, kParameters> a, Parameters b, Parameters& x) {
  for (int col = 0; col < kParameters; ++col) {
    int pivot = col;
    for (int r = col + 1; r < kParameters; ++r)
      if (std::abs(a[r][col]) > std::abs(a[pivot][col])) pivot = r;
    if (!(std::abs(a[pivot][col]) > 0)) return false;
    std::swap(a[col], a[pivot]);
    std::swap(b[col], b[pivot]);
    for (int r = col + 1; r < kParameters; ++r) {
      const double f = a[r][col] / a[col][col];
      for (int c = col; c < kParameters; ++c) a[r][c] -= f * a[col][c];
      b[r] -= f * b[col];
    }
  }
  for (int r = kParameters - 1; r >= 0; --r) {
    double s = b[r];
    for (int c = r + 1; c < kParameters; ++c) s -= a[r][c] * x[c];
    x[r] = s / a[r][r];
  }
  return true;
}

}  // namespace

bool learnable(const CostModel& model) { return model.gap.empty() && model.kind != "overlap"; }

bool ModelGradient::any() const {
  return std::any_of(slope.begin(), slope.end(), [](double s) { return s > 0; });
}

double predict(const ModelGradient& g, const CostModel& model) {
  const Parameters p = parameters(model);
  double t = g.fixed;
  for (int k = 0; k < kParameters; ++k) t += g.slope[k] * p[k];
  return t;
}

ModelGradient price_gradient(const Problem& problem, const Choice& choice) {
  ModelGradient g{};
  const Algorithm* a = find_algorithm(problem.collective, choice.algorithm);
  if (!learnable(problem.model) || !a) return g;
  // The schedule must stay the same while the costs move: some algorithms build their
  // trees from the model (Canon & Antoniu's, Langou's, the topology-aware ones). So the
  // whole schedule is built once and simulated under each nudged model where that is
  // affordable; beyond, only algorithms whose trees ignore the model (priced by
  // formula) are nudged through their price, and the others get no gradient.
  Problem cut = problem;
  cut.segment_bytes = choice.segment_bytes;
  // Simulated where the selector simulates it.
  const bool simulate_whole = simulation_affordable(*a, cut);
  if (!simulate_whole && (a->global || a->topology_aware || !a->price)) return g;
  Schedule whole;
  auto price_under = [&](const CostModel& model, double& out) {
    if (simulate_whole) {
      const Simulation sim = simulate(whole, model, problem.topology.get());
      out = sim.makespan;
      return sim.ok;
    }
    Problem nudged = problem;
    nudged.model = model;
    Price price;
    if (!price_choice(nudged, choice, price)) return false;
    out = price.makespan;
    return true;
  };
  try {
    if (simulate_whole) whole = a->plan(cut);
  } catch (const PlanError&) {
    return g;
  }
  // The slopes are taken at the model moved by a distinct tiny factor per parameter,
  // so that they all come from one path: where two paths tie (a pipeline whose copies
  // and reductions take as long, as under the default model's gamma = copy), a
  // one-sided difference in each parameter alone takes the steeper path's slope for
  // each, and their sum overstated the price (a 2-rank 400 KB shm reduce: 79 us
  // against its 45). Off a tie the factors change nothing: the path stays the same.
  Parameters p = parameters(problem.model);
  for (int k = 0; k < kParameters; ++k) p[k] *= 1 + kTieBreak[k];
  CostModel jittered = problem.model;
  set_parameters(jittered, p);
  double base = 0;
  if (!price_under(jittered, base)) return g;
  for (int k = 0; k < kParameters; ++k) {
    if (!(p[k] > 0)) continue;  // a parameter at 0 is not learned (it scales)
    Parameters q = p;
    q[k] = p[k] * (1 + kStep);
    CostModel nudged = problem.model;
    set_parameters(nudged, q);
    double moved = 0;
    if (!price_under(nudged, moved)) return ModelGradient{};
    g.slope[k] = std::max(0.0, (moved - base) / (q[k] - p[k]));
  }
  // What no parameter scales: the staged hand-overs (kStagingHandoffSeconds each). On
  // the path's piece the price is slope . parameters + fixed.
  double scaled = 0;
  for (int k = 0; k < kParameters; ++k) scaled += g.slope[k] * p[k];
  // (A residue of a millionth of the price is the differences' rounding, not a cost.)
  g.fixed = base - scaled > 1e-6 * base ? base - scaled : 0.0;
  return g;
}

CostModel refit(const CostModel& prior, const std::vector<ModelSample>& samples) {
  if (!learnable(prior)) return prior;
  const Parameters p = parameters(prior);
  // x_k scales parameter k; h = g * p is what each parameter contributes at the prior.
  std::array<Parameters, kParameters> a{};
  Parameters b{};
  bool any = false;
  bool direct_seen = false;  // some sample's price has direct copies
  for (const ModelSample& s : samples) {
    if (!(s.measured > 0)) continue;
    Parameters h{};
    // (Relative to the measurement.)
    for (int k = 0; k < kParameters; ++k) h[k] = s.gradient.slope[k] * p[k] / s.measured;
    direct_seen = direct_seen || h[kDirect] > 0 || h[kDirect + 1] > 0;
    // (h . x + fixed / measured - 1)^2: the parameters' part of the measurement is what
    // the fixed part leaves of it.
    const double target = 1 - s.gradient.fixed / s.measured;
    for (int r = 0; r < kParameters; ++r) {
      for (int c = 0; c < kParameters; ++c) a[r][c] += h[r] * h[c];
      b[r] += h[r] * target;
    }
    any = true;
  }
  if (!any) return prior;
  for (int k = 0; k < kParameters; ++k) {
    a[k][k] += kPull;
    b[k] += kPull;
  }
  Parameters x;
  x.fill(1);
  if (!solve(a, b, x)) return prior;
  Parameters q = p;
  for (int k = 0; k < kParameters; ++k)
    if (p[k] > 0 && std::isfinite(x[k])) q[k] = p[k] * std::clamp(x[k], 1 / kMaxFactor, kMaxFactor);
  CostModel out = prior;
  set_parameters(out, q);
  // Decision: where no sample had a direct copy, a derived direct price stays derived,
  // following the copy rate just learnt: the two move together on the machines
  // measured (1.35x on the Intel Xeon VM), and a price the samples say nothing of
  // would otherwise stay at the prior's copy rate while the ring's copies were refitted.
  if (!direct_seen) out.direct_per_byte = prior.direct_per_byte;
  return out;
}

}  // namespace canopy::planner
