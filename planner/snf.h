// Liu & Wang (002_*.txt), "Reduction Optimization in Heterogeneous Cluster
// Environments", as pure functions over transmission times: the earliest-possible
// (EP) schedule of Section 3 (Figure 2), Lemma 1's destination assignment, the
// slowest-node-first (SNF) order of Section 4, and a brute-force optimum over EP
// schedules for small clusters (the canonical form in which Section 3 searches).
//
// The model (Section 2): n processors each hold one unit of data; processor p sends
// a message in t(p), whoever receives it; a transfer holds its sender and its
// receiver for that whole time, and no processor takes part in two transfers at
// once. A reduction is n-1 transfers by n-1 distinct senders; one processor, the
// final receiver, never sends. A schedule gives each sender its start time s(p).
//
// Processors are numbered 0..n-1 and `times[p]` is t(p). A "sequence" lists the
// n-1 senders in the order EP starts them; every other processor is the final
// receiver.
#pragma once

#include <string>
#include <vector>

namespace canopy::planner::snf {

// ---- Algorithm EP (Figure 2) ------------------------------------------------------

// The EP schedule of a sequence of senders, in the sequence's own positions.
struct EpSchedule {
  std::vector<double> start;       // [i]: when the i-th sender of the sequence starts
  std::vector<double> completion;  // [i]: start[i] + its time
  // [i]: the positions of the senders whose completions freed the processors the
  // i-th transfer uses (Lemma 1's predecessors): two, or fewer where the transfer
  // uses a processor that was free from time 0. Listed in the order they were freed
  // (FIFO), earliest first.
  std::vector<std::vector<int>> predecessors;
  double makespan = 0;  // the last completion; 0 without senders
};

// Runs EP over `sender_times` (t of the i-th sender of the sequence) in a cluster of
// n = sender_times.size() + 1 processors. Times must be finite and non-negative
// (std::invalid_argument otherwise).
EpSchedule earliest_possible(const std::vector<double>& sender_times);

// Only the makespan of earliest_possible(), without the bookkeeping (brute force
// runs it many times).
double ep_makespan(const std::vector<double>& sender_times);

// Inequality (1): 2A(s, t) + C(s, t) <= n at every time t, for senders with times
// `sender_times` starting at `start` (same positions) in a cluster of n processors.
// A(t) counts transfers with s <= t < c, C(t) those with c <= t.
bool satisfies_inequality_1(int n, const std::vector<double>& sender_times, const std::vector<double>& start);

// ---- Lemma 1: who sends to whom ---------------------------------------------------

// A reduction: the EP schedule of a sequence plus every sender's destination.
// Indexed by processor unless said otherwise.
struct Reduction {
  int final_receiver = -1;
  std::vector<int> sequence;               // the senders, in EP order
  std::vector<double> start;               // [p]: when p starts sending; -1 for the final receiver
  std::vector<int> parent;                 // [p]: who p sends to; -1 for the final receiver
  std::vector<std::vector<int>> receives;  // [p]: whom p receives from, in time order
  double makespan = 0;

  int size() const { return static_cast<int>(parent.size()); }
};

// EP over `sequence` (a permutation of every processor but `final_receiver`), then
// Lemma 1's destinations. Throws std::invalid_argument on a bad sequence.
Reduction assign_destinations(const std::vector<double>& times, int final_receiver, const std::vector<int>& sequence);

// Why `r` is not a valid reduction for these times, or "" when it is: every
// processor but the final receiver sends exactly once, to a processor that is not
// itself and at the stated start; the messages form a tree rooted at the final
// receiver; no processor is in two transfers that overlap in time (touching ends are
// fine); every processor receives only before it sends; `receives` lists each
// processor's incoming transfers in time order; the makespan is the last completion.
std::string check_reduction(const std::vector<double>& times, const Reduction& r);

// ---- Slowest node first (Section 4) -----------------------------------------------

// The slowest processor, the lowest-numbered among equals: the paper's final receiver.
int slowest(const std::vector<double>& times);

// Every processor but `final_receiver`, by non-increasing time; equal times keep
// processor order, so every rank computes the same sequence.
std::vector<int> slowest_first(const std::vector<double>& times, int final_receiver);

// The SNF reduction with a given final receiver (the MPI root), and the paper's,
// whose final receiver is the slowest processor.
Reduction snf_reduction(const std::vector<double>& times, int final_receiver);
Reduction snf_reduction(const std::vector<double>& times);

// ---- The optimum, by brute force --------------------------------------------------

// The smallest EP makespan over every choice of final receiver and every order of
// the other processors. Orders that only swap equal times give the same EP schedule,
// so only distinct ones are tried. Throws std::invalid_argument when that is more
// than `max_orders` EP runs.
double optimal_makespan(const std::vector<double>& times, long long max_orders = 20'000'000);

}  // namespace canopy::planner::snf
