// What the algorithms of Canon & Antoniu (000_*.txt) share: timing a tree by
// Proposition 3, the trees of Section 7, the bounds of Sections 5 and 6, and the
// step from machines to ranks (Section 4.1). The algorithms themselves live in
// greedy.cpp, greedy-transfers.cpp, greedy-reducers.cpp, binomial-strategy.cpp and
// fibonacci-strategy.cpp, one file per registered name.
#include "planner/algorithms/canon.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "planner/segments.h"
#include "planner/tree_price.h"

namespace canopy::planner::canon {

namespace {

// When the last of `arrivals` (the senders' transfer times, any order) is reduced:
// Proposition 2's bound, which Proposition 3 shows is reached. The paper calls
// t_i^j the "jth largest" transfer time, but its proof starts with f^1 = t^1 + d + c
// for the first element to arrive: the times are taken in increasing order.
double finish(std::vector<double>& arrivals, double d, double c) {
  if (arrivals.empty()) return 0;
  std::sort(arrivals.begin(), arrivals.end());
  const double step = std::max(d, c);
  const int m = static_cast<int>(arrivals.size());
  double f = 0;
  for (int j = 0; j < m; ++j) f = std::max(f, arrivals[j] + d + (m - 1 - j) * step + c);
  return f;
}

int find_sink(const std::vector<int>& child) {
  const int n = static_cast<int>(child.size());
  int sink = -1;
  for (int i = 0; i < n; ++i) {
    if (child[i] == -1) {
      if (sink != -1) throw PlanError("reduction tree: two sinks");
      sink = i;
    } else if (child[i] < 0 || child[i] >= n || child[i] == i) {
      throw PlanError("reduction tree: machine " + std::to_string(i) + " sends nowhere valid");
    }
  }
  if (sink == -1) throw PlanError("reduction tree: no sink");
  return sink;
}

// Who sends to whom, and an order with every receiver before its senders.
struct Shape {
  int sink = -1;
  std::vector<std::vector<int>> senders;
  std::vector<int> top_down;
};

Shape shape_of(const std::vector<int>& child) {
  const int n = static_cast<int>(child.size());
  Shape s;
  s.sink = find_sink(child);
  s.senders.assign(n, {});
  for (int i = 0; i < n; ++i)
    if (child[i] >= 0) s.senders[child[i]].push_back(i);
  s.top_down.reserve(n);
  s.top_down.push_back(s.sink);
  for (std::size_t k = 0; k < s.top_down.size(); ++k)
    for (int u : s.senders[s.top_down[k]]) s.top_down.push_back(u);
  if (static_cast<int>(s.top_down.size()) != n) throw PlanError("reduction tree: a cycle never reaches the sink");
  return s;
}

int floor_log2(long long x) {
  int e = 0;
  while ((2LL << e) <= x) ++e;
  return e;
}

int ceil_log2(long long x) {
  int e = 0;
  while ((1LL << e) < x) ++e;
  return e;
}

// Picks senders of the sink whose subtree sizes add up to `target`: they go to its
// left. Largest first settles every target when each size is at most one more than
// the sum of the smaller ones (binomial and Fibonacci trees, and the greedy trees
// in practice); otherwise a subset-sum table, while it stays small.
bool choose_left(const std::vector<int>& sizes, int target, std::vector<char>& left) {
  const int m = static_cast<int>(sizes.size());
  left.assign(m, 0);
  if (target == 0) return true;
  std::vector<int> by_size(m);
  std::iota(by_size.begin(), by_size.end(), 0);
  std::stable_sort(by_size.begin(), by_size.end(), [&](int a, int b) { return sizes[a] > sizes[b]; });
  int remaining = target;
  for (int k : by_size)
    if (sizes[k] <= remaining) {
      left[k] = 1;
      remaining -= sizes[k];
    }
  if (remaining == 0) return true;
  left.assign(m, 0);
  if (static_cast<double>(m) * target > 5e7) return false;
  // reached_by[s]: the first sender with which sum s became reachable (m: the empty set).
  std::vector<int> reached_by(target + 1, -1);
  reached_by[0] = m;
  for (int k = 0; k < m; ++k)
    for (int s = target; s >= sizes[k]; --s)
      if (reached_by[s] == -1 && reached_by[s - sizes[k]] != -1) reached_by[s] = k;
  if (reached_by[target] == -1) return false;
  for (int s = target; s > 0; s -= sizes[reached_by[s]]) left[reached_by[s]] = 1;
  return true;
}

}  // namespace

void check_instance(int n, double d, double c) {
  if (n < 1) throw PlanError("a reduction needs at least one machine");
  if (!(d >= 0 && c >= 0) || !std::isfinite(d) || !std::isfinite(c))
    throw PlanError("transfer and reduction costs must be finite and non-negative");
}

std::vector<double> proposition3_times(const std::vector<int>& child, double d, double c) {
  const Shape s = shape_of(child);
  const int n = static_cast<int>(child.size());
  std::vector<double> t(n, 0);
  std::vector<double> arrivals;
  for (auto it = s.top_down.rbegin(); it != s.top_down.rend(); ++it) {
    arrivals.clear();
    for (int u : s.senders[*it]) arrivals.push_back(t[u]);
    t[*it] = finish(arrivals, d, c);
  }
  return t;
}

double schedule_length(const std::vector<int>& child, double d, double c) {
  return proposition3_times(child, d, c)[find_sink(child)];
}

double schedule_length(const ReductionTree& tree, double d, double c) { return schedule_length(tree.child, d, c); }

std::vector<double> prefix_lengths(const std::vector<int>& child, double d, double c) {
  const int n = static_cast<int>(child.size());
  std::vector<double> out;
  if (n == 0) return out;
  if (child[0] != -1) throw PlanError("prefix_lengths: machine 0 must be the sink");
  for (int i = 1; i < n; ++i)
    if (child[i] < 0 || child[i] >= i) throw PlanError("prefix_lengths: needs child[i] < i");
  out.assign(n, 0);
  std::vector<double> ready(n, 0);
  std::vector<std::vector<double>> arrivals(n);  // senders' times, in insertion order
  std::vector<int> slot(n, -1);                  // where i sits in arrivals[child[i]]
  std::vector<double> scratch;
  for (int i = 1; i < n; ++i) {
    slot[i] = static_cast<int>(arrivals[child[i]].size());
    arrivals[child[i]].push_back(0);
    // Only the new leaf's receivers up to the sink can change; stop where one does not.
    for (int v = child[i];; v = child[v]) {
      scratch = arrivals[v];
      const double t = finish(scratch, d, c);
      if (t == ready[v]) break;
      ready[v] = t;
      if (v == 0) break;
      arrivals[child[v]][slot[v]] = t;
    }
    out[i] = ready[0];
  }
  return out;
}

std::vector<int> binomial_tree(int k) {
  if (k < 0 || k > 30) throw PlanError("binomial tree order must be in 0..30");
  std::vector<int> child{-1};
  for (int order = 1; order <= k; ++order) {
    // A second copy of order-1 whose sink sends to the first one's sink.
    const int half = static_cast<int>(child.size());
    for (int j = 0; j < half; ++j) child.push_back(j == 0 ? 0 : child[j] + half);
  }
  return child;
}

std::vector<int> fibonacci_tree(int k) {
  if (k < -1 || k > 40) throw PlanError("Fibonacci tree order must be in -1..40");
  std::vector<int> older{-1}, old{-1};  // orders m-2 and m-1, starting at m = 1
  for (int m = 1; m <= k; ++m) {
    std::vector<int> next = old;  // order m-1 keeps the sink...
    const int offset = static_cast<int>(old.size());
    for (std::size_t j = 0; j < older.size(); ++j)  // ...and receives from order m-2's sink
      next.push_back(j == 0 ? 0 : older[j] + offset);
    older = std::move(old);
    old = std::move(next);
  }
  return old;
}

long long fibonacci(int k) {
  long long a = 0, b = 1;  // F(0), F(1)
  for (int i = 0; i < k; ++i) {
    const long long next = a + b;
    a = b;
    b = next;
  }
  return a;
}

double lemma5_lower_bound(int n, double d, double c) { return ceil_log2(n) * std::max(d, c); }

double proposition6_upper_bound(int n, double d, double c) { return ceil_log2(n) * (d + c); }

double limited_bound(int n, int K, double d, double c) {
  if (K < 1 || K > n / 2) throw PlanError("limited_bound needs 1 <= K <= floor(n/2)");
  // First mode: doubling up to 2^(floor(log2 K)) concurrent transfers; second mode:
  // K new machines a step. The paper's "n - 2^(...) < n - 2K" has the inequality the
  // wrong way round (2^(floor(log2 K)+1) <= 2K), hence the exact count here.
  const int first = floor_log2(K) + 1;
  const long long left = n - (1LL << first);
  const long long second = (left + K - 1) / K;
  return static_cast<double>(first + second) * (d + c);
}

std::vector<double> transfer_starts(const ReductionTree& tree, double d) {
  Shape s = shape_of(tree.child);
  const auto& t = tree.transfer_time;
  std::vector<double> start = t;
  for (auto& list : s.senders) {
    std::stable_sort(list.begin(), list.end(), [&](int a, int b) { return t[a] < t[b]; });
    double free = 0;
    for (int u : list) {
      start[u] = std::max(t[u], free);
      free = start[u] + d;
    }
  }
  return start;
}

int max_concurrent_transfers(const ReductionTree& tree, double d) {
  if (d <= 0) return 0;
  const std::vector<double> all = transfer_starts(tree, d);
  std::vector<double> starts;
  for (int i = 0; i < tree.size(); ++i)
    if (tree.child[i] != -1) starts.push_back(all[i]);
  std::sort(starts.begin(), starts.end());
  // Dates are sums of d and c: a transfer that ends within rounding of another's
  // start has ended.
  const double eps = 1e-9 * std::max(1.0, starts.empty() ? 0.0 : std::fabs(starts.back()) + d);
  int best = 0;
  std::size_t ended = 0;
  for (std::size_t k = 0; k < starts.size(); ++k) {
    while (ended <= k && starts[ended] + d <= starts[k] + eps) ++ended;
    best = std::max(best, static_cast<int>(k + 1 - ended));
  }
  return best;
}

int reducer_count(const std::vector<int>& child) {
  std::vector<char> receives(child.size(), 0);
  for (int target : child)
    if (target >= 0) receives[target] = 1;
  return static_cast<int>(std::count(receives.begin(), receives.end(), 1));
}

Costs problem_costs(const Problem& problem) {
  // The largest segment: the first of a uniform layout, any of an explicit one.
  std::int64_t largest = 0;
  for (const Segment& s : problem_segments(problem)) largest = std::max(largest, s.count);
  const std::int64_t bytes = largest * problem.element_bytes;
  return {problem.model.transfer(bytes), problem.model.reduce(bytes)};
}

int transfer_limit(const Problem& problem) {
  // One port per machine: never more than floor(n/2) transfers at once (Section 6.1).
  const int hard = std::max(1, problem.nranks / 2);
  return problem.limit == 0 ? hard : std::min(problem.limit, hard);
}

int reducer_limit(const Problem& problem) {
  return problem.limit == 0 ? problem.nranks : std::min(problem.limit, problem.nranks);
}

Tree rank_tree(const std::vector<int>& child, const std::vector<double>& arrival, int root, bool commutative) {
  const int n = static_cast<int>(child.size());
  if (static_cast<int>(arrival.size()) != n) throw PlanError("rank_tree: one arrival time per machine");
  if (root < 0 || root >= n) throw PlanError("rank_tree: root outside the tree");
  Shape s = shape_of(child);
  for (auto& list : s.senders)
    std::stable_sort(list.begin(), list.end(), [&](int a, int b) { return arrival[a] < arrival[b]; });
  std::vector<int> size(n, 1);
  for (auto it = s.top_down.rbegin(); it != s.top_down.rend(); ++it)
    if (child[*it] >= 0) size[child[*it]] += size[*it];

  // The sink's position in its range is the total size of the senders on its left.
  const auto& first = s.senders[s.sink];
  std::vector<int> sizes;
  for (int u : first) sizes.push_back(size[u]);
  std::vector<char> left;
  const int target = commutative ? 0 : root;
  const bool placed = choose_left(sizes, target, left);
  if (!placed) left.assign(first.size(), 0);

  std::vector<int> rank(n, -1);
  rank[s.sink] = placed ? target : 0;
  int lo = rank[s.sink], hi = rank[s.sink];
  for (std::size_t k = 0; k < first.size(); ++k) {
    const int u = first[k];
    if (left[k]) {
      lo -= size[u];
      rank[u] = lo;  // the lowest rank of its range: its own senders all go right
    } else {
      rank[u] = hi + 1;
      hi += size[u];
    }
  }
  for (int v : s.top_down) {
    if (v == s.sink) continue;
    int cursor = rank[v];
    for (int u : s.senders[v]) {
      rank[u] = cursor + 1;
      cursor += size[u];
    }
  }
  if (commutative)
    for (int& r : rank) r = (r + root) % n;

  Tree t;
  t.root = rank[s.sink];
  t.parent.assign(n, -1);
  t.children.assign(n, {});
  for (int i = 0; i < n; ++i) {
    if (child[i] >= 0) t.parent[rank[i]] = rank[child[i]];
    for (int u : s.senders[i]) t.children[rank[i]].push_back(rank[u]);
  }
  t.check();
  return t;
}

namespace {

Tree ranked_tree(const Problem& problem, const ReductionTree& tree, const Costs& costs, const std::string& algorithm) {
  check_problem(problem);
  if (problem.collective != Collective::Reduce) throw PlanError(algorithm + " plans reductions only");
  if (tree.size() != problem.nranks) throw PlanError(algorithm + ": tree size differs from the communicator");
  const std::vector<double> arrival = proposition3_times(tree.child, costs.d, costs.c);
  return rank_tree(tree.child, arrival, problem.root, problem.commutative);
}

}  // namespace

Schedule plan_reduction_tree(const Problem& problem, const ReductionTree& tree, const Costs& costs,
                             const std::string& algorithm) {
  return tree_reduce_schedule(problem, ranked_tree(problem, tree, costs, algorithm), algorithm);
}

Price price_reduction_tree(const Problem& problem, const ReductionTree& tree, const Costs& costs,
                           const std::string& algorithm) {
  const Tree ranked = ranked_tree(problem, tree, costs, algorithm);
  return price_tree(problem, shapes_of(ranked, ranked.root != problem.root));
}

Schedule view_reduction_tree(const Problem& problem, const ReductionTree& tree, const Costs& costs,
                             const std::string& algorithm, int rank) {
  const Tree ranked = ranked_tree(problem, tree, costs, algorithm);
  if (rank < 0 || rank >= ranked.size()) throw PlanError(algorithm + ": no rank " + std::to_string(rank));
  return tree_reduce_view(problem, links_of(ranked, rank), ranked.root, rank, algorithm);
}

}  // namespace canopy::planner::canon
