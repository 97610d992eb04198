#include "planner/tree_price.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <unordered_map>
#include <utility>

#include "planner/segments.h"

namespace canopy::planner {

// ---- Shape trees ------------------------------------------------------------------

int ShapeTree::add(Shape shape) {
  shapes.push_back(std::move(shape));
  return static_cast<int>(shapes.size()) - 1;
}

int ShapeTree::node(std::vector<Run> children) {
  // Adjacent runs of one shape merge; a rank without children is the leaf.
  std::vector<Run> runs;
  for (const Run& r : children) {
    if (r.count <= 0) continue;
    if (!runs.empty() && runs.back().shape == r.shape) runs.back().count += r.count;
    else runs.push_back(r);
  }
  if (runs.empty()) return 0;
  if (runs.size() == 1 && runs[0].count == 1) return path(1, runs[0].shape);
  Shape s;
  s.children = std::move(runs);
  return add(std::move(s));
}

int ShapeTree::path(std::int64_t ranks, int below) {
  if (ranks <= 0) return below;
  if (shapes[below].path > 0) {  // a path above a path is one longer path
    ranks += shapes[below].path;
    below = shapes[below].below;
  }
  Shape s;
  s.path = ranks;
  s.below = below;
  return add(std::move(s));
}

std::int64_t ShapeTree::size(int shape) const {
  const Shape& s = shapes[shape];
  if (s.path > 0) return s.path + size(s.below);
  std::int64_t n = 1;
  for (const Run& r : s.children) n += r.count * size(r.shape);
  return n;
}

ShapeTree shapes_of(const Tree& tree, bool forwards) {
  ShapeTree out;
  out.forwards = forwards;
  const int p = tree.size();
  // Ranks in breadth-first order from the root; reversed, children come before parents.
  std::vector<int> order{tree.root};
  for (std::size_t i = 0; i < order.size(); ++i)
    for (int c : tree.children[order[i]]) order.push_back(c);
  std::vector<int> shape(p, 0);
  std::map<std::vector<std::int64_t>, int> interned;  // a rank's runs (shape, count, ...) -> its shape
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int r = *it;
    std::vector<ShapeTree::Run> runs;
    for (int c : tree.children[r]) {
      if (!runs.empty() && runs.back().shape == shape[c]) ++runs.back().count;
      else runs.push_back({shape[c], 1});
    }
    std::vector<std::int64_t> key;
    for (const auto& run : runs) key.insert(key.end(), {run.shape, run.count});
    auto [at, fresh] = interned.emplace(std::move(key), 0);
    if (fresh) at->second = out.node(std::move(runs));
    shape[r] = at->second;
  }
  out.root = shape[tree.root];
  return out;
}

namespace {

// Shapes of subtrees named by their size, made once each.
class BySize {
 public:
  BySize(ShapeTree& tree, std::function<std::vector<ShapeTree::Run>(std::int64_t)> children)
      : tree_(tree), children_(std::move(children)) {}
  int operator()(std::int64_t n) {
    if (n <= 1) return 0;
    if (auto it = made_.find(n); it != made_.end()) return it->second;
    std::vector<ShapeTree::Run> runs = children_(n);  // sizes as shapes: resolved below
    for (auto& r : runs) r.shape = (*this)(r.shape);
    const int id = tree_.node(std::move(runs));
    made_[n] = id;
    return id;
  }

 private:
  ShapeTree& tree_;
  std::function<std::vector<ShapeTree::Run>(std::int64_t)> children_;  // runs whose `shape` is a size
  std::map<std::int64_t, int> made_;
};

}  // namespace

ShapeTree binomial_shapes(std::int64_t p, bool largest_first) {
  ShapeTree out;
  // binomial.cpp: relative rank v's children are v + 2^i below its lowest set bit, so
  // a subtree of n ranks is itself the binomial tree of n ranks, with children of
  // min(2^i, n - 2^i) ranks.
  BySize by_size(out, [largest_first](std::int64_t n) {
    std::vector<ShapeTree::Run> runs;
    for (std::int64_t mask = 1; mask < n; mask <<= 1) runs.push_back({static_cast<int>(std::min(mask, n - mask)), 1});
    if (largest_first) std::reverse(runs.begin(), runs.end());
    return runs;
  });
  out.root = by_size(p);
  return out;
}

