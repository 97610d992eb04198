// Figure 2 of 000 (Canon & Antoniu): the ratio of the binomial strategy's schedule
// length to the optimum when d = c, and of the Fibonacci strategy's when
// min(d, c) = 0, for 2 <= n <= max_n (the cases the paper conjectures are worst).
#pragma once

#include <string>
#include <vector>

namespace canopy::tools {

struct Figure2 {
  std::vector<int> n;
  std::vector<double> binomial_ratio;   // binomial strategy / optimal, d = c = 1
  std::vector<double> fibonacci_ratio;  // Fibonacci strategy / optimal, d = 1, c = 0
};

Figure2 figure2_curves(int max_n);
std::string figure2_csv(const Figure2& f);
// A self-contained SVG line chart, n on a log axis.
std::string figure2_svg(const Figure2& f);

}  // namespace canopy::tools
