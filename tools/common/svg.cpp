#include "tools/common/svg.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace canopy::tools::svg {

std::string escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string coordinate(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

const char* palette(int i) {
  static const char* const colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                        "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  const int n = static_cast<int>(sizeof colours / sizeof colours[0]);
  return colours[((i % n) + n) % n];
}

std::string dash_pattern(int i) {
  const char* const patterns[] = {"", "6 3", "2 2", "8 3 2 3"};
  return patterns[(i / 10) % 4];
}

Scale Scale::linear(double lo, double hi, double px_lo, double px_hi) {
  if (!(hi > lo)) throw std::invalid_argument("svg: a scale needs lo < hi");
  return Scale{lo, hi, px_lo, px_hi, false};
}

Scale Scale::log10(double lo, double hi, double px_lo, double px_hi) {
  if (!(lo > 0) || !(hi > lo)) throw std::invalid_argument("svg: a log scale needs 0 < lo < hi");
  return Scale{lo, hi, px_lo, px_hi, true};
}

double Scale::operator()(double v) const {
  const double f = log ? std::log10(v / lo) / std::log10(hi / lo) : (v - lo) / (hi - lo);
  return px_lo + f * (px_hi - px_lo);
}

std::vector<double> Scale::ticks(int target) const {
  std::vector<double> out;
  // A small tolerance keeps ticks that sit on an end despite rounding.
  const double slack = 1e-9 * (hi - lo);
  if (log) {
    for (double p = std::floor(std::log10(lo)); p <= std::ceil(std::log10(hi)); ++p) {
      const double v = std::pow(10.0, p);
      if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) out.push_back(v);
    }
    return out;
  }
  // The 1-2-5 step nearest to (hi - lo) / target.
  const double raw = (hi - lo) / std::max(target, 1);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * magnitude >= raw * (1 - 1e-9)) {
      step = m * magnitude;
      break;
    }
  for (double v = std::ceil((lo - slack) / step) * step; v <= hi + slack; v += step)
    out.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
  return out;
}

Document::Document(double width, double height, const std::string& title)
    : width_(width), height_(height), title_(title) {}

void Document::element(const std::string& name, const Attributes& attributes, const std::string& content) {
  body_ += "<" + name;
  for (const auto& [key, value] : attributes) body_ += " " + key + "='" + escape(value) + "'";
  if (content.empty()) body_ += "/>\n";
  else body_ += ">" + content + "</" + name + ">\n";
}

void Document::rect(double x, double y, double w, double h, const std::string& fill, const Attributes& extra,
                    const std::string& tooltip) {
  Attributes a = {{"x", coordinate(x)}, {"y", coordinate(y)}, {"width", coordinate(w)},
                  {"height", coordinate(h)}, {"fill", fill}};
  a.insert(a.end(), extra.begin(), extra.end());
  element("rect", a, tooltip.empty() ? "" : "<title>" + escape(tooltip) + "</title>");
}

void Document::line(double x1, double y1, double x2, double y2, const std::string& stroke, const Attributes& extra) {
  Attributes a = {{"x1", coordinate(x1)}, {"y1", coordinate(y1)}, {"x2", coordinate(x2)},
                  {"y2", coordinate(y2)}, {"stroke", stroke}};
  a.insert(a.end(), extra.begin(), extra.end());
  element("line", a);
}

void Document::polyline(const std::vector<std::pair<double, double>>& points, const std::string& stroke,
                        const Attributes& extra) {
  std::string pts;
  for (const auto& [x, y] : points) pts += (pts.empty() ? "" : " ") + coordinate(x) + "," + coordinate(y);
  Attributes a = {{"fill", "none"}, {"stroke", stroke}, {"stroke-width", "1.5"}, {"points", pts}};
  a.insert(a.end(), extra.begin(), extra.end());
  element("polyline", a);
}

void Document::text(double x, double y, const std::string& content, const Attributes& extra) {
  Attributes a = {{"x", coordinate(x)}, {"y", coordinate(y)}};
  a.insert(a.end(), extra.begin(), extra.end());
  element("text", a, escape(content));
}

namespace {

std::string default_format(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

void Document::x_axis(const Axis& axis, double y, double grid_top) {
  const auto format = axis.format ? axis.format : default_format;
  line(axis.scale.px_lo, y, axis.scale.px_hi, y, "#444");
  for (double v : axis.ticks.empty() ? axis.scale.ticks() : axis.ticks) {
    const double x = axis.scale(v);
    if (axis.grid) line(x, grid_top, x, y, "#ddd");
    line(x, y, x, y + 4, "#444");
    text(x, y + 17, format(v), {{"text-anchor", "middle"}});
  }
  if (!axis.label.empty())
    text((axis.scale.px_lo + axis.scale.px_hi) / 2, y + 36, axis.label, {{"text-anchor", "middle"}});
}

void Document::y_axis(const Axis& axis, double x, double grid_right) {
  const auto format = axis.format ? axis.format : default_format;
  line(x, axis.scale.px_lo, x, axis.scale.px_hi, "#444");
  for (double v : axis.ticks.empty() ? axis.scale.ticks() : axis.ticks) {
    const double y = axis.scale(v);
    if (axis.grid) line(x, y, grid_right, y, "#ddd");
    line(x - 4, y, x, y, "#444");
    text(x - 6, y + 4, format(v), {{"text-anchor", "end"}});
  }
  const double mid = (axis.scale.px_lo + axis.scale.px_hi) / 2;
  if (!axis.label.empty())
    text(14, mid, axis.label,
       {{"text-anchor", "middle"}, {"transform", "rotate(-90 14 " + coordinate(mid) + ")"}});
}

void Document::legend(double x, double y, const std::vector<LegendItem>& items) {
  for (std::size_t i = 0; i < items.size(); ++i) {
    const double row = y + 16.0 * static_cast<double>(i);
    Attributes style = {{"stroke-width", "2"}};
    if (!items[i].dash.empty()) style.emplace_back("stroke-dasharray", items[i].dash);
    if (items[i].line) line(x, row - 4, x + 18, row - 4, items[i].colour, style);
    else rect(x, row - 10, 18, 10, items[i].colour);
    text(x + 24, row, items[i].label, {{"fill", items[i].line ? items[i].colour : "black"}});
  }
}

std::string Document::str() const {
  std::string head = "<svg xmlns='http://www.w3.org/2000/svg' width='" + coordinate(width_) + "' height='" +
                     coordinate(height_) + "' font-family='sans-serif' font-size='12'";
  for (const auto& [key, value] : root_) head += " " + key + "='" + escape(value) + "'";
  head += ">\n<title>" + escape(title_) + "</title>\n<rect width='100%' height='100%' fill='white'/>\n";
  return head + body_ + "</svg>\n";
}

}  // namespace canopy::tools::svg
