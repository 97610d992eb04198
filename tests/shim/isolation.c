/* isolation: collectives never consume nor produce the application's point-to-point
 * messages on the communicator they run on.
 *
 * On MPI_COMM_WORLD and on a split of it with the ranks reversed, every rank
 *   1. posts one wildcard receive (MPI_ANY_SOURCE, MPI_ANY_TAG) per message it will
 *      get, plus one more "canary" receive that must never complete;
 *   2. runs many collectives with those receives pending: MPI_Reduce and MPI_Bcast at
 *      every root, counts 0 to 25013, MPI_INT SUM, a user op on a vector type (Canopy
 *      copies such elements with messages to itself) and a bcast of a vector type (it
 *      packs), checking their results;
 *   3. sends the application's messages: MSGS to every rank (itself included) with
 *      tags drawn from 0..2047 and 32767 (the tags Canopy gives its segments and its
 *      self-copies), payload [magic, source, tag, sequence, hash...] of random length;
 *   4. completes the wildcard receives and checks they hold exactly the messages sent
 *      to it (source and tag in the status match the payload, every sender's
 *      sequence numbers arrive in order, each exactly once), that the canary is still
 *      pending (then cancels it), and, after a barrier, that MPI_Iprobe with wildcards
 *      finds nothing.
 *
 * Options: --seed=N (or CANOPYTEST_SEED), --rounds=N (default 3).
 */
#include "canopy_check.h"

#define MSGS 3       /* messages from every rank to every rank, per round */
#define MAXLEN 12    /* ints per message at most */
#define MAGIC 0x49534F4C /* "ISOL" */

static unsigned long long seed;
static int wrank;

static int app_tag(int round, int src, int dst, int seq) {
  const uint64_t h = ct_hash(seed, (uint64_t)round, (uint64_t)(src * 4096 + dst), (uint64_t)seq);
  return h % 8 == 0 ? 32767 : (int)(h % 2048);
}
static int app_len(int round, int src, int dst, int seq) {
  return 4 + (int)(ct_hash(seed, (uint64_t)round + 1000, (uint64_t)(src * 4096 + dst), (uint64_t)seq) % (MAXLEN - 3));
}
static int app_word(int round, int src, int dst, int seq, int i) {
  return (int)ct_hash(seed, (uint64_t)(round * MAXLEN + i), (uint64_t)(src * 4096 + dst), (uint64_t)seq + 77);
}

/* A user op summing ints in the vector type's layout. */
static MPI_Datatype vec_type; /* vector(2, 1, 2, MPI_INT): ints at 0 and 8, extent 12 */
static void vec_sum(void *in, void *inout, int *len, MPI_Datatype *dt) {
  (void)dt;
  int *a = in, *b = inout;
  for (int i = 0; i < *len; i++) {
    b[3 * i] += a[3 * i];
    b[3 * i + 2] += a[3 * i + 2];
  }
}

