#include "planner/registry.h"

#include "planner/segments.h"

namespace canopy::planner {

// One declaration and one table row per algorithm; each lives in algorithms/NAME.cpp.
Schedule plan_binomial_reduce(const Problem&);
Schedule plan_binomial_bcast(const Problem&);
Schedule plan_flat_reduce(const Problem&);
Schedule plan_flat_bcast(const Problem&);
Schedule plan_chain_reduce(const Problem&);
Schedule plan_chain_bcast(const Problem&);
Schedule plan_binary_reduce(const Problem&);
Schedule plan_binary_bcast(const Problem&);
Schedule plan_greedy_segmented_reduce(const Problem&);
Schedule plan_greedy_bidirectional_reduce(const Problem&);
Schedule plan_scatter_allgather_bcast(const Problem&);
Schedule plan_scatter_allgather_wide_bcast(const Problem&);
Schedule plan_greedy_reduce(const Problem&);
Schedule plan_greedy_transfers_reduce(const Problem&);
Schedule plan_greedy_reducers_reduce(const Problem&);
Schedule plan_binomial_strategy_reduce(const Problem&);
Schedule plan_fibonacci_strategy_reduce(const Problem&);
Schedule plan_snf_reduce(const Problem&);
Schedule plan_reduce_scatter_gather_reduce(const Problem&);
Schedule plan_reduce_scatter_gather_wide_reduce(const Problem&);
Schedule plan_shm_reduce_scatter_gather_reduce(const Problem&);
Schedule plan_shm_flat_reduce(const Problem&);
Schedule plan_shm_reduce_scatter_allgather_allreduce(const Problem&);
Schedule plan_shm_recursive_doubling_allreduce(const Problem&);
Schedule plan_shm_bcast_bcast(const Problem&);
Schedule plan_cma_bcast_bcast(const Problem&);

// Allreduce: compositions of a reduce and a broadcast (algorithms/reduce_bcast.cpp) and
// the exchanges (recursive_doubling.cpp, rabenseifner.cpp, ring.cpp).
Schedule plan_binomial_allreduce(const Problem&);
Schedule plan_binary_allreduce(const Problem&);
Schedule plan_chain_allreduce(const Problem&);
Schedule plan_greedy_allreduce(const Problem&);
Schedule plan_snf_allreduce(const Problem&);
Schedule plan_hierarchical_allreduce(const Problem&);
Schedule plan_grid_ecef_allreduce(const Problem&);
Schedule plan_grid_ecef_la_allreduce(const Problem&);
Schedule plan_grid_bottomup_allreduce(const Problem&);
Schedule plan_hierarchical_leaders_allreduce(const Problem&);
std::int64_t steps_hierarchical_leaders_allreduce(const Problem&);
Schedule plan_shm_allreduce(const Problem&);
Schedule plan_recursive_doubling_allreduce(const Problem&);
Schedule plan_rabenseifner_allreduce(const Problem&);
Schedule plan_rabenseifner_reduce(const Problem&);
Schedule plan_ring_allreduce(const Problem&);
Schedule view_recursive_doubling_allreduce(const Problem&, int rank);
Schedule view_shm_recursive_doubling_allreduce(const Problem&, int rank);
Schedule view_rabenseifner_allreduce(const Problem&, int rank);
Schedule view_rabenseifner_reduce(const Problem&, int rank);
Schedule view_ring_allreduce(const Problem&, int rank);
Price price_binomial_allreduce(const Problem&);
Price price_binary_allreduce(const Problem&);
Price price_chain_allreduce(const Problem&);
Price price_greedy_allreduce(const Problem&);
std::int64_t steps_binomial_allreduce(const Problem&);
std::int64_t steps_binary_allreduce(const Problem&);
std::int64_t steps_chain_allreduce(const Problem&);
std::int64_t steps_greedy_allreduce(const Problem&);
std::int64_t steps_snf_allreduce(const Problem&);
std::int64_t steps_hierarchical_allreduce(const Problem&);
std::int64_t steps_grid_ecef_allreduce(const Problem&);
std::int64_t steps_grid_ecef_la_allreduce(const Problem&);
std::int64_t steps_grid_bottomup_allreduce(const Problem&);
std::int64_t steps_shm_allreduce(const Problem&);
std::int64_t steps_recursive_doubling_allreduce(const Problem&);
std::int64_t steps_shm_recursive_doubling_allreduce(const Problem&);
std::int64_t steps_rabenseifner(const Problem&);
std::int64_t steps_ring_allreduce(const Problem&);
std::int64_t cut_rabenseifner(const Problem&);
std::int64_t cut_ring_allreduce(const Problem&);

// Segment sizes as each algorithm cuts them (Algorithm::cut_segment_bytes).
std::int64_t cut_reduce_scatter_gather_reduce(const Problem&);
std::int64_t cut_staged_reduce(const Problem&);
std::int64_t cut_shm_bcast_bcast(const Problem&);

// Whole-schedule sizes that grow with p x p (Algorithm::whole_steps).
std::int64_t steps_reduce_scatter_gather_reduce(const Problem&);
std::int64_t steps_scatter_allgather_bcast(const Problem&);

// Rank views (Algorithm::view); algorithms without one are projected (plan_view).
Schedule view_binomial_reduce(const Problem&, int rank);
Schedule view_flat_reduce(const Problem&, int rank);
Schedule view_chain_reduce(const Problem&, int rank);
Schedule view_binary_reduce(const Problem&, int rank);
Schedule view_greedy_reduce(const Problem&, int rank);
Schedule view_greedy_transfers_reduce(const Problem&, int rank);
Schedule view_greedy_reducers_reduce(const Problem&, int rank);
Schedule view_binomial_strategy_reduce(const Problem&, int rank);
Schedule view_fibonacci_strategy_reduce(const Problem&, int rank);
Schedule view_binomial_bcast(const Problem&, int rank);
Schedule view_flat_bcast(const Problem&, int rank);
Schedule view_chain_bcast(const Problem&, int rank);
Schedule view_binary_bcast(const Problem&, int rank);
Schedule view_scatter_allgather_bcast(const Problem&, int rank);
Schedule view_reduce_scatter_gather_reduce(const Problem&, int rank);
Schedule view_reduce_scatter_gather_wide_reduce(const Problem&, int rank);
Schedule plan_reduce_scatter_allgather_wide_allreduce(const Problem&);
Schedule view_reduce_scatter_allgather_wide_allreduce(const Problem&, int rank);
std::int64_t steps_reduce_scatter_allgather_wide_allreduce(const Problem&);
Schedule view_scatter_allgather_wide_bcast(const Problem&, int rank);

// Topology-aware (Algorithm::topology_aware): algorithms/hierarchical.cpp, algorithms/grid.cpp.
Schedule plan_hierarchical_reduce(const Problem&);
Schedule plan_hierarchical_bcast(const Problem&);
Schedule plan_grid_flat_reduce(const Problem&);
Schedule plan_grid_fef_reduce(const Problem&);
Schedule plan_grid_ecef_reduce(const Problem&);
Schedule plan_grid_ecef_la_reduce(const Problem&);
Schedule plan_grid_ecef_lat_reduce(const Problem&);
Schedule plan_grid_ecef_lat_max_reduce(const Problem&);
Schedule plan_grid_bottomup_reduce(const Problem&);
Schedule plan_grid_flat_bcast(const Problem&);
Schedule plan_grid_fef_bcast(const Problem&);
Schedule plan_grid_ecef_bcast(const Problem&);
Schedule plan_grid_ecef_la_bcast(const Problem&);
Schedule plan_grid_ecef_lat_bcast(const Problem&);
Schedule plan_grid_ecef_lat_max_bcast(const Problem&);
Schedule plan_grid_bottomup_bcast(const Problem&);

// Prices (Algorithm::price); the others are simulated when affordable (select.h).
Price price_binomial_reduce(const Problem&);
Price price_flat_reduce(const Problem&);
Price price_chain_reduce(const Problem&);
Price price_binary_reduce(const Problem&);
Price price_greedy_reduce(const Problem&);
Price price_greedy_transfers_reduce(const Problem&);
Price price_greedy_reducers_reduce(const Problem&);
Price price_binomial_strategy_reduce(const Problem&);
Price price_fibonacci_strategy_reduce(const Problem&);
Price price_binomial_bcast(const Problem&);
Price price_flat_bcast(const Problem&);
Price price_chain_bcast(const Problem&);
Price price_binary_bcast(const Problem&);
Price price_scatter_allgather_bcast(const Problem&);
Price price_reduce_scatter_gather_reduce(const Problem&);
Price price_recursive_doubling_allreduce(const Problem&);
Price price_rabenseifner_allreduce(const Problem&);
Price price_rabenseifner_reduce(const Problem&);
Price price_ring_allreduce(const Problem&);

const std::vector<Algorithm>& algorithms() {
  static const std::vector<Algorithm> table = {
      {"binomial", Collective::Reduce, plan_binomial_reduce,
       "binomial tree, ceil(log2 p) rounds; rank-ordered for non-commutative ops", false, view_binomial_reduce, price_binomial_reduce},
      {"flat", Collective::Reduce, plan_flat_reduce, "the root combines every operand itself; rank-ordered", false, view_flat_reduce, price_flat_reduce},
      {"chain", Collective::Reduce, plan_chain_reduce,
       "pipeline along the ranks, segment after segment; rank-ordered for non-commutative ops", false, view_chain_reduce, price_chain_reduce},
      {"binary", Collective::Reduce, plan_binary_reduce,
       "complete binary tree, pipelined; rank-ordered for non-commutative ops", false, view_binary_reduce, price_binary_reduce},
      {"greedy-segmented", Collective::Reduce, plan_greedy_segmented_reduce,
       "Langou's unidirectional greedy: a tree per segment; commutative ops only", false, nullptr, nullptr, true},
      {"greedy-bidirectional", Collective::Reduce, plan_greedy_bidirectional_reduce,
       "Langou's greedy for full-duplex ranks: a tree per segment; commutative ops only", false, nullptr, nullptr,
       true},
      {"greedy", Collective::Reduce, plan_greedy_reduce,
       "Canon & Antoniu Algorithm 1: optimal tree when transfers overlap reductions", false, view_greedy_reduce, price_greedy_reduce, true},
      {"greedy-transfers", Collective::Reduce, plan_greedy_transfers_reduce,
       "Canon & Antoniu Algorithm 2: tree optimal for at most `limit` concurrent transfers", false, view_greedy_transfers_reduce, price_greedy_transfers_reduce, true},
      {"greedy-reducers", Collective::Reduce, plan_greedy_reducers_reduce,
       "Canon & Antoniu Algorithm 3: optimal tree with at most `limit` reducing ranks", false, view_greedy_reducers_reduce, price_greedy_reducers_reduce, true},
      {"binomial-strategy", Collective::Reduce, plan_binomial_strategy_reduce,
       "Algorithm 1 as if min(d,c)=0 (binomial trees), pipelined; within 2x of optimal", false, view_binomial_strategy_reduce, price_binomial_strategy_reduce, true},
      {"fibonacci-strategy", Collective::Reduce, plan_fibonacci_strategy_reduce,
       "Algorithm 1 as if d=c (Fibonacci trees), pipelined; within 2x of optimal", false, view_fibonacci_strategy_reduce, price_fibonacci_strategy_reduce, true},
      {"snf", Collective::Reduce, plan_snf_reduce,
       "Liu & Wang slowest node first, for ranks of different speeds; within 2x of optimal; commutative ops only",
       true},
      {"reduce-scatter-gather", Collective::Reduce, plan_reduce_scatter_gather_reduce,
       "Rabenseifner: every rank reduces a slice (pairwise exchange), then the root gathers them; rank-ordered",
       false, view_reduce_scatter_gather_reduce, price_reduce_scatter_gather_reduce, false, false, false,
       cut_reduce_scatter_gather_reduce, steps_reduce_scatter_gather_reduce},
      // Priced only by simulating it (no formula): an estimate would not see a node's
      // ranks sharing its card or a site's ranks its links, which the simulator's exact
      // price does not either but busiest_link then bounds (select.cpp).
      {"reduce-scatter-gather-wide", Collective::Reduce, plan_reduce_scatter_gather_wide_reduce,
       "reduce-scatter-gather with every operand in flight at once: one latency a round over links far apart "
       "(a topology with port=); rank-ordered",
       false, view_reduce_scatter_gather_wide_reduce, nullptr, false, false, true,
       cut_reduce_scatter_gather_reduce, steps_reduce_scatter_gather_reduce, false, true, true},
      {"rabenseifner", Collective::Reduce, plan_rabenseifner_reduce,
       "reduce-scatter by recursive halving, gather to the root by recursive doubling (long messages); "
       "rank-ordered",
       false, view_rabenseifner_reduce, price_rabenseifner_reduce, false, false, false, cut_rabenseifner,
       steps_rabenseifner},
      {"shm-reduce-scatter-gather", Collective::Reduce, plan_shm_reduce_scatter_gather_reduce,
       "reduce-scatter-gather through the node's staging ring, reduced where staged; one node (or a hierarchy's "
       "node level); rank-ordered",
       false, nullptr, nullptr, false, true, true, cut_staged_reduce, steps_reduce_scatter_gather_reduce},
      {"shm-flat", Collective::Reduce, plan_shm_flat_reduce,
       "every rank stages its input once in the node's staging ring, the root combines them all where they lie; "
       "one node (or a hierarchy's node level); rank-ordered",
       false, nullptr, nullptr, false, true, true, cut_staged_reduce},
      {"hierarchical", Collective::Reduce, plan_hierarchical_reduce,
       "one level between clusters (or nodes) and one inside each, composed and pipelined; commutative ops only", true},
      {"grid-flat", Collective::Reduce, plan_grid_flat_reduce,
       "grid tree between clusters: flat from the root (ECO, MagPIe), reversed; commutative ops only", true},
      {"grid-fef", Collective::Reduce, plan_grid_fef_reduce,
       "grid tree between clusters: fastest edge first (latency), reversed; commutative ops only", true},
      {"grid-ecef", Collective::Reduce, plan_grid_ecef_reduce,
       "grid tree between clusters: early completion edge first, reversed; commutative ops only", true},
      {"grid-ecef-la", Collective::Reduce, plan_grid_ecef_la_reduce,
       "grid tree between clusters: ECEF, look ahead to the next cluster, reversed; commutative ops only", true},
      {"grid-ecef-lat", Collective::Reduce, plan_grid_ecef_lat_reduce,
       "grid tree between clusters: ECEF, look ahead to the soonest done, reversed; commutative ops only", true},
      {"grid-ecef-lat-max", Collective::Reduce, plan_grid_ecef_lat_max_reduce,
       "grid tree between clusters: ECEF, look ahead to the latest done, reversed; commutative ops only", true},
      {"grid-bottomup", Collective::Reduce, plan_grid_bottomup_reduce,
       "grid tree between clusters: the latest done cluster first, reversed; commutative ops only", true},
      {"binomial", Collective::Bcast, plan_binomial_bcast, "binomial tree, ceil(log2 p) rounds", false, view_binomial_bcast, price_binomial_bcast},
      {"flat", Collective::Bcast, plan_flat_bcast, "the root sends to every rank itself", false, view_flat_bcast, price_flat_bcast},
      {"chain", Collective::Bcast, plan_chain_bcast, "pipeline along the ranks from the root", false, view_chain_bcast, price_chain_bcast},
      {"binary", Collective::Bcast, plan_binary_bcast, "complete binary tree, pipelined", false, view_binary_bcast, price_binary_bcast},
      {"scatter-allgather", Collective::Bcast, plan_scatter_allgather_bcast,
       "van de Geijn: binomial scatter of p blocks, then a ring allgather", false, view_scatter_allgather_bcast,
       price_scatter_allgather_bcast, false, false, true, nullptr, steps_scatter_allgather_bcast},
      // Priced only by simulating it, as reduce-scatter-gather-wide (above).
      {"scatter-allgather-wide", Collective::Bcast, plan_scatter_allgather_wide_bcast,
       "the root sends a block to every other rank, each sends its block to all the others, every message in "
       "flight at once: two latencies over links far apart (a topology with port=)",
       false, view_scatter_allgather_wide_bcast, nullptr, false, false, true, nullptr, steps_scatter_allgather_bcast,
       false, true},
      {"shm-bcast", Collective::Bcast, plan_shm_bcast_bcast,
       "the root stages each chunk once in the node's staging ring, every rank copies it out; one node (or a "
       "hierarchy's node level)",
       false, nullptr, nullptr, false, true, true, cut_shm_bcast_bcast},
      {"cma-bcast", Collective::Bcast, plan_cma_bcast_bcast,
       "every rank copies its share straight from the root's buffer, the root writes a share into each "
       "(cross-memory attach, one copy per byte); one node",
       false, nullptr, nullptr, false, true, false, nullptr, nullptr, true},
      {"hierarchical", Collective::Bcast, plan_hierarchical_bcast,
       "one level between clusters (or nodes) and one inside each, composed and pipelined", true},
      {"grid-flat", Collective::Bcast, plan_grid_flat_bcast,
       "grid tree between clusters: flat from the root (ECO, MagPIe)", true},
      {"grid-fef", Collective::Bcast, plan_grid_fef_bcast,
       "grid tree between clusters: fastest edge first (latency)", true},
      {"grid-ecef", Collective::Bcast, plan_grid_ecef_bcast,
       "grid tree between clusters: early completion edge first", true},
      {"grid-ecef-la", Collective::Bcast, plan_grid_ecef_la_bcast,
       "grid tree between clusters: ECEF, look ahead to the next cluster", true},
      {"grid-ecef-lat", Collective::Bcast, plan_grid_ecef_lat_bcast,
       "grid tree between clusters: ECEF, look ahead to the soonest done", true},
      {"grid-ecef-lat-max", Collective::Bcast, plan_grid_ecef_lat_max_bcast,
       "grid tree between clusters: ECEF, look ahead to the latest done", true},
      {"grid-bottomup", Collective::Bcast, plan_grid_bottomup_bcast,
       "grid tree between clusters: the latest done cluster first", true},
      // Allreduce. None is composable (Algorithm::composable): a hierarchy composes
      // reduces and broadcasts, and its levels are never allreduces. The compositions
      // have no rank view (their merge runs over every rank), so a rank keeps the whole
      // schedule: `global`, so that `auto` leaves them out above kGlobalPlanningLimit
      // ranks, where that would outgrow a rank's memory (4096 ranks, 16 MiB: the binary
      // composition is 147 segments on every rank, millions of steps).
      {"binomial", Collective::Allreduce, plan_binomial_allreduce,
       "binomial reduce to rank 0, then binomial broadcast, pipelined; rank-ordered for non-commutative ops", false,
       nullptr, price_binomial_allreduce, true, false, false, nullptr, steps_binomial_allreduce},
      {"binary", Collective::Allreduce, plan_binary_allreduce,
       "binary-tree reduce to rank 0, then binary-tree broadcast, pipelined; rank-ordered for non-commutative ops",
       false, nullptr, price_binary_allreduce, true, false, false, nullptr, steps_binary_allreduce},
      {"chain", Collective::Allreduce, plan_chain_allreduce,
       "pipelined chain reduce to rank 0, then pipelined chain broadcast; rank-ordered for non-commutative ops",
       false, nullptr, price_chain_allreduce, true, false, false, nullptr, steps_chain_allreduce},
      {"greedy", Collective::Allreduce, plan_greedy_allreduce,
       "Canon & Antoniu's greedy reduce tree to rank 0, then binomial broadcast, pipelined", false,
       nullptr, price_greedy_allreduce, true, false, false, nullptr, steps_greedy_allreduce},
      {"snf", Collective::Allreduce, plan_snf_allreduce,
       "Liu & Wang slowest-node-first reduce to rank 0, then binomial broadcast; commutative ops only", true, nullptr,
       nullptr, true, false, false, nullptr, steps_snf_allreduce},
      {"hierarchical", Collective::Allreduce, plan_hierarchical_allreduce,
       "hierarchical reduce to rank 0, then hierarchical broadcast, pipelined; commutative ops only", true, nullptr,
       nullptr, true, false, false, nullptr, steps_hierarchical_allreduce},
      {"hierarchical-leaders", Collective::Allreduce, plan_hierarchical_leaders_allreduce,
       "reduce inside each cluster (or node), allreduce among the leaders, broadcast inside; commutative ops only",
       true, nullptr, nullptr, true, false, false, nullptr, steps_hierarchical_leaders_allreduce},
      {"grid-ecef", Collective::Allreduce, plan_grid_ecef_allreduce,
       "grid-ecef reduce to rank 0, then grid-ecef broadcast, pipelined; commutative ops only", true, nullptr, nullptr,
       true, false, false, nullptr, steps_grid_ecef_allreduce},
      {"grid-ecef-la", Collective::Allreduce, plan_grid_ecef_la_allreduce,
       "grid-ecef-la reduce to rank 0, then grid-ecef-la broadcast, pipelined; commutative ops only", true, nullptr,
       nullptr, true, false, false, nullptr, steps_grid_ecef_la_allreduce},
      {"grid-bottomup", Collective::Allreduce, plan_grid_bottomup_allreduce,
       "grid-bottomup reduce to rank 0, then grid-bottomup broadcast, pipelined; commutative ops only", true, nullptr,
       nullptr, true, false, false, nullptr, steps_grid_bottomup_allreduce},
      {"shm", Collective::Allreduce, plan_shm_allreduce,
       "shm-reduce-scatter-gather to rank 0, then shm-bcast, through the node's staging ring; one node; "
       "rank-ordered",
       false, nullptr, nullptr, true, true, false, cut_staged_reduce, steps_shm_allreduce},
      // Priced only by simulating it, as reduce-scatter-gather-wide (above).
      {"reduce-scatter-allgather-wide", Collective::Allreduce, plan_reduce_scatter_allgather_wide_allreduce,
       "reduce-scatter-gather-wide's exchange, then every rank sends its reduced slice to every other, every message "
       "in flight at once (a topology with port=); rank-ordered, identical bits everywhere",
       false, view_reduce_scatter_allgather_wide_allreduce, nullptr, false, false, false,
       cut_reduce_scatter_gather_reduce, steps_reduce_scatter_allgather_wide_allreduce, false, true},
      {"shm-reduce-scatter-allgather", Collective::Allreduce, plan_shm_reduce_scatter_allgather_allreduce,
       "every rank reduces its slice of every rank's staged input where it lies and stages it once, every rank "
       "copies the others out; one node; rank-ordered",
       false, nullptr, nullptr, false, true, false, cut_staged_reduce, steps_reduce_scatter_gather_reduce},
      {"shm-recursive-doubling", Collective::Allreduce, plan_shm_recursive_doubling_allreduce,
       "recursive doubling through the node's staging ring: each round every rank stages its partial result once "
       "and combines its partner's where it lies; one node; rank-ordered, identical bits everywhere",
       false, view_shm_recursive_doubling_allreduce, nullptr, false, true, false, cut_staged_reduce,
       steps_shm_recursive_doubling_allreduce},
      {"recursive-doubling", Collective::Allreduce, plan_recursive_doubling_allreduce,
       "log2(p) rounds of whole-message exchanges, MPICH's fold for other p; rank-ordered, identical bits everywhere",
       false, view_recursive_doubling_allreduce, price_recursive_doubling_allreduce, false, false, false, nullptr,
       steps_recursive_doubling_allreduce},
      {"rabenseifner", Collective::Allreduce, plan_rabenseifner_allreduce,
       "reduce-scatter by recursive halving, allgather by recursive doubling (long messages); rank-ordered", false,
       view_rabenseifner_allreduce, price_rabenseifner_allreduce, false, false, false, cut_rabenseifner,
       steps_rabenseifner},
      {"ring", Collective::Allreduce, plan_ring_allreduce,
       "ring reduce-scatter then ring allgather, 2(p-1) steps of n/p (long messages); commutative ops only", false,
       view_ring_allreduce, price_ring_allreduce, false, false, false, cut_ring_allreduce, steps_ring_allreduce},
  };
  return table;
}

const Algorithm* find_algorithm(Collective collective, std::string_view name) {
  for (const auto& a : algorithms())
    if (a.collective == collective && a.name == name) return &a;
  return nullptr;
}

std::int64_t tree_steps_estimate(const Problem& problem) { return 4 * problem.nranks * segments_asked(problem); }

std::int64_t estimated_whole_steps(const Algorithm& algorithm, const Problem& problem) {
  // With the segments the algorithm cuts: a staged one cuts whole ring entries whatever
  // it is asked (a 4 MiB shm-flat reduce asked for one segment has 86).
  Problem cut = problem;
  if (algorithm.cut_segment_bytes) cut.segment_bytes = algorithm.cut_segment_bytes(problem);
  return algorithm.whole_steps ? algorithm.whole_steps(cut) : tree_steps_estimate(cut);
}

Schedule plan_view(const Algorithm& algorithm, const Problem& problem, int rank) {
  if (algorithm.view) return algorithm.view(problem, rank);
  check_problem(problem);
  if (rank < 0 || rank >= problem.nranks)
    throw PlanError("rank " + std::to_string(rank) + " is outside 0.." + std::to_string(problem.nranks - 1));
  return project(algorithm.plan(problem), rank);
}

std::vector<std::string> algorithm_names(Collective collective) {
  std::vector<std::string> out;
  for (const auto& a : algorithms())
    if (a.collective == collective) out.emplace_back(a.name);
  return out;
}

}  // namespace canopy::planner
