#include "planner/validate.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <sstream>
#include <utility>

#include "planner/rank_set.h"
#include "planner/segments.h"

namespace canopy::planner {

std::string Validation::summary() const {
  std::string out;
  for (std::size_t i = 0; i < errors.size() && i < 3; ++i) {
    if (i) out += "; ";
    out += errors[i];
  }
  if (errors.size() > 3) out += "; and " + std::to_string(errors.size() - 3) + " more";
  return out;
}

namespace {

std::string where(int rank, int index, const Step& step) {
  return "rank " + std::to_string(rank) + " step " + std::to_string(index) + " (" + describe(step) +
         ")";
}

// An Expose, Read or Write (schedule.h): only where the schedule says it reaches into
// other ranks' memory (the shim then checks that the ring's ranks may), and only in a
// broadcast, where the accumulator is the user's bytes on every rank.
void check_direct_shape(const Schedule& s, int r, int i, const Step& st, std::vector<std::string>& errors) {
  if (!s.uses_direct()) errors.push_back(where(r, i, st) + ": the schedule is not direct");
  if (!s.uses_staging()) errors.push_back(where(r, i, st) + ": the schedule has no ring to expose through");
  if (s.collective != Collective::Bcast) errors.push_back(where(r, i, st) + ": direct steps are for broadcasts only");
  if (st.buffer != Buffer::Accumulator) errors.push_back(where(r, i, st) + ": a direct step moves the accumulator only");
  if (st.kind == StepKind::Expose && st.readers < 1) errors.push_back(where(r, i, st) + ": an expose needs an accessor");
}

}  // namespace

bool check_shape(const Schedule& s, std::vector<std::string>& errors) {
  if (s.nranks < 1) errors.push_back("nranks must be at least 1");
  if (s.root < 0 || s.root >= s.nranks) errors.push_back("root outside the communicator");
  const int held = s.is_view() ? 1 : s.nranks;  // step lists the schedule holds
  if (s.is_view() && s.view_rank >= s.nranks) errors.push_back("view_rank outside the communicator");
  if (static_cast<int>(s.steps.size()) != held)
    errors.push_back(s.is_view() ? "a rank view holds one step list" : "steps must list every rank");
  if (static_cast<int>(s.slots.size()) != held)
    errors.push_back(s.is_view() ? "a rank view holds one slot count" : "slots must list every rank");
  if (s.element_bytes < 1) errors.push_back("element_bytes must be positive");
  else if (s.count > std::numeric_limits<std::int64_t>::max() / s.element_bytes)
    errors.push_back("count * element_bytes overflows");
  std::int64_t next = 0;
  for (std::size_t k = 0; k < s.segments.size(); ++k) {
    // count - next: segments past the message (or so large that the sum overflows) stop here.
    if (s.segments[k].first != next || s.segments[k].count < 1 || s.segments[k].count > s.count - next) {
      errors.push_back("segment " + std::to_string(k) + " does not continue the layout");
      break;
    }
    // The executor sends a segment as one message with an int count.
    if (s.segments[k].count > kMaxSegmentCount) {
      errors.push_back("segment " + std::to_string(k) + " holds " + std::to_string(s.segments[k].count) +
                       " elements, more than one MPI message can (" + std::to_string(kMaxSegmentCount) + ")");
      break;
    }
    next += s.segments[k].count;
  }
  // The executor tags messages with their segment index.
  if (static_cast<std::int64_t>(s.segments.size()) > kMaxSegments)
    errors.push_back(std::to_string(s.segments.size()) + " segments exceed the " + std::to_string(kMaxSegments) +
                     " distinct message tags");
  if (next != s.count) errors.push_back("segments cover " + std::to_string(next) + " of " +
                                        std::to_string(s.count) + " elements");
  if (!errors.empty()) return false;
  const int nseg = static_cast<int>(s.segments.size());
  for (int h = 0; h < held; ++h) {
    const int r = s.is_view() ? s.view_rank : h;
    if (s.slots[h] < 0) errors.push_back("rank " + std::to_string(r) + " has a negative number of slots");
    for (int i = 0; i < static_cast<int>(s.steps[h].size()); ++i) {
      const Step& st = s.steps[h][i];
      const bool comm = st.is_message() || st.kind == StepKind::Fetch || st.kind == StepKind::FetchReduce ||
                        st.kind == StepKind::Read || st.kind == StepKind::Write;
      // An Expose is the whole accumulator's: its segment (and peer) mean nothing, and
      // nothing reads them.
      const bool of_segment = st.kind != StepKind::Expose;
      if (of_segment && (st.segment < 0 || st.segment >= nseg)) errors.push_back(where(r, i, st) + ": no such segment");
      // A span (schedule.h): Send, Recv, Reduce and Copy only, over segments that exist,
      // whose elements fit one MPI call's int count.
      const bool spans = st.kind == StepKind::Send || st.kind == StepKind::Recv || st.kind == StepKind::Reduce ||
                         st.kind == StepKind::Copy;
      if (st.span < 1 || (!spans && st.span != 1)) {
        errors.push_back(where(r, i, st) + ": span " + std::to_string(st.span) +
                         (st.span < 1 ? " is not positive" : ": only a send, receive, reduce or copy spans segments"));
        continue;
      }
      if (st.span > 1 && st.segment >= 0 && st.segment < nseg) {
        if (st.span > nseg - st.segment) {
          errors.push_back(where(r, i, st) + ": spans segments past the last (" + std::to_string(nseg - 1) + ")");
          continue;
        }
        if (s.span_count(st) > kMaxSegmentCount)
          errors.push_back(where(r, i, st) + ": spans " + std::to_string(s.span_count(st)) +
                           " elements, more than one MPI message can (" + std::to_string(kMaxSegmentCount) + ")");
      }
      if (comm && (st.peer < 0 || st.peer >= s.nranks || st.peer == r))
        errors.push_back(where(r, i, st) + ": bad peer");
      if (st.is_staging()) {
        if (!s.uses_staging()) errors.push_back(where(r, i, st) + ": the schedule has no staging ring");
        else if (st.segment >= 0 && st.segment < nseg && s.segment_bytes(st.segment) > s.staging_entry_bytes)
          errors.push_back(where(r, i, st) + ": the segment is larger than a staging entry (" +
                           std::to_string(s.staging_entry_bytes) + " bytes)");
        if (st.slot < 0) errors.push_back(where(r, i, st) + ": negative stage number");
      }
      if (st.kind == StepKind::Stage && st.readers < 1) errors.push_back(where(r, i, st) + ": a stage needs a reader");
      if (st.kind == StepKind::Stage && st.buffer == Buffer::Slot)
        errors.push_back(where(r, i, st) + ": staging from a slot is not supported");
      if (st.kind == StepKind::Fetch && st.buffer != Buffer::Accumulator)
        errors.push_back(where(r, i, st) + ": a fetch writes the accumulator");
      if (st.kind == StepKind::FetchReduce && st.buffer == Buffer::Slot)
        errors.push_back(where(r, i, st) + ": a fetch-reduce combines with the accumulator or the input");
      const bool uses_slot = st.kind == StepKind::Reduce ||
                             (st.kind == StepKind::Recv && st.buffer == Buffer::Slot);
      // (slots[h]: a view holds its rank's count at 0; slots[r] read past its end.)
      if (uses_slot && (st.slot < 0 || st.slot > s.slots[h] - st.span))
        errors.push_back(where(r, i, st) + (st.span > 1 ? ": slots" : ": slot") + " outside 0.." +
                         std::to_string(s.slots[h] - 1));
      if (st.is_direct()) check_direct_shape(s, r, i, st, errors);
      const bool moves = st.is_message() || st.kind == StepKind::Stage || st.kind == StepKind::Fetch || st.is_direct();
      if (s.collective == Collective::Bcast && !moves)
        errors.push_back(where(r, i, st) + ": a broadcast only moves data (send, receive, stage, fetch, expose, "
                                           "read, write)");
      // (A direct step's buffer has its own check above.)
      if (s.collective == Collective::Bcast && moves && !st.is_direct() && st.buffer != Buffer::Accumulator)
        errors.push_back(where(r, i, st) + ": a broadcast moves the accumulator (user buffer) only");
      if (st.kind == StepKind::Send && st.buffer == Buffer::Slot)
        errors.push_back(where(r, i, st) + ": sending from a slot is not supported");
    }
  }
  return errors.empty();
}

namespace {

bool match_stages(const Schedule& s, Matching& out, std::vector<std::string>& errors) {
  out.stage.assign(s.nranks, {});
  out.readers_of.assign(s.nranks, {});
  bool ok = true;
  for (int r = 0; r < s.nranks; ++r)
    for (int i = 0; i < static_cast<int>(s.steps[r].size()); ++i) {
      const Step& st = s.steps[r][i];
      if (st.kind != StepKind::Stage) continue;
      if (st.slot != static_cast<int>(out.stage[r].size())) {
        errors.push_back(where(r, i, st) + ": stage numbers must count 0, 1, 2, ... (expected " +
                         std::to_string(out.stage[r].size()) + ")");
        return false;
      }
      out.stage[r].push_back(i);
      out.readers_of[r].emplace_back();
    }
  for (int r = 0; r < s.nranks; ++r)
    for (int i = 0; i < static_cast<int>(s.steps[r].size()); ++i) {
      const Step& st = s.steps[r][i];
      if (st.kind != StepKind::Fetch && st.kind != StepKind::FetchReduce) continue;
      if (st.slot >= static_cast<int>(out.stage[st.peer].size())) {
        errors.push_back(where(r, i, st) + ": rank " + std::to_string(st.peer) + " has no such stage");
        ok = false;
        continue;
      }
      const int at = out.stage[st.peer][st.slot];
      if (s.steps[st.peer][at].segment != st.segment) {
        errors.push_back(where(r, i, st) + ": the stage holds segment " + std::to_string(s.steps[st.peer][at].segment));
        ok = false;
      }
      out.partner[r][i] = {st.peer, at};
      out.readers_of[st.peer][st.slot].push_back({r, i});
    }
  for (int r = 0; r < s.nranks && ok; ++r)
    for (std::size_t k = 0; k < out.stage[r].size(); ++k) {
      const Step& st = s.steps[r][out.stage[r][k]];
      if (static_cast<int>(out.readers_of[r][k].size()) != st.readers) {
        errors.push_back(where(r, out.stage[r][k], st) + ": read by " + std::to_string(out.readers_of[r][k].size()) +
                         " steps, declares " + std::to_string(st.readers));
        ok = false;
      }
    }
  return ok;
}

// Whether the step writes this rank's own accumulator segment (st.segment).
bool writes_accumulator(const Step& st) {
  switch (st.kind) {
    case StepKind::Recv: return st.buffer == Buffer::Accumulator;
    case StepKind::Reduce:
    case StepKind::Copy:
    case StepKind::Fetch:
    case StepKind::FetchReduce:
    case StepKind::Read: return true;
    case StepKind::Send:
    case StepKind::Stage:
    case StepKind::Expose:
    case StepKind::Write: return false;  // a Write fills the peer's
  }
  return false;
}

std::string rank_name(int r) { return "rank " + std::to_string(r); }

// The accesses to rank e's exposed accumulator race with nothing (validate.h): the run
// below cannot see a race, since it runs one order of the ranks' steps, not all of them.
bool check_direct_races(const Schedule& s, const Matching& m, int e, std::vector<std::string>& errors) {
  const std::size_t before = errors.size();
  const int nseg = static_cast<int>(s.segments.size());
  std::vector<StepRef> reader(nseg), writer(nseg);  // an access of each kind per segment (for the errors)
  for (const StepRef& a : m.accessors_of[e]) {
    const Step& st = s.steps[a.rank][a.index];
    if (st.kind == StepKind::Read) {
      if (reader[st.segment].rank < 0) reader[st.segment] = a;
    } else if (writer[st.segment].rank >= 0) {
      errors.push_back(where(a.rank, a.index, st) + ": segment " + std::to_string(st.segment) + " of " + rank_name(e) +
                       " is written by " + rank_name(writer[st.segment].rank) + " too");
    } else {
      writer[st.segment] = a;
    }
  }
  for (int k = 0; k < nseg; ++k)
    if (reader[k].rank >= 0 && writer[k].rank >= 0) {
      const StepRef a = reader[k];
      errors.push_back(where(a.rank, a.index, s.steps[a.rank][a.index]) + ": " + rank_name(writer[k].rank) +
                       " writes that segment into " + rank_name(e) + ", and nothing orders the write before the read");
    }
  const std::vector<Step>& own = s.steps[e];
  for (int i = 0; i < static_cast<int>(own.size()); ++i) {
    const Step& st = own[i];
    if (st.kind == StepKind::Expose) continue;
    // Every segment the step covers: a spanned send, receive, reduce or copy touches them all.
    for (int k = st.segment; k < st.segment + st.span; ++k) {
      if (writer[k].rank >= 0) {
        errors.push_back(where(e, i, st) + ": touches a segment that " + rank_name(writer[k].rank) +
                         " writes into this rank");
        break;
      }
      if (i > m.expose[e] && writes_accumulator(st) && reader[k].rank >= 0) {
        errors.push_back(where(e, i, st) + ": writes a segment after exposing it to " +
                         rank_name(reader[k].rank) + ", which reads it");
        break;
      }
    }
  }
  return errors.size() == before;
}

// Pairs the direct steps (validate.h): every Read and Write with its peer's one Expose.
bool match_direct(const Schedule& s, Matching& out, std::vector<std::string>& errors) {
  out.expose.assign(s.nranks, -1);
  out.accessors_of.assign(s.nranks, {});
  bool ok = true;
  for (int r = 0; r < s.nranks; ++r)
    for (int i = 0; i < static_cast<int>(s.steps[r].size()); ++i) {
      const Step& st = s.steps[r][i];
      if (st.kind != StepKind::Expose) continue;
      if (out.expose[r] >= 0) {
        errors.push_back(where(r, i, st) + ": exposes the accumulator again (step " + std::to_string(out.expose[r]) +
                         " did)");
        ok = false;
      } else {
        out.expose[r] = i;
      }
    }
  for (int r = 0; r < s.nranks; ++r)
    for (int i = 0; i < static_cast<int>(s.steps[r].size()); ++i) {
      const Step& st = s.steps[r][i];
      if (st.kind != StepKind::Read && st.kind != StepKind::Write) continue;
      const int e = out.expose[st.peer];
      if (e < 0) {
        errors.push_back(where(r, i, st) + ": " + rank_name(st.peer) + " exposes nothing");
        ok = false;
        continue;
      }
      out.partner[r][i] = {st.peer, e};
      out.accessors_of[st.peer].push_back({r, i});
    }
  for (int r = 0; r < s.nranks && ok; ++r) {
    if (out.expose[r] < 0) continue;
    const Step& st = s.steps[r][out.expose[r]];
    if (static_cast<int>(out.accessors_of[r].size()) != st.readers) {
      errors.push_back(where(r, out.expose[r], st) + ": accessed by " + std::to_string(out.accessors_of[r].size()) +
                       " steps, declares " + std::to_string(st.readers));
      ok = false;
    }
  }
  if (!ok) return false;
  for (int r = 0; r < s.nranks; ++r)
    if (out.expose[r] >= 0) ok = check_direct_races(s, out, r, errors) && ok;
  return ok;
}

}  // namespace

bool match_messages(const Schedule& s, Matching& out, std::vector<std::string>& errors) {
  // Every send and receive as (from, to) and its step, sorted by the pair; a stable sort
  // keeps each pair's messages in program order, the order in which they match. (Flat
  // vectors rather than a map of lists: auto prices a reduce by simulating each
  // candidate, and on 16 ranks this matching was a quarter of that planning.)
  struct Message {
    int from, to;
    StepRef step;
  };
  std::vector<Message> sends, recvs;
  out.partner.assign(s.nranks, {});
  for (int r = 0; r < s.nranks; ++r) {
    out.partner[r].assign(s.steps[r].size(), StepRef{});
    for (int i = 0; i < static_cast<int>(s.steps[r].size()); ++i) {
      const Step& st = s.steps[r][i];
      if (st.kind == StepKind::Send) sends.push_back({r, st.peer, {r, i}});
      if (st.kind == StepKind::Recv) recvs.push_back({st.peer, r, {r, i}});
    }
  }
  const auto pair_of = [](const Message& m) { return std::make_pair(m.from, m.to); };
  const auto pair_order = [&](const Message& a, const Message& b) { return pair_of(a) < pair_of(b); };
  std::stable_sort(sends.begin(), sends.end(), pair_order);
  std::stable_sort(recvs.begin(), recvs.end(), pair_order);
  bool ok = match_stages(s, out, errors);
  ok = match_direct(s, out, errors) && ok;
  // Walk both lists pair by pair, in the pairs' order (that of the errors too).
  std::size_t i = 0, j = 0;
  while (i < sends.size() || j < recvs.size()) {
    const bool send_next = j == recvs.size() || (i < sends.size() && !pair_order(recvs[j], sends[i]));
    const Message& next = send_next ? sends[i] : recvs[j];
    const std::pair<int, int> key = pair_of(next);
    std::size_t i_end = i, j_end = j;
    while (i_end < sends.size() && pair_of(sends[i_end]) == key) ++i_end;
    while (j_end < recvs.size() && pair_of(recvs[j_end]) == key) ++j_end;
    if (i_end - i != j_end - j) {
      errors.push_back("rank " + std::to_string(key.first) + " sends " + std::to_string(i_end - i) +
                       " messages to rank " + std::to_string(key.second) + " which receives " +
                       std::to_string(j_end - j));
      ok = false;
    } else {
      for (std::size_t k = 0; k < i_end - i; ++k) {
        const StepRef& sent = sends[i + k].step;
        const StepRef& received = recvs[j + k].step;
        const Step& a = s.steps[sent.rank][sent.index];
        const Step& b = s.steps[received.rank][received.index];
        if (a.segment != b.segment || a.span != b.span) {
          const auto name = [](const Step& st) {
            return "segment " + std::to_string(st.segment) +
                   (st.span > 1 ? ".." + std::to_string(st.last_segment()) : std::string());
          };
          errors.push_back("message " + std::to_string(k) + " from rank " + std::to_string(key.first) + " to " +
                           std::to_string(key.second) + " is " + name(a) + " but is received as " + name(b));
          ok = false;
        }
        out.partner[sent.rank][sent.index] = received;
        out.partner[received.rank][received.index] = sent;
      }
    }
    i = i_end;
    j = j_end;
  }
  return ok;
}

namespace {

enum class SlotState { Free, Pending, Full };

struct SegmentState {
  RankSet content;
  int pending_recv = -1;    // step index of an incomplete receive into it
  bool written = false;     // written by this rank (recv, reduce, copy) at least once
  bool sent = false;        // sent since it was last written
  // Sends that read this segment (of the accumulator; in an allreduce, of the input
  // too, which may be the accumulator) since it was last written: a step that writes
  // the segment waits until each of them has had its receive posted (send_completion).
  std::vector<int> readers;
};

// A slot, or a run of them that one spanned receive fills (schedule.h): the first slot
// of the run holds the receive's segments and their contents; the others are taken
// (not Free) with segment -1, so that only a Reduce of the whole run reads them.
struct SlotData {
  SlotState state = SlotState::Free;
  int recv_step = -1;
  int segment = -1;
  int span = 1;
  std::vector<RankSet> content;  // per segment of the span
};

class SymbolicRun {
 public:
  SymbolicRun(const Schedule& s, const Matching& m) : s_(s), m_(m) {
    const int nseg = static_cast<int>(s.segments.size());
    acc_.assign(s.nranks, std::vector<SegmentState>(nseg));
    slots_.resize(s.nranks);
    pc_.assign(s.nranks, 0);
    posted_.resize(s.nranks);
    complete_.resize(s.nranks);
    message_.resize(s.nranks);
    staged_.resize(s.nranks);
    reads_.resize(s.nranks);
    exposed_.assign(s.nranks, false);
    for (int r = 0; r < s.nranks; ++r) {
      slots_[r].resize(s.slots[r]);
      posted_[r].assign(s.steps[r].size(), false);
      complete_[r].assign(s.steps[r].size(), false);
      message_[r].resize(s.steps[r].size());
      staged_[r].resize(m.stage[r].size());
      reads_[r].assign(m.stage[r].size(), 0);
    }
    if (s.collective == Collective::Bcast)
      for (auto& seg : acc_[s.root]) seg.content = RankSet::single(s.root), seg.written = true;
  }