static void collectives(MPI_Comm comm, int round, MPI_Op vec_op) {
  int r, n;
  MPI_Comm_rank(comm, &r);
  MPI_Comm_size(comm, &n);
  static const int counts[] = {0, 1, 7, 1000, 25013};
  for (int root = 0; root < n; root++) {
    for (int c = 0; c < 5; c++) {
      const int count = counts[c];
      int *a = malloc((size_t)count * 3 * sizeof(int) + 4), *b = malloc((size_t)count * 3 * sizeof(int) + 4);
      ct_context("round %d: MPI_Reduce MPI_INT SUM, count %d, root %d of %d", round, count, root, n);
      for (int i = 0; i < count; i++) a[i] = r + i;
      MPI_Reduce(a, b, count, MPI_INT, MPI_SUM, root, comm);
      if (r == root) {
        int bad = -1;
        for (int i = 0; i < count && bad < 0; i++)
          if (b[i] != n * (n - 1) / 2 + n * i) bad = i;
        ct_check(bad < 0, "wrong sum at element %d", bad);
      }
      ct_context("round %d: MPI_Bcast MPI_INT, count %d, root %d of %d", round, count, root, n);
      for (int i = 0; i < count; i++) a[i] = r == root ? i * 3 + root : -1;
      MPI_Bcast(a, count, MPI_INT, root, comm);
      int bad = -1;
      for (int i = 0; i < count && bad < 0; i++)
        if (a[i] != i * 3 + root) bad = i;
      ct_check(bad < 0, "wrong broadcast at element %d", bad);
      if (count <= 1000) {
        /* Derived type: the user op's reduce copies elements with self-messages; the bcast packs. */
        ct_context("round %d: MPI_Reduce vector type user op, count %d, root %d of %d", round, count, root, n);
        for (int i = 0; i < 3 * count; i++) a[i] = i % 3 == 1 ? -7 : r + i;
        for (int i = 0; i < 3 * count; i++) b[i] = -5;
        MPI_Reduce(a, b, count, vec_type, vec_op, root, comm);
        if (r == root) {
          bad = -1;
          for (int i = 0; i < 3 * count && bad < 0; i++)
            if (b[i] != (i % 3 == 1 ? -5 : n * (n - 1) / 2 + n * i)) bad = i;
          ct_check(bad < 0, "wrong vector reduce at int %d", bad);
        }
        ct_context("round %d: MPI_Bcast vector type, count %d, root %d of %d", round, count, root, n);
        for (int i = 0; i < 3 * count; i++) a[i] = r == root ? i + root : (i % 3 == 1 ? -3 : -1);
        MPI_Bcast(a, count, vec_type, root, comm);
        bad = -1;
        for (int i = 0; i < 3 * count && bad < 0; i++)
          if (a[i] != (i % 3 == 1 && r != root ? -3 : i + root)) bad = i;
        ct_check(bad < 0, "wrong vector broadcast at int %d", bad);
      }
      free(a);
      free(b);
    }
  }
}

