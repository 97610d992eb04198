#include "planner/snf.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <queue>
#include <stdexcept>
#include <utility>

namespace canopy::planner::snf {

namespace {

constexpr int kFreeSinceStart = -1;  // a free processor no completion freed: idle from time 0

void check_times(const std::vector<double>& times) {
  for (double t : times)
    if (!std::isfinite(t) || t < 0) throw std::invalid_argument("snf: transmission times must be finite and >= 0");
}

// Figure 2, with Lemma 1's bookkeeping when `detail` is given. Each free processor is
// a token naming the completion that freed it (a completed transfer frees its
// receiver; its sender is done for good), or kFreeSinceStart. A new transfer takes
// the two oldest tokens (FIFO; any choice is valid, FIFO is deterministic), so
// free = n - 2*active - completed is the number of tokens. Completions at the same
// time are released together, in sequence order, as Figure 2 moves "the set of
// processors that has the smallest completion time" at once: the transfers they
// enable then start in sequence order. Returns the makespan.
double run_ep(const std::vector<double>& times, EpSchedule* detail) {
  const int senders = static_cast<int>(times.size());
  const int n = senders + 1;
  using Completion = std::pair<double, int>;  // (completion time, sequence position)
  std::priority_queue<Completion, std::vector<Completion>, std::greater<Completion>> active;
  std::deque<int> free_tokens(n, kFreeSinceStart);
  if (detail) {
    detail->start.assign(senders, 0);
    detail->completion.assign(senders, 0);
    detail->predecessors.assign(senders, {});
  }
  double now = 0, makespan = 0;
  int next = 0;
  while (next < senders) {
    while (free_tokens.size() >= 2 && next < senders) {
      const int first = free_tokens.front();
      free_tokens.pop_front();
      const int second = free_tokens.front();
      free_tokens.pop_front();
      const double done = now + times[next];
      if (detail) {
        detail->start[next] = now;
        detail->completion[next] = done;
        for (int token : {first, second})
          if (token != kFreeSinceStart) detail->predecessors[next].push_back(token);
      }
      active.push({done, next});
      makespan = std::max(makespan, done);
      ++next;
    }
    if (next == senders) break;
    // free < 2 with senders left means a transfer is in flight: 2A + C = n - free.
    now = active.top().first;
    while (!active.empty() && active.top().first == now) {
      free_tokens.push_back(active.top().second);
      active.pop();
    }
  }
  if (detail) detail->makespan = makespan;
  return makespan;
}

// Throws unless `sequence` is a permutation of every processor but the final receiver.
void check_sequence(int n, int final_receiver, const std::vector<int>& sequence) {
  if (final_receiver < 0 || final_receiver >= n) throw std::invalid_argument("snf: final receiver out of range");
  if (static_cast<int>(sequence.size()) != n - 1)
    throw std::invalid_argument("snf: the sequence must list every processor but the final receiver");
  std::vector<bool> seen(n, false);
  seen[final_receiver] = true;
  for (int p : sequence) {
    if (p < 0 || p >= n || seen[p]) throw std::invalid_argument("snf: the sequence repeats or misses a processor");
    seen[p] = true;
  }
}

// One transfer as seen from a processor that takes part in it.
struct Window {
  double from = 0, to = 0;
  bool sending = false;
};

// Every transfer processor p takes part in, by start time.
std::vector<Window> windows_of(const std::vector<double>& times, const Reduction& r, int p) {
  std::vector<Window> out;
  for (int q = 0; q < r.size(); ++q)
    if (r.parent[q] == p) out.push_back({r.start[q], r.start[q] + times[q], false});
  if (p != r.final_receiver) out.push_back({r.start[p], r.start[p] + times[p], true});
  // At equal starts receives come first: a zero-time receive may end as the send starts.
  std::sort(out.begin(), out.end(), [](const Window& a, const Window& b) {
    return a.from < b.from || (a.from == b.from && !a.sending && b.sending);
  });
  return out;
}

// Start times are copied from completion times, never recomputed, so EP's own
// reductions compare exactly; the slack only forgives reductions built elsewhere.
bool not_before(double a, double b) { return a >= b - 1e-12 * std::max(1.0, std::fabs(b)); }

std::string check_tree_shape(const Reduction& r) {
  const int n = r.size();
  if (r.final_receiver < 0 || r.final_receiver >= n) return "final receiver out of range";
  if (static_cast<int>(r.start.size()) != n || static_cast<int>(r.receives.size()) != n)
    return "start, parent and receives differ in size";
  if (r.parent[r.final_receiver] != -1) return "the final receiver sends";
  for (int p = 0; p < n; ++p) {
    if (p == r.final_receiver) continue;
    if (r.parent[p] < 0 || r.parent[p] >= n || r.parent[p] == p)
      return "processor " + std::to_string(p) + " has no valid destination";
    if (!std::isfinite(r.start[p]) || r.start[p] < 0) return "processor " + std::to_string(p) + " has no start time";
    int hops = 0;
    for (int x = p; x != r.final_receiver; x = r.parent[x])
      if (++hops > n) return "processor " + std::to_string(p) + " never reaches the final receiver";
  }
  return "";
}

std::string check_windows(const std::vector<double>& times, const Reduction& r, int p) {
  const std::vector<Window> w = windows_of(times, r, p);
  const std::string who = "processor " + std::to_string(p);
  for (std::size_t k = 1; k < w.size(); ++k)
    if (!not_before(w[k].from, w[k - 1].to)) return who + " is in two transfers at once";
  for (std::size_t k = 0; k + 1 < w.size(); ++k)
    if (w[k].sending) return who + " receives after it sends";
  // receives[p] lists exactly p's senders, earliest first.
  std::vector<int> senders, listed = r.receives[p];
  for (int q = 0; q < r.size(); ++q)
    if (r.parent[q] == p) senders.push_back(q);
  std::vector<int> sorted = listed;
  std::sort(sorted.begin(), sorted.end());
  if (sorted != senders) return who + ": receives does not list its senders";
  for (std::size_t k = 1; k < listed.size(); ++k)
    if (r.start[listed[k]] < r.start[listed[k - 1]]) return who + ": receives are not in time order";
  return "";
}

// The multinomial count of distinct orders of `values` (sorted), as a double so that
// huge counts compare instead of overflowing.
double distinct_orders(const std::vector<double>& sorted_values) {
  double count = 1;
  int placed = 0, run = 0;
  for (std::size_t i = 0; i < sorted_values.size(); ++i) {
    run = (i > 0 && sorted_values[i] == sorted_values[i - 1]) ? run + 1 : 1;
    ++placed;
    count = count * placed / run;  // C(placed, run) built up one element at a time
  }
  return count;
}

}  // namespace

EpSchedule earliest_possible(const std::vector<double>& sender_times) {
  check_times(sender_times);
  EpSchedule out;
  run_ep(sender_times, &out);
  return out;
}

double ep_makespan(const std::vector<double>& sender_times) {
  check_times(sender_times);
  return run_ep(sender_times, nullptr);
}

bool satisfies_inequality_1(int n, const std::vector<double>& sender_times, const std::vector<double>& start) {
  if (start.size() != sender_times.size()) throw std::invalid_argument("snf: one start time per sender");
  // 2A + C rises only when a transfer starts (+2) and falls when one ends (-1), so
  // its maximum is at some start time.
  for (double t : start) {
    int active = 0, completed = 0;
    for (std::size_t j = 0; j < start.size(); ++j) {
      const double done = start[j] + sender_times[j];
      if (done <= t) ++completed;
      else if (start[j] <= t) ++active;
    }
    if (2 * active + completed > n) return false;
  }
  return true;
}

Reduction assign_destinations(const std::vector<double>& times, int final_receiver, const std::vector<int>& sequence) {
  check_times(times);
  const int n = static_cast<int>(times.size());
  check_sequence(n, final_receiver, sequence);
  std::vector<double> sender_times;
  for (int p : sequence) sender_times.push_back(times[p]);
  const EpSchedule ep = earliest_possible(sender_times);

  // Lemma 1, backward from the last send. EP makes the last sender start after every
  // other transfer ended (once all n-1 have started, A + C = n-1 and 2A + C <= n
  // leave A <= 1), so its predecessors cover the whole schedule and it sends to the
  // final receiver. A transfer (s, r) started on two processors its predecessors
  // freed: they were those predecessors' receivers, so they are s and r. Which one is
  // which is free (the paper: "not unique"); the processor freed last becomes the
  // sender s, the one freed first the receiver r. With an odd n one processor is free
  // from time 0 and unused then; FIFO spends it on the first transfer after time 0,
  // which therefore has one predecessor: that predecessor delivers to the sender, and
  // the receiver is the processor idle since time 0.
  const int senders = n - 1;
  std::vector<int> destination(senders, -1);  // by sequence position
  if (senders > 0) destination[senders - 1] = final_receiver;
  for (int i = senders - 1; i >= 0; --i) {
    const auto& pred = ep.predecessors[i];
    if (pred.empty()) continue;
    destination[pred.back()] = sequence[i];
    if (pred.size() == 2) destination[pred.front()] = destination[i];
  }

  Reduction r;
  r.final_receiver = final_receiver;
  r.sequence = sequence;
  r.start.assign(n, -1);
  r.parent.assign(n, -1);
  r.receives.assign(n, {});
  r.makespan = ep.makespan;
  // Sequence order is start order, so each receiver's list comes out in time order.
  for (int i = 0; i < senders; ++i) {
    const int p = sequence[i];
    r.start[p] = ep.start[i];
    r.parent[p] = destination[i];
    r.receives[destination[i]].push_back(p);
  }
  return r;
}

std::string check_reduction(const std::vector<double>& times, const Reduction& r) {
  if (static_cast<int>(times.size()) != r.size()) return "one time per processor";
  if (std::string why = check_tree_shape(r); !why.empty()) return why;
  double last = 0;
  for (int p = 0; p < r.size(); ++p) {
    if (std::string why = check_windows(times, r, p); !why.empty()) return why;
    if (p != r.final_receiver) last = std::max(last, r.start[p] + times[p]);
  }
  if (!not_before(last, r.makespan) || !not_before(r.makespan, last)) return "the makespan is not the last completion";
  return "";
}

int slowest(const std::vector<double>& times) {
  if (times.empty()) throw std::invalid_argument("snf: no processors");
  return static_cast<int>(std::max_element(times.begin(), times.end()) - times.begin());
}

std::vector<int> slowest_first(const std::vector<double>& times, int final_receiver) {
  std::vector<int> order;
  for (int p = 0; p < static_cast<int>(times.size()); ++p)
    if (p != final_receiver) order.push_back(p);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return times[a] > times[b]; });
  return order;
}

Reduction snf_reduction(const std::vector<double>& times, int final_receiver) {
  return assign_destinations(times, final_receiver, slowest_first(times, final_receiver));
}

Reduction snf_reduction(const std::vector<double>& times) { return snf_reduction(times, slowest(times)); }

double optimal_makespan(const std::vector<double>& times, long long max_orders) {
  check_times(times);
  if (times.size() <= 1) return 0;
  std::vector<double> values = times;
  std::sort(values.begin(), values.end());
  // EP never looks at the final receiver's own time, so one receiver per distinct
  // time covers every choice.
  std::vector<std::vector<double>> rests;
  double work = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0 && values[i] == values[i - 1]) continue;
    std::vector<double> rest = values;
    rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(i));
    work += distinct_orders(rest);
    rests.push_back(std::move(rest));
  }
  if (work > static_cast<double>(max_orders))
    throw std::invalid_argument("snf: brute force would run " + std::to_string(work) + " EP schedules");
  double best = INFINITY;
  for (auto& rest : rests) do {
      best = std::min(best, run_ep(rest, nullptr));
    } while (std::next_permutation(rest.begin(), rest.end()));
  return best;
}

}  // namespace canopy::planner::snf
