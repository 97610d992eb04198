#include "shim/executor.h"

#include <sched.h>

namespace canopy::shim {

using planner::Buffer;
using planner::Schedule;
using planner::Step;
using planner::StepKind;

int wait_politely(MPI_Request* request, MPI_Status* status) {
  if (*request == MPI_REQUEST_NULL) return MPI_SUCCESS;
  int done = 0;
  for (int polls = 0;; ++polls) {
    const int err = PMPI_Test(request, &done, status);
    if (err != MPI_SUCCESS || done) return err;
    // A few quick polls catch messages already on their way; then give the core to
    // the peer we are waiting for.
    if (polls >= 8) sched_yield();
  }
}

namespace {

class RankRun {
 public:
  RankRun(const Schedule& s, int rank, const ExecutionBuffers& b, const DatatypeLayout& layout, MPI_Op op,
          MPI_Comm comm)
      : s_(s), rank_(rank), b_(b), layout_(layout), op_(op), comm_(comm) {
    const std::size_t nseg = s.segments.size();
    acc_recv_.assign(nseg, MPI_REQUEST_NULL);
    slot_recv_.assign(b.slots.size(), MPI_REQUEST_NULL);
    readers_.assign(nseg, {});
  }

  int run() {
    for (const Step& step : s_.steps[rank_]) {
      switch (step.kind) {
        case StepKind::Recv: receive(step); break;
        case StepKind::Send: send(step); break;
        case StepKind::Reduce: reduce(step); break;
        case StepKind::Copy: copy(step); break;
      }
    }
    for (auto& r : sends_) note(wait_politely(&r));
    for (auto& r : acc_recv_) note(wait_politely(&r));
    for (auto& r : slot_recv_) note(wait_politely(&r));
    return error_;
  }

 private:
  // The validator guarantees every segment fits an int count (planner/segments.h).
  int count(int seg) const { return static_cast<int>(s_.segments[seg].count); }
  char* acc(int seg) const { return layout_.element(b_.accumulator, s_.segments[seg].first); }
  const char* input(int seg) const { return layout_.element(b_.input, s_.segments[seg].first); }
  static int tag(int seg) { return seg % 32767; }
  void note(int err) {
    if (err != MPI_SUCCESS && error_ == MPI_SUCCESS) error_ = err;
  }

  // Before a segment of the accumulator is overwritten, the sends reading it (or
  // reading the input, when the input is the accumulator) must have completed.
  void before_write(int seg) {
    for (std::size_t index : readers_[seg]) note(wait_politely(&sends_[index]));
    readers_[seg].clear();
  }

  void receive(const Step& st) {
    MPI_Request* req = nullptr;
    void* into = nullptr;
    if (st.buffer == Buffer::Slot) {
      req = &slot_recv_[st.slot];
      into = b_.slots[st.slot];
    } else {
      before_write(st.segment);
      req = &acc_recv_[st.segment];
      into = acc(st.segment);
    }
    note(PMPI_Irecv(into, count(st.segment), layout_.type, st.peer, tag(st.segment), comm_, req));
  }

  void send(const Step& st) {
    const void* from = nullptr;
    if (st.buffer == Buffer::Input) {
      from = input(st.segment);
    } else {
      note(wait_politely(&acc_recv_[st.segment]));  // the data must have arrived
      from = acc(st.segment);
    }
    sends_.push_back(MPI_REQUEST_NULL);
    note(PMPI_Isend(from, count(st.segment), layout_.type, st.peer, tag(st.segment), comm_, &sends_.back()));
    if (st.buffer == Buffer::Accumulator || b_.input_is_accumulator) readers_[st.segment].push_back(sends_.size() - 1);
  }

  void reduce(const Step& st) {
    note(wait_politely(&slot_recv_[st.slot]));
    before_write(st.segment);
    void* slot = b_.slots[st.slot];
    if (error_ != MPI_SUCCESS) return;  // keep messaging, stop computing on bad data
    if (s_.commutative || st.incoming_is_left) {
      note(PMPI_Reduce_local(slot, acc(st.segment), count(st.segment), layout_.type, op_));
    } else {
      // acc (op) slot: MPI_Reduce_local writes its second operand, so combine into the
      // slot and copy the result back.
      note(PMPI_Reduce_local(acc(st.segment), slot, count(st.segment), layout_.type, op_));
      note(copy_elements(slot, acc(st.segment), count(st.segment), layout_, comm_));
    }
  }

  void copy(const Step& st) {
    if (b_.input_is_accumulator) return;  // in place: the input already is the accumulator
    before_write(st.segment);
    note(copy_elements(input(st.segment), acc(st.segment), count(st.segment), layout_, comm_));
  }

  const Schedule& s_;
  const int rank_;
  const ExecutionBuffers& b_;
  const DatatypeLayout& layout_;
  const MPI_Op op_;
  const MPI_Comm comm_;
  std::vector<MPI_Request> acc_recv_;   // pending receive into each accumulator segment
  std::vector<MPI_Request> slot_recv_;  // pending receive into each slot
  std::vector<MPI_Request> sends_;      // every send posted, completed at the end
  std::vector<std::vector<std::size_t>> readers_;  // sends_ indices reading each segment
  int error_ = MPI_SUCCESS;
};

}  // namespace

int execute(const Schedule& schedule, int rank, const ExecutionBuffers& buffers, const DatatypeLayout& layout,
            MPI_Op op, MPI_Comm comm) {
  return RankRun(schedule, rank, buffers, layout, op, comm).run();
}

}  // namespace canopy::shim
