/* reduce_matrix: MPI_Reduce over op x datatype x count x root x MPI_IN_PLACE.
 *
 * Predefined ops on every predefined type they are valid for (integers, floating
 * point, C_BOOL for logical ops, BYTE for bitwise ops, C_DOUBLE_COMPLEX for SUM and
 * PROD, MAXLOC/MINLOC on the pair types); MPI_IN_PLACE at the root and not; counts 0,
 * 1, 7, 1000, 4099 (override with --counts=a,b,c); roots: with --full every (type, op,
 * count) runs at every root; by default each runs at one root, rotating so every root
 * sees every count and type (the full product costs ranks x more collectives, which is
 * slow with more ranks than cores).
 *
 * Inputs are a deterministic function of (seed, op, type, rank, index) chosen so the
 * result is exact whatever order the ranks are combined in: small integers for
 * SUM/PROD (also in floating point), any value for MAX/MIN and bit operations, and
 * MAXLOC/MINLOC ties resolved by the lowest index. Every root computes the expected
 * result itself from the formula. A subset of cases (counts 7 and 1000, every third
 * case) is also compared with PMPI_Reduce, which bypasses any interposer; MPICH 4.0.2
 * crashes on in-place reductions at a non-zero root of a few KB (pmodels/mpich#6540),
 * so those are never sent to the native reduce.
 *
 * Every rank also checks that its send buffer is unchanged, that a non-root's receive
 * buffer is untouched, and that nothing is written past the root's count elements.
 *
 * Two native MPICH 4.0.2 bugs are avoided by default:
 *  - pmodels/mpich#6083: MPI_MAX/MPI_MIN compare unsigned integer types as signed, so
 *    MAX/MIN inputs of unsigned types keep their top bit clear
 *    (--unsigned-minmax-high-bit uses all bits);
 *  - pmodels/mpich#6540: MPI_IN_PLACE at a non-zero root segfaults above 2 KB, so those
 *    cases (>= 256 bytes) run only when canopy_intercepted_calls is present
 *    (--big-inplace=1 / --big-inplace=0 or CANOPYTEST_BIG_INPLACE=1/0 force them on / off).
 *
 * Options: --seed=N (or CANOPYTEST_SEED), --counts=LIST, --no-pmpi, and the two above.
 */
#include "canopy_check.h"

#include <complex.h>
#include <stdbool.h>

enum { OP_SUM, OP_PROD, OP_MAX, OP_MIN, OP_LAND, OP_LOR, OP_LXOR, OP_BAND, OP_BOR, OP_BXOR, OP_MAXLOC, OP_MINLOC, NOPS };
static const char *op_names[NOPS] = {"SUM", "PROD", "MAX", "MIN", "LAND", "LOR",
                                     "LXOR", "BAND", "BOR", "BXOR", "MAXLOC", "MINLOC"};
static MPI_Op op_handle(int op) {
  switch (op) {
    case OP_SUM: return MPI_SUM;
    case OP_PROD: return MPI_PROD;
    case OP_MAX: return MPI_MAX;
    case OP_MIN: return MPI_MIN;
    case OP_LAND: return MPI_LAND;
    case OP_LOR: return MPI_LOR;
    case OP_LXOR: return MPI_LXOR;
    case OP_BAND: return MPI_BAND;
    case OP_BOR: return MPI_BOR;
    case OP_BXOR: return MPI_BXOR;
    case OP_MAXLOC: return MPI_MAXLOC;
    default: return MPI_MINLOC;
  }
}

/* Kinds of element: K_SINT/K_UINT are integers of `size` bytes (BYTE is K_UINT),
 * K_BOOL is C _Bool, K_FLT floating point, K_CPLX double complex, K_PAIR value+index. */
typedef enum { K_SINT, K_UINT, K_BOOL, K_FLT, K_CPLX, K_PAIR } kind_t;

typedef struct {
  const char *name;
  MPI_Datatype dt;
  kind_t kind;
  size_t size; /* bytes per element in memory (the extent) */
  int pair_value; /* K_PAIR: 0 int, 1 double, 2 float */
} tdesc;

typedef struct { int v, i; } pair_2int;
typedef struct { double v; int i; } pair_double_int;
typedef struct { float v; int i; } pair_float_int;

