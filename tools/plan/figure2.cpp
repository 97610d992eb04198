#include "tools/plan/figure2.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "planner/algorithms/canon.h"
#include "tools/common/svg.h"

namespace canopy::tools {

namespace pc = canopy::planner::canon;

namespace {

// Strategy length / optimal length for every n: the strategy's tree for max_n holds
// the tree for every smaller n as a prefix (Algorithm 1 never looks at n), so one
// incremental pass times them all.
std::vector<double> ratios(const pc::ReductionTree& strategy, double d, double c, int max_n) {
  const std::vector<double> mine = pc::prefix_lengths(strategy.child, d, c);
  const std::vector<double> best = pc::canon_greedy_lengths(max_n, d, c);
  std::vector<double> out;
  for (int n = 2; n <= max_n; ++n) out.push_back(mine[n - 1] / best[n - 1]);
  return out;
}

}  // namespace

Figure2 figure2_curves(int max_n) {
  Figure2 f;
  for (int n = 2; n <= max_n; ++n) f.n.push_back(n);
  f.binomial_ratio = ratios(pc::binomial_strategy(max_n, 1, 1), 1, 1, max_n);
  f.fibonacci_ratio = ratios(pc::fibonacci_strategy(max_n, 1, 0), 1, 0, max_n);
  return f;
}

std::string figure2_csv(const Figure2& f) {
  std::string out = "n,binomial_ratio_d_eq_c,fibonacci_ratio_c_eq_0\n";
  char line[96];
  for (std::size_t i = 0; i < f.n.size(); ++i) {
    std::snprintf(line, sizeof line, "%d,%.6f,%.6f\n", f.n[i], f.binomial_ratio[i], f.fibonacci_ratio[i]);
    out += line;
  }
  return out;
}

std::string figure2_svg(const Figure2& f) {
  const double width = 720, height = 360, left = 60, right = 20, top = 30, bottom = 50;
  const double max_n = f.n.empty() ? 4 : std::max(4, f.n.back());
  svg::Document doc(width, height, "Figure 2 (000): strategy length / optimal length");
  svg::Axis x{svg::Scale::log10(2, max_n, left, width - right), "number of elements n (log scale)"};
  x.format = [](double n) { return std::to_string(static_cast<long long>(std::llround(n))); };
  // Both ratios lie between 1 and 2 (Theorems 18 and 19).
  svg::Axis y{svg::Scale::linear(1, 2, height - bottom, top), "", [](double r) {
                char buf[16];
                std::snprintf(buf, sizeof buf, "%.2f", r);
                return std::string(buf);
              }, {1.0, 1.25, 1.5, 1.75, 2.0}};
  doc.y_axis(y, left, width - right);
  doc.x_axis(x, height - bottom, top);
  doc.text((left + width - right) / 2, 18, "Figure 2 (000): strategy length / optimal length",
           {{"text-anchor", "middle"}});
  const std::pair<const std::vector<double>*, const char*> curves[] = {
      {&f.binomial_ratio, "binomial strategy, d = c"}, {&f.fibonacci_ratio, "Fibonacci strategy, min(d, c) = 0"}};
  std::vector<svg::LegendItem> legend;
  for (int c = 0; c < 2; ++c) {
    std::vector<std::pair<double, double>> points;
    for (std::size_t i = 0; i < f.n.size(); ++i) points.emplace_back(x.scale(f.n[i]), y.scale((*curves[c].first)[i]));
    doc.polyline(points, svg::palette(c), {{"class", "curve"}, {"data-label", curves[c].second}});
    legend.push_back({curves[c].second, svg::palette(c), true});
  }
  doc.legend(left + 10, top + 14, legend);
  return doc.str();
}

}  // namespace canopy::tools
