/* allreduce_bitwise: every rank of an MPI_Allreduce gets the same bits.
 *
 * Applications compare an allreduced residual or norm on every rank to decide whether
 * to stop; ranks that disagree in the last bit take different branches and hang. So
 * the result must be bitwise identical on all ranks even where floating-point rounding
 * depends on the order of the operands: here it does, by construction. Inputs mix
 * magnitudes from 1e-8 to 1e16 with both signs (a sum of them in another order rounds
 * differently), NaNs meet MPI_MAX and MPI_MIN (max(NaN, x) and max(x, NaN) differ in
 * common implementations), and a user operation that is not commutative and not
 * associative in floating point (a (op) b = 0.5 a + b) runs in rank order. The result
 * is not compared with native MPI's (another order of combining is allowed to round
 * otherwise): rank 0's result is broadcast with PMPI_Bcast and every rank compares its
 * bytes with it. Sums in rank order of exactly representable inputs are also checked
 * against the value every rank computes itself, so a result that is identical but
 * wrong fails too.
 *
 * Counts 1 to 100003 (not multiples of the ranks), in place and not, doubles and
 * floats. Force an algorithm with CANOPY_ALLREDUCE_ALGO (each_algorithm.sh does).
 * Last line on success: "allreduce_bitwise: N checks passed".
 */
#include "canopy_check.h"

#include <math.h>
#include <stdbool.h>

static int wrank, wsize;
static unsigned long long seed;

/* a (op) b = 0.5 a + b, for doubles: neither commutative nor associative. */
static void half_then_add(void *in, void *inout, int *len, MPI_Datatype *type) {
  (void)type;
  const double *a = in;
  double *b = inout;
  for (int i = 0; i < *len; i++) b[i] = 0.5 * a[i] + b[i];
}

/* An input whose sums round differently in different orders. */
static double rough(uint64_t h) {
  static const double scales[] = {1e-8, 1e-3, 1.0, 3.0, 1e8, 1e16};
  const double mantissa = (double)(h % 1000003) / 1000003.0 + 0.1;
  const double v = mantissa * scales[(h >> 20) % 6];
  return (h >> 40) & 1 ? -v : v;
}

/* Every rank's bytes equal rank 0's. */
static void same_everywhere(const char *what, const void *got, size_t bytes) {
  unsigned char *zero = malloc(bytes ? bytes : 1);
  memcpy(zero, got, bytes);
  PMPI_Bcast(zero, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
  long first = -1;
  for (size_t i = 0; i < bytes && first < 0; i++)
    if (zero[i] != ((const unsigned char *)got)[i]) first = (long)i;
  ct_check(first < 0, "%s: byte %ld differs from rank 0's", what, first);
  free(zero);
}

static void run(const char *what, long count, MPI_Datatype type, MPI_Op op, bool in_place, bool nans) {
  const bool dbl = type == MPI_DOUBLE;
  const size_t size = dbl ? sizeof(double) : sizeof(float);
  char *send = malloc((size_t)count * size + 1), *recv = malloc((size_t)count * size + 1);
  for (long i = 0; i < count; i++) {
    const uint64_t h = ct_hash(seed, (uint64_t)count, (uint64_t)wrank, (uint64_t)i);
    double v = rough(h);
    if (nans && h % 7 == 0) v = NAN;
    if (dbl) ((double *)send)[i] = v;
    else ((float *)send)[i] = (float)v;
  }
  if (in_place) memcpy(recv, send, (size_t)count * size);
  ct_context("%s, count %ld, %s%s", what, count, dbl ? "MPI_DOUBLE" : "MPI_FLOAT", in_place ? ", MPI_IN_PLACE" : "");
  const int err = MPI_Allreduce(in_place ? MPI_IN_PLACE : send, recv, (int)count, type, op, MPI_COMM_WORLD);
  ct_check(err == MPI_SUCCESS, "MPI_Allreduce returned %d", err);
  same_everywhere(what, recv, (size_t)count * size);
  free(send);
  free(recv);
}

/* Integers as doubles sum exactly in any order: the result is known on every rank. */
static void exact_sum(long count, bool in_place) {
  double *send = malloc((size_t)count * sizeof(double)), *recv = malloc((size_t)count * sizeof(double));
  for (long i = 0; i < count; i++) send[i] = (double)((wrank + 1) * (i % 1000 + 1));
  if (in_place) memcpy(recv, send, (size_t)count * sizeof(double));
  ct_context("exact sum, count %ld%s", count, in_place ? ", MPI_IN_PLACE" : "");
  MPI_Allreduce(in_place ? MPI_IN_PLACE : send, recv, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  long bad = -1;
  const double ranks = (double)wsize * (wsize + 1) / 2;
  for (long i = 0; i < count && bad < 0; i++)
    if (recv[i] != ranks * (double)(i % 1000 + 1)) bad = i;
  ct_check(bad < 0, "element %ld is %g, expected %g", bad, bad < 0 ? 0.0 : recv[bad],
           bad < 0 ? 0.0 : ranks * (double)(bad % 1000 + 1));
  free(send);
  free(recv);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  seed = ct_seed_from(argc, argv, 20261203);
  ct_init("allreduce_bitwise", seed);
  wrank = ct.rank;
  wsize = ct.size;
  MPI_Op ordered;
  MPI_Op_create(half_then_add, 0, &ordered);
  static const long counts[] = {1, 3, 17, 1000, 4099, 100003};
  for (int c = 0; c < (int)(sizeof counts / sizeof counts[0]); c++) {
    const long n = counts[c];
    for (int in_place = 0; in_place < 2; in_place++) {
      run("MPI_SUM", n, MPI_DOUBLE, MPI_SUM, in_place, false);
      run("MPI_SUM", n, MPI_FLOAT, MPI_SUM, in_place, false);
      run("MPI_MAX with NaNs", n, MPI_DOUBLE, MPI_MAX, in_place, true);
      run("MPI_MIN with NaNs", n, MPI_FLOAT, MPI_MIN, in_place, true);
      run("0.5 a + b (non-commutative)", n, MPI_DOUBLE, ordered, in_place, false);
      exact_sum(n, in_place);
    }
  }
  MPI_Op_free(&ordered);
  const int status = ct_finish();
  MPI_Finalize();
  return status;
}
