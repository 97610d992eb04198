// canopy-bench-planner: how fast the planner plans, printed as measured (a benchmark,
// not a test: nothing here passes or fails).
//   * Algorithm 1 (greedy tree of 000) for p = 4096 and p = 1,048,576;
//   * the full path the shim takes on a cache miss (every algorithm and segment size
//     built, simulated, the best validated) for growing p;
//   * peak memory after each step, to see it grow linearly in p.
#include <CLI/CLI.hpp>

#include <sys/resource.h>

#include <chrono>
#include <cstdio>

#include "planner/algorithms/canon.h"
#include "planner/select.h"

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

long peak_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

// Best of `repeats` runs of f, in seconds.
template <typename F>
double best_of(int repeats, F f) {
  double best = 1e300;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    f();
    best = std::min(best, seconds_since(start));
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"canopy-bench-planner: time the planner (greedy tree construction and full planning)"};
  app.footer("\nExample:\n  canopy-bench-planner --max-ranks 1048576\n");
  int max_ranks = 1 << 20;
  app.add_option("--max-ranks", max_ranks, "largest p for Algorithm 1")->check(CLI::Range(2, 1 << 24))->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::printf("Algorithm 1 (greedy tree, 000) with (d, c) = (1, 2):\n");
  std::printf("%10s %14s %14s\n", "p", "best time", "peak RSS");
  for (int p = 4096; p <= max_ranks; p *= 16) {
    volatile double sink = 0;
    const double t = best_of(p <= 65536 ? 20 : 3, [&] { sink = canopy::planner::canon::canon_greedy(p, 1, 2).length; });
    std::printf("%10d %11.3f ms %11ld KiB\n", p, t * 1e3, peak_rss_kib());
  }
  if (max_ranks > 4096 && (max_ranks & (max_ranks - 1)) != 0) {
    const double t = best_of(3, [&] { (void)canopy::planner::canon::canon_greedy(max_ranks, 1, 2); });
    std::printf("%10d %11.3f ms %11ld KiB\n", max_ranks, t * 1e3, peak_rss_kib());
  }

  std::printf("\nFull planning of a reduce, as on a cache miss in the shim (auto: every algorithm and\n"
              "segment size built and simulated, the best validated), default model:\n");
  std::printf("%8s %10s %14s %22s\n", "p", "bytes", "time", "chosen");
  for (int p : {8, 64, 512}) {
    for (long bytes : {8L, 65536L, 4194304L}) {
      canopy::planner::Problem problem;
      problem.nranks = p;
      problem.count = bytes / 8;
      problem.element_bytes = 8;
      std::string chosen;
      const double t = best_of(1, [&] { chosen = canopy::planner::make_plan(problem, {}).schedule.algorithm; });
      std::printf("%8d %10ld %11.3f ms %22s\n", p, bytes, t * 1e3, chosen.c_str());
    }
  }
  return 0;
}
