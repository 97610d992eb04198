/* reduce_special: the MPI_Reduce/MPI_Bcast cases an interposer most easily gets wrong.
 *
 *  (a) a non-commutative user op (2x2 matrix product over MPI_Type_contiguous(4, MPI_INT)):
 *      the result must be M_0 * M_1 * ... * M_{p-1} in rank order, every root, counts 1
 *      and 300, in place and not; the op also checks it is called with the user's datatype;
 *  (b) a commutative user op on a struct datatype {long long sum; int max; int count};
 *  (c) derived datatypes with holes: vector with stride, resized (larger extent),
 *      indexed, reduced with user ops that walk the layout (a commutative SUM over int
 *      types, MAX over a double type declared non-commutative). MPICH 4.0.2 rejects
 *      predefined ops on any derived datatype (MPIR_SUM_check_dtype: "MPI_Op MPI_SUM
 *      operation not defined for this datatype", even for a contiguous type), as the MPI
 *      standard allows, so user ops it is. Holes of the root's receive buffer stay
 *      untouched, garbage in the send buffers' holes must not leak into the result, and
 *      the op must be called with the user's datatype;
 *  (d) sub-communicators: MPI_Comm_split with reversed keys (ranks reversed: the
 *      non-commutative product must follow the new order) and a split into two halves;
 *  (e) MPI_COMM_SELF reduce and bcast;
 *  (f) an intercommunicator (two halves of MPI_COMM_WORLD, >= 2 ranks): MPI_Reduce with
 *      MPI_ROOT / MPI_PROC_NULL and MPI_Bcast in both directions;
 *  (g) isolation: the application's own point-to-point messages on MPI_COMM_WORLD with
 *      tags 0..3 (a pre-posted MPI_ANY_SOURCE/MPI_ANY_TAG receive, and messages sent
 *      before the collectives and received after them) must never be consumed or
 *      produced by the collectives;
 *  (h) edge cases: NULL recvbuf on non-roots, NULL buffers with count 0.
 *
 * Options: --seed=N (or CANOPYTEST_SEED).
 */
#include "canopy_check.h"

#include <stddef.h>

static unsigned long long seed;
static int wrank, wsize;

#define SENTINEL_INT ((int)0xA5A5A5A5)

/* ------------------------------------------------------------------------------ */
/* (a) non-commutative 2x2 matrix product, entries as uint32 (a ring: exact, wraps)  */

typedef struct { uint32_t m[4]; } mat2; /* row-major a b / c d */
static MPI_Datatype mat_type;
static long op_wrong_datatype; /* calls whose datatype argument was not mat_type */
static long op_calls;

static mat2 mat_mul(mat2 x, mat2 y) {
  mat2 r;
  r.m[0] = x.m[0] * y.m[0] + x.m[1] * y.m[2];
  r.m[1] = x.m[0] * y.m[1] + x.m[1] * y.m[3];
  r.m[2] = x.m[2] * y.m[0] + x.m[3] * y.m[2];
  r.m[3] = x.m[2] * y.m[1] + x.m[3] * y.m[3];
  return r;
}

/* MPI semantics: inoutvec[i] = invec[i] op inoutvec[i], invec from the lower ranks. */
static void mat_op(void *invec, void *inoutvec, int *len, MPI_Datatype *dt) {
  op_calls++;
  if (*dt != mat_type) op_wrong_datatype++;
  mat2 *in = invec, *io = inoutvec;
  for (int i = 0; i < *len; i++) io[i] = mat_mul(in[i], io[i]);
}

static mat2 mat_input(int world_rank, long idx, uint64_t salt) {
  mat2 r;
  for (int k = 0; k < 4; k++) r.m[k] = (uint32_t)(ct_hash(seed, salt, (uint64_t)world_rank, (uint64_t)(idx * 4 + k)) % 10);
  return r;
}

