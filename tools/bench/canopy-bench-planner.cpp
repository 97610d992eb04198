// canopy-bench-planner: how fast the planner plans, printed as measured (a benchmark,
// not a test: it passes or misses its targets, it does not fail).
//
// For growing p, in a fresh child process each (so each peak memory is its own):
//   * view: what the shim does on a plan-cache miss: every candidate priced (`auto`),
//     then this rank's view of the winner built (planner/select.h);
//   * whole: the same choice built whole and validated (make_plan, what the tools and
//     the old shim did), up to --max-whole-ranks;
// their times side by side, the ratio, and each one's peak resident memory; then the
// issue's targets with the measured figures. And Canon & Antoniu's Algorithm 1 tree
// alone, which `auto` stops building above select.h's kGlobalPlanningLimit.
//
// With --size-classes, instead: what the shim spends on each new size class of a reduce,
// broadcast or allreduce on a communicator of 8 to 512 ranks, warm (one process, the median of several plans after
// an untimed one), with and without a staging ring: where Langou's greedy trees are
// built and simulated for every segment size tried.
#include <CLI/CLI.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "planner/algorithms/canon.h"
#include "planner/select.h"
#include "planner/staged.h"

namespace {

using canopy::planner::Collective;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A measurement made in a child process: its result line and peak RSS.
struct Measured {
  bool ok = false;
  double seconds = 0;
  long peak_kib = 0;
  std::string what;  // the chosen schedule, or why it failed
};

// Runs `work` (which returns seconds and fills `what`) in a child; the child's peak RSS
// comes from wait4.
template <typename Work>
Measured in_child(Work work) {
  int fds[2];
  Measured out;
  if (pipe(fds) != 0) return out;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string what;
    double t = -1;
    try {
      t = work(what);
    } catch (const std::exception& e) {
      what = e.what();
    }
    char line[512];
    const int n = std::snprintf(line, sizeof line, "%.9f %s", t, what.c_str());
    (void)!write(fds[1], line, static_cast<std::size_t>(std::min<int>(n, sizeof line - 1)));
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  char buf[512] = {};
  std::size_t got = 0;
  while (got + 1 < sizeof buf) {
    const ssize_t r = read(fds[0], buf + got, sizeof buf - 1 - got);
    if (r <= 0) break;
    got += static_cast<std::size_t>(r);
  }
  close(fds[0]);
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  out.peak_kib = usage.ru_maxrss;
  char* rest = nullptr;
  out.seconds = std::strtod(buf, &rest);
  out.what = rest && *rest == ' ' ? rest + 1 : "";
  out.ok = WIFEXITED(status) && out.seconds >= 0;
  return out;
}

canopy::planner::Problem problem_for(Collective c, long p, long bytes) {
  canopy::planner::Problem problem;
  problem.collective = c;
  problem.nranks = static_cast<int>(p);
  problem.element_bytes = c == Collective::Bcast ? 1 : 8;
  problem.count = bytes / problem.element_bytes;
  return problem;
}

Measured plan_view(Collective c, long p, long bytes) {
  return in_child([&](std::string& what) {
    const auto problem = problem_for(c, p, bytes);
    const auto start = std::chrono::steady_clock::now();
    const auto best = canopy::planner::rank_choices(problem, {}).front();
    const auto view = canopy::planner::build_view(problem, best, static_cast<int>(p / 2));
    const double t = seconds_since(start);
    what = best.algorithm + "/" + std::to_string(view.segments.size()) + " " +
           std::to_string(view.steps_of(view.view_rank).size()) + " steps";
    return t;
  });
}

Measured plan_whole(Collective c, long p, long bytes) {
  return in_child([&](std::string& what) {
    const auto problem = problem_for(c, p, bytes);
    const auto start = std::chrono::steady_clock::now();
    const auto plan = canopy::planner::make_plan(problem, {});
    const double t = seconds_since(start);
    what = plan.schedule.algorithm + "/" + std::to_string(plan.schedule.segments.size()) + " " +
           std::to_string(plan.schedule.total_steps()) + " steps";
    return t;
  });
}

// The --size-classes table: one rank's auto choice (rank_choices, what the shim prices
// for a new size class), the median of `repeats` after one untimed, in this process.
void print_size_classes(const std::vector<long>& ranks, const std::vector<long>& sizes, int repeats) {
  std::printf("One rank's auto choice for a new size class (planner::rank_choices), default model, warm: the\n"
              "median of %d in one process after an untimed one; ring: with a staging ring over the ranks\n"
              "(one node, at most %d ranks)\n",
              repeats, canopy::planner::kMaxStagingRanks);
  std::printf("%-9s %-5s %7s %10s %12s   %s\n", "", "", "p", "bytes", "plan", "chosen");
  for (Collective c : {Collective::Reduce, Collective::Bcast, Collective::Allreduce})
    for (bool ring : {false, true})
      for (long p : ranks)
        for (long bytes : sizes) {
          auto problem = problem_for(c, p, bytes);
          if (ring) {
            // As the shim offers it: one node, at most kMaxStagingRanks ranks.
            if (!canopy::planner::staging_ring_allowed(static_cast<int>(p))) continue;
            problem = canopy::planner::with_staging_ring(problem);
          }
          canopy::planner::Choice best;
          std::vector<double> times;
          for (int i = 0; i <= repeats; ++i) {
            const auto start = std::chrono::steady_clock::now();
            best = canopy::planner::rank_choices(problem, {}).front();
            if (i > 0) times.push_back(seconds_since(start));
          }
          std::sort(times.begin(), times.end());
          std::printf("%-9s %-5s %7ld %10ld %9.3f ms   %s/%lld\n", canopy::planner::to_string(c),
                      ring ? "ring" : "p2p", p, bytes, times[times.size() / 2] * 1e3, best.algorithm.c_str(),
                      static_cast<long long>(best.segment_bytes));
          std::fflush(stdout);
        }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"canopy-bench-planner: time the planner (one rank's auto plan against the whole schedule) and "
               "its peak memory, per number of ranks"};
  app.footer("\nExamples:\n  canopy-bench-planner --max-ranks 1048576\n  canopy-bench-planner --size-classes\n");
  long max_ranks = 1 << 20;
  long max_whole = 4096;
  long bytes = 4 << 20;
  app.add_option("--max-ranks", max_ranks, "largest p (p = 8, 64, 512, 4096, then times 16, then this)")
      ->check(CLI::Range(8L, 1L << 24))
      ->capture_default_str();
  app.add_option("--max-whole-ranks", max_whole, "largest p for the whole-schedule column")
      ->check(CLI::Range(8L, 1L << 24))
      ->capture_default_str();
  app.add_option("--bytes", bytes, "message size (reduce: doubles)")->check(CLI::Range(8L, 1L << 34))->capture_default_str();
  bool size_classes = false;
  std::vector<long> class_ranks{8, 16, 32, 64, 512}, class_sizes{65536, 1 << 20, 4 << 20};
  int repeats = 7;
  app.add_flag("--size-classes", size_classes,
               "instead: one rank's plan for a new size class of MPI_Reduce, MPI_Bcast and MPI_Allreduce at a "
               "few p and sizes, warm, with and without a staging ring (the time a communicator's first call of "
               "each size class pays)");
  app.add_option("--class-ranks", class_ranks, "--size-classes: the numbers of ranks (comma-separated)")
      ->delimiter(',')
      ->check(CLI::Range(2L, 1L << 24))
      ->capture_default_str();
  app.add_option("--class-bytes", class_sizes, "--size-classes: the message sizes (comma-separated; reduce and allreduce: doubles)")
      ->delimiter(',')
      ->check(CLI::Range(8L, 1L << 34))
      ->capture_default_str();
  app.add_option("--repeats", repeats, "--size-classes: timed plans per row (the median is printed)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (size_classes) {
    print_size_classes(class_ranks, class_sizes, repeats);
    return 0;
  }

