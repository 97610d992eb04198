#include "planner/staged.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace canopy::planner {

int largest_node(const Topology& topology) {
  std::map<int, int> ranks_on;
  int most = 0;
  for (int node : topology.node) most = std::max(most, ++ranks_on[node]);
  return most;
}

int largest_node(const Problem& problem) {
  return problem.topology ? largest_node(*problem.topology) : problem.nranks;
}

Problem with_staging_ring(Problem problem) {
  const int ranks = largest_node(problem);
  problem.staging_entries = staging_entries_for(ranks);
  problem.staging_entry_bytes = staging_entry_bytes_for(ranks);
  return problem;
}

std::string planned_nodes_share_memory(const std::vector<int>& planned, const std::vector<int>& physical) {
  const int size = static_cast<int>(physical.size());
  if (planned.empty()) {
    for (int r = 1; r < size; ++r)
      if (physical[r] != physical[0]) return "the communicator's ranks are on more than one node";
    return {};
  }
  if (static_cast<int>(planned.size()) != size)
    return "the topology describes " + std::to_string(planned.size()) + " ranks, not " + std::to_string(size);
  std::unordered_map<int, int> first_on;  // planned node -> its first rank
  for (int r = 0; r < size; ++r) {
    const int first = first_on.emplace(planned[r], r).first->second;
    if (physical[first] != physical[r])
      return "ranks " + std::to_string(first) + " and " + std::to_string(r) +
             " share a node in the topology but not memory (MPI_COMM_TYPE_SHARED)";
  }
  return {};
}

}  // namespace canopy::planner