/* Matrix-product reduce on comm whose rank i is world rank wmap[i]. */
static void matrix_reduce(MPI_Comm comm, const int *wmap, int root, long count, int inplace, MPI_Op op,
                          uint64_t salt, const char *what) {
  int r, n;
  MPI_Comm_rank(comm, &r);
  MPI_Comm_size(comm, &n);
  ct_context("%s: matrix product, count %ld, root %d of %d, %s", what, count, root, n,
             inplace ? "MPI_IN_PLACE" : "separate buffers");
  mat2 *send = malloc((size_t)count * sizeof(mat2) + 1), *recv = malloc((size_t)count * sizeof(mat2) + 1);
  mat2 *copy = malloc((size_t)count * sizeof(mat2) + 1);
  for (long i = 0; i < count; i++) send[i] = mat_input(wmap[r], i, salt);
  memcpy(copy, send, (size_t)count * sizeof(mat2));
  memset(recv, 0xA5, (size_t)count * sizeof(mat2));
  const void *sbuf = send;
  if (inplace && r == root) {
    memcpy(recv, send, (size_t)count * sizeof(mat2));
    sbuf = MPI_IN_PLACE;
  }
  long wrong_dt_before = op_wrong_datatype;
  MPI_Reduce(sbuf, recv, (int)count, mat_type, op, root, comm);
  ct_check(op_wrong_datatype == wrong_dt_before, "user op called %ld times with a datatype other than the user's",
           op_wrong_datatype - wrong_dt_before);
  if (r == root) {
    long bad = -1;
    for (long i = 0; i < count && bad < 0; i++) {
      mat2 p = mat_input(wmap[0], i, salt);
      for (int k = 1; k < n; k++) p = mat_mul(p, mat_input(wmap[k], i, salt));
      if (memcmp(&p, &recv[i], sizeof p) != 0) bad = i;
    }
    ct_check(bad < 0, "product wrong at matrix %ld (not M_0*M_1*...*M_{p-1} in rank order)", bad);
  } else {
    int untouched = 1;
    for (size_t b = 0; b < (size_t)count * sizeof(mat2); b++)
      if (((unsigned char *)recv)[b] != 0xA5) untouched = 0;
    ct_check(untouched, "non-root recvbuf modified");
  }
  if (!(inplace && r == root)) ct_check(memcmp(copy, send, (size_t)count * sizeof(mat2)) == 0, "sendbuf modified");
  free(send);
  free(recv);
  free(copy);
}

/* Sum of ints on comm (rank i = world rank wmap[i]) and a bcast from the same root. */
static void sum_and_bcast(MPI_Comm comm, const int *wmap, int root, long count, uint64_t salt, const char *what) {
  int r, n;
  MPI_Comm_rank(comm, &r);
  MPI_Comm_size(comm, &n);
  ct_context("%s: SUM of MPI_INT, count %ld, root %d of %d", what, count, root, n);
  int *send = malloc((size_t)count * sizeof(int) + 4), *recv = malloc((size_t)count * sizeof(int) + 4);
  for (long i = 0; i < count; i++) send[i] = (int)(ct_hash(seed, salt, (uint64_t)wmap[r], (uint64_t)i) % 1000) - 500;
  for (long i = 0; i < count; i++) recv[i] = SENTINEL_INT;
  MPI_Reduce(send, recv, (int)count, MPI_INT, MPI_SUM, root, comm);
  long bad = -1;
  for (long i = 0; i < count && bad < 0; i++) {
    int want = SENTINEL_INT;
    if (r == root) {
      want = 0;
      for (int k = 0; k < n; k++) want += (int)(ct_hash(seed, salt, (uint64_t)wmap[k], (uint64_t)i) % 1000) - 500;
    }
    if (recv[i] != want) bad = i;
  }
  ct_check(bad < 0, "%s wrong at %ld", r == root ? "sum" : "non-root recvbuf", bad);

  ct_context("%s: MPI_Bcast of MPI_INT, count %ld, root %d of %d", what, count, root, n);
  for (long i = 0; i < count; i++)
    recv[i] = r == root ? (int)ct_hash(seed, salt + 1, (uint64_t)i, 0) : SENTINEL_INT;
  MPI_Bcast(recv, (int)count, MPI_INT, root, comm);
  bad = -1;
  for (long i = 0; i < count && bad < 0; i++)
    if (recv[i] != (int)ct_hash(seed, salt + 1, (uint64_t)i, 0)) bad = i;
  ct_check(bad < 0, "bcast data wrong at %ld", bad);
  free(send);
  free(recv);
}

