// Topologies of sites far apart, for the planner tests of the wide-area algorithms
// (reduce-scatter-gather-wide, scatter-allgather-wide) and of the hierarchy over them.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "planner/cost_model.h"
#include "planner/topology.h"
#include "planner/topology_json.h"

namespace canopy::planner::testing {

// Every rank a site of its own, the link between sites a and b (a < b) `spec(a, b)`.
inline std::shared_ptr<const Topology> sites_apart(int p, const std::function<std::string(int, int)>& spec) {
  nlohmann::json t;
  for (int r = 0; r < p; ++r) t["ranks"].push_back("s" + std::to_string(r));
  for (int a = 0; a < p; ++a)
    for (int b = a + 1; b < p; ++b) t["links"]["s" + std::to_string(a) + "-s" + std::to_string(b)] = spec(a, b);
  return std::make_shared<const Topology>(topology_from_json(t).topology);
}

// p sites, 1 ms and 100 Mbit/s apart behind cards of 1 Gbit/s (port=): where the
// wide-area algorithms plan (Algorithm::wide_area). One per p, made once.
inline std::shared_ptr<const Topology> sites_apart_with_port(int p) {
  static std::map<int, std::shared_ptr<const Topology>> made;
  auto& t = made[p];
  if (!t) t = sites_apart(p, [](int, int) { return "hockney:alpha=1e-3,beta=8e-8,port=8e-9"; });
  return t;
}

// 16 sites of `per_site` ranks on nodes of `per_node`, 1-15 ms and 56-336 Mbit/s apart
// (tools/sim/gridgen.py's ranges, spread evenly) behind 1 Gbit/s cards whose links keep
// their latency in flight (port=); inside a site 25 us and 1 Gbit/s, as gridgen.py draws.
inline std::shared_ptr<const Topology> sixteen_sites_apart(int per_site, int per_node) {
  Topology t;
  t.clusters = 16;
  for (int r = 0; r < 16 * per_site; ++r) {
    t.cluster.push_back(r / per_site);
    t.node.push_back(r / per_node);
  }
  for (int a = 0; a < 16; ++a)
    for (int b = 0; b < 16; ++b) {
      const double f = static_cast<double>((std::min(a, b) * 16 + std::max(a, b)) % 17) / 16;
      CostModel link = a == b ? hockney_model(25e-6, 8e-9, 0)
                              : hockney_model(1e-3 + 14e-3 * f, 8.0 / (56e6 + 280e6 * (1 - f)), 0);
      if (a != b) link.port_per_byte = 8e-9;
      t.links.push_back(link);
    }
  check_topology(t);
  return std::make_shared<const Topology>(t);
}

// The longest a message of `bytes` takes over any link between two sites (its latency
// and its bytes): what a round of every message in flight at once waits for at least.
inline double slowest_link(const Topology& t, std::int64_t bytes) {
  double slowest = 0;
  for (int a = 0; a < t.clusters; ++a)
    for (int b = 0; b < t.clusters; ++b)
      if (a != b) slowest = std::max(slowest, t.links[static_cast<std::size_t>(a) * t.clusters + b].transfer(bytes));
  return slowest;
}

}  // namespace canopy::planner::testing
