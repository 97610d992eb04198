#include "planner/describe.h"

#include <algorithm>
#include <cstdio>

#include "planner/registry.h"
#include "planner/tree.h"

namespace canopy::planner {

std::string on_ranks(Collective c, int nranks, int root) {
  std::string out = std::string(to_string(c)) + " on " + std::to_string(nranks) + " ranks";
  if (c != Collective::Allreduce) out += ", root " + std::to_string(root);
  return out;
}

std::string summarize(const Schedule& s) {
  std::string out = std::string(to_string(s.collective)) + " of " + std::to_string(s.bytes()) + " B over " +
                    std::to_string(s.nranks) + " ranks";
  if (s.collective != Collective::Allreduce) out += ", root " + std::to_string(s.root);
  out += ": " + s.algorithm;
  if (s.segments.size() > 1) {
    // Uniform layouts: every segment but a shorter last one has the first one's size.
    // Others (explicit layouts, scatter-allgather's blocks) show their range of sizes.
    std::int64_t lo = s.segments.front().count, hi = lo;
    for (const Segment& seg : s.segments) lo = std::min(lo, seg.count), hi = std::max(hi, seg.count);
    bool uniform = true;
    for (std::size_t j = 0; j + 1 < s.segments.size(); ++j) uniform &= s.segments[j].count == s.segments.front().count;
    uniform &= s.segments.back().count <= s.segments.front().count;
    out += ", " + std::to_string(s.segments.size()) + " segments of ";
    if (uniform) out += std::to_string(s.segment_bytes(0)) + " B";
    else out += std::to_string(lo * s.element_bytes) + ".." + std::to_string(hi * s.element_bytes) + " B";
  } else
    out += ", unsegmented";
  // (A schedule may keep rank order for a commutative op too: recursive doubling does,
  // so that every rank gets the same bits. The summary says what the schedule does.)
  if (!s.commutative) out += ", rank-ordered";
  if (s.is_view()) out += "; rank " + std::to_string(s.view_rank) + "'s view";
  return out;
}

std::string format_seconds(double seconds) {
  char buf[32];
  if (seconds < 1e-6) std::snprintf(buf, sizeof buf, "%.0f ns", seconds * 1e9);
  else if (seconds < 1e-3) std::snprintf(buf, sizeof buf, "%.1f us", seconds * 1e6);
  else if (seconds < 1) std::snprintf(buf, sizeof buf, "%.2f ms", seconds * 1e3);
  else std::snprintf(buf, sizeof buf, "%.2f s", seconds);
  return buf;
}

namespace {

// The peers of the steps `pick` selects, each once, in order of first appearance.
template <typename Pick>
std::string peer_list(const std::vector<Step>& steps, Pick pick) {
  std::vector<int> peers;
  for (const Step& st : steps)
    if (pick(st) && std::find(peers.begin(), peers.end(), st.peer) == peers.end()) peers.push_back(st.peer);
  if (peers.empty()) return "none";
  std::string out;
  for (std::size_t i = 0; i < peers.size(); ++i) {
    if (i == 8 && peers.size() > 10) return out + ", ... (" + std::to_string(peers.size()) + " ranks)";
    out += (i ? ", " : "") + std::to_string(peers[i]);
  }
  return out;
}

// "rank r of p: N steps, K scratch slots; receives from ...; sends to ..." and, for a
// schedule through the staging ring, whom it fetches from and how many segments it
// stages; for a direct one, whom it reads from and writes to, and how many accesses its
// Expose lets in.
std::string rank_summary(const Schedule& s, int rank) {
  const std::vector<Step>& steps = s.steps_of(rank);
  std::string out = "rank " + std::to_string(rank) + " of " + std::to_string(s.nranks) + ": " +
                    std::to_string(steps.size()) + " steps, " + std::to_string(s.slots_of(rank)) +
                    " scratch slots; receives from " +
                    peer_list(steps, [](const Step& st) { return st.kind == StepKind::Recv; }) + "; sends to " +
                    peer_list(steps, [](const Step& st) { return st.kind == StepKind::Send; });
  // A direct schedule holds a ring for its exposers' addresses, and may stage nothing
  // through it: fetches and stages are listed there only for a rank that has some.
  const bool staged = std::any_of(steps.begin(), steps.end(), [](const Step& st) { return st.is_staging(); });
  if (s.uses_staging() && (staged || !s.uses_direct())) {
    const auto stages = std::count_if(steps.begin(), steps.end(), [](const Step& st) { return st.kind == StepKind::Stage; });
    out += "; fetches from " + peer_list(steps, [](const Step& st) {
             return st.kind == StepKind::Fetch || st.kind == StepKind::FetchReduce;
           }) + "; stages " + std::to_string(stages) + " segments";
  }
  if (s.uses_direct()) {
    const auto exposes = std::find_if(steps.begin(), steps.end(), [](const Step& st) { return st.kind == StepKind::Expose; });
    out += "; reads from " + peer_list(steps, [](const Step& st) { return st.kind == StepKind::Read; }) +
           "; writes to " + peer_list(steps, [](const Step& st) { return st.kind == StepKind::Write; }) +
           (exposes == steps.end() ? "; exposes nothing"
                                   : "; exposes its buffer to " + std::to_string(exposes->readers) +
                                         (exposes->readers == 1 ? " access" : " accesses"));
  }
  return out + "\n";
}

std::string describe_steps(int rank, const std::vector<Step>& steps) {
  std::string out = "rank " + std::to_string(rank) + ":";
  if (steps.empty()) out += " (nothing)";
  out += "\n";
  for (const Step& st : steps) out += "  " + describe(st) + "\n";
  return out;
}

}  // namespace

std::string describe_schedule(const Schedule& s, bool with_steps) {
  if (s.is_view()) {
    // One rank's steps: no tree to draw, but whom it hears from and talks to.
    const std::string out = rank_summary(s, s.view_rank);
    return with_steps ? out + describe_steps(s.view_rank, s.steps_of(s.view_rank)) : out;
  }
  const Algorithm* algorithm = find_algorithm(s.collective, s.algorithm);
  if (s.collective == Collective::Allreduce || s.uses_staging() || s.uses_direct() ||
      (algorithm && !algorithm->composable)) {
    // Every rank reduces a slice, or data moves through the staging ring or straight
    // between the ranks' memory, or every rank ends with the result (an allreduce: a
    // reduce and a broadcast, or an exchange): no one tree.
    constexpr int kShown = 16;
    std::string out = "no single tree (every rank talks to several): each rank's peers:\n";
    for (int r = 0; r < s.nranks && r < kShown; ++r) out += "  " + rank_summary(s, r);
    if (s.nranks > kShown) out += "  ... (" + std::to_string(s.nranks - kShown) + " more ranks)\n";
    if (!with_steps) return out;
    for (int r = 0; r < s.nranks; ++r) out += describe_steps(r, s.steps[r]);
    return out;
  }
  std::string out = "tree (" + std::string(s.collective == Collective::Reduce ? "children send to parents" :
                                                                                 "parents send to children") + "):\n";
  const std::string drawing = draw_tree(tree_of(s));
  for (std::size_t start = 0; start < drawing.size();) {
    const std::size_t end = drawing.find('\n', start);
    out += "  " + drawing.substr(start, end - start) + "\n";
    start = end == std::string::npos ? drawing.size() : end + 1;
  }
  if (!with_steps) return out;
  for (int r = 0; r < s.nranks; ++r) out += describe_steps(r, s.steps[r]);
  return out;
}

}  // namespace canopy::planner