namespace {

int complete_binary(ShapeTree& out, std::map<std::int64_t, int>& made, std::int64_t n) {
  if (n <= 1) return 0;
  if (auto it = made.find(n); it != made.end()) return it->second;
  const std::int64_t left = complete_binary_left_size(n), right = n - 1 - left;
  const int a = complete_binary(out, made, left), b = complete_binary(out, made, right);
  const int id = out.node({{a, left > 0 ? 1 : 0}, {b, right > 0 ? 1 : 0}});
  made[n] = id;
  return id;
}

}  // namespace

ShapeTree binary_shapes(std::int64_t p) {
  ShapeTree out;
  std::map<std::int64_t, int> made;
  out.root = complete_binary(out, made, p);
  return out;
}

ShapeTree binary_two_sided_shapes(std::int64_t p, std::int64_t root) {
  if (root == 0 || root == p - 1) return binary_shapes(p);
  ShapeTree out;
  std::map<std::int64_t, int> made;
  const int a = complete_binary(out, made, root), b = complete_binary(out, made, p - 1 - root);
  out.root = out.node({{a, 1}, {b, 1}});
  return out;
}

ShapeTree chain_shapes(std::int64_t p) {
  ShapeTree out;
  out.root = out.path(p - 1, 0);
  return out;
}

ShapeTree two_arm_chain_shapes(std::int64_t p, std::int64_t root) {
  if (root == 0 || root == p - 1) return chain_shapes(p);
  ShapeTree out;
  const std::int64_t left = root, right = p - 1 - root;  // arm sizes; the shorter one talks first
  const int a = out.path(left - 1, 0), b = out.path(right - 1, 0);
  out.root = left > right ? out.node({{b, 1}, {a, 1}}) : out.node({{a, 1}, {b, 1}});
  return out;
}

ShapeTree flat_shapes(std::int64_t p) {
  ShapeTree out;
  out.root = out.node({{0, p - 1}});
  return out;
}

// Not with port= (CostModel::port_per_byte): the simulator then keeps a link's segments
// between the same two ranks apart (their bytes one after another), which the
// recurrences do not.
bool tree_price_is_exact(const CostModel& model) {
  return model.duplex == Duplex::Full && model.overlap && model.port_per_byte == 0;
}

// ---- The recurrences ----------------------------------------------------------------

namespace {

// Per segment: transfer (start to arrival), port occupancy, reduction, copy.
struct Costs {
  std::vector<double> t, o, g, c;
  int q = 0;
};

Costs costs_of(const std::vector<Segment>& segments, std::int64_t element_bytes, const CostModel& m) {
  Costs k;
  k.q = static_cast<int>(segments.size());
  for (const Segment& s : segments) {
    const std::int64_t bytes = s.count * element_bytes;
    k.t.push_back(m.transfer(bytes));
    k.o.push_back(m.occupancy(bytes));
    k.g.push_back(m.reduce(bytes));
    k.c.push_back(m.copy(bytes));
  }
  return k;
}

// Two vectors of times differ by one constant shift (up to rounding); sets `shift`.
bool uniform_shift(const std::vector<double>& a, const std::vector<double>& b, double& shift) {
  if (a.empty()) return false;
  shift = a[0] - b[0];
  const double scale = std::max({1e-300, std::abs(a.back()), std::abs(b.back())});
  for (std::size_t j = 1; j < a.size(); ++j)
    if (std::abs((a[j] - b[j]) - shift) > 1e-12 * scale) return false;
  return shift >= 0;
}

class ReducePricer {
 public:
  ReducePricer(const ShapeTree& tree, const Costs& k) : tree_(tree), k_(k), memo_(tree.shapes.size()) {}

  // When the rank at the top of `shape` posts its send of each segment.
  const std::vector<double>& sends(int shape) {
    auto& out = memo_[shape];
    if (!out.empty() || k_.q == 0) return out;
    const ShapeTree::Shape& s = tree_.shapes[shape];
    if (shape == 0) {
      out.assign(k_.q, 0.0);  // a leaf sends its input at once
    } else if (s.path > 0) {
      out = climb(sends(s.below), s.path);
    } else {
      std::vector<std::pair<const std::vector<double>*, std::int64_t>> kids;
      for (const auto& run : s.children) kids.push_back({&sends(run.shape), run.count});
      bool copy_hidden = false;
      out = rank(kids, copy_hidden);
    }
    return out;
  }

