/* canopy-bench-floor: what this machine allows a 2-rank reduce, broadcast and
 * allreduce on one node, measured with no Canopy and no MPI in the data path, beside
 * the native collectives and the memcpy + MPI_Reduce_local reference, in one run.
 *
 * Canopy's node level moves data in the shapes measured here: a ring of chunk entries
 * in shared memory that one rank fills and the other empties (staged reduce: the
 * reader combines each chunk with its own input into its output; staged broadcast:
 * the reader copies it out), cross-memory attach, where each rank copies its half
 * of a broadcast straight between the two processes (process_vm_readv/writev), and
 * the staged allreduce (shm-reduce-scatter-allgather), where each rank fills a ring
 * of its own and empties the other's: it stages the half of its input the other owns,
 * combines its own half with the other's staged half into its output, stages that
 * result, and copies the other's result out; and the 2-rank allreduce of
 * shm-recursive-doubling, where each rank stages its whole input once into its ring and
 * combines the other's staged input with its own into its output. Earlier
 * sessions measured these with throwaway programs whenever a target looked out of
 * reach (docs/performance-history.md, section 7); this program is that measurement, kept, so
 * that a target can be judged on any machine before Canopy is tuned for it: where the
 * bare shape itself is no faster than the target, Canopy's schedule of that shape
 * cannot be either.
 *
 * Every measurement is batches of back-to-back calls between barriers (about 5 ms a
 * batch, --seconds in all, at least 5 batches); a batch's time per call is the slower
 * rank's; the result the median over the batches. The bare calls are checked: each
 * size's last reduce, broadcast and allreduce are compared with what the ranks
 * computed (the allreduce on both ranks). */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <mpi.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "bench_harness.h"

static void usage(FILE* out) {
  fprintf(out,
          "usage: mpiexec -n 2 canopy-bench-floor [options]\n"
          "\n"
          "What this machine allows a 2-rank MPI_Reduce (MPI_SUM of doubles), MPI_Bcast and\n"
          "MPI_Allreduce (MPI_SUM of doubles) on one node: the shapes Canopy's node level uses,\n"
          "run bare (no Canopy, no MPI in the data path), beside the MPI's own collectives and\n"
          "the memcpy + MPI_Reduce_local reference. Run it natively (not with libcanopy.so\n"
          "preloaded). Rank 0 prints, per size:\n"
          "  FLOOR <bytes> memcpy <us> combine <us> reference <us> ring-reduce <us>\n"
          "        ring-bcast <us> direct-bcast <us> MPI_Reduce <us> MPI_Bcast <us>\n"
          "        ring-allreduce <us> MPI_Allreduce <us> pair-allreduce <us>\n"
          "    memcpy        one local copy of the message (rank 0)\n"
          "    combine       out = a + b over local data, one pass (rank 0)\n"
          "    reference     one memcpy plus one MPI_Reduce_local (rank 0): a 2-rank reduce's\n"
          "                  serial work, issue 15's yardstick\n"
          "    ring-reduce   rank 1 copies its input into a ring of entries in shared memory,\n"
          "                  rank 0 combines each chunk with its own input into its output\n"
          "    ring-bcast    rank 0 copies the message into the ring, rank 1 copies it out\n"
          "    direct-bcast  rank 1 reads half of the message from rank 0's buffer\n"
          "                  (process_vm_readv) while rank 0 writes the other half into rank\n"
          "                  1's (process_vm_writev); '-' where the kernel refuses it\n"
          "    MPI_Reduce, MPI_Bcast  the MPI's own, root 0\n"
          "    ring-allreduce  Canopy's shm-reduce-scatter-allgather: rank 0 owns the first\n"
          "                  half, rank 1 the second; each rank stages the other's half of\n"
          "                  its input into a ring of its own, combines its own half with\n"
          "                  the other's staged half into its output, stages that result,\n"
          "                  and copies the other's result out of the other's ring; chunk\n"
          "                  by chunk, pipelined; '-' with fewer than 4 entries\n"
          "    MPI_Allreduce the MPI's own\n"
          "    pair-allreduce  Canopy's shm-recursive-doubling on 2 ranks: each rank stages its\n"
          "                  input into a ring of its own, chunk by chunk, and combines the\n"
          "                  other's staged chunk with its own into its output (rank 0's\n"
          "                  operand first on both)\n"
          "  RATIO <bytes> ring-reduce/reference <r> MPI_Bcast/best-bcast <r>\n"
          "        MPI_Allreduce/ring-allreduce <r> MPI_Allreduce/pair-allreduce <r>\n"
          "    the reduce's floor against the reference (issue 15 asks a reduce for 0.8 or\n"
          "    less), how much faster than the MPI a broadcast of these shapes can be\n"
          "    (issue 15 asks 1.5x), and an allreduce of this shape (an MPI_Allreduce\n"
          "    issue asks Canopy 1.1x from 512 KiB, within 10%% of the bare shape), and the\n"
          "    same for the pair's shape\n"
          "and finally CHECK OK (or CHECK FAILED and exit status 1).\n"
          "\n"
          "  --sizes B,...    message sizes in bytes, multiples of 64 (default 65536,262144,\n"
          "                   1048576,4194304,16777216)\n"
          "  --seconds S      time per measurement (default 0.2)\n"
          "  --entries N      the ring's entries (default 8, Canopy's ring on 2 ranks); the\n"
          "                   allreduce has one such ring per rank\n"
          "  --chunk B        bytes a chunk, a multiple of 64 (default 98304, Canopy's largest\n"
          "                   on 2 ranks); an entry holds one chunk\n"
          "  --offset B       the message buffers start B bytes past a page boundary (default 0;\n"
          "                   16 is where glibc's malloc puts a large block, as in canopy-bench);\n"
          "                   the rings' chunks lie as far past a cache line, as Canopy's do\n"
          "  --help           this text\n"
          "\n"
          "example:\n"
          "  mpiexec.mpich -n 2 canopy-bench-floor --sizes 262144,1048576\n");
}

