#include "shim/executor.h"

#include "shim/reduce_kernels.h"
#include "shim/trace.h"

#include <algorithm>
#include <cstring>

namespace canopy::shim {

using planner::Buffer;
using planner::Schedule;
using planner::Step;
using planner::StepKind;

namespace {

// fetch_reduce_input's blocks: a third of the L1 data cache of the machines measured
// (48 KiB), so the copied block is still there when the combine reads it.
constexpr std::int64_t kCombineBlockBytes = 16 * 1024;

// Up to this many bytes per call, fetch_reduce_input combines the two operands into the
// accumulator in one pass (ReduceIntoKernel) instead of copying one and combining the
// other into it. Measured on 2 ranks here (reduce of doubles, OSU-style, canopy-bench
// --batch-ms 0, three runs of each build alternating; us per call): 256 KiB 12.0/12.5
// against 15.5/15.6, 1 MiB 43-48 against 60-61; at 2 MiB it won in one session
// (117-124 against 157-217) and lost in the next (218-300 against 121-225), and at
// 4 MiB it lost (545-601 against 247-329). Past the caches the copy wins, most likely
// because memcpy (rep movsb) writes whole lines of the receive buffer without reading
// them first and a loop's stores read each line before writing it. Decision: one pass
// up to 1 MiB, where it won every time.
//
// Past that size, at the root, the one pass streams (ReduceKernels::stream): the output
// is the user's receive buffer, larger than the caches here, and non-temporal stores
// write its lines without reading them first, which is what made the copy win. Same
// build, the two alternating three times (canopy-bench --collectives reduce, back to
// back, 2 ranks; us per call, streamed against copy and combine): 2 MiB 107-117 against
// 122-135, 4 MiB 225-243 against 254-272, 8 MiB 473-492 against 533-601, 16 MiB
// 1046-1063 against 1294-1650. At 256 KiB to 1 MiB streaming lost to the cached one
// pass (1 MiB 54-57 against 47-48): there the output fits the caches. (Those streamed
// runs fenced every 16 KiB; streaming whole segments measured 3-8% faster than the
// cached pass at 256 KiB to 1 MiB, 2026-11-27. Not taken: the output would leave the
// caches where the user may read it next, which canopy-bench does not.) Elsewhere than
// the root the output is a ring entry or a buffer that is sent or staged next, which
// should stay in the caches.
// An allreduce's schedules take the cached one pass at every size, on every rank: what
// a rank combines there (its share of the result, in shm-reduce-scatter-allgather) is
// staged or sent right after, read back from the caches a segment at a time, so
// streaming it out of them (rank 0, the schedules' root) or copying it first (the
// others) only adds passes over memory. Measured 2026-12-05, 2 ranks, MPICH,
// shm-reduce-scatter-allgather, back to back (canopy-bench --collectives allreduce), us
// a call, 3 alternating runs, before / after, beside canopy-bench-floor's bare shape
// (whose combine is the cached one pass): 2 MiB 150-180 / 130-137, 4 MiB 318-336 /
// 290-302 (bare 279-293: 11-16% over it before, 2-8% after), 1 MiB 68-69 / 68
// (bare 66-67), 8 MiB 952-1326 / 943-1098, 16 MiB 2355-2682 / 2402-2797 (bare
// 2105-2613: past the caches alike within this VM's noise).
constexpr std::int64_t kOnePassMaxBytes = std::int64_t{1} << 20;

class RankRun {
 public:
  RankRun(const Schedule& s, const std::vector<planner::Segment>& segments, int rank, const ExecutionBuffers& b,
          const DatatypeLayout& layout, MPI_Op op, MPI_Comm comm, const std::vector<Fused>& fused,
          ExecutorScratch& scratch)
      : s_(s),
        segments_(segments),
        rank_(rank),
        b_(b),
        layout_(layout),
        op_(op),
        comm_(comm),
        fused_(fused),
        kernels_(layout.dense ? reduce_kernels(op, layout.type) : ReduceKernels{}),
        acc_recv_(scratch.acc_recv),
        acc_owner_(scratch.acc_owner),
        slot_recv_(scratch.slot_recv),
        sends_(scratch.sends),
        readers_(scratch.readers),
        direct_error_(scratch.direct_error) {
    direct_error_.clear();
    const std::size_t nseg = segments.size();
    acc_recv_.clear();
    acc_owner_.assign(nseg, -1);
    slot_recv_.assign(b.slots.size(), MPI_REQUEST_NULL);
    sends_.clear();
    // Keep the inner lists' memory: clear them, grow the outer list only.
    for (std::size_t k = 0; k < std::min(nseg, readers_.size()); ++k) readers_[k].clear();
    if (readers_.size() < nseg) readers_.resize(nseg);
    const std::int64_t elements = segments.empty() ? 0 : segments.back().first + segments.back().count;
    const bool allreduce = s.collective == planner::Collective::Allreduce;
    one_pass_ = kernels_.into != nullptr && (allreduce || elements * layout.size <= kOnePassMaxBytes);
    stream_ = kernels_.stream != nullptr && !allreduce && rank_ == s.root && elements * layout.size > kOnePassMaxBytes;
  }