  void run(std::vector<std::string>& errors) {
    // A worklist: a rank runs until it must wait; a send that completes a receive
    // puts the receiving rank back on the list.
    queued_.assign(s_.nranks, true);
    for (int r = 0; r < s_.nranks; ++r) work_.push_back(r);
    while (!work_.empty() && errors.empty()) {
      const int r = work_.front();
      work_.pop_front();
      queued_[r] = false;
      while (pc_[r] < static_cast<int>(s_.steps[r].size()) && errors.empty() && advance(r, errors)) {
      }
    }
    if (!errors.empty()) return;
    for (int r = 0; r < s_.nranks; ++r) {
      if (pc_[r] < static_cast<int>(s_.steps[r].size())) {
        const int i = pc_[r];
        errors.push_back("deadlock: " + where(r, i, s_.steps[r][i]) + " waits forever");
        if (errors.size() >= 4) return;
      }
    }
    if (!errors.empty()) return;
    check_outcome(errors);
  }

 private:
  // Executes rank r's next step if it can; false when it must wait.
  bool advance(int r, std::vector<std::string>& errors) {
    const int i = pc_[r];
    const Step& st = s_.steps[r][i];
    if (st.kind == StepKind::Expose) return expose(r);  // the whole accumulator's: no segment
    SegmentState& acc = acc_[r][st.segment];
    auto fail = [&](const std::string& why) {
      errors.push_back(where(r, i, st) + ": " + why);
      return false;
    };
    switch (st.kind) {
      case StepKind::Recv: {
        if (st.buffer == Buffer::Slot) {
          for (int j = 0; j < st.span; ++j)
            if (slots_[r][st.slot + j].state != SlotState::Free) return fail("slot still holds an operand not yet reduced");
          for (int j = 0; j < st.span; ++j) {
            SlotData& slot = slots_[r][st.slot + j];
            slot.state = SlotState::Pending;
            slot.recv_step = i;
            slot.segment = j == 0 ? st.segment : -1;
            slot.span = j == 0 ? st.span : 0;
          }
        } else {
          for (int k = st.segment; k <= st.last_segment(); ++k) {
            const SegmentState& seg = acc_[r][k];
            if (seg.pending_recv >= 0) return fail("a receive into this segment is already pending");
            if (!seg.content.empty() && !seg.sent) return fail("overwrites a partial result that was never sent");
          }
          for (int k = st.segment; k <= st.last_segment(); ++k)
            if (!sends_received(r, acc_[r][k])) return false;
          for (int k = st.segment; k <= st.last_segment(); ++k) acc_[r][k].pending_recv = i;
        }
        posted_[r][i] = true;
        const StepRef from = m_.partner[r][i];
        // Its sender may wait for this receive before overwriting the segment it sent.
        if (posted_[from.rank][from.index]) deliver(r, i), wake(from.rank);
        break;
      }
      case StepKind::Send: {
        // Every segment of the span must be there before the one message goes.
        if (st.buffer == Buffer::Accumulator)
          for (int k = st.segment; k <= st.last_segment(); ++k)
            if (acc_[r][k].pending_recv >= 0) return false;  // waits for the receive that fills it
        std::vector<RankSet>& contents = message_[r][i];
        contents.assign(st.span, RankSet{});
        for (int k = st.segment; k <= st.last_segment(); ++k)
          if (!outgoing(r, st, acc_[r][k], contents[k - st.segment], fail)) return false;
        posted_[r][i] = true;
        if (st.buffer == Buffer::Accumulator || s_.collective == Collective::Allreduce)
          for (int k = st.segment; k <= st.last_segment(); ++k) acc_[r][k].readers.push_back(i);
        const StepRef to = m_.partner[r][i];
        if (posted_[to.rank][to.index]) {
          deliver(to.rank, to.index);
          wake(to.rank);
        }
        break;
      }
      case StepKind::Reduce: {
        SlotData& slot = slots_[r][st.slot];
        if (slot.state == SlotState::Free) return fail("reduces a slot that no receive fills");
        if (slot.segment < 0) return fail("the slot is part of a receive packed from an earlier slot");
        if (slot.segment != st.segment) return fail("the slot holds segment " + std::to_string(slot.segment));
        if (slot.span != st.span)
          return fail("the slot holds " + std::to_string(slot.span) + " segments packed, not " + std::to_string(st.span));
        if (slot.state == SlotState::Pending) return false;  // waits for the receive
        for (int k = st.segment; k <= st.last_segment(); ++k) {
          const SegmentState& seg = acc_[r][k];
          const RankSet& incoming = slot.content[k - st.segment];
          if (seg.pending_recv >= 0) return fail("reduces into a segment while a receive into it is pending");
          if (const std::string why = combine_fault(st, incoming, seg.content); !why.empty()) return fail(why);
        }
        for (int k = st.segment; k <= st.last_segment(); ++k)
          if (!sends_received(r, acc_[r][k])) return false;
        for (int k = st.segment; k <= st.last_segment(); ++k) {
          SegmentState& seg = acc_[r][k];
          seg.content.merge(slot.content[k - st.segment]);
          seg.written = true;
          seg.sent = false;
        }
        for (int j = 0; j < st.span; ++j) slots_[r][st.slot + j] = SlotData{};
        break;
      }
      case StepKind::Stage: {
        RankSet content;
        if (!outgoing(r, st, acc, content, fail)) return false;
        // The ring entry's previous use must have been read by every reader.
        const int previous = st.slot - s_.staging_entries;
        if (previous >= 0 && reads_[r][previous] < static_cast<int>(m_.readers_of[r][previous].size())) return false;
        staged_[r][st.slot] = content;
        posted_[r][i] = true;
        for (const StepRef& reader : m_.readers_of[r][st.slot]) wake(reader.rank);
        break;
      }
      case StepKind::Fetch:
      case StepKind::FetchReduce: {
        const StepRef stage = m_.partner[r][i];
        if (!posted_[stage.rank][stage.index]) return false;  // waits for the stage
        if (acc.pending_recv >= 0) return fail("fetches into a segment while a receive into it is pending");
        if (!sends_received(r, acc)) return false;
        const RankSet& staged = staged_[st.peer][st.slot];
        if (st.kind == StepKind::Fetch) {
          if (!acc.content.empty() && !acc.sent) return fail("overwrites a partial result that was never sent");
          acc.content = staged;
        } else {
          if (st.buffer == Buffer::Input) {
            // The segment's first write, combining the input as a Copy would place it.
            if (!acc.content.empty()) return fail("combines the input over data already in the accumulator");
            if (acc.written) return fail("reads the input after the accumulator was written (unsafe with MPI_IN_PLACE)");
            acc.content = RankSet::single(r);
          }
          if (const std::string why = combine_fault(st, staged, acc.content); !why.empty()) return fail(why);
          acc.content.merge(staged);
        }
        acc.written = true;
        acc.sent = false;
        ++reads_[st.peer][st.slot];
        wake(st.peer);  // its ring entry may be free now
        break;
      }
      case StepKind::Copy: {
        for (int k = st.segment; k <= st.last_segment(); ++k)
          if (acc_[r][k].pending_recv >= 0 || !acc_[r][k].content.empty())
            return fail("copies the input over data already in the accumulator");
        for (int k = st.segment; k <= st.last_segment(); ++k)
          if (!sends_received(r, acc_[r][k])) return false;
        for (int k = st.segment; k <= st.last_segment(); ++k) {
          SegmentState& seg = acc_[r][k];
          seg.content = RankSet::single(r);
          seg.written = true;
          seg.sent = false;
        }
        break;
      }
      case StepKind::Read: {
        if (!exposed_[st.peer]) return false;  // waits for the exposer
        const RankSet& theirs = acc_[st.peer][st.segment].content;
        if (theirs.empty()) return fail("reads a segment that holds no data");
        if (acc.pending_recv >= 0) return fail("reads into a segment while a receive into it is pending");
        if (!acc.content.empty() && !acc.sent) return fail("overwrites a partial result that was never sent");
        if (!sends_received(r, acc)) return false;
        acc.content = theirs;
        acc.written = true;
        acc.sent = false;
        break;
      }
      case StepKind::Write: {
        if (!exposed_[st.peer]) return false;  // waits for the exposer
        RankSet content;
        if (!outgoing(r, st, acc, content, fail)) return false;
        // No step of the exposer touches the segment (check_direct_races): nothing of its own is overwritten.
        SegmentState& theirs = acc_[st.peer][st.segment];
        theirs.content = content;
        theirs.written = true;
        theirs.sent = false;
        break;
      }
      case StepKind::Expose: break;  // advanced above
    }
    ++pc_[r];
    return true;
  }

