#include "planner/schedule.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace canopy::planner {

Step Step::send(int peer, int segment, Buffer from) {
  Step s;
  s.kind = StepKind::Send;
  s.peer = peer;
  s.segment = segment;
  s.buffer = from;
  return s;
}

Step Step::recv_into_slot(int peer, int segment, int slot) {
  Step s;
  s.kind = StepKind::Recv;
  s.peer = peer;
  s.segment = segment;
  s.buffer = Buffer::Slot;
  s.slot = slot;
  return s;
}

Step Step::recv_into_accumulator(int peer, int segment) {
  Step s;
  s.kind = StepKind::Recv;
  s.peer = peer;
  s.segment = segment;
  s.buffer = Buffer::Accumulator;
  return s;
}

Step Step::reduce(int segment, int slot, bool incoming_is_left) {
  Step s;
  s.kind = StepKind::Reduce;
  s.segment = segment;
  s.buffer = Buffer::Slot;
  s.slot = slot;
  s.incoming_is_left = incoming_is_left;
  return s;
}

Step Step::copy(int segment) {
  Step s;
  s.kind = StepKind::Copy;
  s.segment = segment;
  s.buffer = Buffer::Input;
  return s;
}

Step Step::stage(int segment, int stage_number, int readers, Buffer from) {
  Step s;
  s.kind = StepKind::Stage;
  s.segment = segment;
  s.slot = stage_number;
  s.readers = readers;
  s.buffer = from;
  return s;
}

Step Step::fetch(int writer, int segment, int stage_number) {
  Step s;
  s.kind = StepKind::Fetch;
  s.peer = writer;
  s.segment = segment;
  s.slot = stage_number;
  s.buffer = Buffer::Accumulator;
  return s;
}

Step Step::fetch_reduce(int writer, int segment, int stage_number, bool incoming_is_left, Buffer with) {
  Step s = fetch(writer, segment, stage_number);
  s.kind = StepKind::FetchReduce;
  s.incoming_is_left = incoming_is_left;
  s.buffer = with;
  return s;
}

Step Step::expose(int accessors) {
  Step s;
  s.kind = StepKind::Expose;
  s.segment = 0;  // not a segment's step: the whole accumulator
  s.readers = accessors;
  s.buffer = Buffer::Accumulator;
  return s;
}

Step Step::read(int exposer, int segment) {
  Step s;
  s.kind = StepKind::Read;
  s.peer = exposer;
  s.segment = segment;
  s.buffer = Buffer::Accumulator;
  return s;
}

Step Step::write(int exposer, int segment) {
  Step s = read(exposer, segment);
  s.kind = StepKind::Write;
  return s;
}

bool Step::operator==(const Step& o) const {
  return kind == o.kind && peer == o.peer && segment == o.segment && buffer == o.buffer &&
         slot == o.slot && incoming_is_left == o.incoming_is_left && readers == o.readers && span == o.span;
}

std::int64_t Schedule::largest_segment_count() const {
  std::int64_t largest = 0;
  for (const auto& s : segments) largest = std::max(largest, s.count);
  return largest;
}

const std::vector<Step>& Schedule::steps_of(int rank) const {
  if (!holds(rank) || steps.size() <= static_cast<std::size_t>(is_view() ? 0 : rank))
    throw std::out_of_range("the schedule holds no steps of rank " + std::to_string(rank));
  return steps[is_view() ? 0 : rank];
}

int Schedule::slots_of(int rank) const {
  if (!holds(rank) || slots.size() <= static_cast<std::size_t>(is_view() ? 0 : rank))
    throw std::out_of_range("the schedule holds no slots of rank " + std::to_string(rank));
  return slots[is_view() ? 0 : rank];
}

Schedule project(const Schedule& s, int rank) {
  Schedule view;
  view.collective = s.collective;
  view.algorithm = s.algorithm;
  view.nranks = s.nranks;
  view.root = s.root;
  view.count = s.count;
  view.element_bytes = s.element_bytes;
  view.commutative = s.commutative;
  view.segments = s.segments;
  view.steps.push_back(s.steps_of(rank));
  view.slots.push_back(s.slots_of(rank));
  view.view_rank = rank;
  view.staging_entries = s.staging_entries;
  view.staging_entry_bytes = s.staging_entry_bytes;
  view.direct = s.direct;
  return view;
}