/* ------------------------------------------------------------------------------ */
/* (b) commutative user op on a struct                                              */

typedef struct { long long sum; int max; int count; } stats;
static MPI_Datatype stats_type;
static void stats_op(void *invec, void *inoutvec, int *len, MPI_Datatype *dt) {
  (void)dt;
  stats *in = invec, *io = inoutvec;
  for (int i = 0; i < *len; i++) {
    io[i].sum += in[i].sum;
    if (in[i].max > io[i].max) io[i].max = in[i].max;
    io[i].count += in[i].count;
  }
}
static stats stats_input(int rank, long idx) {
  uint64_t h = ct_hash(seed, 0xB0B, (uint64_t)rank, (uint64_t)idx);
  stats s = {(long long)(h % 100000) - 50000, (int)((h >> 20) % 1000), 1};
  return s;
}

/* ------------------------------------------------------------------------------ */
/* (c) derived datatypes with holes, reduced by user ops that follow the layout     */

typedef struct {
  const char *name;
  MPI_Datatype dt;
  int is_double; /* basic type: MPI_DOUBLE with MPI_MAX, else MPI_INT with MPI_SUM */
  int extent;    /* in basic elements */
  int npos;
  int pos[8];    /* positions of the data (in basic elements) within one element */
} dlayout;

static const dlayout *cur_dl; /* the layout of the MPI_Reduce in progress on this rank */
static long dl_wrong_datatype;

/* SUM (int layouts) or MAX (double layouts) over the data positions of *len elements. */
static void dl_op(void *invec, void *inoutvec, int *len, MPI_Datatype *dt) {
  const dlayout *l = cur_dl;
  if (*dt != l->dt) dl_wrong_datatype++;
  for (long e = 0; e < *len; e++)
    for (int p = 0; p < l->npos; p++) {
      size_t at = (size_t)e * (size_t)l->extent + (size_t)l->pos[p];
      if (l->is_double) {
        double *in = invec, *io = inoutvec;
        if (in[at] > io[at]) io[at] = in[at];
      } else {
        int *in = invec, *io = inoutvec;
        io[at] += in[at];
      }
    }
}
static MPI_Op dl_sum_op, dl_max_op; /* commutative / declared non-commutative */