#define T_INT(name, dt, ctype, kind) {name, dt, kind, sizeof(ctype), 0}
static tdesc types[] = {
    T_INT("MPI_INT", MPI_INT, int, K_SINT),
    T_INT("MPI_LONG", MPI_LONG, long, K_SINT),
    T_INT("MPI_SHORT", MPI_SHORT, short, K_SINT),
    T_INT("MPI_UNSIGNED", MPI_UNSIGNED, unsigned, K_UINT),
    T_INT("MPI_LONG_LONG", MPI_LONG_LONG, long long, K_SINT),
    T_INT("MPI_SIGNED_CHAR", MPI_SIGNED_CHAR, signed char, K_SINT),
    T_INT("MPI_UNSIGNED_CHAR", MPI_UNSIGNED_CHAR, unsigned char, K_UINT),
    T_INT("MPI_INT8_T", MPI_INT8_T, int8_t, K_SINT),
    T_INT("MPI_UINT8_T", MPI_UINT8_T, uint8_t, K_UINT),
    T_INT("MPI_INT16_T", MPI_INT16_T, int16_t, K_SINT),
    T_INT("MPI_UINT16_T", MPI_UINT16_T, uint16_t, K_UINT),
    T_INT("MPI_INT32_T", MPI_INT32_T, int32_t, K_SINT),
    T_INT("MPI_UINT32_T", MPI_UINT32_T, uint32_t, K_UINT),
    T_INT("MPI_INT64_T", MPI_INT64_T, int64_t, K_SINT),
    T_INT("MPI_UINT64_T", MPI_UINT64_T, uint64_t, K_UINT),
    T_INT("MPI_BYTE", MPI_BYTE, unsigned char, K_UINT),
    T_INT("MPI_C_BOOL", MPI_C_BOOL, bool, K_BOOL),
    {"MPI_FLOAT", MPI_FLOAT, K_FLT, sizeof(float), 0},
    {"MPI_DOUBLE", MPI_DOUBLE, K_FLT, sizeof(double), 0},
    {"MPI_LONG_DOUBLE", MPI_LONG_DOUBLE, K_FLT, sizeof(long double), 0},
    {"MPI_C_DOUBLE_COMPLEX", MPI_C_DOUBLE_COMPLEX, K_CPLX, sizeof(double _Complex), 0},
    {"MPI_2INT", MPI_2INT, K_PAIR, sizeof(pair_2int), 0},
    {"MPI_DOUBLE_INT", MPI_DOUBLE_INT, K_PAIR, sizeof(pair_double_int), 1},
    {"MPI_FLOAT_INT", MPI_FLOAT_INT, K_PAIR, sizeof(pair_float_int), 2},
};
#define NTYPES ((int)(sizeof types / sizeof types[0]))

static int is_byte(const tdesc *t) { return t->dt == MPI_BYTE; }

/* Which (op, type) pairs MPI defines. */
static int valid(int op, const tdesc *t) {
  switch (t->kind) {
    case K_SINT:
    case K_UINT:
      if (is_byte(t)) return op == OP_BAND || op == OP_BOR || op == OP_BXOR;
      return op <= OP_BXOR;
    case K_BOOL: return op == OP_LAND || op == OP_LOR || op == OP_LXOR;
    case K_FLT: return op == OP_SUM || op == OP_PROD || op == OP_MAX || op == OP_MIN;
    case K_CPLX: return op == OP_SUM || op == OP_PROD;
    case K_PAIR: return op == OP_MAXLOC || op == OP_MINLOC;
  }
  return 0;
}

/* ---- integer elements: held as 64-bit values, stored truncated to the type ---- */
static void store_int(const tdesc *t, void *p, uint64_t v) {
  switch (t->size) {
    case 1: { uint8_t x = (uint8_t)v; memcpy(p, &x, 1); break; }
    case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
    case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
    default: memcpy(p, &v, 8); break;
  }
}
/* Sign- or zero-extended value of an element, as int64 bits. */
static uint64_t load_int(const tdesc *t, const void *p) {
  switch (t->size) {
    case 1: { uint8_t x; memcpy(&x, p, 1); return t->kind == K_SINT ? (uint64_t)(int64_t)(int8_t)x : x; }
    case 2: { uint16_t x; memcpy(&x, p, 2); return t->kind == K_SINT ? (uint64_t)(int64_t)(int16_t)x : x; }
    case 4: { uint32_t x; memcpy(&x, p, 4); return t->kind == K_SINT ? (uint64_t)(int64_t)(int32_t)x : x; }
    default: { uint64_t x; memcpy(&x, p, 8); return x; }
  }
}

