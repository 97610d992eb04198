// canopy-bench-report: reads one canopy-bench-run directory and prints native MPI
// against Canopy (and the optional variants) per collective and message size, with
// Canopy's chosen algorithm and how far its prediction was; optionally CSV and a chart.
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "tools/bench/bench_report.h"

using namespace canopy::tools::bench;

namespace {

constexpr int kBadInput = 2;    // as the other tools: anything the user gave that we reject
constexpr int kCheckFailed = 1;  // a benchmark run computed a wrong result

const char* const kFooter = R"(
Input (--dir): what canopy-bench-run leaves, one file per variant and repeat:
  native.N.out     canopy-bench with the MPI's own collectives (required)
  canopy.N.out     with libcanopy.so preloaded, CANOPY_*_ALGO=auto (required)
  saved.N.out      preloaded with CANOPY_CONFIG = the rules a tuning run saved
                   (CANOPY_SAVE_RULES): decided sizes run without trials (optional)
  intercept.N.out  preloaded with CANOPY_REDUCE_ALGO=native CANOPY_BCAST_ALGO=native:
                   the cost of interception alone (optional)
  openmpi.N.out    canopy-bench built against Open MPI (optional)
  canopy.N.report.json  Canopy's CANOPY_REPORT_FORMAT=json report of canopy run N
                   (optional: without it the algorithm and prediction show "?")
Of each .out file only the lines "RESULT <MPI_Reduce|MPI_Bcast> <bytes> <median_us>
<calls> <min_us>", "REFERENCE <bytes> <us>" and "CHECK OK|FAILED ..." are read.

Per collective and size: each variant's time is the median over repeats of the runs'
median per call. Canopy's algorithm is the one with the most calls in the reports
(over all roots and repeats), its prediction the calls-weighted mean of that
algorithm's predictions ("-" for native). speedup = native / canopy, speedup saved =
native / saved, model err = |predicted - canopy| / canopy, overhead = intercept /
native - 1, vs openmpi = canopy / openmpi, vs reference = canopy / (one memcpy + one
MPI_Reduce_local, from the native runs): how close a reduce comes to the floor of a
2-rank reduce.

Exit status: 0; 1 when a run printed CHECK FAILED (its file is named); 2 on bad input
(a missing directory, no native or canopy output, a malformed line: one line on stderr
naming the file and line).

Examples:
  canopy-bench-report --dir runs/2024-05-01-np4
  canopy-bench-report --dir runs/np4 --csv np4.csv --svg np4.svg --title "4 ranks, MPICH 4.0.2"
)";

struct Options {
  std::string dir;
  std::string csv;
  std::string svg;
  std::string title = "canopy-bench";
};

void write_file(const std::string& path, const std::string& text) {
  std::FILE* out = std::fopen(path.c_str(), "w");
  if (!out) throw InputError("cannot write " + path + ": " + std::strerror(errno));
  const bool ok = std::fputs(text.c_str(), out) >= 0;
  if (std::fclose(out) != 0 || !ok) throw InputError("cannot write " + path);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"canopy-bench-report: native MPI against Canopy, from one canopy-bench-run directory"};
  app.footer(kFooter);
  app.add_option("--dir", o.dir, "the run directory (native.N.out, canopy.N.out, ...)")->required();
  app.add_option("--csv", o.csv, "also write the rows as CSV to this file (times in µs)");
  app.add_option("--svg", o.svg, "also write a log-log chart of time against size, a panel per collective");
  app.add_option("--title", o.title, "the chart's title")->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::cerr << "canopy-bench-report: " << e.what() << "\n";
    return kBadInput;
  }
  try {
    const Table table = aggregate(load_run(o.dir), o.dir);
    // The files first: a failure to write one then leaves stdout empty.
    if (!o.csv.empty()) write_file(o.csv, rows_to_csv(table));
    if (!o.svg.empty()) write_file(o.svg, plot_svg(table, o.title));
    std::cout << format_header(table) << "\n" << format_table(table) << "\n" << format_summary(table);
    if (!o.csv.empty()) std::cout << "wrote " << o.csv << "\n";
    if (!o.svg.empty()) std::cout << "wrote " << o.svg << "\n";
    return 0;
  } catch (const CheckFailed& e) {
    std::cerr << "canopy-bench-report: a run computed a wrong result: " << e.what() << "\n";
    return kCheckFailed;
  } catch (const std::exception& e) {
    std::cerr << "canopy-bench-report: " << e.what() << "\n";
    return kBadInput;
  }
}