  // Why combining `incoming` into `held` as step `st` orders them is wrong ("" where it
  // is not): nothing held yet, operands out of rank order for a non-commutative
  // operation, or a contribution in both.
  std::string combine_fault(const Step& st, const RankSet& incoming, const RankSet& held) const {
    if (held.empty()) return "reduces into an accumulator that was never initialised";
    if (!s_.commutative) {
      const bool ordered =
          st.incoming_is_left ? RankSet::adjacent(incoming, held) : RankSet::adjacent(held, incoming);
      if (!ordered)
        return "combines " + incoming.str() + " with " + held.str() + " out of rank order for a non-commutative operation";
    }
    if (!held.disjoint(incoming)) return "contributions " + held.intersection_str(incoming) + " counted twice";
    return {};
  }

  // Rank r's Expose: once no receive into its accumulator is pending (so that no data
  // lands in a segment while another rank reads it), its Read and Write accessors may go.
  bool expose(int r) {
    for (const SegmentState& seg : acc_[r])
      if (seg.pending_recv >= 0) return false;  // the send that completes it wakes r
    exposed_[r] = true;
    for (const StepRef& accessor : m_.accessors_of[r]) wake(accessor.rank);
    ++pc_[r];
    return true;
  }

  // The executor overwrites a segment only once the sends reading it have completed
  // (shim/executor.cpp, before_write), and an MPI send may not complete before its
  // receive is posted. So, conservatively, a step that writes an accumulator segment
  // waits until every send still reading it has been matched by a posted receive; the
  // receive's posting wakes the sender. False: it must wait. (A reduce or a broadcast
  // never writes a segment after sending it; an allreduce does.)
  bool sends_received(int r, SegmentState& acc) const {
    auto& readers = acc.readers;
    readers.erase(std::remove_if(readers.begin(), readers.end(),
                                 [&](int send) {
                                   const StepRef to = m_.partner[r][send];
                                   return posted_[to.rank][to.index];
                                 }),
                  readers.end());
    return readers.empty();
  }