static unsigned long long seed;
static int world_rank, world_size;
static int unsigned_high_bit; /* --unsigned-minmax-high-bit: MAX/MIN inputs use all bits of unsigned types */

/* Only the first few ranks contribute non-neutral SUM/PROD values, so results fit
 * in the narrowest type whatever the number of ranks (all of them for <= 5 ranks). */
#define ACTIVE_RANKS 5

/* The integer input of `rank` at `idx` (for SINT/UINT/BOOL), as 64-bit pattern. */
static uint64_t int_input(int op, int ti, const tdesc *t, int rank, long idx) {
  uint64_t h = ct_hash(seed, (uint64_t)(op * 64 + ti), (uint64_t)rank, (uint64_t)idx);
  uint64_t h2 = ct_hash(seed + 1, (uint64_t)(op * 64 + ti), (uint64_t)rank, (uint64_t)idx);
  int sgn = t->kind == K_SINT;
  switch (op) {
    case OP_SUM:
      if (rank >= ACTIVE_RANKS) return 0;
      return sgn ? (uint64_t)((int64_t)(h % 11) - 5) : h % 11;
    case OP_PROD: {
      if (rank >= ACTIVE_RANKS) return 1;
      if (sgn && t->size == 1) { /* |product| <= 2^5 fits in 8 bits signed */
        static const int64_t f[4] = {-2, -1, 1, 2};
        return (uint64_t)f[h % 4];
      }
      if (sgn) { /* |product| <= 3^5 = 243 */
        static const int64_t f[6] = {-3, -2, -1, 1, 2, 3};
        return (uint64_t)f[h % 6];
      }
      return 1 + h % 3; /* 3^5 = 243 <= 255 */
    }
    case OP_MAX:
    case OP_MIN: { /* full range, then sign/zero-extended like a load would */
      unsigned char buf[8];
      /* pmodels/mpich#6083: MPICH 4.0.2 compares unsigned types as signed in MPI_MAX and
       * MPI_MIN, so by default unsigned inputs keep their top bit clear (both readings agree). */
      if (!sgn && !unsigned_high_bit) h &= (~0ull) >> (65 - 8 * t->size);
      store_int(t, buf, h);
      return load_int(t, buf);
    }
    case OP_LAND:
    case OP_LOR:
    case OP_LXOR: {
      /* Indices cycle through all-true, all-false and mixed so LAND/LOR are not trivial. */
      int truth;
      switch (idx % 4) {
        case 0: truth = 1; break;
        case 1: truth = 0; break;
        default: truth = (int)((h >> 40) & 1); break;
      }
      if (t->kind == K_BOOL) return (uint64_t)truth;
      if (!truth) return 0;
      /* Any non-zero value counts as true: use arbitrary bit patterns with bit 0 set. */
      unsigned char buf[8];
      store_int(t, buf, h | 1);
      return load_int(t, buf);
    }
    case OP_BAND: return h | h2; /* ~75% ones: an AND over 5 ranks keeps some bits */
    case OP_BOR: return h & h2;  /* ~25% ones */
    default: return h;           /* BXOR */
  }
}

static int is_true(uint64_t v) { return v != 0; }

/* Combine two values (as loaded by load_int) under op for type t. */
static uint64_t int_combine(int op, const tdesc *t, uint64_t a, uint64_t b) {
  int sgn = t->kind == K_SINT;
  switch (op) {
    case OP_SUM: return a + b; /* wraps like the truncated type would; inputs are small anyway */
    case OP_PROD: return a * b;
    case OP_MAX: return sgn ? ((int64_t)a > (int64_t)b ? a : b) : (a > b ? a : b);
    case OP_MIN: return sgn ? ((int64_t)a < (int64_t)b ? a : b) : (a < b ? a : b);
    case OP_LAND: return is_true(a) && is_true(b);
    case OP_LOR: return is_true(a) || is_true(b);
    case OP_LXOR: return is_true(a) != is_true(b);
    case OP_BAND: return a & b;
    case OP_BOR: return a | b;
    default: return a ^ b;
  }
}

