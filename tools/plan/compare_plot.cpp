#include "tools/plan/compare_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "planner/describe.h"
#include "planner/registry.h"
#include "planner/select.h"
#include "tools/common/svg.h"

namespace canopy::tools {

using namespace canopy::planner;

std::vector<std::int64_t> doubling_sizes(std::int64_t min_bytes, std::int64_t max_bytes, std::int64_t element_bytes) {
  if (min_bytes <= 0 || max_bytes < min_bytes)
    throw std::invalid_argument("--min-bytes must be positive and at most --max-bytes");
  if (min_bytes % element_bytes != 0)
    throw std::invalid_argument("--min-bytes must be a multiple of --element-bytes");
  std::vector<std::int64_t> out;
  for (std::int64_t b = min_bytes; b <= max_bytes; b *= 2) {
    out.push_back(b);
    if (b > std::numeric_limits<std::int64_t>::max() / 2) break;
  }
  return out;
}

SizeComparison compare_over_sizes(const Problem& base, std::int64_t segment_bytes,
                                  const std::vector<std::int64_t>& sizes) {
  SizeComparison out;
  out.base = base;
  out.sizes = sizes;
  const std::vector<std::string> names = algorithm_names(base.collective);
  std::vector<SizeCurve> curves(names.size());
  for (std::size_t a = 0; a < names.size(); ++a) curves[a].algorithm = names[a];
  Request request;
  request.segment_bytes = segment_bytes;
  for (std::int64_t bytes : sizes) {
    Problem p = base;
    p.count = bytes / base.element_bytes;
    std::vector<Choice> choices;
    try {
      choices = rank_choices(p, request);
    } catch (const PlanError&) {
      continue;  // every algorithm declined this size
    }
    for (const Choice& choice : choices) {
      const auto it = std::find(names.begin(), names.end(), choice.algorithm);
      if (it == names.end()) continue;
      SizeCurve& c = curves[it - names.begin()];
      c.bytes.push_back(bytes);
      c.predicted.push_back(choice.predicted);
    }
  }
  for (SizeCurve& c : curves)
    if (!c.bytes.empty()) out.curves.push_back(std::move(c));
  return out;
}

std::string format_bytes(std::int64_t bytes) {
  const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  std::int64_t v = bytes;
  while (u < 4 && v >= 1024 && v % 1024 == 0) v /= 1024, ++u;
  return std::to_string(v) + " " + units[u];
}

namespace {

std::string number17(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// Byte ticks at powers of two, spaced so that at most about ten fit.
std::vector<double> byte_ticks(std::int64_t lo, std::int64_t hi) {
  for (int every : {1, 2, 5, 10, 20}) {
    std::vector<double> ticks;
    for (int e = 0; e < 63; e += every) {
      const std::int64_t v = std::int64_t{1} << e;
      if (v >= lo && v <= hi) ticks.push_back(static_cast<double>(v));
    }
    if (ticks.size() <= 10) return ticks;
  }
  return {static_cast<double>(lo), static_cast<double>(hi)};
}

// A decade tick in the unit that keeps it short: "1 us", "100 us", "10 ms".
std::string time_tick(double seconds) {
  const std::pair<double, const char*> units[] = {{1e-9, "ns"}, {1e-6, "\xc2\xb5s"}, {1e-3, "ms"}, {1, "s"}};
  std::pair<double, const char*> unit = units[0];
  for (const auto& u : units)
    if (seconds >= u.first * (1 - 1e-9)) unit = u;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g %s", seconds / unit.first, unit.second);
  return buf;
}

}  // namespace

std::string comparison_svg(const SizeComparison& c) {
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const SizeCurve& curve : c.curves)
    for (double t : curve.predicted)
      if (t > 0) lo = std::min(lo, t), hi = std::max(hi, t);
  if (!(hi > 0)) throw std::runtime_error("nothing to plot: no algorithm predicts a positive time (one rank?)");
  // Whole decades, so the time ticks (powers of ten) frame the curves.
  lo = std::pow(10.0, std::floor(std::log10(lo)));
  hi = std::pow(10.0, std::ceil(std::log10(hi)));
  if (hi <= lo) hi = lo * 10;

  const bool units = c.base.model.kind == "overlap";  // (d, c): model units, not seconds
  const double width = 860, height = 480, left = 80, plot_right = 640, top = 50, bottom = 60;
  const std::int64_t min_bytes = c.sizes.front(), max_bytes = std::max(c.sizes.back(), 2 * c.sizes.front());
  const std::string title = planner::on_ranks(c.base.collective, c.base.nranks, c.base.root) +
                            ": predicted time of each algorithm at its best segment size";
  svg::Document doc(width, height, title);
  svg::Axis x{svg::Scale::log10(static_cast<double>(min_bytes), static_cast<double>(max_bytes), left, plot_right),
              "message size (log scale)", [](double b) { return format_bytes(std::llround(b)); },
              byte_ticks(min_bytes, max_bytes)};
  svg::Axis y{svg::Scale::log10(lo, hi, height - bottom, top), units ? "model units (log scale)" : "time (log scale)",
              [units](double t) {
                if (!units) return time_tick(t);
                char buf[32];
                std::snprintf(buf, sizeof buf, "%g", t);
                return std::string(buf);
              }};
  doc.y_axis(y, left, plot_right);
  doc.x_axis(x, height - bottom, top);
  doc.text(left, 18, title, {{"font-weight", "bold"}});
  doc.text(left, 36, "model " + c.base.model.spec());

  std::vector<svg::LegendItem> legend;
  for (std::size_t i = 0; i < c.curves.size(); ++i) {
    const SizeCurve& curve = c.curves[i];
    std::vector<std::pair<double, double>> points;
    std::string bytes, predicted;
    for (std::size_t k = 0; k < curve.bytes.size(); ++k) {
      if (!(curve.predicted[k] > 0)) continue;  // a log axis has no place for 0
      points.emplace_back(x.scale(static_cast<double>(curve.bytes[k])), y.scale(curve.predicted[k]));
      bytes += (bytes.empty() ? "" : " ") + std::to_string(curve.bytes[k]);
      predicted += (predicted.empty() ? "" : " ") + number17(curve.predicted[k]);
    }
    const char* colour = svg::palette(static_cast<int>(i));
    const std::string dash = svg::dash_pattern(static_cast<int>(i));
    svg::Attributes attributes = {{"class", "curve"}, {"data-algorithm", curve.algorithm}, {"data-bytes", bytes},
                                  {"data-predicted", predicted}};
    if (!dash.empty()) attributes.emplace_back("stroke-dasharray", dash);
    doc.polyline(points, colour, attributes);
    legend.push_back({curve.algorithm, colour, true, dash});
  }
  doc.legend(plot_right + 20, top + 10, legend);
  return doc.str();
}

}  // namespace canopy::tools
