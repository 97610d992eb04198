// A cost model that learns from measured calls.
//
// Every time the simulator (or a formula equal to it) gives is a sum of the model's
// costs along the critical path: so many messages (alpha each), so many bytes sent
// (beta), reduced (gamma), copied (copy), so many cross-memory-attach copies
// (direct_fixed each) and bytes so copied (direct), plus the staged hand-overs, which
// no parameter scales. A makespan is therefore g . theta + fixed, with theta the
// parameters and g the critical path's counts, and g is the makespan's derivative with
// respect to theta (price_gradient, by finite differences: the price is piecewise
// linear in theta). Given calls measured with their g, refit() finds the parameters
// that predict them best: theta = prior * x, x within 50x of 1 per parameter, minimising
// the squared relative errors plus a pull of every x towards 1 (the prior), so a few
// samples move the model a little and many move it to what they show. Parameters the
// samples cannot tell apart (beta, gamma and copy all scale with bytes) share the
// correction, as the pull spreads it.
//
// Hockney models only (alpha, beta, gamma, copy, direct, direct_fixed); pLogP's gap table
// and the (d, c) model are left as they are. Decision: the direct copies' price has
// parameters of its own (cost_model.h: 1.35x a local copy and 1.4 us on the Intel Xeon
// VM, about 3x and 3 us on the AMD EPYC VM) rather than a factor on copy, on which
// cma-bcast's trials taught copy a rate that then priced the ring's copies. A factor
// learnt as a parameter (tried) is not linear in the parameters (factor x copy): the
// fit, one linear step from the prior, learnt a factor of 0.39 from calls timed at 3.
// Where no call had a direct copy the per-byte price stays derived from copy.
#pragma once

#include <array>
#include <vector>

#include "planner/cost_model.h"
#include "planner/problem.h"
#include "planner/select.h"

namespace canopy::planner {

// The learnt parameters: alpha, beta, gamma, copy_per_byte, the direct copies' per-byte
// price (CostModel::direct_per_byte_or_derived) and direct_fixed.
constexpr int kParameters = 6;
using Parameters = std::array<double, kParameters>;

// A price as a function of the model: slope . parameters + fixed, on the critical
// path's piece. `fixed` is what no parameter scales (the simulator's staged
// hand-overs, kStagingHandoffSeconds each): left out, a staged call of a few bytes
// (0.5 us priced, 2 ns of it scaled) asked the fit to scale every parameter 100x.
struct ModelGradient {
  Parameters slope{};  // d makespan / d (alpha, beta, gamma, copy, direct, direct_fixed)
  double fixed = 0;    // seconds
  bool any() const;    // some slope > 0: the price depends on the model
};

struct ModelSample {
  ModelGradient gradient{};
  double measured = 0;  // seconds a call took (the slowest rank's)
};

// Whether refit() can learn this model (hockney: no gap table, not the (d, c) model).
bool learnable(const CostModel& model);

// The price's derivative with respect to the model's parameters at `problem.model`,
// for the candidate `choice` (priced as rank_choices prices it). Zero where the model
// is not learnable or the candidate cannot be priced.
ModelGradient price_gradient(const Problem& problem, const Choice& choice);

// The prediction of a sample's schedule under `model`: slope . parameters + fixed.
double predict(const ModelGradient& gradient, const CostModel& model);

// `prior` with its parameters refitted to `samples` (see above; a derived direct price
// stays derived where no sample has a direct copy). Returns
// `prior` unchanged when it is not learnable or there is nothing to fit.
CostModel refit(const CostModel& prior, const std::vector<ModelSample>& samples);

}  // namespace canopy::planner
