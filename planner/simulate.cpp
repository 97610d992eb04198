#include "planner/simulate.h"

#include <algorithm>
#include <deque>
#include <iterator>
#include <map>
#include <unordered_map>

#include "planner/validate.h"

namespace canopy::planner {

namespace {

constexpr double kUnset = -1;

// A network card's busy time: disjoint intervals, merged where they touch. A message
// books the first gap, from the time it could start, long enough for its bytes, so a
// message the worklist reaches later but that could start earlier still goes first
// where the card is free then (the worklist does not run in simulated time).
class CardCalendar {
 public:
  // The earliest time from t at which the card is free for `length`.
  double earliest(double t, double length) const {
    auto it = busy_.upper_bound(t);
    if (it != busy_.begin()) t = std::max(t, std::prev(it)->second);
    for (; it != busy_.end() && it->first < t + length; ++it) t = std::max(t, it->second);
    return t;
  }
  // Marks [t, t + length) busy (free: earliest() said so).
  void book(double t, double length) {
    double start = t, end = t + length;
    auto next = busy_.lower_bound(start);
    if (next != busy_.begin()) {
      auto prev = std::prev(next);
      if (prev->second >= start) {
        start = prev->first;
        end = std::max(end, prev->second);
        busy_.erase(prev);
      }
    }
    while (next != busy_.end() && next->first <= end) {
      end = std::max(end, next->second);
      next = busy_.erase(next);
    }
    busy_.emplace(start, end);
  }

 private:
  std::map<double, double> busy_;  // start -> end
};

class EventRun {
 public:
  EventRun(const Schedule& s, const CostModel& m, const Topology* topology, const Matching& match)
      : s_(s), m_(m), net_(m, topology), match_(match) {
    const int p = s.nranks;
    if (topology) set_up_cards(*topology);
    const int nseg = static_cast<int>(s.segments.size());
    pc_.assign(p, 0);
    queued_.assign(p, false);
    clock_.assign(p, 0.0);
    post_.resize(p);
    timing_.resize(p);
    acc_writer_.assign(p, std::vector<int>(nseg, -1));
    readers_.assign(p, std::vector<std::vector<int>>(nseg));
    slot_writer_.resize(p);
    ports_.resize(p);
    for (int r = 0; r < p; ++r) {
      post_[r].assign(s.steps[r].size(), kUnset);
      timing_[r].assign(s.steps[r].size(), StepTiming{});
      slot_writer_[r].assign(s.slots[r], -1);
      // Port 0 sends (and, half duplex, receives); port 1 receives when full duplex.
      ports_[r].resize(m.duplex == Duplex::Full ? 2 : 1);
      for (int i = 0; i < static_cast<int>(s.steps[r].size()); ++i) {
        const StepKind k = s.steps[r][i].kind;
        if (k == StepKind::Send) ports_[r][0].queue.push_back(i);
        else if (k == StepKind::Recv) ports_[r][recv_port()].queue.push_back(i);
        else if (k == StepKind::Expose) continue;  // computes nothing: no port to hold
        else if (!m.overlap)
          for (auto& port : ports_[r]) port.queue.push_back(i);  // computation holds every port
      }
    }
  }

  Simulation run() {
    // A worklist of ranks that may make progress: an event on a rank (a receive
    // posted, a transfer started or ended) puts the ranks it can unblock back on it.
    for (int r = 0; r < s_.nranks; ++r) wake(r);
    while (!work_.empty()) {
      const int r = work_.front();
      work_.pop_front();
      queued_[r] = false;
      while (issue(r) | start_transfers(r)) {
      }
    }
    Simulation out;
    out.ok = true;
    for (int r = 0; r < s_.nranks && out.ok; ++r)
      for (std::size_t i = 0; i < timing_[r].size(); ++i) {
        if (timing_[r][i].end == kUnset) {
          out.ok = false;
          out.error = "under this model rank " + std::to_string(r) + " never completes step " +
                      std::to_string(i) + " (" + describe(s_.steps[r][i]) +
                      "): its ports serve transfers in an order that deadlocks";
          break;
        }
        out.makespan = std::max(out.makespan, timing_[r][i].end);
      }
    out.timing = std::move(timing_);
    return out;
  }

 private:
  struct Port {
    std::deque<int> queue;  // step indices in program order
    double free = 0;        // when the last transfer on it ended
  };

  int recv_port() const { return m_.duplex == Duplex::Full ? 1 : 0; }

  double done(int r, int i) const { return i < 0 ? 0.0 : timing_[r][i].end; }