  int run() {
    const std::vector<Step>& steps = s_.steps_of(rank_);
    if (s_.uses_staging()) b_.ring->begin_call(static_cast<int>(segments_.size()));
    trace::Recorder* const trace = trace::active();  // CANOPY_TRACE: this call is sampled
    for (std::size_t i = 0; i < steps.size(); ++i) {
      if (!trace) {
        run_step(steps, i);
        continue;
      }
      const double start = trace::now();
      if (run_step(steps, i)) record(*trace, steps[i], static_cast<int>(i), start);
    }
    const double waits = trace ? trace::now() : 0;
    for (auto& r : sends_) note(wait_politely(&r));
    for (auto& r : acc_recv_) note(wait_politely(&r));
    for (auto& r : slot_recv_) note(wait_politely(&r));
    // Last: the others may still be copying from or into this rank's accumulator, and
    // their copies wait on nothing of this rank's but its Expose.
    if (exposed_) b_.ring->wait_exposed();
    if (trace) trace->step(trace::Kind::Wait, -1, -1, 0, waits, trace::now());
    return error_;
  }

 private:
  // Runs step i as written or fused (fusions_for); false where it is folded into another.
  bool run_step(const std::vector<Step>& steps, std::size_t i) {
    const Step& step = steps[i];
    switch (fused_[i]) {
      case Fused::No: break;
      case Fused::RecvIntoAccumulator: receive_into_accumulator(step); return true;
      case Fused::SkipCopy: return false;
      case Fused::ReduceInput: reduce_input(step); return true;
      case Fused::CopyIntoEntry:
        if (!packed_is_layout()) break;  // this call's datatype is packed: run as written
        copy_into_entry(steps, i);
        return true;
      case Fused::ReduceInEntry:
        if (!packed_is_layout()) break;
        fetch_reduce(step, open_entry_);
        return true;
      case Fused::PublishEntry:
        if (!packed_is_layout()) break;
        b_.ring->publish(step.slot, step.readers);
        return true;
    }
    switch (step.kind) {
      case StepKind::Recv: receive(step); break;
      case StepKind::Send: send(step); break;
      case StepKind::Reduce: reduce(step); break;
      case StepKind::Copy: copy(step); break;
      case StepKind::Stage: stage(step); break;
      case StepKind::Fetch: fetch(step); break;
      case StepKind::FetchReduce:
        if (step.buffer == Buffer::Input) fetch_reduce_input(step, acc(step.segment), stream_);
        else fetch_reduce(step, acc(step.segment));
        break;
      case StepKind::Expose: expose(step); break;
      case StepKind::Read:
      case StepKind::Write: access(step); break;
    }
    return true;
  }

  // CANOPY_TRACE: the step just run, from `start` until now, as the schedule names it.
  void record(trace::Recorder& trace, const Step& st, int index, double start) const {
    const bool has_peer = st.kind == StepKind::Send || st.kind == StepKind::Recv || st.kind == StepKind::Fetch ||
                          st.kind == StepKind::FetchReduce || st.kind == StepKind::Read || st.kind == StepKind::Write;
    const bool has_segment = st.segment >= 0 && st.segment < static_cast<int>(segments_.size());
    const bool has_span = has_segment && st.last_segment() < static_cast<int>(segments_.size());
    trace.step(trace::kind_of(st.kind), has_peer ? st.peer : -1, has_segment ? st.segment : -1,
               has_span ? span_count(st) * layout_.size : 0, start, trace::now(), index);
  }

