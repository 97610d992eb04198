/* What the benchmark programs (canopy-bench, canopy-bench-floor) share: medians, and
 * the harness's own MPI calls, which wait politely (nonblocking, tested, then the core
 * yielded): with more ranks than cores, a rank that finished its batch and spun in a
 * busy-polling barrier would take a core from the ranks still working, and time the
 * harness instead of what it measures. Header-only: each program is one C file. */
#ifndef CANOPY_TOOLS_BENCH_HARNESS_H
#define CANOPY_TOOLS_BENCH_HARNESS_H

#include <mpi.h>
#include <sched.h>
#include <stdlib.h>

static int compare_doubles(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* The median of v[0..n), which it sorts. */
static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, compare_doubles);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Waits for `request`, yielding the core between tests. */
static void polite_wait(MPI_Request* request) {
  for (int done = 0;;) {
    MPI_Test(request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    sched_yield();
  }
}

static void polite_barrier(void) {
  MPI_Request request;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  polite_wait(&request);
}

/* `value` combined over the ranks with `op`, waited for politely. */
static double polite_allreduce(double value, MPI_Op op) {
  double result = 0;
  MPI_Request request;
  MPI_Iallreduce(&value, &result, 1, MPI_DOUBLE, op, MPI_COMM_WORLD, &request);
  polite_wait(&request);
  return result;
}

static inline double polite_max(double value) { return polite_allreduce(value, MPI_MAX); }

/* A whole option value as an integer: 1 and *value set, or 0 where `text` is not one. */
static int parse_integer(const char* text, long* value) {
  char* end = NULL;
  *value = strtol(text, &end, 10);
  return end != text && *end == 0;
}

/* --sizes: up to `max` byte counts, each a multiple of `multiple` in [multiple, 2^30],
 * separated by commas, into sizes[]; their number, or -1 where `text` is not that. */
static int parse_sizes(const char* text, long multiple, long* sizes, int max) {
  int n = 0;
  for (const char* p = text; *p;) {
    char* end = NULL;
    const long v = strtol(p, &end, 10);
    if (end == p || v <= 0 || v % multiple || v > (1L << 30) || n == max || (*end && *end != ',')) return -1;
    sizes[n++] = v;
    p = *end ? end + 1 : end;
  }
  return n > 0 ? n : -1;
}

#endif
