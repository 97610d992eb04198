#include "planner/tree.h"

#include <algorithm>
#include <functional>

#include "planner/segments.h"

namespace canopy::planner {

void Tree::check() const {
  const int p = size();
  if (p < 1 || root < 0 || root >= p || static_cast<int>(children.size()) != p)
    throw PlanError("tree: bad size or root");
  if (parent[root] != -1) throw PlanError("tree: the root has a parent");
  for (int r = 0; r < p; ++r) {
    for (int c : children[r])
      if (c < 0 || c >= p || parent[c] != r) throw PlanError("tree: children and parents disagree");
    if (r != root) {
      const int q = parent[r];
      if (q < 0 || q >= p || std::count(children[q].begin(), children[q].end(), r) != 1)
        throw PlanError("tree: rank " + std::to_string(r) + " is not its parent's child");
    }
  }
  // Every rank reaches the root without a cycle.
  for (int r = 0; r < p; ++r) {
    int hops = 0;
    for (int x = r; x != root; x = parent[x])
      if (++hops > p) throw PlanError("tree: rank " + std::to_string(r) + " never reaches the root");
  }
}

Tree tree_from_parents(int root, const std::vector<int>& parent, const std::vector<int>& order) {
  Tree t;
  t.root = root;
  t.parent = parent;
  t.children.assign(parent.size(), {});
  for (int r : order)
    if (r != root && parent[r] >= 0) t.children[parent[r]].push_back(r);
  t.check();
  return t;
}

std::int64_t complete_binary_left_size(std::int64_t n) {
  if (n <= 1) return 0;
  int h = 0;  // height: floor(log2 n)
  while ((std::int64_t{2} << h) <= n) ++h;
  const std::int64_t full_below = (std::int64_t{1} << (h - 1)) - 1;  // full levels of each subtree, above the last
  const std::int64_t last = n - ((std::int64_t{1} << h) - 1);        // nodes on the last level
  return full_below + std::min(last, std::int64_t{1} << (h - 1));
}

TreeLinks links_of(const Tree& tree, int rank) { return {tree.parent[rank], tree.children[rank]}; }

namespace {

// The frame of a schedule holding `view_rank`'s steps (-1: every rank's).
Schedule frame(const Problem& p, const std::string& algorithm, int view_rank) {
  check_problem(p);
  return empty_schedule(p, algorithm, problem_segments(p), view_rank);
}

}  // namespace

Schedule blank_schedule(const Problem& p, const std::string& algorithm) { return frame(p, algorithm, -1); }

Schedule blank_view(const Problem& p, const std::string& algorithm, int rank) {
  check_problem(p);
  if (rank < 0 || rank >= p.nranks)
    throw PlanError("rank " + std::to_string(rank) + " is outside 0.." + std::to_string(p.nranks - 1));
  return frame(p, algorithm, rank);
}

namespace {

// Rank r's steps of a tree reduce (see tree_reduce_schedule); `slots` gets its slot count.
void emit_tree_reduce(const Problem& p, int nseg, const TreeLinks& links, int tree_root, int r,
                      std::vector<Step>& out, int& slots) {
  // Without overlap (Langou's models, half or full duplex) computation holds every
  // port, so a rank receives each operand just before combining it: posting every
  // receive first would make it wait for the last operand before its first reduction,
  // and a receive of segment k+1 posted before combining segment k would hold the
  // combination until that receive ends. Full duplex, the receive of segment k+1 still
  // runs beside the send of segment k. With overlap, full duplex prefetches segment
  // k+1 while combining segment k.
  const bool interleave = !p.model.overlap;
  const bool prefetch = p.model.duplex == Duplex::Full && !interleave;
  const auto& kids = links.children;
  const int k = static_cast<int>(kids.size());
  const bool is_tree_root = r == tree_root;
  if (k == 0 && !is_tree_root) {
    for (int j = 0; j < nseg; ++j) out.push_back(Step::send(links.parent, j, Buffer::Input));
  } else {
    // Two slots per child when the next segment is received while this one is reduced.
    const bool double_buffer = prefetch && nseg > 1;
    slots = double_buffer ? 2 * k : k;
    auto slot = [&](int child, int seg) { return double_buffer ? (seg % 2) * k + child : child; };
    auto post_receives = [&](int seg) {
      for (int i = 0; i < k; ++i) out.push_back(Step::recv_into_slot(kids[i], seg, slot(i, seg)));
    };
    if (prefetch && nseg > 0) post_receives(0);
    for (int j = 0; j < nseg; ++j) {
      if (prefetch && j + 1 < nseg) post_receives(j + 1);
      if (!prefetch && !interleave) post_receives(j);
      if (interleave && k > 0) out.push_back(Step::recv_into_slot(kids[0], j, slot(0, j)));
      out.push_back(Step::copy(j));
      for (int i = 0; i < k; ++i) {
        if (interleave && i > 0) out.push_back(Step::recv_into_slot(kids[i], j, slot(i, j)));
        out.push_back(Step::reduce(j, slot(i, j), kids[i] < r));
      }
      if (!is_tree_root) out.push_back(Step::send(links.parent, j, Buffer::Accumulator));
    }
  }
  // A tree rooted elsewhere forwards the result to the root after everything else.
  if (tree_root != p.root && r == tree_root)
    for (int j = 0; j < nseg; ++j) out.push_back(Step::send(p.root, j, Buffer::Accumulator));
  if (tree_root != p.root && r == p.root)
    for (int j = 0; j < nseg; ++j) out.push_back(Step::recv_into_accumulator(tree_root, j));
}

// Rank r's steps of a tree broadcast (see tree_bcast_schedule).
void emit_tree_bcast(const Problem& p, int nseg, const TreeLinks& links, std::vector<Step>& out) {
  const bool prefetch = p.model.duplex == Duplex::Full;
  const bool is_root = links.parent < 0;
  if (!is_root && prefetch && nseg > 0) out.push_back(Step::recv_into_accumulator(links.parent, 0));
  for (int j = 0; j < nseg; ++j) {
    if (!is_root) {
      const int next = prefetch ? j + 1 : j;
      if (next < nseg) out.push_back(Step::recv_into_accumulator(links.parent, next));
    }
    for (int c : links.children) out.push_back(Step::send(c, j));
  }
}

}  // namespace

Schedule tree_reduce_schedule(const Problem& p, const Tree& tree, const std::string& algorithm) {
  Schedule s = blank_schedule(p, algorithm);
  if (tree.size() != p.nranks) throw PlanError("tree size differs from the communicator");
  const int nseg = static_cast<int>(s.segments.size());
  for (int r = 0; r < p.nranks; ++r) emit_tree_reduce(p, nseg, links_of(tree, r), tree.root, r, s.steps[r], s.slots[r]);
  return s;
}

Schedule tree_bcast_schedule(const Problem& p, const Tree& tree, const std::string& algorithm) {
  Schedule s = blank_schedule(p, algorithm);
  if (tree.size() != p.nranks || tree.root != p.root)
    throw PlanError("broadcast tree must span the communicator from the root");
  const int nseg = static_cast<int>(s.segments.size());
  for (int r = 0; r < p.nranks; ++r) emit_tree_bcast(p, nseg, links_of(tree, r), s.steps[r]);
  return s;
}

Schedule tree_reduce_view(const Problem& p, const TreeLinks& links, int tree_root, int rank,
                          const std::string& algorithm) {
  Schedule s = blank_view(p, algorithm, rank);
  emit_tree_reduce(p, static_cast<int>(s.segments.size()), links, tree_root, rank, s.steps[0], s.slots[0]);
  return s;
}

Schedule tree_bcast_view(const Problem& p, const TreeLinks& links, int rank, const std::string& algorithm) {
  Schedule s = blank_view(p, algorithm, rank);
  emit_tree_bcast(p, static_cast<int>(s.segments.size()), links, s.steps[0]);
  return s;
}

std::string draw_tree(const Tree& tree) {
  std::string out;
  std::function<void(int, const std::string&, bool, bool)> walk = [&](int r, const std::string& prefix,
                                                                        bool last, bool top) {
    out += prefix + (top ? "" : (last ? "`-- " : "|-- ")) + std::to_string(r) + "\n";
    const std::string next = top ? "" : prefix + (last ? "    " : "|   ");
    const auto& kids = tree.children[r];
    for (std::size_t i = 0; i < kids.size(); ++i) walk(kids[i], next, i + 1 == kids.size(), false);
  };
  if (tree.size() > 0) walk(tree.root, "", true, true);
  return out;
}

Tree tree_of(const Schedule& s) {
  // An allreduce composed of a reduce and a broadcast (algorithms/reduce_bcast.cpp):
  // its reduce part's tree (each rank's first send goes to its parent there).
  const Collective collective = s.collective == Collective::Allreduce ? Collective::Reduce : s.collective;
  std::vector<int> parent(s.nranks, -1);
  std::vector<int> order;
  for (int r = 0; r < s.nranks; ++r) {
    for (const Step& st : s.steps[r]) {
      const bool up = collective == Collective::Reduce && st.kind == StepKind::Send;
      const bool down = collective == Collective::Bcast && st.kind == StepKind::Recv;
      if ((up || down) && parent[r] == -1) parent[r] = st.peer;
    }
  }
  // A reduce whose tree root is not the root ends with the tree root forwarding the
  // result into the root's accumulator: that last hop is not a tree edge.
  int root = s.root;
  if (collective == Collective::Reduce)
    for (const Step& st : s.steps[s.root])
      if (st.kind == StepKind::Recv && st.buffer == Buffer::Accumulator) root = st.peer;
  parent[root] = -1;
  // Children in the order their parent talks to them.
  std::vector<std::vector<int>> kids(s.nranks);
  for (int r = 0; r < s.nranks; ++r)
    for (const Step& st : s.steps[r]) {
      const bool from_child = collective == Collective::Reduce && st.kind == StepKind::Recv &&
                              st.buffer == Buffer::Slot && parent[st.peer] == r;
      const bool to_child = collective == Collective::Bcast && st.kind == StepKind::Send &&
                            parent[st.peer] == r;
      if ((from_child || to_child) && std::find(kids[r].begin(), kids[r].end(), st.peer) == kids[r].end())
        kids[r].push_back(st.peer);
    }
  Tree t;
  t.root = root;
  t.parent = parent;
  t.children = kids;
  return t;
}

}  // namespace canopy::planner
