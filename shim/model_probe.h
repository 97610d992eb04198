// CANOPY_MODEL=measure: fits the Hockney model to this machine at MPI_Init. Rank 0 and
// rank 1 ping-pong small and large messages (alpha, beta), rank 0 times
// MPI_Reduce_local and memcpy (gamma, copy), and rank 0 broadcasts the result so that
// every rank plans with the same numbers.
#pragma once

#include "planner/cost_model.h"

namespace canopy::shim {

// Collective over MPI_COMM_WORLD. Waits politely, so it stays quick when ranks
// outnumber cores.
planner::CostModel measure_model();

}  // namespace canopy::shim
