// A cost model that learns from measured calls.
//
// Every time the simulator (or a formula equal to it) gives is a sum of the model's
// costs along the critical path: so many messages (alpha each), so many bytes sent
// (beta), reduced (gamma), copied (copy) and copied by cross-memory attach (direct),
// plus the staged hand-overs and the direct copies' fixed part, which no parameter
// scales. A makespan is therefore g . theta + fixed, with theta the
// parameters and g the critical path's counts, and g is the makespan's derivative with
// respect to theta (price_gradient, by finite differences: the price is piecewise
// linear in theta). Given calls measured with their g, refit() finds the parameters
// that predict them best: theta = prior * x, x within 50x of 1 per parameter, minimising
// the squared relative errors plus a pull of every x towards 1 (the prior), so a few
// samples move the model a little and many move it to what they show. Parameters the
// samples cannot tell apart (beta, gamma and copy all scale with bytes) share the
// correction, as the pull spreads it.
//
// Hockney models only (alpha, beta, gamma, copy, direct); pLogP's gap table and the
// (d, c) model are left as they are. Decision: the direct copies' per-byte price is a
// parameter of its own rather than a factor on copy: their trials (cma-bcast) taught
// copy a rate that then priced the ring's copies, and the factor is one machine's
// (cost_model.h: 1.35x on the Intel Xeon VM, about 4x on the AMD EPYC VM).
#pragma once

#include <array>
#include <vector>

#include "planner/cost_model.h"
#include "planner/problem.h"
#include "planner/select.h"

namespace canopy::planner {

// The learnt parameters: alpha, beta, gamma, copy_per_byte and the direct copies' per-byte
// price (CostModel::direct_per_byte_or_derived).
constexpr int kParameters = 5;
using Parameters = std::array<double, kParameters>;

// A price as a function of the model: slope . (alpha, beta, gamma, copy, direct) + fixed,
// on the critical path's piece. `fixed` is what no parameter scales (the simulator's
// staged hand-overs, kStagingHandoffSeconds each, and the direct copies'
// kDirectCopyFixedSeconds): left out, a staged call of a few bytes (0.5 us priced, 2 ns
// of it scaled) asked the fit to scale every parameter 100x.
struct ModelGradient {
  Parameters slope{};  // d makespan / d (alpha, beta, gamma, copy, direct)
  double fixed = 0;               // seconds
  bool any() const;               // some slope > 0: the price depends on the model
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

// `prior` with alpha, beta, gamma, copy and direct refitted to `samples` (see above; a
// derived direct price stays derived where no sample has a direct copy). Returns
// `prior` unchanged when it is not learnable or there is nothing to fit.
CostModel refit(const CostModel& prior, const std::vector<ModelSample>& samples);

}  // namespace canopy::planner
