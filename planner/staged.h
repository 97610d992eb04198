// What the staged algorithms (shm-*) share: the ring Canopy gives a node's ranks
// (shim/staging.h makes it) and the size of their chunks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "planner/problem.h"
#include "planner/topology.h"

namespace canopy::planner {

// Chunks of the problem's segment size, never under kMinStagedChunkBytes and never over
// 3/4 of a staging entry (a size class rescales a layout for counts up to 2^(1/4)
// larger, size_class.h); 3/4 of an entry when the problem asks for one segment (0).
// Decision: each chunk's hand-over (a flag written on one core and read on another, the
// entry's lines moving between caches) costs a few hundred nanoseconds that the cost
// model does not price, so the selector, left free, cut 64 KiB broadcasts into ~1 KiB
// chunks and ran 5x slower than with 48 KiB ones (2 ranks, this machine). 32 KiB keeps
// the hand-overs well under the copies they overlap (1 MiB broadcast, 2 ranks: 16 KiB
// chunks 63 us, 32 KiB 47 us, 48 KiB 46 us; 64 KiB: 3.7, 3.1, 4.7 us).
constexpr std::int64_t kMinStagedChunkBytes = 32 * 1024;

// The ring: entries of 64 KiB, two rounds of a reduce-scatter's stages per rank (2p,
// what shm-reduce-scatter-gather needs), at least kMinStagingEntries; on two ranks, 8
// entries of 128 KiB (the same 1 MiB per rank).
// Decision: at least 16 (1 MiB per rank), not 8. A pipeline through the ring runs at the
// pace of the bytes it holds in flight, not only at its copies' and reductions' pace:
// on a 2-core AMD EPYC (Zen 4, KVM), two threads handing 48 KiB chunks over through 8
// entries (384 KiB) took 130 us per MiB copied in and out and 318 us per 4 MiB reduced
// (copied in, combined into a third buffer), through 16 entries 53 and 142, through 32
// 34 and 145 (a throwaway program, medians of 8-12 interleaved rounds). Canopy's 2-rank
// reduce (MPICH, back to back, canopy-bench, 3 interleaved runs): 8 entries 78-101 us at
// 1 MiB and 423-443 at 4 MiB, 16 entries 51-54 and 200-239, 32 entries 39-83 and 198-224
// (one run 1949; not steadier: 76-86 at 1 MiB in another round); docs/performance-history.md,
// section 7 (the raw lines, A).
// Decision (2026-11-27): two ranks get the same bytes in fewer, larger entries, whose
// chunks (up to 96 KiB) hand over half as often. A throwaway two-process pipeline here
// (1 MiB per rank of ring, 3 interleaved rounds, median us): broadcast 1 MiB 40.5-41.0 in
// 48 KiB chunks through 16 entries, 32.9-34.3 in 96 KiB chunks through 8, 31.6-35.2 in
// 192 KiB chunks through 4; 4 MiB 167-170, 156-157, 131-137. Canopy on MPICH, 2 ranks,
// shm-flat and shm-bcast forced, 3 alternating runs (canopy-bench, us per call), 8 x
// 128 KiB against 16 x 64 KiB: reduce 1 MiB 55-56 against 62-65, 4 MiB 197-211 against
// 237-254, 16 MiB 859-968 against 1076-1151; broadcast 1 MiB 38.5-40.6 against
// 42.5-51.2, 4 MiB 161-162 against 178-181, 16 MiB 684-704 against 754-761; 64 and 256
// KiB alike. Not on more ranks: 3 and more were not measured (this machine has two
// cores; the lent 16-core one measured 16 x 64 KiB and 2p x 64 KiB), and a ring of fewer
// entries than 2p is too small for shm-reduce-scatter-gather's two rounds.
constexpr std::int64_t kStagingEntryBytes = 64 * 1024;
constexpr int kMinStagingEntries = 16;
constexpr std::int64_t kTwoRankStagingEntryBytes = 128 * 1024;
constexpr int kTwoRankStagingEntries = 8;
inline int staging_entries_for(int nranks) {
  return nranks == 2 ? kTwoRankStagingEntries : std::max(nranks * 2, kMinStagingEntries);
}
inline std::int64_t staging_entry_bytes_for(int nranks) {
  return nranks == 2 ? kTwoRankStagingEntryBytes : kStagingEntryBytes;
}

// The ring grows with the ranks of a node (2p entries of 64 KiB per rank, 128 p KiB, at
// least 1 MiB; p^2 x 128 KiB on the node), so it is offered only where a node holds at most
// kMaxStagingRanks of the communicator's ranks: at most 4 MiB per rank and 128 MiB per
// node. Decision: a node of 128 ranks would otherwise hold 2 GiB of shared memory for
// one communicator's ring. Communicators over several nodes get a ring per node, which
// only the node levels of `hierarchical` (and grid-*) use (hierarchy.h).
constexpr int kMaxStagingRanks = 32;
inline bool staging_ring_allowed(int ranks_per_node) {
  return ranks_per_node >= 2 && ranks_per_node <= kMaxStagingRanks;
}
inline std::int64_t staging_ring_bytes_per_rank(int ranks_per_node) {
  return static_cast<std::int64_t>(staging_entries_for(ranks_per_node)) * staging_entry_bytes_for(ranks_per_node);
}

// The most ranks of `problem` that share one node: all of them without a topology (a
// problem without one is planned as one node), else its largest node.
int largest_node(const Problem& problem);
// The most ranks one node of `topology` holds.
int largest_node(const Topology& topology);

// Whether the problem's ranks all read one ring: it has one, and one node holds every
// rank. The shm-* algorithms plan only such problems; a hierarchy hands them its node
// levels (level_problem keeps the ring for a level inside one node).
inline bool staging_spans_problem(const Problem& problem) {
  return problem.staging_entries > 0 && largest_node(problem) == problem.nranks;
}

// Whether the ranks that `planned` puts on one node (a topology's node labels; empty:
// all ranks) share memory, where `physical[r]` names the node rank r's memory is on
// (the shim's nodes, found at MPI_Init): empty when they do, else which two ranks do not. The shim
// checks it before it makes a ring, so that no schedule reads memory it cannot reach.
std::string planned_nodes_share_memory(const std::vector<int>& planned, const std::vector<int>& physical);

// `problem` with the ring the shim makes for it: on each node, the entries of a ring for
// the p ranks of its largest node (staging_entries_for, staging_entry_bytes_for; every
// node's ring has the same entries, so that one schedule's stage numbers mean the same
// entries on every node).
Problem with_staging_ring(Problem problem);

// A reduction hands over three times per chunk (operand, reduced chunk, and the next
// round's entry), so it takes whole entries' worth (3/4 of one) whatever it is asked:
// 1 MiB reduce on 2 ranks, 103 us per call with 48 KiB chunks, 128 with 32 KiB.
inline std::int64_t staged_chunk_bytes(const Problem& problem, std::int64_t smallest = kMinStagedChunkBytes) {
  const std::int64_t largest = problem.staging_entry_bytes * 3 / 4;
  if (problem.segment_bytes <= 0) return largest;
  return std::clamp(problem.segment_bytes, std::min(smallest, largest), largest);
}

// How often one rank has used each quarter of each entry of each part of a ring (up to
// twice): a ring's first two passes are its warm-up, which auto's trials do not measure
// (shim/staging.h says why: a page's first access per process can cost microseconds).
// use() is true while what the use covers (the entry's first `bytes`) is still warming
// up: its first use by this rank, which pays for its pages, or its second, which may
// wait for another rank's first (`bytes` < 0: the whole entry). By quarters (16 KiB of a
// 64 KiB entry), because calls use entries in part: 32 KiB chunks warm the first half of
// each entry, and 48 KiB chunks after them still touch new pages.
class EntryUses {
 public:
  static constexpr int kQuarters = 4;
  EntryUses() = default;
  EntryUses(int parts, int entries, std::int64_t entry_bytes = kStagingEntryBytes)
      : entries_(std::max(entries, 0)),
        quarter_(std::max<std::int64_t>(entry_bytes / kQuarters, 1)),
        uses_(static_cast<std::size_t>(std::max(parts, 0)) * static_cast<std::size_t>(entries_) * kQuarters, 0) {}
  bool use(int part, int entry, std::int64_t bytes = -1) {
    if (part < 0 || entry < 0 || entry >= entries_) return false;
    const std::size_t at = (static_cast<std::size_t>(part) * static_cast<std::size_t>(entries_) + entry) * kQuarters;
    if (at >= uses_.size()) return false;
    const int covered =
        bytes < 0 ? kQuarters : static_cast<int>(std::clamp<std::int64_t>((bytes + quarter_ - 1) / quarter_, 1, kQuarters));
    bool warming = false;
    for (int q = 0; q < covered; ++q) {
      if (uses_[at + q] >= 2) continue;
      ++uses_[at + q];
      warming = true;
    }
    return warming;
  }

