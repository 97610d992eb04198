/* canopy-bench-floor: what this machine allows a 2-rank reduce and broadcast on one
 * node, measured with no Canopy and no MPI in the data path, beside the native
 * collectives and the memcpy + MPI_Reduce_local reference, in one run.
 *
 * Canopy's node level moves data in the shapes measured here: a ring of chunk entries
 * in shared memory that one rank fills and the other empties (staged reduce: the
 * reader combines each chunk with its own input into its output; staged broadcast:
 * the reader copies it out), and cross-memory attach, where each rank copies its half
 * of a broadcast straight between the two processes (process_vm_readv/writev). Earlier
 * sessions measured these with throwaway programs whenever a target looked out of
 * reach (docs/performance.md, section 7); this program is that measurement, kept, so
 * that a target can be judged on any machine before Canopy is tuned for it: where the
 * bare shape itself is no faster than the target, Canopy's schedule of that shape
 * cannot be either.
 *
 * Every measurement is batches of back-to-back calls between barriers (about 5 ms a
 * batch, --seconds in all, at least 5 batches); a batch's time per call is the slower
 * rank's; the result the median over the batches. The bare calls are checked: each
 * size's last reduce and broadcast are compared with what the ranks computed. */
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
          "What this machine allows a 2-rank MPI_Reduce (MPI_SUM of doubles) and MPI_Bcast on\n"
          "one node: the shapes Canopy's node level uses, run bare (no Canopy, no MPI in the\n"
          "data path), beside the MPI's own collectives and the memcpy + MPI_Reduce_local\n"
          "reference. Run it natively (not with libcanopy.so preloaded). Rank 0 prints, per size:\n"
          "  FLOOR <bytes> memcpy <us> combine <us> reference <us> ring-reduce <us>\n"
          "        ring-bcast <us> direct-bcast <us> MPI_Reduce <us> MPI_Bcast <us>\n"
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
          "  RATIO <bytes> ring-reduce/reference <r> MPI_Bcast/best-bcast <r>\n"
          "    the reduce's floor against the reference (issue 15 asks a reduce for 0.8 or\n"
          "    less) and how much faster than the MPI a broadcast of these shapes can be\n"
          "    (issue 15 asks 1.5x)\n"
          "and finally CHECK OK (or CHECK FAILED and exit status 1).\n"
          "\n"
          "  --sizes B,...    message sizes in bytes, multiples of 64 (default 65536,262144,\n"
          "                   1048576,4194304,16777216)\n"
          "  --seconds S      time per measurement (default 0.2)\n"
          "  --entries N      the ring's entries (default 8, Canopy's ring on 2 ranks)\n"
          "  --chunk B        bytes a chunk, a multiple of 64 (default 98304, Canopy's largest\n"
          "                   on 2 ranks); an entry holds one chunk\n"
          "  --offset B       the message buffers start B bytes past a page boundary (default 0;\n"
          "                   16 is where glibc's malloc puts a large block, as in canopy-bench)\n"
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

/* The ring in the shared window: `entries` chunks, a ready and a done counter per
 * entry (uses published by the writer and finished by the reader), and the two
 * ranks' call counters of the direct broadcast. */
typedef struct {
  Counter* ready;
  Counter* done;
  Counter* direct; /* [0]: rank 0's writes done, [1]: rank 1's reads done */
  char* data;
  int entries;
  long chunk;
  uint64_t chunks; /* this rank's chunks so far (writer and reader count alike) */
} Ring;