  void wake(int r) {
    if (!queued_[r]) {
      queued_[r] = true;
      work_.push_back(r);
    }
  }

  // What a send or a stage carries: this rank's own contribution (the input) or what
  // its accumulator holds. False when it must wait (the receive filling the
  // accumulator is pending) or cannot go (then `fail` has said why).
  template <typename Fail>
  bool outgoing(int r, const Step& st, SegmentState& acc, RankSet& content, Fail& fail) {
    if (st.buffer == Buffer::Input) {
      if (acc.written) return fail("reads the input after the accumulator was written (unsafe with MPI_IN_PLACE)");
      content = RankSet::single(r);
      return true;
    }
    if (acc.pending_recv >= 0) return false;  // waits for the receive that fills it
    if (acc.content.empty())
      return fail(std::string(st.kind == StepKind::Stage ? "stages" : st.kind == StepKind::Write ? "writes" : "sends") +
                  " a segment that holds no data");
    content = acc.content;
    acc.sent = true;
    return true;
  }

  // The receive (r, i) and its send are both posted: the data lands.
  void deliver(int r, int i) {
    const Step& st = s_.steps[r][i];
    const StepRef from = m_.partner[r][i];
    const std::vector<RankSet>& contents = message_[from.rank][from.index];
    complete_[r][i] = true;
    if (st.buffer == Buffer::Slot) {
      for (int j = 0; j < st.span; ++j) slots_[r][st.slot + j].state = SlotState::Full;
      slots_[r][st.slot].content = contents;
    } else {
      for (int k = st.segment; k <= st.last_segment(); ++k) {
        SegmentState& acc = acc_[r][k];
        acc.content = contents[k - st.segment];
        acc.pending_recv = -1;
        acc.written = true;
        acc.sent = false;
      }
    }
  }

