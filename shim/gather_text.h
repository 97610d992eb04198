// Every rank's text, gathered to rank 0 of a communicator (the end-of-job report and
// saved rules, each a JSON document per rank).
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace canopy::shim {

// Collective over `comm`: rank 0 gets each rank's `mine`, in rank order; the others get
// nothing. Empty where MPI fails.
std::vector<std::string> gather_text(MPI_Comm comm, const std::string& mine);

}  // namespace canopy::shim
