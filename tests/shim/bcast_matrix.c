/* bcast_matrix: MPI_Bcast over datatype x count x root, plus mismatched-but-legal
 * type signatures.
 *
 * Datatypes: predefined ones (including the padded MPI_DOUBLE_INT) and derived ones
 * built here (contiguous, vector with stride, indexed, struct, resized, subarray).
 * Counts: 0, 1, 7, 1000 and about 100003 bytes' worth. Every root.
 * Mismatched signatures: the root sends count 1 of MPI_Type_contiguous(n, MPI_INT)
 * while the others receive n MPI_INT (and the reverse); vector and resized types on
 * one side against plain MPI_INT on the other.
 *
 * The root's buffer is filled with hash bytes (seed, case, byte); every rank knows
 * them, and computes the buffer it must end with from its own description of each
 * type's layout (blocks of bytes per element and the extent): bytes in the type map
 * are the root's data in order, every other byte (holes, padding, the tail past the
 * count) must keep the sentinel. The root's buffer must be unchanged.
 *
 * Options: --seed=N (or CANOPYTEST_SEED), --big-bytes=N (default 100003).
 */
#include "canopy_check.h"

#include <stddef.h>

#define MAXBLOCKS 8
typedef struct {
  const char *name;
  MPI_Datatype dt;
  MPI_Aint extent;
  int nblocks;
  MPI_Aint off[MAXBLOCKS], len[MAXBLOCKS];
} layout_t;

static layout_t layouts[32];
static int nlayouts;

static layout_t *add_layout(const char *name, MPI_Datatype dt, MPI_Aint extent, int nblocks, const MPI_Aint *off,
                            const MPI_Aint *len) {
  layout_t *l = &layouts[nlayouts++];
  l->name = name;
  l->dt = dt;
  l->extent = extent;
  l->nblocks = nblocks;
  for (int i = 0; i < nblocks; i++) {
    l->off[i] = off[i];
    l->len[i] = len[i];
  }
  return l;
}
static layout_t *add_simple(const char *name, MPI_Datatype dt, MPI_Aint size) {
  MPI_Aint off = 0;
  return add_layout(name, dt, size, 1, &off, &size);
}
static MPI_Aint layout_size(const layout_t *l) {
  MPI_Aint s = 0;
  for (int i = 0; i < l->nblocks; i++) s += l->len[i];
  return s;
}
/* Bytes from the first to one past the last touched byte of count elements. */
static MPI_Aint layout_span(const layout_t *l, long count) {
  if (count == 0) return 0;
  MPI_Aint end = 0;
  for (int i = 0; i < l->nblocks; i++)
    if (l->off[i] + l->len[i] > end) end = l->off[i] + l->len[i];
  return (MPI_Aint)(count - 1) * l->extent + (end > l->extent ? end : l->extent);
}
/* Our own pack/unpack from the block description (not MPI_Pack: an independent oracle). */
static void pack(const layout_t *l, long count, const unsigned char *buf, unsigned char *out) {
  for (long e = 0; e < count; e++)
    for (int b = 0; b < l->nblocks; b++) {
      memcpy(out, buf + e * l->extent + l->off[b], (size_t)l->len[b]);
      out += l->len[b];
    }
}
static void unpack(const layout_t *l, long count, const unsigned char *in, unsigned char *buf) {
  for (long e = 0; e < count; e++)
    for (int b = 0; b < l->nblocks; b++) {
      memcpy(buf + e * l->extent + l->off[b], in, (size_t)l->len[b]);
      in += l->len[b];
    }
}

#define SENTINEL 0x5A
#define GUARD 64

static unsigned long long seed;
static int rank, size;
static unsigned char *buf, *expect, *packed, *rootdata;

static void fill_root_bytes(unsigned char *p, size_t n, uint64_t case_id) {
  for (size_t i = 0; i < n; i += 8) {
    uint64_t h = ct_hash(seed, case_id, i, 0x6263);
    memcpy(p + i, &h, n - i < 8 ? n - i : 8);
  }
}