  // Issues rank r's steps in order until one must wait; true if any was issued.
  bool issue(int r) {
    bool progress = false;
    const auto& steps = s_.steps[r];
    while (pc_[r] < static_cast<int>(steps.size())) {
      const int i = pc_[r];
      const Step& st = steps[i];
      if (st.kind == StepKind::Recv) {
        if (st.buffer == Buffer::Accumulator) {
          // It overwrites its segments: the sends still reading them must have ended first.
          const double sent = sends_ended(r, st);
          if (sent == kUnset) break;
          clock_[r] = std::max(clock_[r], sent);
          for (int k = st.segment; k <= st.last_segment(); ++k) readers_[r][k].clear();
        }
        post_[r][i] = clock_[r];
        wake(match_.partner[r][i].rank);  // its sender may now start the transfer
        if (st.buffer == Buffer::Slot) slot_writer_[r][st.slot] = i;
        else
          for (int k = st.segment; k <= st.last_segment(); ++k) acc_writer_[r][k] = i;
      } else if (st.kind == StepKind::Send) {
        double ready = 0;
        if (st.buffer == Buffer::Accumulator) {
          ready = written(r, st);
          if (ready == kUnset) break;  // a receive that fills it has not completed
        }
        post_[r][i] = std::max(clock_[r], ready);
        clock_[r] = post_[r][i];
        if (st.buffer == Buffer::Accumulator || s_.collective == Collective::Allreduce)
          for (int k = st.segment; k <= st.last_segment(); ++k) readers_[r][k].push_back(i);
      } else if (st.kind == StepKind::Expose) {
        if (!expose(r, i)) break;
      } else {
        double start = clock_[r];
        const std::int64_t bytes = s_.span_bytes(st);
        double cost = m_.copy(bytes);
        if (st.kind == StepKind::Stage) {
          // Its data must be there, and its ring entry read by every reader of its previous use.
          if (st.buffer == Buffer::Accumulator) {
            const double ready = done(r, acc_writer_[r][st.segment]);
            if (ready == kUnset) break;
            start = std::max(start, ready);
          }
          const int previous = st.slot - s_.staging_entries;
          if (previous >= 0) {
            const double freed = entry_freed(r, previous);
            if (freed == kUnset) break;
            start = std::max(start, freed);
          }
        } else if (st.is_direct()) {
          // A Read or Write: once its peer has exposed the accumulator, a copy between the
          // two processes by this rank's core, as a fetch is (not a transfer between ports).
          const double exposed = done(st.peer, match_.partner[r][i].index);
          if (exposed == kUnset) break;
          start = std::max(start, exposed);
          cost = cross_package(r, st.peer, bytes, m_.direct_copy(bytes));
          if (st.kind == StepKind::Write) {  // it reads this rank's segment: the data must be there
            const double ready = done(r, acc_writer_[r][st.segment]);
            if (ready == kUnset) break;
            start = std::max(start, ready);
          }
        } else if (st.kind == StepKind::Fetch || st.kind == StepKind::FetchReduce) {
          const StepRef stage = match_.partner[r][i];
          const double staged = done(stage.rank, stage.index);
          if (staged == kUnset) break;
          start = std::max(start, staged + (m_.kind == "overlap" ? 0.0 : kStagingHandoffSeconds));
          if (st.kind == StepKind::FetchReduce) cost = m_.reduce(bytes);
          cost = cross_package(r, st.peer, bytes, cost);
        }
        if (st.kind == StepKind::Reduce) {
          const double operand = done(r, slot_writer_[r][st.slot]);
          if (operand == kUnset) break;
          start = std::max(start, operand);
          cost = m_.reduce(bytes);
        }
        if (writes_own_segment(st)) {
          const double acc_ready = written(r, st);
          if (acc_ready == kUnset) break;
          start = std::max(start, acc_ready);
          const double sent = sends_ended(r, st);
          if (sent == kUnset) break;
          start = std::max(start, sent);
        }
        if (!m_.overlap) {
          for (const auto& port : ports_[r])
            if (port.queue.empty() || port.queue.front() != i) return progress;  // earlier transfers first
          for (const auto& port : ports_[r]) start = std::max(start, port.free);
        }
        timing_[r][i] = {start, start + cost};
        clock_[r] = start + cost;
        if (writes_own_segment(st))
          for (int k = st.segment; k <= st.last_segment(); ++k) {
            acc_writer_[r][k] = i;
            readers_[r][k].clear();
          }
        if (st.kind == StepKind::Stage)
          for (const StepRef& reader : match_.readers_of[r][st.slot]) wake(reader.rank);
        if (st.kind == StepKind::Fetch || st.kind == StepKind::FetchReduce) wake(st.peer);
        if (!m_.overlap)
          for (auto& port : ports_[r]) {
            port.queue.pop_front();
            port.free = start + cost;
            wake_sender_of_head(r, port);
          }
      }
      ++pc_[r];
      progress = true;
    }
    return progress;
  }