  // The validator (and rescale_segments) guarantee every segment fits an int count
  // (planner/segments.h).
  int count(int seg) const { return static_cast<int>(segments_[seg].count); }
  // The elements of every segment a step spans (schedule.h), consecutive in the buffers;
  // the validator keeps a span within an int count too.
  int span_count(const Step& st) const {
    const planner::Segment& last = segments_[st.last_segment()];
    return static_cast<int>(last.first + last.count - segments_[st.segment].first);
  }
  // The receive that last filled accumulator segment `seg` (one receive may fill a span
  // of segments), or a null request where none did.
  MPI_Request* acc_request(int seg) { return acc_owner_[seg] < 0 ? &no_request_ : &acc_recv_[acc_owner_[seg]]; }
  // Waits for the receives filling every segment the step spans.
  void wait_for_accumulator(const Step& st) {
    for (int k = st.segment; k <= st.last_segment(); ++k) note(wait_politely(acc_request(k)));
  }
  // A receive into the accumulator's segments: once the sends reading them have
  // completed, a new request that fills them all.
  MPI_Request* new_accumulator_receive(const Step& st) {
    before_write(st);
    acc_recv_.push_back(MPI_REQUEST_NULL);
    for (int k = st.segment; k <= st.last_segment(); ++k) acc_owner_[k] = static_cast<int>(acc_recv_.size() - 1);
    return &acc_recv_.back();
  }
  char* acc(int seg) const { return layout_.element(b_.accumulator, segments_[seg].first); }
  const char* input(int seg) const { return layout_.element(b_.input, segments_[seg].first); }
  static int tag(int seg) { return seg % 32767; }
  // inout = in (op) inout over n elements: Canopy's loop or MPI_Reduce_local.
  int combine(const void* in, void* inout, int n) const {
    return shim::combine(kernels_.combine, in, inout, n, layout_.type, op_);
  }
  void note(int err) {
    if (err != MPI_SUCCESS && error_ == MPI_SUCCESS) error_ = err;
  }

  void receive_into_accumulator(const Step& st) {
    MPI_Request* req = new_accumulator_receive(st);
    note(PMPI_Irecv(acc(st.segment), span_count(st), layout_.type, st.peer, tag(st.segment), comm_, req));
  }

  void reduce_input(const Step& st) {
    wait_for_accumulator(st);
    if (error_ != MPI_SUCCESS) return;
    note(combine(input(st.segment), acc(st.segment), span_count(st)));
  }

  // Before a segment of the accumulator is overwritten, the sends reading it (or
  // reading the input, when the input is the accumulator) must have completed.
  void before_write(int seg) {
    for (std::size_t index : readers_[seg]) note(wait_politely(&sends_[index]));
    readers_[seg].clear();
  }
  void before_write(const Step& st) {
    for (int k = st.segment; k <= st.last_segment(); ++k) before_write(k);
  }

  void receive(const Step& st) {
    MPI_Request* req = nullptr;
    void* into = nullptr;
    if (st.buffer == Buffer::Slot) {
      req = &slot_recv_[st.slot];
      into = b_.slots[st.slot];  // a span lands packed from here (collectives.cpp sizes the slots)
    } else {
      req = new_accumulator_receive(st);
      into = acc(st.segment);
    }
    note(PMPI_Irecv(into, span_count(st), layout_.type, st.peer, tag(st.segment), comm_, req));
  }

  void send(const Step& st) {
    const void* from = nullptr;
    if (st.buffer == Buffer::Input) {
      from = input(st.segment);
    } else {
      wait_for_accumulator(st);  // the data must have arrived
      from = acc(st.segment);
    }
    sends_.push_back(MPI_REQUEST_NULL);
    note(PMPI_Isend(from, span_count(st), layout_.type, st.peer, tag(st.segment), comm_, &sends_.back()));
    if (st.buffer == Buffer::Accumulator || b_.input_is_accumulator)
      for (int k = st.segment; k <= st.last_segment(); ++k) readers_[k].push_back(sends_.size() - 1);
  }

