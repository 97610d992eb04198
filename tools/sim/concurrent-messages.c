/* concurrent-messages.c: how a simulated platform treats messages between two ranks
 * that are in flight at once. Rank 0 sends rank PEER (--peer=PEER, default 1) 512 KiB as 1,
 * 2, 4, 8 and 16 messages posted together (MPI_Isend / MPI_Irecv); PEER prints when the
 * first of them and when the last had arrived (MPI_Waitany). A network that delivers a
 * pair's messages in order (one connection, one queue pair) has the first in after
 * about 1/k of the whole; under SimGrid 3.32 every message is a flow of its own, so
 * concurrent ones share the route's bandwidth and all arrive together, and a host's
 * loopback (two ranks of one node) does not share its bandwidth at all: 16 messages of
 * 32 KiB take a tenth of one of 512 KiB.
 *
 * With --relay=R as well: rank 0 posts 1 MiB to R as 15 messages at once, and R
 * receives them as Canopy's executor does where it forwards a pipeline (each receive
 * posted once the one before has arrived, then that segment sent on to PEER), and
 * then again with all 15 receives posted first; R and PEER print when the first and
 * the last segment reached them. docs/simulation.md shows how to run it, what it
 * printed, and what it explains. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kSegments = 15 };

/* Rank 0 -> relay -> peer, 1 MiB in kSegments segments; `early`: the relay posts all its
 * receives first. */
static void relay_once(int relay, int peer, char* buf, int early) {
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int each = (1 << 20) / kSegments;
  MPI_Request recv[kSegments], send[kSegments];
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  double first = 0;
  if (rank == 0) {
    for (int j = 0; j < kSegments; ++j) MPI_Isend(buf + j * each, each, MPI_BYTE, relay, j, MPI_COMM_WORLD, &send[j]);
    MPI_Waitall(kSegments, send, MPI_STATUSES_IGNORE);
  } else if (rank == relay) {
    if (early)
      for (int j = 0; j < kSegments; ++j) MPI_Irecv(buf + j * each, each, MPI_BYTE, 0, j, MPI_COMM_WORLD, &recv[j]);
    for (int j = 0; j < kSegments; ++j) {
      if (!early) MPI_Irecv(buf + j * each, each, MPI_BYTE, 0, j, MPI_COMM_WORLD, &recv[j]);
      MPI_Wait(&recv[j], MPI_STATUS_IGNORE);
      if (j == 0) first = MPI_Wtime() - start;
      MPI_Isend(buf + j * each, each, MPI_BYTE, peer, j, MPI_COMM_WORLD, &send[j]);
    }
    printf("relay, receives %s: first segment in after %9.2f us, all after %9.2f us\n",
           early ? "posted first  " : "one at a time", first * 1e6, (MPI_Wtime() - start) * 1e6);
    MPI_Waitall(kSegments, send, MPI_STATUSES_IGNORE);
  } else if (rank == peer) {
    for (int j = 0; j < kSegments; ++j) MPI_Irecv(buf + j * each, each, MPI_BYTE, relay, j, MPI_COMM_WORLD, &recv[j]);
    for (int j = 0; j < kSegments; ++j) {
      MPI_Wait(&recv[j], MPI_STATUS_IGNORE);
      if (j == 0) first = MPI_Wtime() - start;
    }
    printf("peer,  relay's receives %s: first in after %9.2f us, all after %9.2f us\n",
           early ? "posted first  " : "one at a time", first * 1e6, (MPI_Wtime() - start) * 1e6);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

static void relay_segments(int relay, int peer, char* buf) {
  relay_once(relay, peer, buf, 0);
  relay_once(relay, peer, buf, 1);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int peer = 1, relay = 0;
  for (int i = 1; i < argc; ++i) {
    if (strncmp(argv[i], "--peer=", 7) == 0) peer = atoi(argv[i] + 7);
    if (strncmp(argv[i], "--relay=", 8) == 0) relay = atoi(argv[i] + 8);
  }
  if (relay < 0 || relay >= size || relay == peer) {
    if (rank == 0) fprintf(stderr, "concurrent-messages: RELAY must be 1..%d and not PEER\n", size - 1);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (peer <= 0 || peer >= size) {
    if (rank == 0) fprintf(stderr, "concurrent-messages: PEER must be 1..%d\n", size - 1);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int total = 512 * 1024;
  char* buf = malloc(1 << 20);
  for (int k = 1; k <= 16; k *= 2) {
    const int each = total / k;
    MPI_Request req[16];
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    if (rank == 0 || rank == peer) {
      for (int j = 0; j < k; ++j) {
        if (rank == 0) MPI_Isend(buf + j * each, each, MPI_BYTE, peer, j, MPI_COMM_WORLD, &req[j]);
        else MPI_Irecv(buf + j * each, each, MPI_BYTE, 0, j, MPI_COMM_WORLD, &req[j]);
      }
      double first = 0;
      for (int j = 0; j < k; ++j) {
        int index;
        MPI_Waitany(k, req, &index, MPI_STATUS_IGNORE);
        if (j == 0) first = MPI_Wtime() - start;
      }
      if (rank == peer)
        printf("%2d messages of %6d B: first in after %9.2f us, all after %9.2f us\n", k, each, first * 1e6,
               (MPI_Wtime() - start) * 1e6);
    }
  }
  if (relay > 0) relay_segments(relay, peer, buf);
  fflush(stdout);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) printf("CHECK OK\n");  /* what canopy-sim counts a run as passed by (no data to check) */
  free(buf);
  MPI_Finalize();
  return 0;
}
