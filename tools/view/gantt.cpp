#include "tools/view/gantt.h"

#include <algorithm>
#include <cstdio>

#include "planner/describe.h"
#include "tools/common/svg.h"

namespace canopy::tools {

using namespace canopy::planner;

namespace {

// The lanes of a rank's row, top to bottom, with their colours and legend words.
enum Lane { kSend, kRecv, kCompute, kLanes };

struct KindStyle {
  const char* name;  // class and legend word
  const char* colour;
  Lane lane;
};

KindStyle style_of(StepKind k) {
  switch (k) {
    case StepKind::Send: return {"send", "#1f77b4", kSend};
    case StepKind::Recv: return {"receive", "#ff7f0e", kRecv};
    case StepKind::Reduce: return {"reduce", "#2ca02c", kCompute};
    case StepKind::Copy: return {"copy", "#9467bd", kCompute};
    // Staging-ring steps are the rank's own copies and reductions: the stage in the
    // send lane, the copy out in the receive lane, a reduction where it lies with the others.
    case StepKind::Stage: return {"stage", "#17becf", kSend};
    case StepKind::Fetch: return {"fetch", "#bcbd22", kRecv};
    case StepKind::FetchReduce: return {"fetch-reduce", "#8c564b", kCompute};
    // Direct steps are copies too, by the accessor's core: a write out in the send lane,
    // a read in the receive lane. An expose takes no time and is never drawn.
    case StepKind::Expose: return {"expose", "#7f7f7f", kCompute};
    case StepKind::Read: return {"read", "#e377c2", kRecv};
    case StepKind::Write: return {"write", "#d62728", kSend};
  }
  return {"?", "black", kCompute};
}

constexpr int kStepKinds = static_cast<int>(StepKind::Write) + 1;

// A bar: one step, or neighbouring steps merged because they were too thin to see.
struct Bar {
  double start, end;
  int steps;
  StepKind kind;                // the kind that takes most of its time (reduce and copy share a lane)
  std::string what;             // the step's description when it stands for one step
  double busy[kStepKinds] = {};  // time per StepKind
};

std::string number17(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// The display unit for a time axis ending at `span`: factor and name.
std::pair<double, const char*> time_unit(double span, const CostModel& model) {
  if (model.kind == "overlap") return {1, "units"};
  if (span < 1e-3) return {1e6, "\xc2\xb5s"};  // µs
  if (span < 1) return {1e3, "ms"};
  return {1, "s"};
}

// A rank's bars in one lane, in start order, thin neighbours merged.
std::vector<Bar> lane_bars(const Schedule& s, const Simulation& sim, int rank, Lane lane, const svg::Scale& x,
                           double min_px) {
  std::vector<Bar> bars;
  for (std::size_t i = 0; i < s.steps[rank].size(); ++i) {
    const Step& st = s.steps[rank][i];
    const StepTiming& t = sim.timing[rank][i];
    if (style_of(st.kind).lane != lane || !(t.end > t.start)) continue;  // zero-length steps take no time
    Bar b{t.start, t.end, 1, st.kind, describe(st)};
    b.busy[static_cast<int>(st.kind)] = t.end - t.start;
    bars.push_back(std::move(b));
  }
  std::stable_sort(bars.begin(), bars.end(), [](const Bar& a, const Bar& b) { return a.start < b.start; });
  std::vector<Bar> merged;
  for (Bar& b : bars) {
    if (!merged.empty()) {
      Bar& last = merged.back();
      const bool thin = x(last.end) - x(last.start) < min_px || x(b.end) - x(b.start) < min_px;
      if (thin && x(b.start) - x(last.end) < 1) {
        last.end = std::max(last.end, b.end);
        last.steps += b.steps;
        for (int k = 0; k < kStepKinds; ++k) last.busy[k] += b.busy[k];
        last.kind = static_cast<StepKind>(std::max_element(last.busy, last.busy + kStepKinds) - last.busy);
        continue;
      }
    }
    merged.push_back(std::move(b));
  }
  return merged;
}

// Whether any step of `s` is of the kinds `is` picks (Step::is_staging, is_direct).
bool has_step(const Schedule& s, bool (Step::*is)() const) {
  for (const auto& steps : s.steps)
    for (const Step& st : steps)
      if ((st.*is)()) return true;
  return false;
}

}  // namespace

std::string format_time(double t, const CostModel& model) {
  if (model.kind != "overlap") return format_seconds(t);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g units", t);
  return buf;
}

std::string gantt_svg(const Schedule& s, const Simulation& sim, const CostModel& model, const GanttOptions& o) {
  const int shown = std::min(s.nranks, std::max(o.max_ranks, 1));
  const double left = 90, right = 150, top = 64, lane_h = 6, row_h = kLanes * lane_h + 8, bottom = 70;
  const double plot_bottom = top + row_h * shown;
  const double span = o.span > 0 ? o.span : sim.makespan > 0 ? sim.makespan : 1;  // nothing to do: an empty axis
  const auto [factor, unit] = time_unit(span, model);
  const std::string makespan_text =
      o.label + " " + format_time(sim.makespan, model) + (o.under.empty() ? " under " + model.spec() : o.under);

  svg::Document doc(o.width, plot_bottom + bottom, summarize(s) + "; " + makespan_text);
  doc.root_attribute("data-makespan", number17(sim.makespan));
  doc.root_attribute("data-ranks-drawn", std::to_string(shown));
  doc.text(left, 20, summarize(s), {{"font-weight", "bold"}});
  doc.text(left, 38, makespan_text);

  svg::Axis axis{svg::Scale::linear(0, span, left, o.width - right), std::string("time (") + unit + ")",
                 [factor = factor](double t) {
                   char buf[32];
                   std::snprintf(buf, sizeof buf, "%g", t * factor);
                   return std::string(buf);
                 }};
  doc.x_axis(axis, plot_bottom, top - 4);

  for (int r = 0; r < shown; ++r) {
    const double row_top = top + row_h * r;
    doc.text(left - 8, row_top + row_h / 2 + 2, "rank " + std::to_string(r) + (r == s.root ? " (root)" : ""),
             {{"text-anchor", "end"}});
    for (int lane = 0; lane < kLanes; ++lane)
      for (const Bar& b : lane_bars(s, sim, r, static_cast<Lane>(lane), axis.scale, o.min_bar_px)) {
        const KindStyle k = style_of(b.kind);
        const std::string name = k.name;
        const std::string when = " (" + format_time(b.start, model) + " to " + format_time(b.end, model) + ")";
        const std::string tooltip = "rank " + std::to_string(r) + ": " +
                                    (b.steps == 1 ? b.what : std::to_string(b.steps) + " steps, mostly " + name) + when;
        const double x0 = axis.scale(b.start), w = axis.scale(b.end) - x0;
        // Back-to-back bars keep a pixel between them, so that two transfers do not
        // read as one; a bar too thin to see is widened to one pixel.
        doc.rect(x0, row_top + lane * lane_h, w >= 3 ? w - 1 : std::max(w, 1.0), lane_h - 1, k.colour,
                 {{"class", "bar " + name + (b.steps > 1 ? " merged" : "")},
                  {"data-rank", std::to_string(r)},
                  {"data-steps", std::to_string(b.steps)},
                  {"data-start", number17(b.start)},
                  {"data-end", number17(b.end)}},
                 tooltip);
      }
  }
  if (shown < s.nranks)
    doc.text(left, plot_bottom + 56,
             "ranks " + std::to_string(shown) + " to " + std::to_string(s.nranks - 1) + " not drawn (--max-ranks " +
                 std::to_string(o.max_ranks) + ")");
  std::vector<svg::LegendItem> legend = {{"send", style_of(StepKind::Send).colour},
                                                              {"receive", style_of(StepKind::Recv).colour},
                                                              {"reduce", style_of(StepKind::Reduce).colour},
                                                              {"copy", style_of(StepKind::Copy).colour}};
  // A direct schedule has a ring too (for the exposers' addresses) that it may stage nothing through.
  const bool staged = s.uses_staging() && has_step(s, &Step::is_staging);
  const bool direct = s.uses_direct();
  if (staged)
    for (StepKind k : {StepKind::Stage, StepKind::Fetch, StepKind::FetchReduce})
      legend.push_back({style_of(k).name, style_of(k).colour});  // NOLINT
  if (direct)
    for (StepKind k : {StepKind::Read, StepKind::Write}) legend.push_back({style_of(k).name, style_of(k).colour});
  doc.legend(o.width - right + 16, top + 8, legend);
  const double below = top + 84 + 16.0 * static_cast<double>(legend.size() - 4);
  doc.text(o.width - right + 16, below, "lanes per rank:");
  const std::string copies_out = std::string(staged ? ", stage" : "") + (direct ? ", write" : "");
  const std::string copies_in = std::string(staged ? "fetch" : "") + (staged && direct ? ", " : "") + (direct ? "read" : "");
  doc.text(o.width - right + 16, below + 16, "send" + copies_out + " / receive" + (copies_in.empty() ? " /" : ","));
  doc.text(o.width - right + 16, below + 32, copies_in.empty() ? "reduce, copy" : copies_in + " / reduce, copy");
  return doc.str();
}

}  // namespace canopy::tools
