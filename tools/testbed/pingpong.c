/* canopy-testbed-pingpong: measures the throughput between every pair of ranks, one
 * pair at a time, so that the emulated test bed (tools/testbed/canopy-testbed, one rank
 * per site) can compare what a link carries with the rate it was configured for.
 *
 * For each ordered pair (a, b): a sends b messages of 1, 2, 4, ... MiB, each answered
 * with one byte, until one lasts --seconds (or reaches --max-bytes): B. a then times
 * messages of B/4 and of B bytes again, at least twice each, keeping the fastest, and the rate
 * is (B - B/4) / (t(B) - t(B/4)): what a transfer costs beyond latency, the protocol's
 * handshakes and TCP's slow start, which both transfers pay alike, is what the link
 * sustains.
 */
#include <getopt.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE* out) {
  fprintf(out,
          "usage: mpiexec -n N canopy-testbed-pingpong [--seconds S] [--max-bytes B]\n"
          "\n"
          "Measures the throughput from every rank to every other rank, one pair at a\n"
          "time. Rank 0 prints one line per ordered pair:\n"
          "  RATE <from> <to> <Mbit/s> <bytes timed> <seconds>\n"
          "\n"
          "  --seconds S     how long the largest transfer of a pair lasts at least (default 0.3)\n"
          "  --max-bytes B   largest message (default 67108864)\n"
          "  --help          this text\n");
}

enum { kProbe = 1 << 20, kTag = 7, kMaxTries = 6 };

/* Sends `bytes` from `from` to `to` and waits for a one-byte answer; returns the
 * seconds `from` saw, 0 on the other ranks. */
static double ping(int rank, int from, int to, char* buffer, int bytes) {
  char ack = 0;
  double seconds = 0;
  if (rank == from) {
    const double t0 = MPI_Wtime();
    MPI_Send(buffer, bytes, MPI_BYTE, to, kTag, MPI_COMM_WORLD);
    MPI_Recv(&ack, 1, MPI_BYTE, to, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    seconds = MPI_Wtime() - t0;
  } else if (rank == to) {
    MPI_Recv(buffer, bytes, MPI_BYTE, from, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(&ack, 1, MPI_BYTE, from, kTag, MPI_COMM_WORLD);
  }
  return seconds;
}

int main(int argc, char** argv) {
  double target = 0.3;
  long max_bytes = 64L << 20;
  static struct option options[] = {{"seconds", required_argument, 0, 's'},
                                    {"max-bytes", required_argument, 0, 'm'},
                                    {"help", no_argument, 0, 'h'},
                                    {0, 0, 0, 0}};
  for (int c; (c = getopt_long(argc, argv, "s:m:h", options, NULL)) != -1;) {
    if (c == 'h') {
      usage(stdout);
      return 0;
    }
    if (c == 's') target = atof(optarg);
    else if (c == 'm') max_bytes = atol(optarg);
    else {
      usage(stderr);
      return 2;
    }
  }
  if (target <= 0 || max_bytes < 4L * kProbe || max_bytes > 1L << 30) {
    fprintf(stderr, "canopy-testbed-pingpong: need --seconds > 0 and --max-bytes in [%d, 2^30]\n", 4 * kProbe);
    return 2;
  }

  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char* buffer = malloc((size_t)max_bytes);
  memset(buffer, rank + 1, (size_t)max_bytes);
  /* rates[3 * (from * size + to) + k]: Mbit/s, bytes, seconds, filled by `from`. */
  double* rates = calloc((size_t)size * size * 3, sizeof(double));
  double* gathered = calloc((size_t)size * size * 3, sizeof(double));

  for (int from = 0; from < size; ++from) {
    for (int to = 0; to < size; ++to) {
      if (from == to) continue;
      MPI_Barrier(MPI_COMM_WORLD);
      ping(rank, from, to, buffer, 64 << 10); /* opens the connection */
      /* The sender doubles the message until one transfer lasts --seconds,
       * telling the receiver each next size (0: done). */
      long bytes = kProbe;
      for (;;) {
        const double seconds = ping(rank, from, to, buffer, (int)bytes);
        long next = 0;
        if (rank == from && seconds < target && bytes < max_bytes)
          next = 2 * bytes < max_bytes ? 2 * bytes : max_bytes;
        if (rank == from) MPI_Send(&next, 1, MPI_LONG, to, kTag, MPI_COMM_WORLD);
        else if (rank == to) MPI_Recv(&next, 1, MPI_LONG, from, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (next == 0) break;
        bytes = next;
      }
      /* Each the fastest of several tries: a try is only ever slowed down. A quarter
       * that took more than 0.35 of the full transfer cannot be latency (that is a
       * few ms of a transfer lasting --seconds) but a stall, such as TCP's 200 ms
       * retransmission timeout after the shaper dropped a packet, and it would make
       * the difference below too small and the rate far too high: measure both
       * again, up to kMaxTries times. The sender decides and tells the receiver. */
      double quarter = INFINITY, full = INFINITY;
      for (int tries = 1;; ++tries) {
        quarter = fmin(quarter, ping(rank, from, to, buffer, (int)(bytes / 4)));
        full = fmin(full, ping(rank, from, to, buffer, (int)bytes));
        int again = 0;
        if (rank == from) again = tries < kMaxTries && (tries < 2 || quarter > 0.35 * full);
        if (rank == from) MPI_Send(&again, 1, MPI_INT, to, kTag, MPI_COMM_WORLD);
        else if (rank == to) MPI_Recv(&again, 1, MPI_INT, from, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (!again) break;
      }
      if (rank == from) {
        double* entry = rates + 3 * (from * size + to);
        const double timed_bytes = (double)(bytes - bytes / 4), seconds = full - quarter;
        entry[0] = seconds > 0 ? timed_bytes * 8 / seconds / 1e6 : 0;
        entry[1] = timed_bytes;
        entry[2] = seconds;
      }
    }
  }
  MPI_Reduce(rates, gathered, size * size * 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0)
    for (int from = 0; from < size; ++from)
      for (int to = 0; to < size; ++to)
        if (from != to) {
          const double* entry = gathered + 3 * (from * size + to);
          printf("RATE %d %d %.1f %.0f %.4f\n", from, to, entry[0], entry[1], entry[2]);
        }
  fflush(stdout);
  free(buffer);
  free(rates);
  free(gathered);
  MPI_Finalize();
  return 0;
}