  void check_outcome(std::vector<std::string>& errors) {
    for (int r = 0; r < s_.nranks; ++r)
      for (std::size_t k = 0; k < slots_[r].size(); ++k)
        if (slots_[r][k].state != SlotState::Free)
          errors.push_back("rank " + std::to_string(r) + " slot " + std::to_string(k) +
                           " receives an operand that is never reduced");
    const RankSet everyone = RankSet::range(0, s_.nranks - 1);
    for (std::size_t k = 0; k < s_.segments.size(); ++k) {
      if (s_.collective == Collective::Reduce) {
        const RankSet& got = acc_[s_.root][k].content;
        if (!(got == everyone))
          errors.push_back("root ends segment " + std::to_string(k) + " with contributions " +
                           got.str() + " instead of " + everyone.str());
      } else if (s_.collective == Collective::Allreduce) {
        for (int r = 0; r < s_.nranks && errors.size() < 8; ++r)
          if (!(acc_[r][k].content == everyone))
            errors.push_back("rank " + std::to_string(r) + " ends segment " + std::to_string(k) +
                             " with contributions " + acc_[r][k].content.str() + " instead of " + everyone.str());
      } else {
        for (int r = 0; r < s_.nranks; ++r)
          if (!(acc_[r][k].content == RankSet::single(s_.root)))
            errors.push_back("rank " + std::to_string(r) + " never receives segment " + std::to_string(k));
      }
      if (errors.size() >= 8) return;
    }
  }