static void derived_reduce(const dlayout *l, long count, int root, int inplace) {
  ct_context("derived %s, count %ld, root %d, %s", l->name, count, root, inplace ? "MPI_IN_PLACE" : "separate buffers");
  size_t nelem = (size_t)count * (size_t)l->extent;
  size_t esz = l->is_double ? sizeof(double) : sizeof(int);
  unsigned char *send = malloc(nelem * esz + 8), *recv = malloc(nelem * esz + 8), *copy = malloc(nelem * esz + 8);
  /* garbage everywhere (holes included), then the data at the type map's positions */
  for (size_t i = 0; i < nelem; i++) {
    uint64_t g = ct_hash(seed, 0xDEAD, (uint64_t)wrank, i);
    if (l->is_double) {
      double d = (double)(int64_t)(g % 2000001) * 1e6; /* garbage: would dominate a MAX */
      memcpy(send + i * esz, &d, esz);
    } else {
      int v = (int)(g | 0x40000000u);
      memcpy(send + i * esz, &v, esz);
    }
  }
  for (long e = 0; e < count; e++)
    for (int p = 0; p < l->npos; p++) {
      size_t at = (size_t)e * (size_t)l->extent + (size_t)l->pos[p];
      uint64_t h = ct_hash(seed, 0xC0DE, (uint64_t)wrank, at);
      if (l->is_double) {
        double d = (double)((int)(h % 20001) - 10000) / 4.0;
        memcpy(send + at * esz, &d, esz);
      } else {
        int v = (int)(h % 2001) - 1000;
        memcpy(send + at * esz, &v, esz);
      }
    }
  memcpy(copy, send, nelem * esz);
  memset(recv, 0xA5, nelem * esz);
  const void *sbuf = send;
  if (inplace && wrank == root) {
    memcpy(recv, send, nelem * esz);
    sbuf = MPI_IN_PLACE;
  }
  cur_dl = l;
  long wrong_before = dl_wrong_datatype;
  MPI_Reduce(sbuf, recv, (int)count, l->dt, l->is_double ? dl_max_op : dl_sum_op, root, MPI_COMM_WORLD);
  ct_check(dl_wrong_datatype == wrong_before, "user op called with a datatype other than %s", l->name);

  if (wrank == root) {
    /* expected: data positions reduced, holes as they were (sentinel, or the root's
     * own garbage when in place) */
    unsigned char *want = malloc(nelem * esz + 8);
    memcpy(want, inplace ? copy : recv, nelem * esz); /* holes */
    if (!inplace) memset(want, 0xA5, nelem * esz);
    for (long e = 0; e < count; e++)
      for (int p = 0; p < l->npos; p++) {
        size_t at = (size_t)e * (size_t)l->extent + (size_t)l->pos[p];
        if (l->is_double) {
          double best = 0;
          for (int k = 0; k < wsize; k++) {
            double d = (double)((int)(ct_hash(seed, 0xC0DE, (uint64_t)k, at) % 20001) - 10000) / 4.0;
            if (k == 0 || d > best) best = d;
          }
          memcpy(want + at * esz, &best, esz);
        } else {
          int sum = 0;
          for (int k = 0; k < wsize; k++) sum += (int)(ct_hash(seed, 0xC0DE, (uint64_t)k, at) % 2001) - 1000;
          memcpy(want + at * esz, &sum, esz);
        }
      }
    long bad = -1;
    for (size_t i = 0; i < nelem && bad < 0; i++)
      if (memcmp(want + i * esz, recv + i * esz, esz) != 0) bad = (long)i;
    int in_hole = 1;
    if (bad >= 0)
      for (int p = 0; p < l->npos; p++)
        if (bad % l->extent == l->pos[p]) in_hole = 0;
    ct_check(bad < 0, "root buffer wrong at basic element %ld (%s)", bad,
             in_hole ? "a hole: must stay untouched" : "data");
    free(want);
  } else {
    int untouched = 1;
    for (size_t b = 0; b < nelem * esz; b++)
      if (recv[b] != 0xA5) untouched = 0;
    ct_check(untouched, "non-root recvbuf modified");
  }
  if (!(inplace && wrank == root)) ct_check(memcmp(copy, send, nelem * esz) == 0, "sendbuf modified");
  free(send);
  free(recv);
  free(copy);
}

/* ------------------------------------------------------------------------------ */
/* (f) intercommunicator                                                              */