static void round_on(MPI_Comm comm, const char *comm_name, int round, MPI_Op vec_op) {
  int r, n;
  MPI_Comm_rank(comm, &r);
  MPI_Comm_size(comm, &n);
  const int expected = MSGS * n;
  int(*in)[MAXLEN] = malloc(sizeof(int[MAXLEN]) * (size_t)(expected + 1));
  MPI_Request *req = malloc(sizeof(MPI_Request) * (size_t)(expected + 1));
  MPI_Status *st = malloc(sizeof(MPI_Status) * (size_t)(expected + 1));
  for (int i = 0; i <= expected; i++)
    MPI_Irecv(in[i], MAXLEN, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &req[i]);

  collectives(comm, round, vec_op);

  ct_context("%s round %d: wildcard receives while the collectives ran", comm_name, round);
  /* None of the receives may have matched yet: nobody has sent anything. */
  int any = 0;
  for (int i = 0; i <= expected; i++) {
    int done = 0;
    MPI_Test(&req[i], &done, &st[i]);
    if (done) {
      ct_fail("wildcard receive %d completed before the application sent anything: source %d, tag %d", i,
              st[i].MPI_SOURCE, st[i].MPI_TAG);
      any = 1;
      /* Repost so the message count still adds up (the failure is recorded). */
      MPI_Irecv(in[i], MAXLEN, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &req[i]);
    }
  }
  ct_check(!any, "no receive completed during the collectives");
  MPI_Barrier(comm); /* every rank has looked before anyone sends */

  /* The application's own messages, to every rank including itself. */
  int(*out)[MAXLEN] = malloc(sizeof(int[MAXLEN]) * (size_t)expected);
  MPI_Request *sreq = malloc(sizeof(MPI_Request) * (size_t)expected);
  MPI_Status *sst = malloc(sizeof(MPI_Status) * (size_t)expected);
  int ns = 0;
  for (int seq = 0; seq < MSGS; seq++)
    for (int d = 0; d < n; d++) {
      const int dst = (r + d) % n;
      const int tag = app_tag(round, r, dst, seq), len = app_len(round, r, dst, seq);
      out[ns][0] = MAGIC;
      out[ns][1] = r;
      out[ns][2] = tag;
      out[ns][3] = seq;
      for (int i = 4; i < len; i++) out[ns][i] = app_word(round, r, dst, seq, i);
      MPI_Isend(out[ns], len, MPI_INT, dst, tag, comm, &sreq[ns]);
      ns++;
    }
  MPI_Waitall(expected, req, st); /* all but the canary */
  MPI_Waitall(ns, sreq, sst);

  int *next_seq = calloc((size_t)n, sizeof(int));
  int bad = 0;
  for (int i = 0; i < expected; i++) {
    int len = 0;
    MPI_Get_count(&st[i], MPI_INT, &len);
    const int src = st[i].MPI_SOURCE, tag = st[i].MPI_TAG;
    if (len < 4 || in[i][0] != MAGIC || in[i][1] != src || src < 0 || src >= n || in[i][2] != tag) {
      if (bad++ < 3)
        ct_fail("receive %d: not an application message: source %d, tag %d, %d ints, header %d %d %d %d", i, src,
                tag, len, in[i][0], in[i][1], in[i][2], in[i][3]);
      continue;
    }
    const int seq = in[i][3];
    if (seq != next_seq[src] || tag != app_tag(round, src, r, seq) || len != app_len(round, src, r, seq)) {
      if (bad++ < 3)
        ct_fail("receive %d from %d: sequence %d (expected %d), tag %d, %d ints: not the message sent", i, src, seq,
                next_seq[src], tag, len);
      continue;
    }
    next_seq[src]++;
    for (int w = 4; w < len; w++)
      if (in[i][w] != app_word(round, src, r, seq, w)) {
        if (bad++ < 3) ct_fail("receive %d from %d, sequence %d: payload word %d differs", i, src, seq, w);
        break;
      }
  }
  ct_check(bad == 0, "%d wildcard receives did not hold the application's messages", bad);
  for (int s = 0; s < n; s++)
    ct_check(next_seq[s] == MSGS, "got %d of %d messages from rank %d", next_seq[s], MSGS, s);

  int canary_done = 0;
  MPI_Test(&req[expected], &canary_done, &st[expected]);
  ct_check(!canary_done, "the extra wildcard receive got a message: source %d, tag %d",
           canary_done ? st[expected].MPI_SOURCE : -1, canary_done ? st[expected].MPI_TAG : -1);
  if (!canary_done) {
    MPI_Cancel(&req[expected]);
    MPI_Wait(&req[expected], &st[expected]);
    int cancelled = 0;
    MPI_Test_cancelled(&st[expected], &cancelled);
    ct_check(cancelled, "the extra wildcard receive could not be cancelled (it matched a message)");
  }

  /* Every rank has received all its messages: nothing else may be waiting. */
  MPI_Barrier(comm);
  for (int tries = 0; tries < 3; tries++) {
    int flag = 0;
    MPI_Status ps;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, &ps);
    ct_check(!flag, "MPI_Iprobe found a message nobody sent: source %d, tag %d", flag ? ps.MPI_SOURCE : -1,
             flag ? ps.MPI_TAG : -1);
  }
  MPI_Barrier(comm);
  free(next_seq);
  free(out);
  free(sreq);
  free(sst);
  free(in);
  free(req);
  free(st);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  seed = ct_seed_from(argc, argv, 4242);
  ct_init("isolation", seed);
  wrank = ct.rank;
  int rounds = 3;
  for (int i = 1; i < argc; i++)
    if (strncmp(argv[i], "--rounds=", 9) == 0) rounds = atoi(argv[i] + 9);
  MPI_Type_vector(2, 1, 2, MPI_INT, &vec_type);
  MPI_Type_commit(&vec_type);
  MPI_Op vec_op;
  MPI_Op_create(vec_sum, 1, &vec_op);
  MPI_Comm reversed;
  MPI_Comm_split(MPI_COMM_WORLD, 0, ct.size - wrank, &reversed);

  for (int round = 0; round < rounds; round++) {
    round_on(MPI_COMM_WORLD, "MPI_COMM_WORLD", round, vec_op);
    round_on(reversed, "reversed split", round, vec_op);
  }

  MPI_Comm_free(&reversed);
  MPI_Op_free(&vec_op);
  MPI_Type_free(&vec_type);
  const int status = ct_finish();
  MPI_Finalize();
  return status;
}
