// The simulation of 004 (Steffenel) section 6, Figures 7 and 8: the mean makespan of
// each grid-aware broadcast heuristic (planner/grid_heuristics.h) over random grids
// drawn from Table 3, one row per number of clusters.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace canopy::tools {

struct GridSimTable {
  int draws = 0;
  std::uint64_t seed = 0;
  std::vector<std::string> heuristics;     // names, in grid_heuristics() order
  std::vector<int> clusters;               // one row per cluster count
  std::vector<std::vector<double>> mean;   // mean[row][heuristic], seconds
  double seconds = 0;                      // wall time the simulation took
};

// Rows min_clusters..max_clusters; each row simulates `draws` grids from `seed`.
GridSimTable grid_sim_table(int min_clusters, int max_clusters, int draws, std::uint64_t seed);
// A fixed-width table: "clusters" then one column per heuristic, seconds.
std::string grid_sim_text(const GridSimTable& t);
std::string grid_sim_csv(const GridSimTable& t);
// A self-contained SVG line chart: mean makespan against the number of clusters.
std::string grid_sim_svg(const GridSimTable& t);

}  // namespace canopy::tools