  std::vector<long> ps;
  for (long p = 8; p < max_ranks; p *= p < 4096 ? 8 : 16) ps.push_back(p);
  ps.push_back(max_ranks);

  double target_65536 = -1, target_1m = -1;
  long target_65536_kib = -1;
  for (Collective c : {Collective::Reduce, Collective::Bcast}) {
    std::printf("\n%s of %ld B, default model, auto (one process per row):\n",
                c == Collective::Reduce ? "MPI_Reduce (doubles)" : "MPI_Bcast", bytes);
    std::printf("%9s %12s %12s %9s %12s %12s   %s\n", "p", "view", "whole", "ratio", "view peak", "whole peak",
                "chosen");
    for (long p : ps) {
      const Measured v = plan_view(c, p, bytes);
      const bool whole = p <= max_whole;
      const Measured w = whole ? plan_whole(c, p, bytes) : Measured{};
      char ratio[32] = "-", wt[32] = "-", wp[32] = "-";
      if (whole && w.ok && v.ok && v.seconds > 0) std::snprintf(ratio, sizeof ratio, "%.0fx", w.seconds / v.seconds);
      if (whole && w.ok) std::snprintf(wt, sizeof wt, "%.3f ms", w.seconds * 1e3);
      if (whole) std::snprintf(wp, sizeof wp, "%ld KiB", w.peak_kib);
      std::printf("%9ld %9.3f ms %12s %9s %8ld KiB %12s   %s\n", p, v.ok ? v.seconds * 1e3 : -1.0, wt, ratio,
                  v.peak_kib, wp, v.what.c_str());
      std::fflush(stdout);
      if (c == Collective::Reduce && p == 65536 && v.ok) target_65536 = v.seconds, target_65536_kib = v.peak_kib;
      if (c == Collective::Reduce && p == 1048576 && v.ok) target_1m = v.seconds;
    }
  }

  std::printf("\nTargets (issue: plans that scale), reduce of %ld B of doubles:\n", bytes);
  auto row = [](const char* what, double got, double limit, const char* unit, double scale) {
    if (got < 0) std::printf("  %-44s not measured (raise --max-ranks)\n", what);
    else std::printf("  %-44s %10.3f %s  (target <= %g %s)  %s\n", what, got * scale, unit, limit, unit,
                     got * scale <= limit ? "met" : "MISSED");
  };
  row("one rank's auto plan at p = 65,536", target_65536, 50, "ms", 1e3);
  row("its peak memory (the whole child process)", target_65536_kib < 0 ? -1 : target_65536_kib / 1024.0, 64, "MiB", 1);
  row("one rank's auto plan at p = 1,048,576", target_1m, 500, "ms", 1e3);

  std::printf("\nAlgorithm 1 of 000 (greedy tree, (d, c) = (1, 2)) built alone; auto stops building such trees\n"
              "above %d ranks:\n", canopy::planner::kGlobalPlanningLimit);
  std::printf("%9s %12s %12s\n", "p", "time", "peak");
  for (long p = 4096; p <= max_ranks; p *= 16) {
    const Measured m = in_child([&](std::string& what) {
      const auto start = std::chrono::steady_clock::now();
      what = std::to_string(canopy::planner::canon::canon_greedy(static_cast<int>(p), 1, 2).length);
      return seconds_since(start);
    });
    std::printf("%9ld %9.3f ms %8ld KiB\n", p, m.seconds * 1e3, m.peak_kib);
  }
  return 0;
}
