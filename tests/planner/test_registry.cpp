// The registry's per-algorithm facts that the selector trusts without building anything.
#include <catch2/catch.hpp>

#include <memory>

#include "planner/cost_model.h"
#include "planner/registry.h"
#include "planner/staged.h"
#include "planner/topology.h"
#include "sites.h"
#include "support.h"

using namespace canopy::planner;
using namespace canopy::planner::testing;

namespace {

std::int64_t whole_steps(const Schedule& s) {
  std::int64_t n = 0;
  for (const auto& steps : s.steps) n += static_cast<std::int64_t>(steps.size());
  return n;
}

// 2 clusters of 2 nodes of 4 ranks, ranks in order: hierarchical's node levels may be
// staged (shm-reduce-scatter-gather over 4 ranks is 4 x 4 messages per chunk).
std::shared_ptr<const Topology> two_clusters(double port = 0) {
  Topology t;
  for (int r = 0; r < 16; ++r) {
    t.node.push_back(r / 4);
    t.cluster.push_back(r / 8);
  }
  t.clusters = 2;
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 2; ++b) {
      t.links.push_back(hockney_model(a == b ? 5e-6 : 1e-3, a == b ? 8e-10 : 8e-8, 0));
      if (a != b) t.links.back().port_per_byte = port;
    }
  check_topology(t);
  return std::make_shared<const Topology>(t);
}

}  // namespace

// The selector simulates a schedule only when its estimate is within kSimulationBudget
// steps; an estimate that falls short lets a p x p schedule through (reduce-scatter-gather
// at 4096 ranks was estimated at 16,384 steps and had 50 million: 26 s for one plan).
TEST_CASE("Registry: no whole schedule has more steps than its algorithm's estimate", "[registry]") {
  Sweep sweep;
  int built = 0;
  for (const Algorithm& a : algorithms()) {
    for (const bool ring : {false, true})
      for (const int p : {2, 3, 5, 8, 16, 33})
        for (const std::int64_t segment_bytes : {0, 4096, 1024})
          for (const std::int64_t bytes : {64000, 4 << 20})
          for (const bool commutative : {true, false}) {
            // 64000 B: at 1 KiB, 63 segments, fewer than one per rank's slice at 33 ranks
            // for reduce-scatter-gather. 4 MiB: a staged algorithm cuts 86 ring entries'
            // worth whatever it is asked. (Building 4 MiB in 1 KiB segments is slow: once.)
            if (bytes > 64000 && (segment_bytes == 1024 || p > 16 || !commutative)) continue;
            const bool bcast = a.collective == Collective::Bcast;
            Problem problem = make_problem(a.collective, p, p > 2 ? 1 : 0, bcast ? bytes : bytes / 8, bcast ? 1 : 8,
                                           commutative, segment_bytes, default_model());
            if (a.topology_aware) {
              if (p != 16) continue;
              // They decline non-commutative operations: that pass of the loop takes
              // port= between the clusters instead, where their leaders' levels may be
              // the wide forms.
              const bool with_port = !commutative;
              problem.commutative = true;
              problem.topology = two_clusters(with_port ? 8e-9 : 0);
            }
            if (a.wide_area) problem.topology = sites_apart_with_port(p);
            if (ring) problem = with_staging_ring(problem);
            Schedule s;
            try {
              s = a.plan(problem);
            } catch (const PlanError&) {
              continue;  // declined (a staged algorithm without a ring, an order it cannot keep)
            }
            ++built;
            const std::int64_t steps = whole_steps(s);
            const std::int64_t estimate = estimated_whole_steps(a, problem);
            sweep.check(steps <= estimate, std::string(a.name) + " " + to_string(a.collective) + " p=" +
                                               std::to_string(p) + " segment_bytes=" + std::to_string(segment_bytes) +
                                               (ring ? " with the ring" : "") + ": " + std::to_string(steps) +
                                               " steps, estimated " + std::to_string(estimate));
          }
  }
  INFO(sweep.first);
  CHECK(sweep.failures == 0);
  // Every algorithm, staged and topology-aware ones included, was built somewhere.
  CHECK(built > static_cast<int>(algorithms().size()) * 4);
}

TEST_CASE("Registry: the tree estimate is four steps per rank and segment asked for", "[registry]") {
  Problem problem = make_problem(Collective::Reduce, 10, 0, 1000, 8, true, 0, default_model());
  CHECK(tree_steps_estimate(problem) == 40);
  problem.segment_bytes = 1000;  // 8000 B: 8 segments and a remainder counted whole
  CHECK(tree_steps_estimate(problem) == 4 * 10 * 9);
  problem.segment_counts = {500, 500};
  CHECK(tree_steps_estimate(problem) == 4 * 10 * 2);
  const Algorithm* rsg = find_algorithm(Collective::Reduce, "reduce-scatter-gather");
  REQUIRE(rsg != nullptr);
  problem.segment_counts.clear();
  problem.segment_bytes = 0;
  problem.nranks = 4096;
  // p x p: beyond the simulation budget however few segments are asked for.
  CHECK(estimated_whole_steps(*rsg, problem) >= std::int64_t{4096} * 4096);
}