  void reduce(const Step& st) {
    note(wait_politely(&slot_recv_[st.slot]));
    before_write(st);
    void* slot = b_.slots[st.slot];
    if (error_ != MPI_SUCCESS) return;  // keep messaging, stop computing on bad data
    const int n = span_count(st);
    if (s_.commutative || st.incoming_is_left) {
      note(combine(slot, acc(st.segment), n));
    } else {
      // acc (op) slot: MPI_Reduce_local writes its second operand, so combine into the
      // slot and copy the result back.
      note(combine(acc(st.segment), slot, n));
      note(copy_elements(slot, acc(st.segment), n, layout_, comm_));
    }
  }

  void copy(const Step& st) {
    if (b_.input_is_accumulator) return;  // in place: the input already is the accumulator
    before_write(st);
    note(copy_elements(input(st.segment), acc(st.segment), span_count(st), layout_, comm_));
  }

  // A staged segment holds its elements' data bytes, packed: a copy where the type's
  // elements are contiguous bytes (predefined types, contiguous derived ones), MPI_Pack
  // and MPI_Unpack otherwise.
  std::size_t bytes(int seg) const { return static_cast<std::size_t>(segments_[seg].count * layout_.size); }
  bool packed_is_layout() const {
    return layout_.size == layout_.extent && layout_.true_lb == 0 && layout_.true_extent == layout_.size;
  }

  void stage(const Step& st) {
    const void* from = nullptr;
    if (st.buffer == Buffer::Input) {
      from = input(st.segment);
    } else {
      note(wait_politely(acc_request(st.segment)));
      from = acc(st.segment);
    }
    char* entry = b_.ring->claim(st.slot, static_cast<std::int64_t>(bytes(st.segment)), packed_is_layout() ? from : nullptr);
    if (packed_is_layout()) std::memcpy(entry, from, bytes(st.segment));
    else note(pack_elements(from, count(st.segment), layout_.type, entry, static_cast<std::int64_t>(bytes(st.segment)), comm_));
    b_.ring->publish(st.slot, st.readers);
  }

  void fetch(const Step& st) {
    before_write(st.segment);
    const char* staged = b_.ring->wait_for(st.peer, st.slot, static_cast<std::int64_t>(bytes(st.segment)));
    if (packed_is_layout()) std::memcpy(acc(st.segment), staged, bytes(st.segment));
    else note(unpack_elements(staged, static_cast<std::int64_t>(bytes(st.segment)), acc(st.segment), count(st.segment), layout_.type, comm_));
    b_.ring->release(st.peer, st.slot);
  }

  // The fused start of a segment this rank builds and stages (fusions_for): its ring
  // entry, claimed now, takes the input (or the input combined with the first staged
  // operand) and then the other staged operands.
  void copy_into_entry(const std::vector<Step>& steps, std::size_t i) {
    const int seg = steps[i].segment;
    std::size_t j = i + 1;
    while (!(steps[j].kind == StepKind::Stage && steps[j].segment == seg)) ++j;  // fusions_for found it
    open_entry_ = b_.ring->claim(steps[j].slot, static_cast<std::int64_t>(bytes(seg)),
                                 packed_is_layout() ? static_cast<const void*>(input(seg)) : nullptr);
    if (steps[i].kind == StepKind::FetchReduce) fetch_reduce_input(steps[i], open_entry_);
    else std::memcpy(open_entry_, input(seg), bytes(seg));
  }