enum { kMaxSizes = 32, kLine = 64 };

typedef struct {
  long sizes[kMaxSizes];
  int nsizes;
  double seconds;
  int entries;
  long chunk;
  long offset;
} Options;

/* One cache line per counter, so that the two ranks' flags never share a line. */
typedef struct {
  _Alignas(kLine) _Atomic uint64_t value;
  char pad[kLine - sizeof(uint64_t)];
} Counter;

/* A ring in the shared window: `entries` chunks, a ready and a done counter per
 * entry (uses published by the writer and finished by the reader). The ring's stages
 * are numbered over its life: stage s goes to entry s mod entries, as its
 * (s / entries)-th use. */
typedef struct {
  Counter* ready;
  Counter* done;
  char* data;
  int entries;
  long chunk;
  uint64_t chunks; /* this rank's stages of the ring so far (writer and reader count alike) */
} Ring;

/* Every ring of a run: `one`, the reduce's and the broadcast's (one rank writes it,
 * the other reads), the two ranks' call counters of the direct broadcast, and the
 * allreduce's two rings, all[k] written by rank k and read by the other (Canopy's
 * ring gives each rank entries of its own, shim/staging.h). */
typedef struct {
  Ring one;
  Counter* direct; /* [0]: rank 0's writes done, [1]: rank 1's reads done */
  Ring all[2];
} Rings;

typedef struct {
  int rank;
  pid_t peer_pid;
  double* a;   /* rank 0: its input; rank 1: its input (b) */
  double* out; /* rank 0: the reduce's output; both: the broadcast's and the allreduce's */
  double* scratch;
  void* peer_out; /* the peer's `out`, for the direct copies */
  int direct_ok;  /* 1 while the kernel allows the direct copies */
  uint64_t direct_calls;
  unsigned result_delay_us; /* check only: the allreduce sleeps this before staging each result */
} Bench;

/* Spins on `c` until it reaches `at_least`, yielding now and then (the two ranks may
 * share a core). */
static void wait_for(Counter* c, uint64_t at_least) {
  for (unsigned spins = 0; atomic_load_explicit(&c->value, memory_order_acquire) < at_least; ++spins) {
    if ((spins & 255) == 255) sched_yield();
  }
}

/* out = a + b over n doubles, one pass; with `stream`, streaming stores (Canopy's root
 * uses them for messages past 1 MiB: they leave the caches to the inputs). */
#if defined(__x86_64__)
__attribute__((target("avx512f"))) static void combine_avx512(double* out, const double* a, const double* b, long n, int stream) {
  long i = 0;
  /* Up to the output's first cache line, one at a time: streaming stores need it, and
   * where the operands lie as the output does against lines (the ring's entries, below,
   * do) the vectors then load whole lines. Canopy's loops start alike
   * (shim/reduce_kernels.cpp). */
  for (; i < n && (uintptr_t)(out + i) % 64; ++i) out[i] = a[i] + b[i];
  for (; i + 8 <= n; i += 8) {
    const __m512d s = _mm512_add_pd(_mm512_loadu_pd(a + i), _mm512_loadu_pd(b + i));
    if (stream) _mm512_stream_pd(out + i, s);
    else _mm512_storeu_pd(out + i, s);
  }
  if (stream) _mm_sfence();
  for (; i < n; ++i) out[i] = a[i] + b[i];
}
#endif

