// CANOPY_TOPOLOGY: the network under MPI_COMM_WORLD, found once at MPI_Init, after
// the ranks agreed on their settings (004_*.txt, Steffenel, section 4.1).
//
//  - nodes: as found at MPI_Init (runtime.cpp; each rank's node leader, gathered to all), numbered
//    in order of first world rank;
//  - inside a node: hwloc's package and NUMA node of each rank's binding (NUMA for the
//    log). Where every rank is bound inside one package and some node holds ranks of
//    two, the packages become Topology::package (the socket level: `hierarchical` goes
//    by package inside a node), and two ranks on different packages of one node
//    measure Topology::package_link as they would a link between nodes. On one node,
//    auto looks only if hwloc counts two packages or more on the machine (every rank of
//    the node counts the same), and loads hwloc only where the kernel does not already
//    say one package, so a one-package machine still communicates nothing;
//  - auto, on several nodes: the node leaders (lowest world rank of each node)
//    measure the one-way time of a CANOPY_PROBE_BYTES message between every pair of
//    nodes, one pair at a time; rank 0 clusters the nodes with Lowekamp's algorithm
//    (CANOPY_RHO), then one pair per cluster and one per pair of clusters ping-pong
//    8 bytes as well (C(C-1)/2 + C links, taken as symmetric), giving a Hockney link
//    per cluster pair;
//  - a file: world rank 0 reads it; links it leaves out are measured the same way.
// Rank 0 decides and broadcasts the topology as JSON, so every rank plans alike.
// Every wait is polite (test, then yield), as with more ranks than cores.
#pragma once

#include <memory>
#include <string>

#include "config/settings.h"
#include "planner/cost_model.h"
#include "planner/topology.h"

namespace canopy::shim {

struct TopologyProbe {
  // MPI_COMM_WORLD's topology (index = world rank), the same on every rank; null when
  // none was asked for or found, or it is one node and one cluster without slowdowns.
  std::shared_ptr<const planner::Topology> topology;
  std::string source = "none";  // "none", "measured" or "file", the same on every rank
  std::string description;      // planner::describe_topology of what was found, even if trivial
  bool failed = false;          // the file cannot be used (every rank knows)
  std::string error;            // world rank 0 only: the line saying why
  std::string summary;          // world rank 0 only: what was found and how long it took
};

// Collective over MPI_COMM_WORLD when it does anything: with CANOPY_TOPOLOGY=auto on
// more than one node (`nodes`, as every rank agreed at MPI_Init) or on one machine of
// several packages, or with a file. Returns at once, communicating nothing, for none
// and for auto on one node of one package. `base`
// gives the links their reduction and copy costs; `node_leader` is the world rank of
// the lowest rank on this rank's node (as found at MPI_Init, runtime.cpp).
TopologyProbe probe_topology(const config::Settings& settings, const planner::CostModel& base, int nodes,
                             int node_leader);

}  // namespace canopy::shim