  // A fetch-reduce with the input (the segment's first write): `into` = the staged
  // operand combined with this rank's input, in one pass. MPI_Reduce_local writes one
  // of its operands, so the two are combined block by block: a block of one operand
  // copied into `into` (the block stays in the L1 cache) and the other combined into
  // it; the staged entry is only read. In place, or with a datatype whose elements are
  // not contiguous bytes, the input is copied first and combined as usual. `stream`:
  // `into` is the root's receive buffer of a call past kOnePassMaxBytes, written by the
  // one pass with non-temporal stores.
  void fetch_reduce_input(const Step& st, char* into, bool stream = false) {
    const int seg = st.segment;
    if (b_.input_is_accumulator || !packed_is_layout()) {
      if (!b_.input_is_accumulator) {
        before_write(seg);
        note(copy_elements(input(seg), into, count(seg), layout_, comm_));
      }
      fetch_reduce(st, into);
      return;
    }
    before_write(seg);
    const char* staged = b_.ring->wait_for(st.peer, st.slot, static_cast<std::int64_t>(bytes(seg)));
    if (error_ != MPI_SUCCESS) {
      b_.ring->release(st.peer, st.slot);
      return;
    }
    // staged (op) input where the staged operand comes first or order does not matter,
    // input (op) staged otherwise.
    const bool staged_left = s_.commutative || st.incoming_is_left;
    const char* own = input(seg);
    const char* first = staged_left ? own : staged;  // in inout's place
    const char* second = staged_left ? staged : own;
    // One pass needs no blocks: the whole segment in one call. Streamed in 16 KiB blocks,
    // each block's store fence cost time: a bare two-process pipeline here (4 MiB, 48 KiB
    // chunks) took 133-139 us with one fence per chunk against 156-159 with one per 16 KiB;
    // shm-flat on 2 ranks, 3 alternating runs (canopy-bench --collectives reduce, MPICH,
    // us per call): 2 MiB 101-103 against 111-117, 4 MiB 207-213 against 226-229, 16 MiB
    // 909-967 against 970-1004; 1 MiB (one pass, no fences) unchanged.
    if (stream || one_pass_) {
      (stream ? kernels_.stream : kernels_.into)(first, second, into, count(seg));
      b_.ring->release(st.peer, st.slot);
      return;
    }
    const std::int64_t size = layout_.size;
    const int block = static_cast<int>(std::max<std::int64_t>(1, kCombineBlockBytes / size));
    for (int done = 0, n = count(seg); done < n && error_ == MPI_SUCCESS; done += block) {
      const int k = std::min(block, n - done);
      const std::size_t at = static_cast<std::size_t>(done * size), len = static_cast<std::size_t>(k * size);
      std::memcpy(into + at, first + at, len);
      note(combine(second + at, into + at, k));
    }
    b_.ring->release(st.peer, st.slot);
  }

  void fetch_reduce(const Step& st, char* into) {
    before_write(st.segment);
    const char* staged = b_.ring->wait_for(st.peer, st.slot, static_cast<std::int64_t>(bytes(st.segment)));
    if (error_ != MPI_SUCCESS) {
      b_.ring->release(st.peer, st.slot);  // keep the ring moving, stop computing on bad data
      return;
    }
    const int n = count(st.segment);
    if ((s_.commutative || st.incoming_is_left) && packed_is_layout()) {
      // Reduced where it lies: the staged operand is MPI_Reduce_local's input.
      note(combine(staged, into, n));
      b_.ring->release(st.peer, st.slot);
      return;
    }
    // The operand in a private buffer, laid out as the type says: unpacked, or copied
    // because MPI_Reduce_local writes its second operand (acc (op) staged) and the
    // entry is read-only to its readers.
    char* storage = b_.ring->scratch(static_cast<std::size_t>(layout_.span(n)));
    char* operand = layout_.origin(storage);
    if (packed_is_layout()) std::memcpy(operand, staged, bytes(st.segment));
    else note(unpack_elements(staged, static_cast<std::int64_t>(bytes(st.segment)), operand, n, layout_.type, comm_));
    b_.ring->release(st.peer, st.slot);
    if (error_ != MPI_SUCCESS) return;
    if (s_.commutative || st.incoming_is_left) {
      note(combine(operand, into, n));
    } else {
      note(combine(into, operand, n));
      note(copy_elements(operand, into, n, layout_, comm_));
    }
  }

  // Direct steps (schedule.h), broadcasts only: the accumulator is this rank's bytes on
  // every rank (a user buffer of a dense type, or the packed copy collectives.cpp made),
  // so a segment is at the same byte offset in every rank's accumulator.
  void expose(const Step& st) {
    for (auto& r : acc_recv_) note(wait_politely(&r));  // what the others read is here
    b_.ring->expose(b_.accumulator, st.readers);
    exposed_ = true;
  }