static void intercomm_tests(void) {
  /* group A: world ranks [0, half), group B: [half, wsize) */
  int half = wsize / 2;
  int in_a = wrank < half;
  MPI_Comm local, inter;
  MPI_Comm_split(MPI_COMM_WORLD, in_a, wrank, &local);
  int lrank, lsize;
  MPI_Comm_rank(local, &lrank);
  MPI_Comm_size(local, &lsize);
  MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, in_a ? half : 0, 77, &inter);
  int rsize;
  MPI_Comm_remote_size(inter, &rsize);
  int first_remote = in_a ? half : 0; /* world rank of remote rank 0 */
  const long count = 33;
  int send[33], recv[33];

  for (int dir = 0; dir < 2; dir++) {  /* dir 0: roots in A; dir 1: roots in B */
    int root_group_is_mine = (dir == 0) == in_a;
    int rootgroup_size = root_group_is_mine ? lsize : rsize;
    for (int root = 0; root < rootgroup_size; root++) {
      ct_context("intercomm reduce: root %d of group %s, sender group of %d ranks", root, dir == 0 ? "A" : "B",
                 root_group_is_mine ? rsize : lsize);
      for (long i = 0; i < count; i++) {
        send[i] = (int)(ct_hash(seed, 0x1C, (uint64_t)wrank, (uint64_t)(i + root)) % 100);
        recv[i] = SENTINEL_INT;
      }
      int rootarg = root_group_is_mine ? (lrank == root ? MPI_ROOT : MPI_PROC_NULL) : root;
      MPI_Reduce(send, recv, (int)count, MPI_INT, MPI_SUM, rootarg, inter);
      long bad = -1;
      for (long i = 0; i < count && bad < 0; i++) {
        int want = SENTINEL_INT;
        if (rootarg == MPI_ROOT) { /* the sum over the remote group */
          want = 0;
          for (int k = 0; k < rsize; k++)
            want += (int)(ct_hash(seed, 0x1C, (uint64_t)(first_remote + k), (uint64_t)(i + root)) % 100);
        }
        if (recv[i] != want) bad = i;
      }
      ct_check(bad < 0, "%s wrong at %ld", rootarg == MPI_ROOT ? "root result" : "untouched recvbuf", bad);

      ct_context("intercomm bcast: root %d of group %s", root, dir == 0 ? "A" : "B");
      for (long i = 0; i < count; i++)
        recv[i] = rootarg == MPI_ROOT ? (int)ct_hash(seed, 0x1D, (uint64_t)root, (uint64_t)i) : SENTINEL_INT;
      MPI_Bcast(recv, (int)count, MPI_INT, rootarg, inter);
      bad = -1;
      for (long i = 0; i < count && bad < 0; i++) {
        int want = rootarg == MPI_PROC_NULL ? SENTINEL_INT : (int)ct_hash(seed, 0x1D, (uint64_t)root, (uint64_t)i);
        if (recv[i] != want) bad = i;
      }
      ct_check(bad < 0, "%s wrong at %ld",
               rootarg == MPI_PROC_NULL ? "MPI_PROC_NULL buffer (must be untouched)" : "bcast data", bad);
    }
  }
  MPI_Comm_free(&inter);
  MPI_Comm_free(&local);
}

/* ------------------------------------------------------------------------------ */
/* (g) isolation from the application's point-to-point traffic                      */

#define MAGIC 0x43414E4FL /* "CANO" */