/* ---- floating point ---- */
static long double flt_input(int op, int ti, int rank, long idx) {
  uint64_t h = ct_hash(seed, (uint64_t)(op * 64 + ti), (uint64_t)rank, (uint64_t)idx);
  switch (op) {
    case OP_SUM: return rank >= ACTIVE_RANKS ? 0.0L : (long double)((int)(h % 201) - 100) * 0.25L;
    case OP_PROD: {
      static const long double f[6] = {-2.0L, -1.0L, -0.5L, 0.5L, 1.0L, 2.0L};
      return rank >= ACTIVE_RANKS ? 1.0L : f[h % 6];
    }
    default: /* MAX/MIN: values exact in float (17 bits of mantissa) */
      return (long double)((int64_t)(h % 200001) - 100000) / 8.0L;
  }
}
static void store_flt(const tdesc *t, void *p, long double v) {
  if (t->size == sizeof(float)) { float x = (float)v; memcpy(p, &x, sizeof x); }
  else if (t->dt == MPI_DOUBLE) { double x = (double)v; memcpy(p, &x, sizeof x); }
  else { long double x = v; memcpy(p, &x, sizeof x); }
}
static long double load_flt(const tdesc *t, const void *p) {
  if (t->size == sizeof(float)) { float x; memcpy(&x, p, sizeof x); return x; }
  if (t->dt == MPI_DOUBLE) { double x; memcpy(&x, p, sizeof x); return x; }
  long double x;
  memcpy(&x, p, sizeof x);
  return x;
}
static long double flt_combine(int op, long double a, long double b) {
  switch (op) {
    case OP_SUM: return a + b;
    case OP_PROD: return a * b;
    case OP_MAX: return a > b ? a : b;
    default: return a < b ? a : b;
  }
}

/* ---- complex ---- */
static double _Complex cplx_input(int op, int ti, int rank, long idx) {
  uint64_t h = ct_hash(seed, (uint64_t)(op * 64 + ti), (uint64_t)rank, (uint64_t)idx);
  if (op == OP_SUM) {
    if (rank >= ACTIVE_RANKS) return 0;
    return CMPLX((double)((int)(h % 21) - 10), (double)((int)((h >> 20) % 21) - 10));
  }
  /* Gaussian integers of norm <= 4: every product of five is exact in double. */
  static const double f[8][2] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}, {1, 1}, {1, -1}, {2, 0}, {0, 2}};
  if (rank >= ACTIVE_RANKS) return 1;
  return CMPLX(f[h % 8][0], f[h % 8][1]);
}
static double _Complex cplx_mul(double _Complex a, double _Complex b) {
  /* Textbook formula: exact for small integers (no Annex G special cases needed). */
  double ar = creal(a), ai = cimag(a), br = creal(b), bi = cimag(b);
  return CMPLX(ar * br - ai * bi, ar * bi + ai * br);
}

/* ---- pairs: value and index, as long double + int ---- */
typedef struct { long double v; int i; } pairval;
static pairval pair_input(int op, int ti, const tdesc *t, int rank, long idx) {
  uint64_t h = ct_hash(seed, (uint64_t)(op * 64 + ti), (uint64_t)rank, (uint64_t)idx);
  pairval p;
  /* Few distinct values so ties are common; indices arbitrary (not the rank). */
  int v = (int)(h % 5) - 2;
  p.v = t->pair_value == 0 ? (long double)v : (long double)v * 0.5L;
  p.i = (int)((h >> 16) % 37) - 5;
  return p;
}
static void store_pair(const tdesc *t, void *p, pairval x) {
  switch (t->pair_value) {
    case 0: { pair_2int s = {(int)x.v, x.i}; memcpy(p, &s, sizeof s); break; }
    case 1: { pair_double_int s; memset(&s, 0, sizeof s); s.v = (double)x.v; s.i = x.i; memcpy(p, &s, sizeof s); break; }
    default: { pair_float_int s = {(float)x.v, x.i}; memcpy(p, &s, sizeof s); break; }
  }
}
static pairval load_pair(const tdesc *t, const void *p) {
  pairval x;
  switch (t->pair_value) {
    case 0: { pair_2int s; memcpy(&s, p, sizeof s); x.v = s.v; x.i = s.i; break; }
    case 1: { pair_double_int s; memcpy(&s, p, sizeof s); x.v = s.v; x.i = s.i; break; }
    default: { pair_float_int s; memcpy(&s, p, sizeof s); x.v = s.v; x.i = s.i; break; }
  }
  return x;
}
static pairval pair_combine(int op, pairval a, pairval b) {
  /* MPI rule: the better value wins; on a tie, the smaller index. */
  if (a.v == b.v) return a.i <= b.i ? a : b;
  if (op == OP_MAXLOC) return a.v > b.v ? a : b;
  return a.v < b.v ? a : b;
}