  // Rank r's Expose, step i: it waits for the receives into its accumulator that are
  // still landing (as the validator's run), then lets its Read and Write accessors go.
  // It takes no time; the exposer's call lasts until the last access ends, and those
  // accesses are the accessors' steps, so the makespan covers them. False: it must wait.
  bool expose(int r, int i) {
    double start = clock_[r];
    for (const int writer : acc_writer_[r]) {
      const double landed = done(r, writer);
      if (landed == kUnset) return false;
      start = std::max(start, landed);
    }
    timing_[r][i] = {start, start};
    clock_[r] = start;
    for (const StepRef& accessor : match_.accessors_of[r]) wake(accessor.rank);
    return true;
  }

  // When the sends still reading rank r's segment `seg` (validate.h: of the accumulator,
  // and in an allreduce of the input) have ended, 0 for none; kUnset while one has not
  // started. The executor overwrites a segment only after those sends complete.
  double sends_ended(int r, int seg) const {
    double ended = 0;
    for (const int send : readers_[r][seg]) {
      const double end = done(r, send);
      if (end == kUnset) return kUnset;
      ended = std::max(ended, end);
    }
    return ended;
  }
  // The latest of at(k) over the segments a step spans, 0 for none; kUnset as soon as
  // one is.
  template <typename At>
  static double latest_over(const Step& st, At at) {
    double latest = 0;
    for (int k = st.segment; k <= st.last_segment(); ++k) {
      const double t = at(k);
      if (t == kUnset) return kUnset;
      latest = std::max(latest, t);
    }
    return latest;
  }
  // sends_ended over every segment a step spans.
  double sends_ended(int r, const Step& st) const {
    return latest_over(st, [&](int k) { return sends_ended(r, k); });
  }
  // When the last step writing any of the step's segments of rank r's accumulator ended
  // (0: none yet); kUnset while one has not.
  double written(int r, const Step& st) const {
    return latest_over(st, [&](int k) { return done(r, acc_writer_[r][k]); });
  }

  // Whether a local step writes this rank's accumulator segment (a Stage and a Write read it).
  static bool writes_own_segment(const Step& st) { return st.kind != StepKind::Stage && st.kind != StepKind::Write; }

  // The cost of a copy (or combine) on rank r of `bytes` that lie on rank `peer`'s side
  // (a staged entry, an exposed accumulator): reading or writing memory on another
  // package streams it over the link between the packages, no faster than that link
  // carries it. Decisions: the slower of the two rates, not their sum, since the loads
  // and the copy (or combine) overlap in one pass; and the link's bytes only, not its
  // per-message alpha (an MPI message's overhead, measured by ping-pong), since a staged
  // read pays its own hand-over (kStagingHandoffSeconds) and a direct one its system call instead.
  double cross_package(int r, int peer, std::int64_t bytes, double cost) const {
    if (const Topology* t = net_.topology(); t && t->package_link && !t->same_package(r, peer))
      return std::max(cost, t->package_link->transfer(bytes) - t->package_link->alpha);
    return cost;
  }

  // When every reader of rank r's stage k has finished with it; kUnset while one has not.
  double entry_freed(int r, int k) const {
    double freed = 0;
    for (const StepRef& reader : match_.readers_of[r][k]) {
      const double end = done(reader.rank, reader.index);
      if (end == kUnset) return kUnset;
      freed = std::max(freed, end);
    }
    return freed;
  }

  // Starts the transfers at the head of rank r's send port whose receiver is ready.
  bool start_transfers(int r) {
    bool progress = false;
    Port& out = ports_[r][0];
    while (!out.queue.empty()) {
      const int i = out.queue.front();
      if (s_.steps[r][i].kind != StepKind::Send || post_[r][i] == kUnset) break;
      const StepRef to = match_.partner[r][i];
      Port& in = ports_[to.rank][recv_port()];
      if (post_[to.rank][to.index] == kUnset || in.queue.empty() || in.queue.front() != to.index) break;
      double start = std::max({post_[r][i], post_[to.rank][to.index], out.free, in.free});
      const std::int64_t bytes = s_.span_bytes(s_.steps[r][i]);
      // A link whose latency is in flight (port=, CostModel::port_per_byte) frees the
      // ports before the bytes are through: the next message between the same two
      // ranks waits for the link to have passed this one's bytes (at the link's rate),
      // so segments sent one after another over a slow link do not overlap on it.
      // Between the same two ranks only: both take their messages in program order, so
      // this is causal whatever order the worklist runs ranks in; messages of other
      // pairs sharing a link between two sites are not seen (busiest_link bounds them).
      const CostModel& link = net_.link(r, to.rank);
      double* link_free = nullptr;
      if (!link.ports_held_for_transfer() && link.gap.empty()) {
        link_free = &pair_link_free_[static_cast<std::int64_t>(r) * s_.nranks + to.rank];
        start = std::max(start, *link_free);
      }
      start = through_cards(r, to.rank, bytes, start);
      const double end = start + net_.transfer(r, to.rank, bytes);
      if (link_free) *link_free = end - net_.transfer(r, to.rank, 0);  // the bytes through, not the latency
      timing_[r][i] = timing_[to.rank][to.index] = {start, end};
      // The ports are free again after the occupancy (pLogP's gap), which may be
      // shorter than the time to arrival (its L + gap).
      out.free = in.free = start + net_.occupancy(r, to.rank, bytes);
      out.queue.pop_front();
      in.queue.pop_front();
      wake(to.rank);  // the data it waits for is there, and its port moved on
      wake_sender_of_head(to.rank, in);
      wake_sender_of_head(r, out);  // half duplex: r's port may now serve a receive
      progress = true;
    }
    return progress;
  }