/* A burst of collectives at various roots, sizes and types on MPI_COMM_WORLD. */
static void collective_burst(int round) {
  for (int k = 0; k < 6; k++) {
    int root = (k + round) % wsize;
    long count = k % 2 ? 1000 : 3;
    int *a = malloc((size_t)count * sizeof(int)), *b = malloc((size_t)count * sizeof(int));
    for (long i = 0; i < count; i++) a[i] = wrank + (int)i;
    MPI_Reduce(a, b, (int)count, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
    if (wrank == root) {
      long bad = -1;
      for (long i = 0; i < count && bad < 0; i++)
        if (b[i] != wsize * (wsize - 1) / 2 + wsize * (int)i) bad = i;
      ct_check(bad < 0, "reduce wrong at %ld (burst step %d)", bad, k);
    }
    for (long i = 0; i < count; i++) a[i] = wrank == root ? (int)i * 3 + k : -1;
    MPI_Bcast(a, (int)count, MPI_INT, root, MPI_COMM_WORLD);
    long bad = -1;
    for (long i = 0; i < count && bad < 0; i++)
      if (a[i] != (int)i * 3 + k) bad = i;
    ct_check(bad < 0, "bcast wrong at %ld (burst step %d)", bad, k);
    free(a);
    free(b);
  }
}

static void isolation_tests(void) {
  int right = (wrank + 1) % wsize, left = (wrank + wsize - 1) % wsize;
  for (int round = 0; round < 4; round++) {
    int tag = round; /* small tags, the ones a careless library would also use */

    /* 1: a receive for anything is pending while the collectives run; only the
     * neighbour's message, sent after them, may complete it. */
    ct_context("isolation round %d: pre-posted MPI_ANY_SOURCE/MPI_ANY_TAG receive", round);
    long in[4] = {0, 0, 0, 0}, out[4] = {MAGIC, wrank, round, 1};
    MPI_Request req;
    MPI_Status st;
    MPI_Irecv(in, 4, MPI_LONG, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &req);
    collective_burst(round);
    /* (The neighbour may already have sent, so completion by now proves nothing.) */
    MPI_Send(out, 4, MPI_LONG, right, tag, MPI_COMM_WORLD);
    MPI_Wait(&req, &st);
    ct_check(in[0] == MAGIC && in[1] == left && in[2] == round && in[3] == 1 && st.MPI_SOURCE == left &&
                 st.MPI_TAG == tag,
             "ANY_SOURCE/ANY_TAG receive got {%#lx, %ld, %ld, %ld} from %d tag %d: not the application's message",
             (unsigned long)in[0], in[1], in[2], in[3], st.MPI_SOURCE, st.MPI_TAG);

    /* 2: application messages sent before the collectives wait, unexpected, in the
     * queue while they run, and must still be there afterwards. */
    ct_context("isolation round %d: application message queued during the collectives", round);
    long early[4] = {MAGIC + 1, wrank, round, 2}, early_in[4] = {0, 0, 0, 0};
    MPI_Request ereq;
    MPI_Isend(early, 4, MPI_LONG, right, tag, MPI_COMM_WORLD, &ereq);
    collective_burst(round + 1);
    MPI_Recv(early_in, 4, MPI_LONG, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &st);
    MPI_Wait(&ereq, MPI_STATUS_IGNORE);
    ct_check(early_in[0] == MAGIC + 1 && early_in[1] == left && early_in[2] == round && early_in[3] == 2 &&
                 st.MPI_SOURCE == left,
             "queued message came back as {%#lx, %ld, %ld, %ld} from %d", (unsigned long)early_in[0], early_in[1],
             early_in[2], early_in[3], st.MPI_SOURCE);
  }
  /* Nothing else may be left for the application to receive. */
  int flag = 1;
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Status st;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
  ct_context("isolation: stray messages");
  ct_check(!flag, "a stray message from %d with tag %d is waiting on MPI_COMM_WORLD", flag ? st.MPI_SOURCE : -1,
           flag ? st.MPI_TAG : -1);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  seed = ct_seed_from(argc, argv, 4242);
  ct_init("reduce_special", seed);
  wrank = ct.rank;
  wsize = ct.size;
  int *world_map = malloc(sizeof(int) * (size_t)wsize);
  for (int i = 0; i < wsize; i++) world_map[i] = i;

  /* (a) non-commutative user op */
  MPI_Type_contiguous(4, MPI_INT, &mat_type);
  MPI_Type_commit(&mat_type);
  MPI_Op mat_mpi_op;
  MPI_Op_create(mat_op, 0, &mat_mpi_op);
  {
    int commute = -1;
    MPI_Op_commutative(mat_mpi_op, &commute);
    ct_context("MPI_Op_commutative");
    ct_check(commute == 0, "non-commutative op reported commutative");
  }
  for (int root = 0; root < wsize; root++)
    for (int ci = 0; ci < 2; ci++)
      for (int inplace = 0; inplace < 2; inplace++)
        matrix_reduce(MPI_COMM_WORLD, world_map, root, ci ? 300 : 1, inplace, mat_mpi_op, 0xA0 + (uint64_t)ci,
                      "MPI_COMM_WORLD");

  /* (b) commutative user op on a struct type */
  {
    int bl[3] = {1, 1, 1};
    MPI_Aint dis[3] = {offsetof(stats, sum), offsetof(stats, max), offsetof(stats, count)};
    MPI_Datatype ts[3] = {MPI_LONG_LONG, MPI_INT, MPI_INT};
    MPI_Type_create_struct(3, bl, dis, ts, &stats_type);
    MPI_Type_commit(&stats_type);
    MPI_Op stats_mpi_op;
    MPI_Op_create(stats_op, 1, &stats_mpi_op);
    const long count = 257;
    stats *send = malloc(sizeof(stats) * count), *recv = malloc(sizeof(stats) * count);
    for (int root = 0; root < wsize; root++)
      for (int inplace = 0; inplace < 2; inplace++) {
        if (inplace && root != 0 && ct_native_inplace_unsafe(sizeof(stats) * count)) continue; /* mpich#6540 */
        ct_context("commutative struct op, count %ld, root %d, %s", count, root, inplace ? "MPI_IN_PLACE" : "separate");
        for (long i = 0; i < count; i++) send[i] = stats_input(wrank, i);
        memset(recv, 0xA5, sizeof(stats) * count);
        if (inplace && wrank == root) memcpy(recv, send, sizeof(stats) * count);
        MPI_Reduce(inplace && wrank == root ? MPI_IN_PLACE : send, recv, (int)count, stats_type, stats_mpi_op, root,
                   MPI_COMM_WORLD);
        if (wrank == root) {
          long bad = -1;
          for (long i = 0; i < count && bad < 0; i++) {
            stats w = stats_input(0, i);
            for (int k = 1; k < wsize; k++) {
              stats s = stats_input(k, i);
              w.sum += s.sum;
              w.max = s.max > w.max ? s.max : w.max;
              w.count += s.count;
            }
            if (recv[i].sum != w.sum || recv[i].max != w.max || recv[i].count != w.count) bad = i;
          }
          ct_check(bad < 0, "struct result wrong at %ld", bad);
        }
      }
    free(send);
    free(recv);
    MPI_Op_free(&stats_mpi_op);
  }

  /* (c) derived datatypes with user ops */
  {
    MPI_Op_create(dl_op, 1, &dl_sum_op);
    MPI_Op_create(dl_op, 0, &dl_max_op);
    dlayout ls[4];
    int nl = 0;
    MPI_Datatype t;
    MPI_Type_vector(5, 1, 2, MPI_INT, &t); /* ints at 0,2,4,6,8; extent 9 ints */
    MPI_Type_commit(&t);
    ls[nl++] = (dlayout){"vector(5, 1, stride 2, MPI_INT)", t, 0, 9, 5, {0, 2, 4, 6, 8}};
    MPI_Type_vector(2, 1, 2, MPI_INT, &t); /* ints at 0,2; extent 3 ints */
    MPI_Type_commit(&t);
    ls[nl++] = (dlayout){"vector(2, 1, stride 2, MPI_INT)", t, 0, 3, 2, {0, 2}};
    MPI_Type_create_resized(MPI_INT, 0, 3 * sizeof(int), &t);
    MPI_Type_commit(&t);
    ls[nl++] = (dlayout){"resized(MPI_INT, extent 12)", t, 0, 3, 1, {0}};
    {
      int bl[2] = {2, 1}, dis[2] = {0, 3};
      MPI_Type_indexed(2, bl, dis, MPI_DOUBLE, &t); /* doubles at 0,1,3; extent 4 */
      MPI_Type_commit(&t);
      ls[nl++] = (dlayout){"indexed({2,1} at {0,3}, MPI_DOUBLE)", t, 1, 4, 3, {0, 1, 3}};
    }
    for (int i = 0; i < nl; i++) {
      MPI_Aint lb, ext;
      MPI_Type_get_extent(ls[i].dt, &lb, &ext);
      ct_context("extent of %s", ls[i].name);
      ct_check(ext == (MPI_Aint)(ls[i].extent * (ls[i].is_double ? sizeof(double) : sizeof(int))), "extent %ld",
               (long)ext);
    }
    long counts[3] = {1, 7, 300};
    for (int root = 0; root < wsize; root++)
      for (int i = 0; i < nl; i++)
        for (int ci = 0; ci < 3; ci++)
          for (int inplace = 0; inplace < 2; inplace++) {
            size_t bytes = (size_t)counts[ci] * (size_t)ls[i].extent * (ls[i].is_double ? 8 : 4);
            /* pmodels/mpich#6540: native MPICH 4.0.2 crashes on commutative in-place
             * reductions at a non-zero root above 2 KB */
            if (inplace && root != 0 && !ls[i].is_double && ct_native_inplace_unsafe(bytes)) continue;
            derived_reduce(&ls[i], counts[ci], root, inplace);
          }
    for (int i = 0; i < nl; i++) MPI_Type_free(&ls[i].dt);
    MPI_Op_free(&dl_sum_op);
    MPI_Op_free(&dl_max_op);
  }

  /* (d) sub-communicators */
  {
    MPI_Comm rev;
    MPI_Comm_split(MPI_COMM_WORLD, 0, wsize - wrank, &rev);
    int rr;
    MPI_Comm_rank(rev, &rr);
    ct_context("reversed split");
    ct_check(rr == wsize - 1 - wrank, "rank %d in the reversed communicator", rr);
    int *rev_map = malloc(sizeof(int) * (size_t)wsize);
    for (int i = 0; i < wsize; i++) rev_map[i] = wsize - 1 - i;
    for (int root = 0; root < wsize; root++) {
      matrix_reduce(rev, rev_map, root, 5, 0, mat_mpi_op, 0xD0, "reversed split");
      matrix_reduce(rev, rev_map, root, 5, 1, mat_mpi_op, 0xD1, "reversed split");
      sum_and_bcast(rev, rev_map, root, 100, 0xD2, "reversed split");
    }
    MPI_Comm_free(&rev);
    free(rev_map);

    MPI_Comm halfc;
    int color = wrank < wsize / 2;
    MPI_Comm_split(MPI_COMM_WORLD, color, wrank, &halfc);
    int hr, hs;
    MPI_Comm_rank(halfc, &hr);
    MPI_Comm_size(halfc, &hs);
    int *half_map = malloc(sizeof(int) * (size_t)hs);
    int base = color ? 0 : wsize / 2;
    for (int i = 0; i < hs; i++) half_map[i] = base + i;
    /* the two halves may have different sizes: loop over the larger, skip the rest */
    int maxhs = wsize - wsize / 2;
    for (int root = 0; root < maxhs; root++) {
      if (root >= hs) continue; /* (the smaller half just has fewer roots) */
      matrix_reduce(halfc, half_map, root, 4, root % 2, mat_mpi_op, 0xE0, "half split");
      sum_and_bcast(halfc, half_map, root, 1000, 0xE1, "half split");
    }
    MPI_Comm_free(&halfc);
    free(half_map);
  }

  /* (e) MPI_COMM_SELF */
  {
    int self_map[1] = {wrank};
    matrix_reduce(MPI_COMM_SELF, self_map, 0, 3, 0, mat_mpi_op, 0xF0, "MPI_COMM_SELF");
    matrix_reduce(MPI_COMM_SELF, self_map, 0, 3, 1, mat_mpi_op, 0xF1, "MPI_COMM_SELF");
    sum_and_bcast(MPI_COMM_SELF, self_map, 0, 50, 0xF2, "MPI_COMM_SELF");
  }

  /* (f) intercommunicator */
  if (wsize >= 2) intercomm_tests();

  /* (g) isolation */
  isolation_tests();

  /* (h) edge cases */
  {
    for (int root = 0; root < wsize; root++) {
      ct_context("NULL recvbuf on non-roots, root %d", root);
      int v[3] = {wrank, 1, -wrank}, out[3] = {0, 0, 0};
      MPI_Reduce(v, wrank == root ? out : NULL, 3, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
      if (wrank == root)
        ct_check(out[0] == wsize * (wsize - 1) / 2 && out[1] == wsize && out[2] == -out[0], "got {%d, %d, %d}", out[0],
                 out[1], out[2]);
      ct_context("count 0 with NULL buffers, root %d", root);
      int rc = MPI_Reduce(NULL, NULL, 0, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
      ct_check(rc == MPI_SUCCESS, "MPI_Reduce(count 0, NULL) returned %d", rc);
      rc = MPI_Bcast(NULL, 0, MPI_DOUBLE, root, MPI_COMM_WORLD);
      ct_check(rc == MPI_SUCCESS, "MPI_Bcast(count 0, NULL) returned %d", rc);
      rc = MPI_Reduce(NULL, NULL, 0, mat_type, mat_mpi_op, root, MPI_COMM_WORLD);
      ct_check(rc == MPI_SUCCESS, "MPI_Reduce(count 0, NULL, user op) returned %d", rc);
    }
  }

  ct_context("user op datatype");
  ct_check(op_wrong_datatype == 0, "the user op was called %ld of %ld times with a datatype other than the user's",
           op_wrong_datatype, op_calls);

  MPI_Op_free(&mat_mpi_op);
  MPI_Type_free(&mat_type);
  MPI_Type_free(&stats_type);
  free(world_map);
  int status = ct_finish();
  MPI_Finalize();
  return status;
}