  // The same for a rank without a parent: the root when it is the whole tree's only
  // rank copies its input and nothing else.
  double makespan(int shape) {
    if (k_.q == 0) return 0;
    if (shape == 0) {
      double t = 0;
      for (double c : k_.c) t += c;
      return t;
    }
    return sends(shape).back();
  }

 private:
  // One rank over its children's send times (runs of equal children: count of them).
  std::vector<double> rank(const std::vector<std::pair<const std::vector<double>*, std::int64_t>>& kids,
                           bool& copy_hidden) const {
    std::vector<double> A(k_.q);
    double port = 0;  // this rank's receive port is free from
    copy_hidden = true;
    for (int j = 0; j < k_.q; ++j) {
      const double posted = j <= 1 ? 0.0 : A[j - 2];  // receives of segment j
      double x = (j == 0 ? 0.0 : A[j - 1]) + k_.c[j];  // the copy ends
      bool first = true;
      for (const auto& [send, m] : kids) {
        // A child's own port never binds: this rank's port served its previous segment
        // and everything after it.
        const double start = std::max({(*send)[j], posted, port});
        const double arrive = start + k_.t[j];
        if (j == 0 && first && arrive < k_.c[0]) copy_hidden = false;
        first = false;
        // m equal children follow each other on the port without a gap; the chain of
        // reductions x = max(x, arrival_i) + g is largest at its first or last operand.
        const double md = static_cast<double>(m);
        x = std::max({x + md * k_.g[j], arrive + md * k_.g[j], arrive + (md - 1) * k_.o[j] + k_.g[j]});
        port = start + md * k_.o[j];
      }
      A[j] = x;
    }
    return A;
  }

  // `levels` ranks chained above a rank whose sends are `below`.
  std::vector<double> climb(const std::vector<double>& below, std::int64_t levels) const {
    std::vector<double> prev = below;
    for (std::int64_t h = 1; h <= levels; ++h) {
      bool copy_hidden = false;
      std::vector<double> next = rank({{&prev, 1}}, copy_hidden);
      double shift = 0;
      // Once one more level shifts every time by the same c >= 0 with the first copy
      // not binding, every further level does (see tree_price.h).
      if (h >= 2 && copy_hidden && uniform_shift(next, prev, shift)) {
        for (double& v : next) v += static_cast<double>(levels - h) * shift;
        return next;
      }
      prev = std::move(next);
    }
    return prev;
  }

  const ShapeTree& tree_;
  const Costs& k_;
  std::vector<std::vector<double>> memo_;
};

class BcastPricer {
 public:
  BcastPricer(const ShapeTree& tree, const Costs& k) : tree_(tree), k_(k) {}

  // The latest arrival in the subtree `shape` whose top rank has segment j at D[j].
  double subtree(int shape, const std::vector<double>& D) {
    if (shape == 0) return D.back();
    // Equal subtrees whose arrivals differ by a shift take the same time after it.
    std::vector<double> norm(D);
    for (double& v : norm) v -= D[0];
    auto key = std::make_pair(shape, std::move(norm));
    if (auto it = memo_.find(key); it != memo_.end()) return D[0] + it->second;
    const double latest = compute(shape, D);
    memo_.emplace(std::move(key), latest - D[0]);
    return latest;
  }

 private:
  // Arrivals at one child from a rank that has segment j at D[j]: `leaf` children
  // post every receive at once, others at D_child[j-2].
  std::vector<double> hop(const std::vector<double>& D, bool leaf) const {
    std::vector<double> out(k_.q);
    double port = 0;
    for (int j = 0; j < k_.q; ++j) {
      const double posted = leaf || j <= 1 ? 0.0 : out[j - 2];
      const double start = std::max({D[j], posted, port});
      out[j] = start + k_.t[j];
      port = start + k_.o[j];
    }
    return out;
  }