typedef struct {
  int rank;
  pid_t peer_pid;
  double* a;   /* rank 0: its input; rank 1: its input (b) */
  double* out; /* rank 0: the reduce's output; both: the broadcast's buffer */
  double* scratch;
  void* peer_out; /* the peer's `out`, for the direct copies */
  int direct_ok;  /* 1 while the kernel allows the direct copies */
  uint64_t direct_calls;
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
  /* Up to the output's first cache line, one at a time: streaming stores need it. */
  for (; stream && i < n && (uintptr_t)(out + i) % 64; ++i) out[i] = a[i] + b[i];
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

/* The ring's writer: `bytes` from `src`, chunk by chunk, each into the next entry once
 * its reader is done with it. */
static void ring_write(Ring* r, const char* src, long bytes) {
  for (long off = 0; off < bytes; off += r->chunk, ++r->chunks) {
    const long len = bytes - off < r->chunk ? bytes - off : r->chunk;
    const int e = (int)(r->chunks % (uint64_t)r->entries);
    const uint64_t use = r->chunks / (uint64_t)r->entries;
    wait_for(&r->done[e], use);
    memcpy(r->data + (size_t)e * (size_t)r->chunk, src + off, (size_t)len);
    atomic_store_explicit(&r->ready[e].value, use + 1, memory_order_release);
  }
}

/* The ring's reader: each chunk either combined with `mine` into `dst` (a reduce) or
 * copied into `dst` (mine == NULL: a broadcast), then its entry freed. */
static void ring_read(Ring* r, char* dst, const char* mine, long bytes) {
  const int stream = streams(bytes);
  for (long off = 0; off < bytes; off += r->chunk, ++r->chunks) {
    const long len = bytes - off < r->chunk ? bytes - off : r->chunk;
    const int e = (int)(r->chunks % (uint64_t)r->entries);
    const uint64_t use = r->chunks / (uint64_t)r->entries;
    wait_for(&r->ready[e], use + 1);
    const char* entry = r->data + (size_t)e * (size_t)r->chunk;
    if (mine) combine((double*)(dst + off), (const double*)(mine + off), (const double*)entry, len / 8, stream);
    else memcpy(dst + off, entry, (size_t)len);
    atomic_store_explicit(&r->done[e].value, use + 1, memory_order_release);
  }
}

/* A fresh ring for a measurement: every counter back to 0 on both ranks. The first
 * barrier waits for both ranks to be done with the ring: a writer (the broadcast's
 * rank 0 in check) finishes its call before its reader has read the last entries, and
 * cleared under the reader, the counters left it waiting for ever (seen: a hang of the
 * check while other builds loaded this 2-core VM). */
static void ring_reset(Ring* r, int rank) {
  polite_barrier();
  if (rank == 0) {
    for (int e = 0; e < r->entries; ++e) {
      atomic_store(&r->ready[e].value, 0);
      atomic_store(&r->done[e].value, 0);
    }
    atomic_store(&r->direct[0].value, 0);
    atomic_store(&r->direct[1].value, 0);
  }
  r->chunks = 0;
  polite_barrier();
}

typedef enum { kMemcpy, kCombine, kReference, kRingReduce, kRingBcast, kDirectBcast, kMpiReduce, kMpiBcast } Shape;

/* One call of `shape` on this rank. Returns 0, or -1 where the kernel refused a
 * direct copy (the same on both ranks is not needed: the caller agrees). */
static int one_call(Shape shape, Bench* b, Ring* r, long bytes) {
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
      atomic_store_explicit(&r->direct[b->rank].value, ok ? call : UINT64_MAX, memory_order_release);
      wait_for(&r->direct[1 - b->rank], call);
      return ok && atomic_load(&r->direct[1 - b->rank].value) != UINT64_MAX ? 0 : -1;
    }
    case kMpiReduce:
      MPI_Reduce(b->a, b->out, n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
      return 0;
    case kMpiBcast:
      MPI_Bcast(b->out, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
      return 0;
  }
  return 0;
}

/* The median time per call of `shape` (µs), batches of back-to-back calls, the slower
 * rank's; -1 where a direct copy was refused. */
static double measure(Shape shape, Bench* b, Ring* r, long bytes, double seconds) {
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

/* The ring's entries filled with a value no call writes, so that a reader that did
 * not wait for its chunk reads it (then the ring is reset). Once both ranks are done
 * with the ring (ring_reset says why). */
static void ring_poison(Ring* r, int rank) {
  polite_barrier();
  if (rank == 0)
    for (long i = 0; i < (long)r->entries * r->chunk / 8; ++i) ((double*)r->data)[i] = -7.0;
  ring_reset(r, rank);
}

/* Checks one bare reduce and one bare broadcast of `bytes` (and a direct one where the
 * kernel allows it) against what each rank computes; returns the wrong elements. */
static long check(Bench* b, Ring* r, long bytes, int direct) {
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

  /* The ring: rank 0 allocates it all, rank 1 maps rank 0's part. */
  Ring r = {.entries = o.entries, .chunk = o.chunk};
  const MPI_Aint counters = (MPI_Aint)(2 * o.entries + 2) * kLine;
  const MPI_Aint window_bytes = b.rank == 0 ? counters + (MPI_Aint)o.entries * o.chunk : 0;
  char* base = NULL;
  MPI_Win win;
  MPI_Win_allocate_shared(window_bytes, kLine, MPI_INFO_NULL, node, &base, &win);
  MPI_Aint got = 0;
  int unit = 0;
  MPI_Win_shared_query(win, 0, &got, &unit, &base);
  r.ready = (Counter*)base;
  r.done = r.ready + o.entries;
  r.direct = r.done + o.entries;
  r.data = base + counters;

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
  static const char* names[] = {"memcpy", "combine", "reference", "ring-reduce", "ring-bcast", "direct-bcast",
                                "MPI_Reduce", "MPI_Bcast"};
  long wrong = 0;
  int direct_refused = 0;
  for (int i = 0; i < o.nsizes; ++i) {
    const long bytes = o.sizes[i];
    double us[8];
    for (int s = kMemcpy; s <= kMpiBcast; ++s)
      us[s] = s == kDirectBcast && direct_refused ? -1 : measure((Shape)s, &b, &r, bytes, o.seconds);
    direct_refused = us[kDirectBcast] < 0;
    wrong += check(&b, &r, bytes, !direct_refused);
    if (b.rank == 0) {
      printf("FLOOR %ld", bytes);
      for (int s = kMemcpy; s <= kMpiBcast; ++s) {
        if (us[s] < 0) printf(" %s -", names[s]);
        else printf(" %s %.2f", names[s], us[s]);
      }
      const double best_bcast = us[kDirectBcast] > 0 && us[kDirectBcast] < us[kRingBcast] ? us[kDirectBcast] : us[kRingBcast];
      printf("\nRATIO %ld ring-reduce/reference %.2f MPI_Bcast/best-bcast %.2f\n", bytes, us[kRingReduce] / us[kReference],
             us[kMpiBcast] / best_bcast);
      fflush(stdout);
    }
  }
  if (b.rank == 0 && direct_refused)
    printf("# direct-bcast: the kernel refused process_vm_readv/writev between the ranks (%s)\n",
           "ptrace scope, or a container without CAP_SYS_PTRACE");
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