/* Broadcast count_root of root_l from the root, received as count_other of other_l.
 * The two must have the same type signature (checked by the caller's construction). */
static void run_case(const layout_t *root_l, long count_root, const layout_t *other_l, long count_other, int root,
                     uint64_t case_id, int null_if_empty) {
  const layout_t *mine = rank == root ? root_l : other_l;
  long mycount = rank == root ? count_root : count_other;
  MPI_Aint span = layout_span(mine, mycount);
  size_t total = (size_t)span + GUARD;
  if (root_l == other_l)
    ct_context("type %s count %ld root %d", root_l->name, count_root, root);
  else
    ct_context("root sends %ld x %s, others receive %ld x %s; root %d", count_root, root_l->name, count_other,
               other_l->name, root);

  /* The root's data: hash bytes over its whole span (holes included). */
  MPI_Aint root_span = layout_span(root_l, count_root);
  fill_root_bytes(rootdata, (size_t)root_span, case_id);

  if (rank == root) {
    memcpy(buf, rootdata, (size_t)root_span);
    memset(buf + root_span, SENTINEL, GUARD);
    memcpy(expect, buf, total);
  } else {
    memset(buf, SENTINEL, total);
    memset(expect, SENTINEL, total);
    pack(root_l, count_root, rootdata, packed);
    unpack(other_l, count_other, packed, expect);
  }
  void *p = (null_if_empty && mycount == 0) ? NULL : buf;
  int rc = MPI_Bcast(p, (int)mycount, mine->dt, root, MPI_COMM_WORLD);
  ct_check(rc == MPI_SUCCESS, "MPI_Bcast returned %d", rc);

  if (memcmp(buf, expect, total) == 0) {
    ct_check(1, "");
    return;
  }
  size_t first = 0, nbad = 0;
  for (size_t i = total; i-- > 0;)
    if (buf[i] != expect[i]) {
      first = i;
      nbad++;
    }
  const char *where = "data";
  if (first >= (size_t)span) {
    where = "past the end of the buffer";
  } else if (expect[first] == SENTINEL && rank != root) {
    /* Is it a hole? Check whether the byte belongs to a block. */
    MPI_Aint within = (MPI_Aint)first % mine->extent;
    where = "a hole (not in the type map)";
    for (int b = 0; b < mine->nblocks; b++)
      if (within >= mine->off[b] && within < mine->off[b] + mine->len[b]) where = "data";
  }
  ct_check(0, "%s buffer wrong in %zu of %zu bytes; first at byte %zu (%s): got 0x%02x, expected 0x%02x",
           rank == root ? "root" : "receiver", nbad, (size_t)span, first, where, buf[first], expect[first]);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  seed = ct_seed_from(argc, argv, 7771);
  ct_init("bcast_matrix", seed);
  rank = ct.rank;
  size = ct.size;
  long big_bytes = 100003;
  for (int i = 1; i < argc; i++)
    if (strncmp(argv[i], "--big-bytes=", 12) == 0) big_bytes = strtol(argv[i] + 12, NULL, 10);

  /* ---- predefined types ---- */
  add_simple("MPI_CHAR", MPI_CHAR, 1);
  add_simple("MPI_BYTE", MPI_BYTE, 1);
  add_simple("MPI_SHORT", MPI_SHORT, sizeof(short));
  add_simple("MPI_INT", MPI_INT, sizeof(int));
  layout_t *l_int = &layouts[nlayouts - 1];
  add_simple("MPI_LONG_LONG", MPI_LONG_LONG, sizeof(long long));
  add_simple("MPI_FLOAT", MPI_FLOAT, sizeof(float));
  add_simple("MPI_DOUBLE", MPI_DOUBLE, sizeof(double));
  add_simple("MPI_LONG_DOUBLE", MPI_LONG_DOUBLE, sizeof(long double));
  add_simple("MPI_C_DOUBLE_COMPLEX", MPI_C_DOUBLE_COMPLEX, 2 * sizeof(double));
  add_simple("MPI_2INT", MPI_2INT, 2 * sizeof(int));
  {
    /* struct { double; int; } with 4 bytes of padding that must stay untouched */
    struct di { double d; int i; };
    MPI_Aint off[2] = {offsetof(struct di, d), offsetof(struct di, i)}, len[2] = {sizeof(double), sizeof(int)};
    add_layout("MPI_DOUBLE_INT", MPI_DOUBLE_INT, sizeof(struct di), 2, off, len);
  }

  /* ---- derived types ---- */
  MPI_Datatype t_contig3, t_vec, t_indexed, t_struct, t_resized, t_subarray;
  MPI_Type_contiguous(3, MPI_INT, &t_contig3);
  MPI_Type_commit(&t_contig3);
  {
    MPI_Aint off = 0, len = 3 * sizeof(int);
    add_layout("contiguous(3, MPI_INT)", t_contig3, 3 * sizeof(int), 1, &off, &len);
  }
  /* 3 blocks of 2 ints, stride 5 ints: holes of 3 ints between blocks */
  MPI_Type_vector(3, 2, 5, MPI_INT, &t_vec);
  MPI_Type_commit(&t_vec);
  layout_t *l_vec;
  {
    MPI_Aint off[3] = {0, 20, 40}, len[3] = {8, 8, 8};
    l_vec = add_layout("vector(3, 2, stride 5, MPI_INT)", t_vec, 48, 3, off, len);
  }
  {
    int bl[3] = {1, 3, 2}, dis[3] = {0, 2, 7};
    MPI_Type_indexed(3, bl, dis, MPI_DOUBLE, &t_indexed);
    MPI_Type_commit(&t_indexed);
    MPI_Aint off[3] = {0, 16, 56}, len[3] = {8, 24, 16};
    add_layout("indexed({1,3,2} at {0,2,7}, MPI_DOUBLE)", t_indexed, 72, 3, off, len);
  }
  {
    struct s { char c; double d; int i[2]; };
    int bl[3] = {1, 1, 2};
    MPI_Aint dis[3] = {offsetof(struct s, c), offsetof(struct s, d), offsetof(struct s, i)};
    MPI_Datatype ts[3] = {MPI_CHAR, MPI_DOUBLE, MPI_INT}, tmp;
    MPI_Type_create_struct(3, bl, dis, ts, &tmp);
    MPI_Type_create_resized(tmp, 0, sizeof(struct s), &t_struct);
    MPI_Type_free(&tmp);
    MPI_Type_commit(&t_struct);
    MPI_Aint len[3] = {1, sizeof(double), 2 * sizeof(int)};
    add_layout("struct{char; double; int[2]}", t_struct, sizeof(struct s), 3, dis, len);
  }
  layout_t *l_resized;
  MPI_Type_create_resized(MPI_INT, 0, 12, &t_resized);
  MPI_Type_commit(&t_resized);
  {
    MPI_Aint off = 0, len = sizeof(int);
    l_resized = add_layout("resized(MPI_INT, extent 12)", t_resized, 12, 1, &off, &len);
  }
  {
    /* rows 1..2, columns 2..4 of a 4x6 array of short */
    int sizes[2] = {4, 6}, sub[2] = {2, 3}, start[2] = {1, 2};
    MPI_Type_create_subarray(2, sizes, sub, start, MPI_ORDER_C, MPI_SHORT, &t_subarray);
    MPI_Type_commit(&t_subarray);
    MPI_Aint off[2] = {(1 * 6 + 2) * 2, (2 * 6 + 2) * 2}, len[2] = {6, 6};
    add_layout("subarray(4x6 short, [1:3, 2:5])", t_subarray, 48, 2, off, len);
  }

  /* Our layouts must agree with MPI's sizes and extents. */
  for (int i = 0; i < nlayouts; i++) {
    int tsize;
    MPI_Aint lb, extent;
    MPI_Type_size(layouts[i].dt, &tsize);
    MPI_Type_get_extent(layouts[i].dt, &lb, &extent);
    ct_context("layout of %s", layouts[i].name);
    ct_check(tsize == layout_size(&layouts[i]) && lb == 0 && extent == layouts[i].extent,
             "MPI says size %d lb %ld extent %ld; layout says size %ld extent %ld", tsize, (long)lb, (long)extent,
             (long)layout_size(&layouts[i]), (long)layouts[i].extent);
  }

  /* Contiguous types of n ints for the mismatched-signature cases. */
  long ns[3] = {7, 1000, big_bytes / 4};
  MPI_Datatype t_contig_n[3];
  layout_t *l_contig_n[3];
  char contig_names[3][48];
  for (int k = 0; k < 3; k++) {
    MPI_Type_contiguous((int)ns[k], MPI_INT, &t_contig_n[k]);
    MPI_Type_commit(&t_contig_n[k]);
    snprintf(contig_names[k], sizeof contig_names[k], "contiguous(%ld, MPI_INT)", ns[k]);
    MPI_Aint off = 0, len = ns[k] * 4;
    l_contig_n[k] = add_layout(contig_names[k], t_contig_n[k], ns[k] * 4, 1, &off, &len);
  }

  size_t cap = (size_t)big_bytes * 4 + 65536 + GUARD; /* resized(int, 12) holds 3x the data bytes */
  buf = malloc(cap);
  expect = malloc(cap);
  packed = malloc(cap);
  rootdata = malloc(cap);

  long cases = 0;
  int nbasic = nlayouts - 3; /* the contiguous(n) layouts are only for mismatches */
  /* Root outermost: see reduce_matrix.c (a changing root is slow when oversubscribed). */
  for (int root = 0; root < size; root++) {
    for (int li = 0; li < nbasic; li++) {
      const layout_t *l = &layouts[li];
      long counts[5] = {0, 1, 7, 1000, big_bytes / l->extent};
      for (int ci = 0; ci < 5; ci++) {
        uint64_t case_id = (uint64_t)(li * 8 + ci) * 64 + (uint64_t)root;
        run_case(l, counts[ci], l, counts[ci], root, case_id, 0);
        cases++;
      }
    }
    /* count 0 with a NULL buffer on every rank */
    run_case(l_int, 0, l_int, 0, root, 1, 1);
    cases++;

    /* mismatched but legal signatures */
    for (int k = 0; k < 3; k++) {
      uint64_t id = 100000 + (uint64_t)k * 64 + (uint64_t)root;
      run_case(l_contig_n[k], 1, l_int, ns[k], root, id, 0); /* 1 x contiguous(n) -> n x int */
      run_case(l_int, ns[k], l_contig_n[k], 1, root, id + 1000, 0); /* n x int -> 1 x contiguous(n) */
      long nv = ns[k] / 6 + 1; /* vector elements hold 6 ints each */
      run_case(l_vec, nv, l_int, nv * 6, root, id + 2000, 0); /* vector -> packed ints */
      run_case(l_int, nv * 6, l_vec, nv, root, id + 3000, 0); /* packed ints -> vector: holes untouched */
      run_case(l_resized, ns[k], l_int, ns[k], root, id + 4000, 0); /* strided ints -> packed */
      run_case(l_int, ns[k], l_resized, ns[k], root, id + 5000, 0); /* packed -> strided ints */
      cases += 6;
    }
  }
  if (rank == 0)
    printf("bcast_matrix: %d ranks, seed %llu, %ld broadcasts of %d datatypes (largest %ld bytes)\n", size, seed,
           cases, nbasic, big_bytes);

  MPI_Type_free(&t_contig3);
  MPI_Type_free(&t_vec);
  MPI_Type_free(&t_indexed);
  MPI_Type_free(&t_struct);
  MPI_Type_free(&t_resized);
  MPI_Type_free(&t_subarray);
  for (int k = 0; k < 3; k++) MPI_Type_free(&t_contig_n[k]);
  free(buf);
  free(expect);
  free(packed);
  free(rootdata);
  int status = ct_finish();
  MPI_Finalize();
  return status;
}