  void access(const Step& st) {
    const std::int64_t offset = segments_[st.segment].first * layout_.size;
    std::string why;
    bool ok = packed_is_layout();
    if (!ok) why = "the accumulator's datatype is not contiguous bytes";
    if (st.kind == StepKind::Read) {
      before_write(st.segment);
      ok = b_.ring->read(st.peer, offset, acc(st.segment), ok ? bytes(st.segment) : 0, why) && ok;
    } else {
      note(wait_politely(acc_request(st.segment)));
      ok = b_.ring->write(st.peer, offset, acc(st.segment), ok ? bytes(st.segment) : 0, why) && ok;
    }
    // The kernel refused a copy that the ring's probe had made: this call fails as an MPI
    // call whose transport failed would (MPI_ERR_OTHER through the communicator's error
    // handler) rather than leave a wrong result; the peer is not left waiting.
    if (!ok) {
      note(MPI_ERR_OTHER);
      if (direct_error_.empty()) direct_error_ = why;
    }
  }

  const Schedule& s_;
  const std::vector<planner::Segment>& segments_;
  const int rank_;
  const ExecutionBuffers& b_;
  const DatatypeLayout& layout_;
  const MPI_Op op_;
  const MPI_Comm comm_;
  const std::vector<Fused>& fused_;  // per step: runs as written, or fused (fusions_for)
  const ReduceKernels kernels_;      // null: MPI_Reduce_local combines
  bool one_pass_ = false;            // fetch_reduce_input combines into the accumulator in one pass
  bool stream_ = false;              // ... and the root's, past the caches (kernels_.stream)
  std::vector<MPI_Request>& acc_recv_;
  std::vector<int>& acc_owner_;
  MPI_Request no_request_ = MPI_REQUEST_NULL;
  std::vector<MPI_Request>& slot_recv_;
  std::vector<MPI_Request>& sends_;
  std::vector<std::vector<std::size_t>>& readers_;
  char* open_entry_ = nullptr;  // the ring entry a fused segment is being built in
  bool exposed_ = false;        // this call exposed the accumulator (Expose)
  std::string& direct_error_;   // why a Read or Write failed, if one did (ExecutorScratch)
  int error_ = MPI_SUCCESS;
};

}  // namespace

// A segment this rank builds and then stages, "copy my input into the accumulator;
// combine staged operands into it (fetch-reduce); stage it", copies it twice. Built
// in the ring entry its stage will use, it is copied once: the copy claims the entry
// (waiting, as the stage would, for the entry's previous readers), the reductions work
// in it, and the stage only publishes it. The entry is claimed earlier than the stage
// step says; the staged algorithms leave a whole round of stages between an entry's
// uses (planner/algorithms/reduce_scatter_gather.cpp), so the wait is the same one.
// Only when nothing else touches the segment in between, and only for datatypes whose
// elements are contiguous bytes (checked per call: otherwise the steps run as written).
// And only where the accumulator's copy of the segment is not needed after the stage
// (accumulator_dead_after): built in the entry, the accumulator never holds it. A
// reduce's rank other than the root builds in a workspace nobody reads; an allreduce's
// rank must end with the segment in its receive buffer, so there the fusion needs a
// later step that overwrites it anyway (the broadcast's fetch of the result). Found by
// the allreduce differential test: the composed shm schedule's root staged its own
// slice for the broadcast and never had it in its receive buffer.
static bool accumulator_dead_after(const Schedule& s, int rank, const std::vector<Step>& steps, std::size_t stage) {
  const int seg = steps[stage].segment;
  for (std::size_t i = stage + 1; i < steps.size(); ++i) {
    const Step& st = steps[i];
    if (!st.covers(seg) || st.kind == StepKind::Expose) continue;
    const bool overwrites = st.kind == StepKind::Fetch || st.kind == StepKind::Read || st.kind == StepKind::Copy ||
                            (st.kind == StepKind::Recv && st.buffer == Buffer::Accumulator);
    const bool reads_accumulator = st.buffer == Buffer::Accumulator || st.kind == StepKind::Reduce ||
                                   st.kind == StepKind::FetchReduce || st.kind == StepKind::Write;
    if (overwrites) return true;
    if (reads_accumulator) return false;
  }
  return s.collective == planner::Collective::Reduce && rank != s.root;
}

static void fuse_staged_segments(const Schedule& s, int rank, const std::vector<Step>& steps,
                                 std::vector<Fused>& fused) {
  for (std::size_t j = 0; j < steps.size(); ++j) {
    const Step& stage = steps[j];
    if (stage.kind != StepKind::Stage || stage.buffer != Buffer::Accumulator) continue;
    std::size_t i = j;
    bool clean = true;
    std::vector<std::size_t> reductions;
    // The segment's start: a Copy, or a FetchReduce with the input.
    auto starts = [](const Step& st) {
      return st.kind == StepKind::Copy || (st.kind == StepKind::FetchReduce && st.buffer == Buffer::Input);
    };
    while (i-- > 0) {
      const Step& st = steps[i];
      if (!st.covers(stage.segment)) continue;
      if (st.span != 1) {  // a step over more segments than the entry holds (schedule.h)
        clean = false;
        break;
      }
      if (starts(st)) break;
      if (st.kind == StepKind::FetchReduce) reductions.push_back(i);
      else clean = false;
      if (!clean) break;
    }
    if (!clean || i >= j || !starts(steps[i]) || fused[i] != Fused::No) continue;
    if (!accumulator_dead_after(s, rank, steps, j)) continue;
    fused[i] = Fused::CopyIntoEntry;
    for (std::size_t r : reductions) fused[r] = Fused::ReduceInEntry;
    fused[j] = Fused::PublishEntry;
  }
}

// A segment's usual start, "copy my input into the accumulator; receive a child's
// operand into a slot; reduce the slot into the accumulator", makes three passes
// over the data. When nothing else touches the segment's accumulator in between,
// the same messages and operands take two: receive the operand straight into the
// accumulator, then MPI_Reduce_local(input, accumulator), which computes
// input (op) operand, the order the reduce step wants unless the incoming operand
// comes first in rank order (then, for a non-commutative operation, the steps run
// as written). Not in place: there the accumulator holds this rank's input.
std::vector<Fused> fusions_for(const Schedule& s, int rank, bool input_is_accumulator) {
  const std::vector<Step>& steps = s.steps_of(rank);
  std::vector<Fused> fused(steps.size(), Fused::No);
  if (input_is_accumulator) return fused;
  fuse_staged_segments(s, rank, steps, fused);
  for (std::size_t r = 0; r < steps.size(); ++r) {
    const Step& reduce = steps[r];
    if (reduce.kind != StepKind::Reduce || (!s.commutative && reduce.incoming_is_left)) continue;
    const int seg = reduce.segment;
    // Walking back from the reduce to both the slot's receive and the segment's
    // copy (in either order), no other step may touch the segment (sends of the
    // input aside) or the slot. A reduce spanning segments (schedule.h) fuses with a
    // receive and a copy of the same span only.
    const auto same_span = [&](const Step& st) { return st.segment == seg && st.span == reduce.span; };
    const auto overlaps = [](int a, int na, int b, int nb) { return a < b + nb && b < a + na; };
    const std::size_t none = steps.size();
    std::size_t recv = none, copy = none;
    bool clean = true;
    for (std::size_t i = r; i-- > 0 && clean && (recv == none || copy == none);) {
      const Step& st = steps[i];
      const bool slot_step = st.kind == StepKind::Reduce || (st.kind == StepKind::Recv && st.buffer == Buffer::Slot);
      const bool on_slot = slot_step && overlaps(st.slot, st.span, reduce.slot, reduce.span);
      const bool on_segment = st.kind != StepKind::Expose && overlaps(st.segment, st.span, seg, reduce.span) &&
                              !(st.kind == StepKind::Send && st.buffer == Buffer::Input);
      if (st.kind == StepKind::Recv && on_slot && st.slot == reduce.slot && same_span(st) && recv == none) recv = i;
      else if (st.kind == StepKind::Copy && same_span(st) && copy == none) copy = i;
      else if (on_slot || on_segment) clean = false;
    }
    if (!clean || recv == none || copy == none || fused[recv] != Fused::No || fused[copy] != Fused::No) continue;
    fused[recv] = Fused::RecvIntoAccumulator;
    fused[copy] = Fused::SkipCopy;
    fused[r] = Fused::ReduceInput;
  }
  return fused;
}


int execute(const Schedule& schedule, const std::vector<planner::Segment>& segments, int rank,
            const ExecutionBuffers& buffers, const DatatypeLayout& layout, MPI_Op op, MPI_Comm comm,
            const std::vector<Fused>& fusions, ExecutorScratch& scratch) {
  return RankRun(schedule, segments, rank, buffers, layout, op, comm, fusions, scratch).run();
}

}  // namespace canopy::shim