std::size_t Schedule::total_steps() const {
  std::size_t n = 0;
  for (const auto& r : steps) n += r.size();
  return n;
}

const char* to_string(Collective c) {
  switch (c) {
    case Collective::Reduce: return "reduce";
    case Collective::Bcast: return "bcast";
    case Collective::Allreduce: return "allreduce";
  }
  return "?";
}

const char* mpi_function_name(Collective c) {
  switch (c) {
    case Collective::Reduce: return "MPI_Reduce";
    case Collective::Bcast: return "MPI_Bcast";
    case Collective::Allreduce: return "MPI_Allreduce";
  }
  return "MPI_?";
}

bool parse_collective(const std::string& text, Collective& out) {
  for (Collective c : {Collective::Reduce, Collective::Bcast, Collective::Allreduce})
    if (text == to_string(c)) {
      out = c;
      return true;
    }
  return false;
}

const char* to_string(StepKind k) {
  switch (k) {
    case StepKind::Send: return "send";
    case StepKind::Recv: return "recv";
    case StepKind::Reduce: return "reduce";
    case StepKind::Copy: return "copy";
    case StepKind::Stage: return "stage";
    case StepKind::Fetch: return "fetch";
    case StepKind::FetchReduce: return "fetch-reduce";
    case StepKind::Expose: return "expose";
    case StepKind::Read: return "read";
    case StepKind::Write: return "write";
  }
  return "?";
}

const char* to_string(Buffer b) {
  switch (b) {
    case Buffer::Input: return "input";
    case Buffer::Accumulator: return "acc";
    case Buffer::Slot: return "slot";
  }
  return "?";
}

std::string describe(const Step& s) {
  const std::string seg = "seg " + std::to_string(s.segment) +
                          (s.span > 1 ? ".." + std::to_string(s.last_segment()) : std::string());
  switch (s.kind) {
    case StepKind::Send:
      return "send " + seg + " of " + to_string(s.buffer) + " to " + std::to_string(s.peer);
    case StepKind::Recv:
      return "recv " + seg + " from " + std::to_string(s.peer) + " -> " +
             (s.buffer == Buffer::Slot ? (s.span > 1 ? "slots " + std::to_string(s.slot) + ".." +
                                                           std::to_string(s.slot + s.span - 1)
                                                     : "slot " + std::to_string(s.slot))
                                       : std::string("acc"));
    case StepKind::Reduce:
      return "reduce " + seg + ": acc = " +
             (s.incoming_is_left ? "slot " + std::to_string(s.slot) + " op acc"
                                 : "acc op slot " + std::to_string(s.slot));
    case StepKind::Copy:
      return "copy " + seg + " input -> acc";
    case StepKind::Stage:
      return "stage " + seg + " of " + to_string(s.buffer) + " as stage " + std::to_string(s.slot) + " for " +
             std::to_string(s.readers) + (s.readers == 1 ? " reader" : " readers");
    case StepKind::Fetch:
      return "fetch " + seg + " from " + std::to_string(s.peer) + "'s stage " + std::to_string(s.slot) + " -> acc";
    case StepKind::FetchReduce: {
      const std::string staged = std::to_string(s.peer) + "'s stage " + std::to_string(s.slot);
      const std::string own = s.buffer == Buffer::Input ? "input" : "acc";
      return "fetch-reduce " + seg + ": acc = " + (s.incoming_is_left ? staged + " op " + own : own + " op " + staged);
    }
    case StepKind::Expose:
      return "expose acc for " + std::to_string(s.readers) + (s.readers == 1 ? " access" : " accesses");
    case StepKind::Read:
      return "read " + seg + " of " + std::to_string(s.peer) + "'s acc -> acc";
    case StepKind::Write:
      return "write " + seg + " of acc -> " + std::to_string(s.peer) + "'s acc";
  }
  return "?";
}

}  // namespace canopy::planner