static void combine(double* restrict out, const double* restrict a, const double* restrict b, long n, int stream) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) {
    combine_avx512(out, a, b, n, stream);
    return;
  }
#endif
  (void)stream;
  for (long i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

static int streams(long message_bytes) { return message_bytes > (1L << 20); }

/* The writer's stage `s`: `len` bytes from `src` into its entry, once the entry's
 * reader is done with its previous use. */
static void ring_stage(Ring* r, uint64_t s, const char* src, long len) {
  const int e = (int)(s % (uint64_t)r->entries);
  const uint64_t use = s / (uint64_t)r->entries;
  wait_for(&r->done[e], use);
  memcpy(r->data + (size_t)e * (size_t)r->chunk, src, (size_t)len);
  atomic_store_explicit(&r->ready[e].value, use + 1, memory_order_release);
}

/* The reader's stage `s`: its entry once the writer has published it; then, once read,
 * ring_release frees the entry for its next use. */
static const char* ring_claim(Ring* r, uint64_t s) {
  const int e = (int)(s % (uint64_t)r->entries);
  wait_for(&r->ready[e], s / (uint64_t)r->entries + 1);
  return r->data + (size_t)e * (size_t)r->chunk;
}

static void ring_release(Ring* r, uint64_t s) {
  atomic_store_explicit(&r->done[s % (uint64_t)r->entries].value, s / (uint64_t)r->entries + 1, memory_order_release);
}

/* The ring's writer: `bytes` from `src`, chunk by chunk, each into the next entry once
 * its reader is done with it. */
static void ring_write(Ring* r, const char* src, long bytes) {
  for (long off = 0; off < bytes; off += r->chunk, ++r->chunks)
    ring_stage(r, r->chunks, src + off, bytes - off < r->chunk ? bytes - off : r->chunk);
}

/* The ring's reader: each chunk either combined with `mine` into `dst` (a reduce) or
 * copied into `dst` (mine == NULL: a broadcast), then its entry freed. */
static void ring_read(Ring* r, char* dst, const char* mine, long bytes) {
  const int stream = streams(bytes);
  for (long off = 0; off < bytes; off += r->chunk, ++r->chunks) {
    const long len = bytes - off < r->chunk ? bytes - off : r->chunk;
    const char* entry = ring_claim(r, r->chunks);
    if (mine) combine((double*)(dst + off), (const double*)(mine + off), (const double*)entry, len / 8, stream);
    else memcpy(dst + off, entry, (size_t)len);
    ring_release(r, r->chunks);
  }
}

/* The 2-rank allreduce of Canopy's shm-reduce-scatter-allgather (plan_staged in
 * planner/algorithms/reduce_scatter_gather.cpp), bare: rank 0 owns the first half of
 * the message, rank 1 the second, each half cut into chunks of the ring's size. Round t
 * on each rank, in the schedule's order: stage chunk t of the other's half of its input
 * into its own ring; combine chunk t of its own half of its input with the other's
 * staged chunk t into its output; stage that result; copy the other's result of round
 * t - 1 out into its output (a round late, as the schedule does: this round's is still
 * being combined). So each stage number 2t of a call holds an operand, 2t + 1 a result,
 * and the reads run out of order by one (2t, then 2t - 1), which the per-entry counters
 * allow: the ring's stages wait for an entry's reader, not for each other. A ring of
 * 2 entries deadlocks this order (both ranks staging result t into the entry of result
 * t - 1, which each reads only after); Canopy's plan asks 2 p = 4 (plan_staged), and
 * from 4 up the reads of this order have freed every entry before its next stage (the
 * writer's wait never waits), so main measures it from 4 entries up, as Canopy runs it.
 * The combine does not stream, unlike the bare reduce's past 1 MiB: its output is
 * staged right after, from the caches. Measured 2026-12-03 (this 2-core VM, MPICH,
 * three alternating pairs of runs with and without streaming past 1 MiB, --seconds
 * 0.3, no build running): in the runs where the bare reduce showed the machine in a
 * quick period (2 MiB 112-129 us), the allreduce took 142-152 us at 2 MiB and 358 at
 * 4 MiB cached, 235 and 536 streamed; in the others every two-rank shape was 5-10x
 * slower alike, which decides nothing. (Canopy's executor streams this combine on
 * rank 0 past 1 MiB, an allreduce's schedules being rooted at rank 0, and runs rank
 * 1's as a copy and a combine per 16 KiB block: shim/executor.cpp, stream_.) */
static void ring_allreduce(Ring* own, Ring* other, int rank, const char* in, char* out, long bytes, unsigned delay_us) {
  const long half = bytes / 2, chunk = own->chunk;
  const long mine = rank == 0 ? 0 : half, theirs = half - mine; /* where the halves start */
  const long rounds = (half + chunk - 1) / chunk;
  const uint64_t base = own->chunks; /* both rings: the same stages per call */
  for (long t = 0; t <= rounds; ++t) {
    if (t < rounds) {
      const long off = t * chunk, len = half - off < chunk ? half - off : chunk;
      const uint64_t s = base + 2 * (uint64_t)t;
      ring_stage(own, s, in + theirs + off, len);
      combine((double*)(out + mine + off), (const double*)(in + mine + off), (const double*)ring_claim(other, s),
              len / 8, 0);
      ring_release(other, s);
      if (delay_us) usleep(delay_us);
      ring_stage(own, s + 1, out + mine + off, len);
    }
    if (t > 0) {
      const long off = (t - 1) * chunk, len = half - off < chunk ? half - off : chunk;
      const uint64_t s = base + 2 * (uint64_t)t - 1;
      memcpy(out + theirs + off, ring_claim(other, s), (size_t)len);
      ring_release(other, s);
    }
  }
  own->chunks = other->chunks = base + 2 * (uint64_t)rounds;
}

/* The 2-rank allreduce of Canopy's shm-recursive-doubling (one round: planner/
 * algorithms/shm_recursive_doubling.cpp), bare: chunk by chunk, each rank stages its
 * input into its own ring, then combines the other's staged chunk with its own input
 * into its output, rank 0's operand on the left on both ranks (the same bits on both),
 * and frees the other's entry. A stage waits only for the other's read of the entry's
 * previous use, which comes right after the other's own stage of that round: any
 * number of entries works. `delay_us` (check only): a sleep before each stage, so that
 * the other's reads must wait for them. */
static void pair_allreduce(Ring* own, Ring* other, int rank, const char* in, char* out, long bytes, unsigned delay_us) {
  const long chunk = own->chunk;
  const uint64_t base = own->chunks;
  uint64_t s = base;
  for (long off = 0; off < bytes; off += chunk, ++s) {
    const long len = bytes - off < chunk ? bytes - off : chunk;
    if (delay_us) usleep(delay_us);
    ring_stage(own, s, in + off, len);
    const double* theirs = (const double*)ring_claim(other, s);
    const double* mine = (const double*)(in + off);
    combine((double*)(out + off), rank == 0 ? mine : theirs, rank == 0 ? theirs : mine, len / 8, 0);
    ring_release(other, s);
  }
  own->chunks = other->chunks = s;
}

static void ring_clear(Ring* r) {
  for (int e = 0; e < r->entries; ++e) {
    atomic_store(&r->ready[e].value, 0);
    atomic_store(&r->done[e].value, 0);
  }
  r->chunks = 0;
}

/* Fresh rings for a measurement: every counter back to 0 on both ranks. The first
 * barrier waits for both ranks to be done with the rings: a writer (the broadcast's
 * rank 0 in check) finishes its call before its reader has read the last entries, and
 * cleared under the reader, the counters left it waiting for ever (seen: a hang of the
 * check while other builds loaded this 2-core VM). */
static void ring_reset(Rings* r, int rank) {
  polite_barrier();
  if (rank == 0) {
    ring_clear(&r->one);
    ring_clear(&r->all[0]);
    ring_clear(&r->all[1]);
    atomic_store(&r->direct[0].value, 0);
    atomic_store(&r->direct[1].value, 0);
  }
  r->one.chunks = r->all[0].chunks = r->all[1].chunks = 0;
  polite_barrier();
}

typedef enum {
  kMemcpy,
  kCombine,
  kReference,
  kRingReduce,
  kRingBcast,
  kDirectBcast,
  kMpiReduce,
  kMpiBcast,
  /* After the others, so that the FLOOR line's fields before them stay where they were. */
  kRingAllreduce,
  kMpiAllreduce,
  kPairAllreduce,
  kShapes
} Shape;

/* One call of `shape` on this rank. Returns 0, or -1 where the kernel refused a
 * direct copy (the same on both ranks is not needed: the caller agrees). */
static int one_call(Shape shape, Bench* b, Rings* rings, long bytes) {
  Ring* r = &rings->one;
  const int n = (int)(bytes / 8);
  switch (shape) {
    case kMemcpy:
      if (b->rank == 0) memcpy(b->out, b->a, (size_t)bytes);
      return 0;
    case kCombine:
      if (b->rank == 0) combine(b->out, b->a, b->scratch, n, streams(bytes));
      return 0;
    case kReference:
      if (b->rank == 0) {
        memcpy(b->out, b->a, (size_t)bytes);
        MPI_Reduce_local(b->scratch, b->out, n, MPI_DOUBLE, MPI_SUM);
      }
      return 0;
    case kRingReduce:
      if (b->rank == 1) ring_write(r, (const char*)b->a, bytes);
      else ring_read(r, (char*)b->out, (const char*)b->a, bytes);
      return 0;
    case kRingBcast:
      if (b->rank == 0) ring_write(r, (const char*)b->out, bytes);
      else ring_read(r, (char*)b->out, NULL, bytes);
      return 0;
    case kDirectBcast: {
      /* Rank 1 reads the first half, rank 0 writes the second; then each waits for the
       * other's half of this call (rank 0: its buffer is free again; rank 1: all of it
       * has arrived). */
      const long half = bytes / 2 / 64 * 64;
      const uint64_t call = ++b->direct_calls;
      ssize_t moved;
      if (b->rank == 1) {
        struct iovec local = {b->out, (size_t)half}, remote = {b->peer_out, (size_t)half};
        moved = half ? process_vm_readv(b->peer_pid, &local, 1, &remote, 1, 0) : 0;
      } else {
        struct iovec local = {(char*)b->out + half, (size_t)(bytes - half)};
        struct iovec remote = {(char*)b->peer_out + half, (size_t)(bytes - half)};
        moved = process_vm_writev(b->peer_pid, &local, 1, &remote, 1, 0);
      }
      const int ok = moved == (b->rank == 1 ? half : bytes - half);
      /* A refused copy still counts its call, so that neither rank waits forever. */
      atomic_store_explicit(&rings->direct[b->rank].value, ok ? call : UINT64_MAX, memory_order_release);
      wait_for(&rings->direct[1 - b->rank], call);
      return ok && atomic_load(&rings->direct[1 - b->rank].value) != UINT64_MAX ? 0 : -1;
    }
    case kMpiReduce:
      MPI_Reduce(b->a, b->out, n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
      return 0;
    case kMpiBcast:
      MPI_Bcast(b->out, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
      return 0;
    case kRingAllreduce:
      ring_allreduce(&rings->all[b->rank], &rings->all[1 - b->rank], b->rank, (const char*)b->a, (char*)b->out, bytes,
                     b->result_delay_us);
      return 0;
    case kMpiAllreduce:
      MPI_Allreduce(b->a, b->out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      return 0;
    case kPairAllreduce:
      pair_allreduce(&rings->all[b->rank], &rings->all[1 - b->rank], b->rank, (const char*)b->a, (char*)b->out, bytes,
                     b->result_delay_us);
      return 0;
    case kShapes:
      break;
  }
  return 0;
}

/* The median time per call of `shape` (µs), batches of back-to-back calls, the slower
 * rank's; -1 where a direct copy was refused. */
static double measure(Shape shape, Bench* b, Rings* r, long bytes, double seconds) {
  enum { kMinBatches = 5, kMaxBatches = 200 };
  double per_call[kMaxBatches];
  ring_reset(r, b->rank);
  b->direct_calls = 0;
  /* Two untimed calls (first touches), then the first call's time sizes the batches. */
  int failed = one_call(shape, b, r, bytes) + one_call(shape, b, r, bytes);
  polite_barrier();
  double t0 = MPI_Wtime();
  failed += one_call(shape, b, r, bytes);
  const double first = polite_max(MPI_Wtime() - t0);
  if (polite_max(failed ? 1 : 0) > 0) return -1;
  long batch = (long)(0.005 / (first > 1e-7 ? first : 1e-7));
  if (batch < 1) batch = 1;
  if (batch > 100000) batch = 100000;
  int batches = 0;
  const double start = MPI_Wtime();
  while (batches < kMaxBatches && (batches < kMinBatches || polite_max(MPI_Wtime() - start) < seconds)) {
    polite_barrier();
    t0 = MPI_Wtime();
    for (long i = 0; i < batch; ++i) failed += one_call(shape, b, r, bytes);
    per_call[batches++] = polite_max(MPI_Wtime() - t0) / (double)batch * 1e6;
  }
  if (polite_max(failed ? 1 : 0) > 0) return -1;
  return median(per_call, batches);
}

/* The rings' entries filled with a value no call writes, so that a reader that did
 * not wait for its chunk reads it (then the rings are reset). Once both ranks are done
 * with the rings (ring_reset says why). */
static void ring_poison(Rings* r, int rank) {
  polite_barrier();
  if (rank == 0) {
    const Ring* all[] = {&r->one, &r->all[0], &r->all[1]};
    for (int k = 0; k < 3; ++k)
      for (long i = 0; i < (long)all[k]->entries * all[k]->chunk / 8; ++i) ((double*)all[k]->data)[i] = -7.0;
  }
  ring_reset(r, rank);
}

/* One bare allreduce of `shape` checked twice, each rank once the late one (check says
 * why); returns the wrong elements. */
static long check_allreduce(Shape shape, Bench* b, Rings* r, long bytes) {
  const long n = bytes / 8;
  long wrong = 0;
  for (int late = 1; late >= 0; --late) {
    for (long i = 0; i < n; ++i) b->out[i] = -1.0;
    ring_poison(r, b->rank);
    if (b->rank == late) usleep(2000);
    b->result_delay_us = b->rank == late ? 100 : 0;
    one_call(shape, b, r, bytes);
    b->result_delay_us = 0;
    for (long i = 0; i < n; ++i) wrong += b->out[i] != (double)(3 + 2 * (i % 7));
  }
  return wrong;
}

/* Checks one bare reduce and one bare broadcast of `bytes` (and a direct one where the
 * kernel allows it, and the bare allreduce where `allreduce`) against what each rank
 * computes; returns the wrong elements. */
static long check(Bench* b, Rings* r, long bytes, int direct, int allreduce) {
  const long n = bytes / 8;
  long wrong = 0;
  for (long i = 0; i < n; ++i) b->a[i] = (double)(b->rank + 1 + i % 7);
  ring_poison(r, b->rank);
  if (b->rank == 1) usleep(2000); /* the writer starts late: a reader must wait for it */
  one_call(kRingReduce, b, r, bytes);
  if (b->rank == 0)
    for (long i = 0; i < n; ++i) wrong += b->out[i] != (double)(3 + 2 * (i % 7));
  for (int shape = kRingBcast; shape <= (direct ? kDirectBcast : kRingBcast); ++shape) {
    for (long i = 0; i < n; ++i) b->out[i] = b->rank == 0 ? (double)(i % 11) : -1.0;
    ring_poison(r, b->rank);
    if (b->rank == 0) usleep(2000);
    b->direct_calls = 0;
    wrong += one_call((Shape)shape, b, r, bytes) != 0;
    if (b->rank == 1)
      for (long i = 0; i < n; ++i) wrong += b->out[i] != (double)(i % 11);
  }
  /* The allreduces: every element on both ranks, twice, each rank once the late one:
   * it starts late, so that the other's reads of operands must wait for them, and
   * sleeps before staging each result (the pair: each stage), so that the other's
   * reads of results must too (otherwise the next round's operand, staged after the
   * result, waits for it, all but the last). A writer that did not wait for a free
   * entry the check cannot catch from 4 entries up: the reads of the schedule's order
   * already free each entry before its next stage. The inputs are those of the reduce
   * above. */
  if (allreduce) wrong += check_allreduce(kRingAllreduce, b, r, bytes);
  wrong += check_allreduce(kPairAllreduce, b, r, bytes);
  return wrong;
}

static int parse_options(int argc, char** argv, Options* o, int rank) {
  static struct option options[] = {{"sizes", required_argument, 0, 's'},
                                    {"seconds", required_argument, 0, 't'},
                                    {"entries", required_argument, 0, 'e'},
                                    {"chunk", required_argument, 0, 'c'},
                                    {"offset", required_argument, 0, 'o'},
                                    {"help", no_argument, 0, 'h'},
                                    {0, 0, 0, 0}};
  *o = (Options){.nsizes = 0, .seconds = 0.2, .entries = 8, .chunk = 98304, .offset = 0};
  for (long s = 65536; s <= 16L << 20; s *= 4) o->sizes[o->nsizes++] = s;
  opterr = 0;
  for (int c; (c = getopt_long(argc, argv, "", options, NULL)) != -1;) {
    char* end = NULL;
    switch (c) {
      case 'h':
        if (rank == 0) usage(stdout);
        return -1;
      case 's':
        o->nsizes = parse_sizes(optarg, 64, o->sizes, kMaxSizes);
        if (o->nsizes < 0) {
          if (rank == 0)
            fprintf(stderr,
                    "canopy-bench-floor: --sizes '%s': allowed: up to %d byte counts, multiples of 64 in [64, 2^30], "
                    "separated by commas\n",
                    optarg, kMaxSizes);
          return 2;
        }
        break;
      case 't': {
        const double v = strtod(optarg, &end);
        if (*end || end == optarg || !(v >= 0) || v > 3600) {
          if (rank == 0) fprintf(stderr, "canopy-bench-floor: --seconds '%s': allowed: a number in [0, 3600]\n", optarg);
          return 2;
        }
        o->seconds = v;
        break;
      }
      case 'e': {
        long v = 0;
        if (!parse_integer(optarg, &v) || v < 2 || v > 1024) {
          if (rank == 0) fprintf(stderr, "canopy-bench-floor: --entries '%s': allowed: an integer in [2, 1024]\n", optarg);
          return 2;
        }
        o->entries = (int)v;
        break;
      }
      case 'c':
        if (!parse_integer(optarg, &o->chunk) || o->chunk < 64 || o->chunk % 64 || o->chunk > (64L << 20)) {
          if (rank == 0) fprintf(stderr, "canopy-bench-floor: --chunk '%s': allowed: a multiple of 64 in [64, 64 MiB]\n", optarg);
          return 2;
        }
        break;
      case 'o':
        if (!parse_integer(optarg, &o->offset) || o->offset < 0 || o->offset % 8 || o->offset >= 4096) {
          if (rank == 0) fprintf(stderr, "canopy-bench-floor: --offset '%s': allowed: a multiple of 8 in [0, 4096)\n", optarg);
          return 2;
        }
        break;
      default:
        if (rank == 0) fprintf(stderr, "canopy-bench-floor: unknown option '%s' (see --help)\n", argv[optind - 1]);
        return 2;
    }
  }
  if (optind < argc) {
    if (rank == 0) fprintf(stderr, "canopy-bench-floor: unexpected argument '%s' (see --help)\n", argv[optind]);
    return 2;
  }
  return 0;
}

/* `bytes` starting `offset` bytes past a page boundary; *block is what to free. */
static double* buffer(long bytes, long offset, void** block) {
  if (posix_memalign(block, 4096, (size_t)(bytes + offset))) {
    fprintf(stderr, "canopy-bench-floor: out of memory (%ld bytes)\n", bytes + offset);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  memset(*block, 0, (size_t)(bytes + offset));
  return (double*)((char*)*block + offset);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  Bench b = {0};
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Options o;
  const int parsed = parse_options(argc, argv, &o, b.rank);
  if (parsed != 0) {
    MPI_Finalize();
    return parsed < 0 ? 0 : parsed;
  }
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int node_size = 0;
  MPI_Comm_size(node, &node_size);
  if (size != 2 || node_size != 2) {
    if (b.rank == 0)
      fprintf(stderr, "canopy-bench-floor: needs 2 ranks on one node (mpiexec -n 2), got %d rank(s), %d on rank 0's node\n",
              size, node_size);
    MPI_Comm_free(&node);
    MPI_Finalize();
    return 2;
  }

  /* The rings: rank 0 allocates them all, rank 1 maps rank 0's part. First the
   * reduce's and broadcast's ring as it always lay (its counters, the direct
   * broadcast's, its entries), then the allreduce's two (their counters, rank 0's
   * entries, rank 1's). On one NUMA node where they lie makes no difference; Canopy's
   * give each rank's entries its own memory. */
  Rings r = {.one = {.entries = o.entries, .chunk = o.chunk}};
  r.all[0] = r.all[1] = r.one;
  const MPI_Aint counters = (MPI_Aint)(2 * o.entries + 2) * kLine;
  const MPI_Aint ring_bytes = (MPI_Aint)o.entries * o.chunk;
  const MPI_Aint all_counters = (MPI_Aint)(4 * o.entries) * kLine;
  /* Each ring's data start as far past a cache line as the message buffers (--offset):
   * Canopy's ring puts a staged chunk where the buffer it came from lay against a line
   * (shim/staging.h), so copies and combines between buffers and entries run on whole
   * lines. */
  const MPI_Aint lean = (MPI_Aint)(o.offset % kLine);
  const MPI_Aint window_bytes = b.rank == 0 ? counters + ring_bytes + all_counters + 2 * ring_bytes + 3 * kLine : 0;
  char* base = NULL;
  MPI_Win win;
  MPI_Win_allocate_shared(window_bytes, kLine, MPI_INFO_NULL, node, &base, &win);
  MPI_Aint got = 0;
  int unit = 0;
  MPI_Win_shared_query(win, 0, &got, &unit, &base);
  r.one.ready = (Counter*)base;
  r.one.done = r.one.ready + o.entries;
  r.direct = r.one.done + o.entries;
  r.one.data = base + counters + lean;
  char* all_base = base + counters + ring_bytes + kLine;
  for (int k = 0; k < 2; ++k) {
    r.all[k].ready = (Counter*)all_base + 2 * k * o.entries;
    r.all[k].done = r.all[k].ready + o.entries;
    r.all[k].data = all_base + all_counters + k * (ring_bytes + kLine) + lean;
  }

  long largest = 0;
  for (int i = 0; i < o.nsizes; ++i) largest = o.sizes[i] > largest ? o.sizes[i] : largest;
  void* blocks[3];
  b.a = buffer(largest, o.offset, &blocks[0]);
  b.out = buffer(largest, o.offset, &blocks[1]);
  b.scratch = buffer(largest, o.offset, &blocks[2]);
  for (long i = 0; i < largest / 8; ++i) b.a[i] = b.rank + 1, b.scratch[i] = 1;

  /* The direct broadcast's peer: its pid and its buffer's address. */
  long mine[2] = {(long)getpid(), (long)(uintptr_t)b.out}, peer[2];
  MPI_Sendrecv(mine, 2, MPI_LONG, 1 - b.rank, 0, peer, 2, MPI_LONG, 1 - b.rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  b.peer_pid = (pid_t)peer[0];
  b.peer_out = (void*)(uintptr_t)peer[1];

  if (b.rank == 0) {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    version[strcspn(version, "\n")] = 0;
    printf("# canopy-bench-floor: 2 ranks on one node, a ring of %d entries of %ld bytes, buffers %ld bytes past a page, "
           "MPI: %s\n",
           o.entries, o.chunk, o.offset, version);
    fflush(stdout);
  }
  static const char* names[kShapes] = {"memcpy",     "combine",   "reference",      "ring-reduce",  "ring-bcast",
                                       "direct-bcast", "MPI_Reduce", "MPI_Bcast", "ring-allreduce", "MPI_Allreduce",
                                       "pair-allreduce"};
  /* The bare allreduce's order needs 4 entries (ring_allreduce); Canopy plans it on no
   * fewer. */
  const int allreduce_ok = o.entries >= 4;
  long wrong = 0;
  int direct_refused = 0;
  for (int i = 0; i < o.nsizes; ++i) {
    const long bytes = o.sizes[i];
    double us[kShapes];
    for (int s = kMemcpy; s < kShapes; ++s)
      us[s] = (s == kDirectBcast && direct_refused) || (s == kRingAllreduce && !allreduce_ok)
                  ? -1
                  : measure((Shape)s, &b, &r, bytes, o.seconds);
    direct_refused = us[kDirectBcast] < 0;
    wrong += check(&b, &r, bytes, !direct_refused, allreduce_ok);
    if (b.rank == 0) {
      printf("FLOOR %ld", bytes);
      for (int s = kMemcpy; s < kShapes; ++s) {
        if (us[s] < 0) printf(" %s -", names[s]);
        else printf(" %s %.2f", names[s], us[s]);
      }
      const double best_bcast = us[kDirectBcast] > 0 && us[kDirectBcast] < us[kRingBcast] ? us[kDirectBcast] : us[kRingBcast];
      printf("\nRATIO %ld ring-reduce/reference %.2f MPI_Bcast/best-bcast %.2f", bytes, us[kRingReduce] / us[kReference],
             us[kMpiBcast] / best_bcast);
      if (us[kRingAllreduce] < 0) printf(" MPI_Allreduce/ring-allreduce -");
      else printf(" MPI_Allreduce/ring-allreduce %.2f", us[kMpiAllreduce] / us[kRingAllreduce]);
      printf(" MPI_Allreduce/pair-allreduce %.2f\n", us[kMpiAllreduce] / us[kPairAllreduce]);
      fflush(stdout);
    }
  }
  if (b.rank == 0 && direct_refused)
    printf("# direct-bcast: the kernel refused process_vm_readv/writev between the ranks (%s)\n",
           "ptrace scope, or a container without CAP_SYS_PTRACE");
  if (b.rank == 0 && !allreduce_ok)
    printf("# ring-allreduce: needs a ring of 4 entries or more (--entries), as Canopy's shm-reduce-scatter-allgather "
           "does on 2 ranks\n");
  long wrong_total = 0;
  MPI_Allreduce(&wrong, &wrong_total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (b.rank == 0) {
    if (wrong_total == 0) printf("CHECK OK\n");
    else printf("CHECK FAILED: %ld wrong elements\n", wrong_total);
    fflush(stdout);
  }
  MPI_Win_free(&win);
  MPI_Comm_free(&node);
  for (int i = 0; i < 3; ++i) free(blocks[i]);
  MPI_Finalize();
  return wrong_total == 0 ? 0 : 1;
}