/* ---- generic element access ---- */

/* Write rank's input element idx into p. */
static void put_input(int op, int ti, int rank, long idx, void *p) {
  const tdesc *t = &types[ti];
  switch (t->kind) {
    case K_SINT:
    case K_UINT: store_int(t, p, int_input(op, ti, t, rank, idx)); break;
    case K_BOOL: { bool b = int_input(op, ti, t, rank, idx) != 0; memcpy(p, &b, 1); break; }
    case K_FLT: store_flt(t, p, flt_input(op, ti, rank, idx)); break;
    case K_CPLX: { double _Complex z = cplx_input(op, ti, rank, idx); memcpy(p, &z, sizeof z); break; }
    case K_PAIR: store_pair(t, p, pair_input(op, ti, t, rank, idx)); break;
  }
}

/* The expected result element idx, reduced over ranks 0..nranks-1 in rank order. */
static void put_expected(int op, int ti, int nranks, long idx, void *p) {
  const tdesc *t = &types[ti];
  switch (t->kind) {
    case K_SINT:
    case K_UINT:
    case K_BOOL: {
      uint64_t acc = int_input(op, ti, t, 0, idx);
      /* Logical ops yield 0/1 once values are combined; a single rank's value is copied as is. */
      if ((op == OP_LAND || op == OP_LOR || op == OP_LXOR) && nranks > 1) acc = is_true(acc);
      for (int r = 1; r < nranks; r++) acc = int_combine(op, t, acc, int_input(op, ti, t, r, idx));
      if (t->kind == K_BOOL) { bool b = acc != 0; memcpy(p, &b, 1); }
      else store_int(t, p, acc);
      break;
    }
    case K_FLT: {
      long double acc = flt_input(op, ti, 0, idx);
      for (int r = 1; r < nranks; r++) acc = flt_combine(op, acc, flt_input(op, ti, r, idx));
      store_flt(t, p, acc);
      break;
    }
    case K_CPLX: {
      double _Complex acc = cplx_input(op, ti, 0, idx);
      for (int r = 1; r < nranks; r++)
        acc = op == OP_SUM ? acc + cplx_input(op, ti, r, idx) : cplx_mul(acc, cplx_input(op, ti, r, idx));
      memcpy(p, &acc, sizeof acc);
      break;
    }
    case K_PAIR: {
      pairval acc = pair_input(op, ti, t, 0, idx);
      for (int r = 1; r < nranks; r++) acc = pair_combine(op, acc, pair_input(op, ti, t, r, idx));
      store_pair(t, p, acc);
      break;
    }
  }
}

/* Equal as values of type t (padding bytes of long double and DOUBLE_INT ignored). */
static int same_element(const tdesc *t, const void *a, const void *b) {
  switch (t->kind) {
    case K_FLT: return load_flt(t, a) == load_flt(t, b);
    case K_CPLX: {
      double _Complex x, y;
      memcpy(&x, a, sizeof x);
      memcpy(&y, b, sizeof y);
      return creal(x) == creal(y) && cimag(x) == cimag(y);
    }
    case K_PAIR: {
      pairval x = load_pair(t, a), y = load_pair(t, b);
      return x.v == y.v && x.i == y.i;
    }
    default: return memcmp(a, b, t->size) == 0;
  }
}

static void describe_element(const tdesc *t, const void *p, char *out, size_t n) {
  switch (t->kind) {
    case K_SINT: snprintf(out, n, "%lld", (long long)load_int(t, p)); break;
    case K_UINT: snprintf(out, n, "%llu (0x%llx)", (unsigned long long)load_int(t, p), (unsigned long long)load_int(t, p)); break;
    case K_BOOL: snprintf(out, n, "%u", (unsigned)*(const unsigned char *)p); break;
    case K_FLT: snprintf(out, n, "%.10Lg", load_flt(t, p)); break;
    case K_CPLX: { double _Complex z; memcpy(&z, p, sizeof z); snprintf(out, n, "(%g,%g)", creal(z), cimag(z)); break; }
    case K_PAIR: { pairval x = load_pair(t, p); snprintf(out, n, "(%Lg,%d)", x.v, x.i); break; }
  }
}