  // Node cards (simulate.h): a card for each node of two or more ranks, each way, at its
  // cluster's rate (cluster_cards); nodes of one rank need none (its ports hold as long).
  void set_up_cards(const Topology& t) {
    const std::vector<double> per_cluster = cluster_cards(t);
    std::vector<int> ranks(static_cast<std::size_t>(t.nodes()), 0);
    for (int r = 0; r < t.nranks(); ++r) ++ranks[t.node[r]];
    card_per_byte_.assign(ranks.size(), 0);
    for (int r = 0; r < t.nranks(); ++r)
      if (ranks[t.node[r]] > 1) card_per_byte_[t.node[r]] = per_cluster[t.cluster[r]];
    sending_card_.resize(ranks.size());
    receiving_card_.resize(ranks.size());
  }

  // When a message of `bytes` from rank `from` to rank `to`, which could start at `start`,
  // finds both nodes' cards free for its bytes; books them from then.
  double through_cards(int from, int to, std::int64_t bytes, double start) {
    const Topology* t = net_.topology();
    if (!t || card_per_byte_.empty() || t->same_node(from, to) || bytes <= 0) return start;
    const int a = t->node[from], b = t->node[to];
    const double out = card_per_byte_[a] * static_cast<double>(bytes);
    const double in = card_per_byte_[b] * static_cast<double>(bytes);
    if (out <= 0 && in <= 0) return start;
    for (;;) {
      const double sendable = out > 0 ? sending_card_[a].earliest(start, out) : start;
      const double both = in > 0 ? receiving_card_[b].earliest(sendable, in) : sendable;
      if (both == start) break;
      start = both;
    }
    if (out > 0) sending_card_[a].book(start, out);
    if (in > 0) receiving_card_[b].book(start, in);
    return start;
  }

  void wake(int r) {
    if (!queued_[r]) {
      queued_[r] = true;
      work_.push_back(r);
    }
  }

  // The transfer now at the head of rank r's port may be able to start: its sender
  // decides that.
  void wake_sender_of_head(int r, const Port& port) {
    if (port.queue.empty()) return;
    const int i = port.queue.front();
    if (s_.steps[r][i].kind == StepKind::Recv) wake(match_.partner[r][i].rank);
  }

  const Schedule& s_;
  const CostModel& m_;
  const Network net_;  // prices messages per pair of ranks
  const Matching& match_;
  std::deque<int> work_;
  std::vector<bool> queued_;
  std::vector<int> pc_;
  std::vector<double> clock_;                    // when rank r can issue its next step
  std::vector<std::vector<double>> post_;        // when a send or receive was posted
  std::vector<std::vector<StepTiming>> timing_;
  std::vector<std::vector<int>> acc_writer_;     // last step writing acc[segment]
  std::vector<std::vector<std::vector<int>>> readers_;  // sends reading acc[segment] since it was written
  std::vector<std::vector<int>> slot_writer_;    // receive that last targeted a slot
  std::vector<std::vector<Port>> ports_;
  std::unordered_map<std::int64_t, double> pair_link_free_;  // sender x p + receiver: when its link is free
  std::vector<double> card_per_byte_;          // per node; 0: no card to share
  std::vector<CardCalendar> sending_card_, receiving_card_;  // per node
};

}  // namespace

Simulation simulate(const Schedule& schedule, const CostModel& model, const Topology* topology) {
  Matching matching;
  std::vector<std::string> errors;
  if (schedule.is_view()) {
    Simulation out;
    out.error = "rank " + std::to_string(schedule.view_rank) + "'s view holds one rank's steps; simulate the whole schedule";
    return out;
  }
  if (topology && topology->nranks() != schedule.nranks) {
    Simulation out;
    out.error = "the topology has " + std::to_string(topology->nranks()) + " ranks, the schedule " +
                std::to_string(schedule.nranks);
    return out;
  }
  if (!check_shape(schedule, errors) || !match_messages(schedule, matching, errors)) {
    Simulation out;
    out.error = errors.front();
    return out;
  }
  return EventRun(schedule, model, topology, matching).run();
}

}  // namespace canopy::planner