  double compute(int shape, const std::vector<double>& D) {
    const ShapeTree::Shape& s = tree_.shapes[shape];
    if (s.path > 0) return climb_down(D, s.path, s.below);
    double latest = D.back();
    double port = 0;  // this rank's send port is free from
    // Runs of leaves go back to back; other children one by one (their receive posts
    // depend on their own arrivals).
    struct Child {
      int shape;
      std::vector<double> arrive;
    };
    std::vector<Child> inner;
    for (const auto& run : s.children)
      if (run.shape != 0)
        for (std::int64_t i = 0; i < run.count; ++i) inner.push_back({run.shape, std::vector<double>(k_.q)});
    for (int j = 0; j < k_.q; ++j) {
      std::size_t next_inner = 0;
      for (const auto& run : s.children) {
        if (run.shape == 0) {
          const double start = std::max(D[j], port);
          const double md = static_cast<double>(run.count);
          latest = std::max(latest, start + (md - 1) * k_.o[j] + k_.t[j]);
          port = start + md * k_.o[j];
          continue;
        }
        for (std::int64_t i = 0; i < run.count; ++i) {
          Child& c = inner[next_inner++];
          const double posted = j <= 1 ? 0.0 : c.arrive[j - 2];
          const double start = std::max({D[j], posted, port});
          c.arrive[j] = start + k_.t[j];
          port = start + k_.o[j];
        }
      }
    }
    for (const Child& c : inner) latest = std::max(latest, subtree(c.shape, c.arrive));
    return latest;
  }

  // A chain of `levels` ranks, the top one with arrivals D, above `below`.
  double climb_down(std::vector<double> D, std::int64_t levels, int below) {
    // Levels 1..levels-1 hand on to another rank of the chain (it forwards).
    for (std::int64_t h = 1; h < levels; ++h) {
      std::vector<double> next = hop(D, false);
      double shift = 0;
      if (uniform_shift(next, D, shift)) {
        for (double& v : next) v += static_cast<double>(levels - 1 - h) * shift;
        D = std::move(next);
        break;
      }
      D = std::move(next);
    }
    return subtree(below, hop(D, below == 0));
  }

  struct KeyHash {
    std::size_t operator()(const std::pair<int, std::vector<double>>& k) const {
      std::size_t h = static_cast<std::size_t>(k.first);
      for (double v : k.second) {
        std::uint64_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        h = h * 1099511628211ull ^ bits;
      }
      return h;
    }
  };

  const ShapeTree& tree_;
  const Costs& k_;
  std::unordered_map<std::pair<int, std::vector<double>>, double, KeyHash> memo_;
};

}  // namespace

double price_tree_reduce(const ShapeTree& tree, const std::vector<Segment>& segments, std::int64_t element_bytes,
                         const CostModel& model) {
  const Costs k = costs_of(segments, element_bytes, model);
  if (k.q == 0) return 0;
  ReducePricer pricer(tree, k);
  const double done = pricer.makespan(tree.root);
  if (!tree.forwards) return done;
  // The tree's root sends every segment to the root, back to back, once it is done.
  double start = done;
  for (int j = 0; j + 1 < k.q; ++j) start += k.o[j];
  return start + k.t[k.q - 1];
}

double price_tree_bcast(const ShapeTree& tree, const std::vector<Segment>& segments, std::int64_t element_bytes,
                        const CostModel& model) {
  const Costs k = costs_of(segments, element_bytes, model);
  if (k.q == 0 || tree.root == 0) return 0;
  BcastPricer pricer(tree, k);
  return pricer.subtree(tree.root, std::vector<double>(k.q, 0.0));
}

bool unidirectional(const CostModel& model) {
  return model.ports_held_for_transfer() && model.duplex == Duplex::Half && !model.overlap;
}

UnidirectionalTerms unidirectional_terms(const Problem& problem) {
  UnidirectionalTerms out;
  out.q = static_cast<double>(problem_segments(problem).size());
  if (out.q == 0) return out;
  const std::int64_t s = static_cast<std::int64_t>(static_cast<double>(problem.bytes()) / out.q);
  out.T = problem.model.transfer(s);
  out.G = problem.model.reduce(s);
  return out;
}

Price price_tree(const Problem& problem, const ShapeTree& tree) {
  const std::vector<Segment> segments = problem_segments(problem);
  Price out;
  out.makespan = problem.collective == Collective::Reduce
                     ? price_tree_reduce(tree, segments, problem.element_bytes, problem.model)
                     : price_tree_bcast(tree, segments, problem.element_bytes, problem.model);
  out.exact = tree_price_is_exact(problem.model) && !problem.topology;
  return out;
}

}  // namespace canopy::planner
