#include "tools/plan/figure2.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "planner/algorithms/canon.h"

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
  const double max_n = f.n.empty() ? 2 : f.n.back();
  auto x = [&](double n) { return left + (width - left - right) * std::log(n / 2) / std::log(max_n / 2); };
  auto y = [&](double r) { return top + (height - top - bottom) * (2.0 - r); };  // ratios 1..2
  std::string svg;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "<svg xmlns='http://www.w3.org/2000/svg' width='%.0f' height='%.0f' font-family='sans-serif' "
                "font-size='12'>\n<rect width='100%%' height='100%%' fill='white'/>\n",
                width, height);
  svg += buf;
  for (double r = 1.0; r <= 2.0001; r += 0.25) {
    std::snprintf(buf, sizeof buf,
                  "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#ddd'/><text x='%.1f' y='%.1f' "
                  "text-anchor='end'>%.2f</text>\n",
                  left, y(r), width - right, y(r), left - 6, y(r) + 4, r);
    svg += buf;
  }
  for (double n = 10; n <= max_n; n *= 10) {
    std::snprintf(buf, sizeof buf, "<text x='%.1f' y='%.1f' text-anchor='middle'>%.0f</text>\n", x(n),
                  height - bottom + 18, n);
    svg += buf;
  }
  std::snprintf(buf, sizeof buf,
                "<text x='%.1f' y='%.1f' text-anchor='middle'>number of elements n (log scale)</text>\n"
                "<text x='%.1f' y='18' text-anchor='middle'>Figure 2 (000): strategy length / optimal length</text>\n",
                (left + width - right) / 2, height - 10, (left + width - right) / 2);
  svg += buf;
  auto polyline = [&](const std::vector<double>& r, const char* colour) {
    std::string pts;
    for (std::size_t i = 0; i < f.n.size(); ++i) {
      std::snprintf(buf, sizeof buf, "%.1f,%.1f ", x(f.n[i]), y(r[i]));
      pts += buf;
    }
    return "<polyline fill='none' stroke='" + std::string(colour) + "' stroke-width='1' points='" + pts + "'/>\n";
  };
  svg += polyline(f.binomial_ratio, "#1f77b4");
  svg += polyline(f.fibonacci_ratio, "#d62728");
  std::snprintf(buf, sizeof buf,
                "<text x='%.1f' y='%.1f' fill='#1f77b4'>binomial strategy, d = c</text>\n"
                "<text x='%.1f' y='%.1f' fill='#d62728'>Fibonacci strategy, min(d, c) = 0</text>\n",
                left + 10, top + 14, left + 10, top + 30);
  svg += buf;
  return svg + "</svg>\n";
}

}  // namespace canopy::tools