 private:
  int entries_ = 0;
  std::int64_t quarter_ = 1;
  std::vector<std::uint8_t> uses_;
};

// Where the next call on a ring starts: stage k of a call uses entry (origin + k) mod
// entries (schedule.h), and a call of `stages` stages (its segments, the same on every
// rank) hands the next call `origin`, or `origin + stages` to start after it. Restarting
// at the same entry reuses an entry `stages` stages after its last use (`stages` mod
// entries where a call wraps), and a writer that reuses an entry so soon presumably
// copies into lines still in its reader's cache. Moving on reuses every entry `entries`
// stages later but spreads the calls over the whole ring. Measured (docs/performance-history.md, section 7,
// "Where a call starts in the ring"), 2 ranks, 16 entries, moving on was faster at every
// size: 1 MiB reduced in 22 stages, 57-65 us a call restarting against 39-44 (the AMD
// machine); 512 KiB in 11 stages, 22-28 against 19-20; 256 KiB in 6 stages, 26-33
// against 12-18 (AMD); 64 KiB in 2 stages, 10.5 against 5.9 (the lent Xeon). 16 ranks,
// 32 entries: 64 KiB reduced in 15 stages was 5-16% slower on Open MPI moving on, and
// auto's trials then kept slower schedules in runs of a few hundred calls; 64 KiB
// broadcast in 2 stages was 10% faster. Decision: on a ring of more than two ranks a
// call that fits in the ring and fills at least a quarter of it restarts where it
// started; every other call moves on.
inline int next_staging_origin(int origin, int stages, int entries, int ranks) {
  if (entries <= 0) return 0;
  if (ranks > 2 && stages <= entries && 4 * stages >= entries) return origin;
  return (origin + std::max(stages, 0)) % entries;
}

}  // namespace canopy::planner