  const Schedule& s_;
  const Matching& m_;
  std::vector<std::vector<SegmentState>> acc_;
  std::vector<std::vector<SlotData>> slots_;
  std::vector<int> pc_;
  std::vector<std::vector<bool>> posted_, complete_;
  std::vector<std::vector<std::vector<RankSet>>> message_;  // per segment of a send: content captured when posted
  std::vector<std::vector<RankSet>> staged_;   // [rank][stage number]: content captured when staged
  std::vector<std::vector<int>> reads_;        // [rank][stage number]: fetches done
  std::vector<bool> exposed_;                  // [rank]: its Expose has run
  std::deque<int> work_;                       // ranks that may progress
  std::vector<bool> queued_;                   // [rank]: on work_
};

}  // namespace

Validation validate(const Schedule& schedule) {
  Validation v;
  if (schedule.is_view()) {
    // Pairing messages and proving progress take every rank's steps.
    v.errors.push_back("rank " + std::to_string(schedule.view_rank) +
                       "'s view holds one rank's steps; validate the whole schedule");
  } else if (check_shape(schedule, v.errors)) {
    Matching matching;
    if (match_messages(schedule, matching, v.errors)) SymbolicRun(schedule, matching).run(v.errors);
  }
  v.ok = v.errors.empty();
  return v;
}

}  // namespace canopy::planner
