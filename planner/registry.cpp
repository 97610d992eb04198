#include "planner/registry.h"

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
Schedule plan_greedy_reduce(const Problem&);
Schedule plan_greedy_transfers_reduce(const Problem&);
Schedule plan_greedy_reducers_reduce(const Problem&);
Schedule plan_binomial_strategy_reduce(const Problem&);
Schedule plan_fibonacci_strategy_reduce(const Problem&);

const std::vector<Algorithm>& algorithms() {
  static const std::vector<Algorithm> table = {
      {"binomial", Collective::Reduce, plan_binomial_reduce,
       "binomial tree, ceil(log2 p) rounds; rank-ordered for non-commutative ops"},
      {"flat", Collective::Reduce, plan_flat_reduce, "the root combines every operand itself; rank-ordered"},
      {"chain", Collective::Reduce, plan_chain_reduce,
       "pipeline along the ranks, segment after segment; rank-ordered for non-commutative ops"},
      {"binary", Collective::Reduce, plan_binary_reduce,
       "complete binary tree, pipelined; rank-ordered for non-commutative ops"},
      {"greedy-segmented", Collective::Reduce, plan_greedy_segmented_reduce,
       "Langou's unidirectional greedy: a tree per segment; commutative ops only"},
      {"greedy-bidirectional", Collective::Reduce, plan_greedy_bidirectional_reduce,
       "Langou's greedy for full-duplex ranks: a tree per segment; commutative ops only"},
      {"greedy", Collective::Reduce, plan_greedy_reduce,
       "Canon & Antoniu Algorithm 1: optimal tree when transfers overlap reductions"},
      {"greedy-transfers", Collective::Reduce, plan_greedy_transfers_reduce,
       "Canon & Antoniu Algorithm 2: tree optimal for at most `limit` concurrent transfers"},
      {"greedy-reducers", Collective::Reduce, plan_greedy_reducers_reduce,
       "Canon & Antoniu Algorithm 3: optimal tree with at most `limit` reducing ranks"},
      {"binomial-strategy", Collective::Reduce, plan_binomial_strategy_reduce,
       "Algorithm 1 as if min(d,c)=0 (binomial trees), pipelined; within 2x of optimal"},
      {"fibonacci-strategy", Collective::Reduce, plan_fibonacci_strategy_reduce,
       "Algorithm 1 as if d=c (Fibonacci trees), pipelined; within 2x of optimal"},
      {"binomial", Collective::Bcast, plan_binomial_bcast, "binomial tree, ceil(log2 p) rounds"},
      {"flat", Collective::Bcast, plan_flat_bcast, "the root sends to every rank itself"},
      {"chain", Collective::Bcast, plan_chain_bcast, "pipeline along the ranks from the root"},
      {"binary", Collective::Bcast, plan_binary_bcast, "complete binary tree, pipelined"},
      {"scatter-allgather", Collective::Bcast, plan_scatter_allgather_bcast,
       "van de Geijn: binomial scatter of p blocks, then a ring allgather"},
  };
  return table;
}

const Algorithm* find_algorithm(Collective collective, std::string_view name) {
  for (const auto& a : algorithms())
    if (a.collective == collective && a.name == name) return &a;
  return nullptr;
}

std::vector<std::string> algorithm_names(Collective collective) {
  std::vector<std::string> out;
  for (const auto& a : algorithms())
    if (a.collective == collective) out.emplace_back(a.name);
  return out;
}

}  // namespace canopy::planner
