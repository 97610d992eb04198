// A small SVG writer for the tools' charts (canopy-plan's figure2 and --compare
// plots, canopy-view's Gantt charts): shapes, escaped text, linear and log10 axes
// with tick labels, and a legend. It writes text only; what a chart means stays in
// the tool that draws it.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace canopy::tools::svg {

// Extra attributes of an element, e.g. {{"class", "bar send"}, {"data-rank", "3"}};
// values are escaped when written.
using Attributes = std::vector<std::pair<std::string, std::string>>;

// Text made safe for SVG content and attribute values (& < > " ').
std::string escape(const std::string& text);

// A number as SVG coordinates want it: fixed, one decimal.
std::string coordinate(double v);

// The i-th of ten distinguishable colours (cycles).
const char* palette(int i);
// A dash pattern for the i-th curve, so that curves whose colours repeat (i >= 10)
// still differ: "" (solid) for the first ten, then dashed.
std::string dash_pattern(int i);

// Maps data values to pixels, linearly or by log10 (then both ends must be > 0).
struct Scale {
  double lo = 0, hi = 1;        // data range
  double px_lo = 0, px_hi = 1;  // pixel range (px_hi < px_lo for a y axis growing upwards)
  bool log = false;

  static Scale linear(double lo, double hi, double px_lo, double px_hi);
  static Scale log10(double lo, double hi, double px_lo, double px_hi);

  double operator()(double v) const;
  // Ticks inside [lo, hi]: 1-2-5 steps (about `target` of them) when linear, powers
  // of ten when log.
  std::vector<double> ticks(int target = 6) const;
};

// One axis of a chart: where it lies, its ticks and their labels, and optional grid
// lines across the plot area.
struct Axis {
  Scale scale;
  std::string label;
  std::function<std::string(double)> format;  // tick label; default "%g"
  std::vector<double> ticks;                  // empty: scale.ticks()
  bool grid = true;
};

struct LegendItem {
  std::string label;
  std::string colour;
  bool line = false;  // a line sample (curves) instead of a filled box (bars)
  std::string dash;   // the line's stroke-dasharray; empty: solid
};

class Document {
 public:
  Document(double width, double height, const std::string& title);

  double width() const { return width_; }
  // An attribute of the <svg> element itself (e.g. data a test reads back).
  void root_attribute(const std::string& name, const std::string& value) { root_.emplace_back(name, value); }
  double height() const { return height_; }

  void rect(double x, double y, double w, double h, const std::string& fill, const Attributes& extra = {},
            const std::string& tooltip = "");
  void line(double x1, double y1, double x2, double y2, const std::string& stroke, const Attributes& extra = {});
  void polyline(const std::vector<std::pair<double, double>>& points, const std::string& stroke,
                const Attributes& extra = {});
  void text(double x, double y, const std::string& content, const Attributes& extra = {});

  // A horizontal axis at pixel row `y`; grid lines run up to `grid_top`.
  void x_axis(const Axis& axis, double y, double grid_top);
  // A vertical axis at pixel column `x`; grid lines run right to `grid_right`.
  void y_axis(const Axis& axis, double x, double grid_right);
  // One row per item, from (x, y) downwards.
  void legend(double x, double y, const std::vector<LegendItem>& items);

  // The whole document; the title is the SVG's <title> and needs no text element.
  std::string str() const;

 private:
  void element(const std::string& name, const Attributes& attributes, const std::string& content = "");

  double width_, height_;
  std::string title_;
  Attributes root_;
  std::string body_;
};

}  // namespace canopy::tools::svg
