// CANOPY_MODEL=measure: fits the Hockney model to this machine at MPI_Init. Rank 0 and
// rank 1 ping-pong small and large messages (alpha, beta), rank 0 times
// MPI_Reduce_local and memcpy (gamma, copy), rank 1 a cross-memory-attach copy from
// rank 0 where the two share a node (direct; else it stays derived from copy), and
// rank 0 broadcasts the result so that every rank plans with the same numbers.
#pragma once

#include "planner/cost_model.h"

namespace canopy::shim {

// Collective over MPI_COMM_WORLD. Waits politely, so it stays quick when ranks
// outnumber cores. `same_node_as_rank_0`: this rank shares rank 0's node (read on rank
// 1); `direct_wanted`: time a cross-memory-attach copy there (CANOPY_CMA is not off;
// the same on every rank).
// `network_or_node`: time the ping-pong whether or not ranks 0 and 1 share a node
// (CANOPY_MODEL=measure: the user asked for this pair's figures); false: only where they
// do, else alpha and beta stay the built-in model's, since the ping-pong would then time
// a link between nodes, which the topology's links price, and alpha and beta are what
// messages inside a node cost.
planner::CostModel measure_model(bool same_node_as_rank_0, bool direct_wanted, bool network_or_node = true);

}  // namespace canopy::shim
