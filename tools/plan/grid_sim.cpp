#include "tools/plan/grid_sim.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "planner/grid_heuristics.h"
#include "tools/common/svg.h"

namespace canopy::tools {

namespace pl = canopy::planner;

GridSimTable grid_sim_table(int min_clusters, int max_clusters, int draws, std::uint64_t seed) {
  if (min_clusters < 2) throw std::invalid_argument("--min-clusters must be at least 2");
  if (max_clusters < min_clusters) throw std::invalid_argument("--max-clusters must be at least --min-clusters");
  if (draws < 1) throw std::invalid_argument("--draws must be positive");
  const auto begin = std::chrono::steady_clock::now();
  GridSimTable t;
  t.draws = draws;
  t.seed = seed;
  for (const auto& info : pl::grid_heuristics()) t.heuristics.emplace_back(info.name);
  for (int c = min_clusters; c <= max_clusters; ++c) {
    t.clusters.push_back(c);
    t.mean.push_back(pl::simulate_grid_heuristics(c, draws, seed).mean_makespan);
  }
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  return t;
}

std::string grid_sim_text(const GridSimTable& t) {
  std::string out = "clusters";
  char cell[64];
  for (const auto& name : t.heuristics) {
    std::snprintf(cell, sizeof cell, " %12s", name.c_str());
    out += cell;
  }
  out += "\n";
  for (std::size_t r = 0; r < t.clusters.size(); ++r) {
    std::snprintf(cell, sizeof cell, "%8d", t.clusters[r]);
    out += cell;
    for (double m : t.mean[r]) {
      std::snprintf(cell, sizeof cell, " %12.4f", m);
      out += cell;
    }
    out += "\n";
  }
  return out;
}

std::string grid_sim_csv(const GridSimTable& t) {
  std::string out = "clusters";
  for (const auto& name : t.heuristics) out += "," + name;
  out += "\n";
  char cell[64];
  for (std::size_t r = 0; r < t.clusters.size(); ++r) {
    out += std::to_string(t.clusters[r]);
    for (double m : t.mean[r]) {
      std::snprintf(cell, sizeof cell, ",%.6f", m);
      out += cell;
    }
    out += "\n";
  }
  return out;
}

std::string grid_sim_svg(const GridSimTable& t) {
  const double width = 760, height = 420, left = 64, right = 20, top = 30, bottom = 50;
  const std::string title = "004 section 6: mean makespan of the grid broadcast heuristics (" +
                            std::to_string(t.draws) + " draws per point)";
  svg::Document doc(width, height, title);
  const double lo = t.clusters.empty() ? 2 : t.clusters.front();
  const double hi = t.clusters.empty() ? 3 : std::max(t.clusters.back(), t.clusters.front() + 1);
  svg::Axis x{svg::Scale::linear(lo, hi, left, width - right), "number of clusters"};
  x.format = [](double c) { return std::to_string(static_cast<long long>(std::llround(c))); };
  double top_value = 1;
  for (const auto& row : t.mean)
    for (double m : row) top_value = std::max(top_value, m);
  svg::Axis y{svg::Scale::linear(0, std::ceil(top_value), height - bottom, top), "mean makespan (s)"};
  doc.y_axis(y, left, width - right);
  doc.x_axis(x, height - bottom, top);
  doc.text((left + width - right) / 2, 18, title, {{"text-anchor", "middle"}});
  std::vector<svg::LegendItem> legend;
  for (std::size_t h = 0; h < t.heuristics.size(); ++h) {
    std::vector<std::pair<double, double>> points;
    for (std::size_t r = 0; r < t.clusters.size(); ++r) points.emplace_back(x.scale(t.clusters[r]), y.scale(t.mean[r][h]));
    const int i = static_cast<int>(h);
    svg::Attributes extra = {{"class", "curve"}, {"data-label", t.heuristics[h]}};
    if (!svg::dash_pattern(i).empty()) extra.emplace_back("stroke-dasharray", svg::dash_pattern(i));
    doc.polyline(points, svg::palette(i), extra);
    legend.push_back({t.heuristics[h], svg::palette(i), true, svg::dash_pattern(i)});
  }
  doc.legend(left + 10, top + 14, legend);
  return doc.str();
}

}  // namespace canopy::tools
