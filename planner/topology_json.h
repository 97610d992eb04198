// The JSON form of a topology: what CANOPY_TOPOLOGY files and `canopy-plan
// --topology` read, and what the schedule log records next to each schedule.
//
//   {
//     "ranks":    ["s0", "s0", "s1", "s1", "s2", "s2"],   cluster (site) label per rank
//     "nodes":    ["a", "a", "b", "b", "c", "c"],         optional: node label per rank
//     "links":    {"s0-s1": "hockney:alpha=1e-4,beta=4e-8",   both directions
//                  "s1->s0": "hockney:alpha=1e-4,beta=8e-8",  one direction (wins)
//                  "s0": "hockney:alpha=2e-5,beta=1e-9",      between nodes of s0
//                  "default": "hockney:alpha=5e-5,beta=8e-9"}, every pair not named
//     "slowdown": [1, 1, 2, 2, 1, 1]                      optional: per-rank send slowdown
//     "packages": [0, 1, 0, 1, 0, 1],                    optional: package (socket) per
//                                                         rank, within the rank's node
//     "package_link": "hockney:alpha=1e-6,beta=2e-10"    optional: between two packages
//   }                                                     of one node
//
// Labels are strings or integers (1 and "1" are the same label); clusters and nodes
// are numbered in order of first rank. Labels may contain '-': a link key is split
// where both sides are labels ("grid-a-grid-b"), and one that splits more than one
// way is refused. A key equal to a label is that cluster's own link, even if it could
// also be read as "A-B". Precedence: "A->B", then "A-B", then "default", whatever
// their order. Link values are cost model specs as CANOPY_MODEL takes them
// (cost_model.h). Without "nodes" each rank is its own node unless the reader is given
// the nodes (the shim passes the nodes MPI reports). A pair with no link and no
// "default" is listed in TopologyFile::missing (except the own link of a cluster on
// one node, which no message uses): the shim measures it, the tools refuse the file.
// Package labels name a package within its node (two nodes' package 0 are two
// packages), so a file of identical nodes repeats one pattern; without "package_link"
// a message between packages is priced like any other inside a node.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "planner/topology.h"

namespace canopy::planner {

struct TopologyFile {
  Topology topology;                           // links not given are default_model()
  std::vector<std::pair<int, int>> missing;    // (from, to) cluster pairs with no link
};

// Reads the JSON form. `nodes` (one number per rank) is used when the JSON has none.
// Throws std::invalid_argument naming the field, the value and what is allowed.
TopologyFile topology_from_json(const nlohmann::json& json, const std::vector<int>& nodes = {});
// Reads a file holding the JSON form; errors name the file.
TopologyFile read_topology_file(const std::string& path, const std::vector<int>& nodes = {});

// The JSON form with every directed link spelled out ("a->b"); reads back the same.
nlohmann::json topology_to_json(const Topology& topology);

}  // namespace canopy::planner