/* Index of the first byte of [p, p+n) that differs from `byte`, or -1. */
static long first_not(const unsigned char *p, size_t n, unsigned char byte) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != byte) return (long)i;
  return -1;
}

#define GUARD_BYTES 64
#define SENTINEL 0xA5

static unsigned char *sendbuf, *saved, *recvbuf, *refbuf, *expect;

/* One MPI_Reduce case; returns nothing, counts checks. */
static void run_case(int op, int ti, long count, int root, int inplace, int use_pmpi, MPI_Comm comm) {
  const tdesc *t = &types[ti];
  const size_t bytes = (size_t)count * t->size;
  int rank = world_rank, size = world_size;
  ct_context("op %s type %s count %ld root %d %s%s", op_names[op], t->name, count, root,
             inplace ? "MPI_IN_PLACE at root" : "separate buffers", use_pmpi ? " (+PMPI compare)" : "");

  for (long i = 0; i < count; i++) put_input(op, ti, rank, i, sendbuf + (size_t)i * t->size);
  memset(sendbuf + bytes, SENTINEL, GUARD_BYTES);
  memcpy(saved, sendbuf, bytes + GUARD_BYTES);
  memset(recvbuf, SENTINEL, bytes + GUARD_BYTES);

  const void *sbuf = sendbuf;
  if (inplace && rank == root) {
    memcpy(recvbuf, sendbuf, bytes);
    sbuf = MPI_IN_PLACE;
  }
  int rc = MPI_Reduce(sbuf, recvbuf, (int)count, t->dt, op_handle(op), root, comm);
  ct_check(rc == MPI_SUCCESS, "MPI_Reduce returned %d", rc);

  if (rank == root) {
    long bad = -1, nbad = 0;
    for (long i = 0; i < count; i++) {
      put_expected(op, ti, size, i, expect + (size_t)i * t->size);
      if (!same_element(t, recvbuf + (size_t)i * t->size, expect + (size_t)i * t->size)) {
        if (bad < 0) bad = i;
        nbad++;
      }
    }
    if (bad >= 0) {
      char got[64], want[64];
      describe_element(t, recvbuf + (size_t)bad * t->size, got, sizeof got);
      describe_element(t, expect + (size_t)bad * t->size, want, sizeof want);
      ct_check(0, "root result wrong at %ld of %ld elements; first at index %ld: got %s, expected %s", nbad, count,
               bad, got, want);
    } else {
      ct_check(1, "");
    }
    long g = first_not(recvbuf + bytes, GUARD_BYTES, SENTINEL);
    ct_check(g < 0, "root recvbuf written past %ld elements (byte %ld after the end)", count, g);
  } else {
    long g = first_not(recvbuf, bytes + GUARD_BYTES, SENTINEL);
    ct_check(g < 0, "non-root recvbuf modified at byte %ld of %zu", g, bytes);
  }
  if (!(inplace && rank == root))
    ct_check(memcmp(sendbuf, saved, bytes + GUARD_BYTES) == 0, "sendbuf modified by MPI_Reduce");

  if (use_pmpi) {
    /* The same reduction through the native library, bypassing any interposer. */
    memset(refbuf, SENTINEL, bytes + GUARD_BYTES);
    if (inplace && rank == root) memcpy(refbuf, saved, bytes);
    rc = PMPI_Reduce(inplace && rank == root ? MPI_IN_PLACE : (const void *)saved, refbuf, (int)count, t->dt,
                     op_handle(op), root, comm);
    ct_check(rc == MPI_SUCCESS, "PMPI_Reduce returned %d", rc);
    if (rank == root) {
      long bad = -1;
      for (long i = 0; i < count && bad < 0; i++)
        if (!same_element(t, recvbuf + (size_t)i * t->size, refbuf + (size_t)i * t->size)) bad = i;
      char got[64] = "", want[64] = "";
      if (bad >= 0) {
        describe_element(t, recvbuf + (size_t)bad * t->size, got, sizeof got);
        describe_element(t, refbuf + (size_t)bad * t->size, want, sizeof want);
      }
      ct_check(bad < 0, "MPI_Reduce and PMPI_Reduce differ at index %ld: %s vs native %s", bad, got, want);
    }
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  seed = ct_seed_from(argc, argv, 20240601);
  ct_init("reduce_matrix", seed);
  world_rank = ct.rank;
  world_size = ct.size;

  long counts[16] = {0, 1, 7, 1000, 4099};
  int ncounts = 5, pmpi = 1, full = 0;
  /* In-place reductions of >= CT_NATIVE_INPLACE_LIMIT bytes at a non-zero root crash
   * native MPICH 4.0.2, so they run only when an interposer (Canopy) is loaded. */
  int big_inplace = ct_big_inplace_allowed();
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], "--counts=", 9) == 0) {
      ncounts = 0;
      for (char *s = argv[i] + 9; *s && ncounts < 16;) {
        counts[ncounts++] = strtol(s, &s, 10);
        if (*s == ',') s++;
      }
    } else if (strcmp(argv[i], "--full") == 0) {
      full = 1;
    } else if (strcmp(argv[i], "--no-pmpi") == 0) {
      pmpi = 0;
    } else if (strcmp(argv[i], "--unsigned-minmax-high-bit") == 0) {
      unsigned_high_bit = 1;
    } else if (strcmp(argv[i], "--big-inplace=1") == 0) {
      big_inplace = 1;
    } else if (strcmp(argv[i], "--big-inplace=0") == 0) {
      big_inplace = 0;
    }
  }
  long maxcount = 0;
  for (int i = 0; i < ncounts; i++)
    if (counts[i] > maxcount) maxcount = counts[i];

  /* The pair types must have the layout of the C structs used here. */
  for (int ti = 0; ti < NTYPES; ti++) {
    MPI_Aint lb, extent;
    MPI_Type_get_extent(types[ti].dt, &lb, &extent);
    ct_context("type %s", types[ti].name);
    ct_check(lb == 0 && (size_t)extent == types[ti].size, "extent %ld (lb %ld), expected %zu", (long)extent, (long)lb,
             types[ti].size);
  }

  size_t cap = (size_t)maxcount * 16 + GUARD_BYTES;
  sendbuf = malloc(cap);
  saved = malloc(cap);
  recvbuf = malloc(cap);
  refbuf = malloc(cap);
  expect = malloc(cap);

  long cases = 0, pmpi_cases = 0, big_cases = 0;
  /* The root is the outermost loop: with more ranks than cores, consecutive reductions
   * at one root let non-roots run ahead, while a changing root costs a scheduler
   * time slice per call (about 4 ms at 3 ranks on 2 cores). */
  for (int root = 0; root < world_size; root++) {
    int pair = 0; /* index of the (type, op) pair */
    for (int ti = 0; ti < NTYPES; ti++)
      for (int op = 0; op < NOPS; op++) {
        if (!valid(op, &types[ti])) continue;
        pair++;
        for (int ci = 0; ci < ncounts; ci++) {
          /* Sampled (default): each (type, op, count) runs at one root, rotating along both
           * the pairs and the counts, so every root sees every count and most ops. */
          if (!full && (pair + ci) % world_size != root) continue;
          for (int inplace = 0; inplace < 2; inplace++) {
            long count = counts[ci];
            size_t bytes = (size_t)count * types[ti].size;
            int use_pmpi = pmpi && (count == 7 || count == 1000) && cases % 3 == 0;
            if (inplace && root != 0 && bytes >= CT_NATIVE_INPLACE_LIMIT) {
              use_pmpi = 0; /* pmodels/mpich#6540 */
              big_cases++;
              if (!big_inplace) continue;
            }
            run_case(op, ti, count, root, inplace, use_pmpi, MPI_COMM_WORLD);
            cases++;
            pmpi_cases += use_pmpi;
          }
        }
      }
  }
  if (world_rank == 0)
    printf("reduce_matrix: %d ranks, seed %llu, %s, %ld reductions (%ld also through PMPI_Reduce), "
           "%ld in-place cases at a non-zero root of >= %d bytes %s\n",
           world_size, seed, full ? "full product" : "each (type, op, count) at one root", cases, pmpi_cases,
           big_cases, CT_NATIVE_INPLACE_LIMIT,
           big_inplace ? "included" : "skipped (no interposer: MPICH 4.0.2 crashes on them)");

  free(sendbuf);
  free(saved);
  free(recvbuf);
  free(refbuf);
  free(expect);
  int status = ct_finish();
  MPI_Finalize();
  return status;
}
