// The analysis half of the MPI benchmark (tools/bench): canopy-bench-run leaves one
// directory per run holding canopy-bench's stdout for each variant and repeat
// (<variant>.<repeat>.out) and Canopy's JSON report of each Canopy run
// (canopy.<repeat>.report.json). These functions read them, reduce the repeats to one
// row per (collective, bytes), and render that as a text table, CSV or an SVG chart.
// Everything but load_run works on plain data, so tests need no files.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace canopy::tools::bench {

// Input the tool rejects (a missing directory or file, a malformed line): exit status 2.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// A run whose benchmark found a wrong result (CHECK FAILED): its times mean nothing,
// and the tool says so with exit status 1.
struct CheckFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The variants canopy-bench-run may run, in the order tables and charts show them.
// native and canopy are required; saved (Canopy preloaded with CANOPY_CONFIG = the rules
// a tuning run saved, CANOPY_SAVE_RULES), intercept (Canopy preloaded, both algorithms
// forced to native) and openmpi (the benchmark built against Open MPI) are optional.
const std::vector<std::string>& known_variants();

// One "RESULT <collective> <bytes> <median_us> <calls> <min_us>" line.
struct Result {
  std::string collective;  // "MPI_Reduce" or "MPI_Bcast"
  std::int64_t bytes = 0;
  double median_us = 0;
  long calls = 0;
  double min_us = 0;
  int line = 0;  // where it was, for messages
};

// What one run of canopy-bench printed.
struct BenchOutput {
  std::vector<Result> results;
  // "REFERENCE <bytes> <us>": one memcpy plus one MPI_Reduce_local of that size.
  std::map<std::int64_t, double> reference_us;
  bool check_ok = false;  // a "CHECK OK" line was seen
};

// Parses canopy-bench's stdout; `source` names it in messages ("dir/native.1.out").
// Lines other than RESULT, REFERENCE and CHECK are ignored. Throws InputError naming
// the source and line for a malformed or repeated line, or when there is no RESULT at
// all; throws CheckFailed on "CHECK FAILED ...".
BenchOutput parse_bench_output(const std::string& text, const std::string& source);

// One row of the "kinds" array of Canopy's JSON report (shim/report.cpp).
struct ReportKind {
  std::string collective;  // "MPI_Reduce" or "MPI_Bcast" (the report says reduce/bcast)
  std::int64_t bytes = 0;
  int root = 0;
  std::string algorithm;
  long calls = 0;
  std::optional<double> predicted_s;          // absent for native
  std::optional<double> predicted_learned_s;  // CANOPY_LEARN: under the model learned by the end
};

// Parses a CANOPY_REPORT_FORMAT=json report; throws InputError naming `source` when it
// is not JSON or its "kinds" rows lack what the analysis needs.
std::vector<ReportKind> parse_canopy_report(const std::string& text, const std::string& source);

// A run directory, read: every variant's outputs by repeat number, and the rows of all
// Canopy reports found (pooled: the algorithm choice sums calls over repeats).
struct RunData {
  std::map<std::string, std::map<int, BenchOutput>> outputs;  // variant -> repeat -> output
  std::vector<ReportKind> report_kinds;
  int reports = 0;  // how many canopy.N.report.json files were read
};

// Reads DIR: <variant>.<repeat>.out for the known variants (files of other names are
// ignored) and canopy.<repeat>.report.json. Throws InputError when DIR is missing or
// holds no native or no canopy output, and whatever the parsers throw.
RunData load_run(const std::string& dir);

// One (collective, bytes): each variant's median over repeats of its RESULT medians,
// and what Canopy ran. A missing value is nullopt (the variant has no such RESULT).
struct Row {
  std::string collective;
  std::int64_t bytes = 0;
  std::optional<double> native_us, canopy_us, saved_us, intercept_us, openmpi_us;
  std::optional<double> reference_us;  // MPI_Reduce rows only, from the native runs
  // The algorithm with the most calls in the reports; nullopt: no report covers this
  // row ("?"). Its calls-weighted mean prediction, nullopt for native: the learned
  // model's where the reports have one (CANOPY_LEARN), and the plan's own beside it.
  std::optional<std::string> algorithm;
  std::optional<double> predicted_us;
  std::optional<double> predicted_before_us;
  // The median over repeats of each repeat's native / canopy (repeat N of both variants
  // run one after the other: the pair shares the machine's period), nullopt without a
  // repeat that has both. Where the machine's speed drifts between runs, a ratio of
  // medians can pair a quick native run with a slow canopy run; paired ratios cannot.
  std::optional<double> paired_speedup;
  // Native against itself: the median over repeats of each repeat's native over the
  // next repeat's, or its inverse where that is smaller (so at most 1); nullopt with
  // fewer than two native repeats. How far a row moves when nothing changes but the
  // run: a speedup that far under 1 can be the machine's noise alone.
  std::optional<double> native_self;

  // The derived columns; nullopt when an operand is missing (or a divisor is 0).
  std::optional<double> speedup() const;            // native / canopy
  std::optional<double> paired() const { return paired_speedup; }
  std::optional<double> self() const { return native_self; }
  std::optional<double> saved_speedup() const;      // native / saved
  std::optional<double> model_error_pct() const;    // |predicted - canopy| / canopy, in %
  std::optional<double> model_error_before_pct() const;  // the same with the plan's own prediction
  std::optional<double> intercept_overhead_pct() const;  // intercept / native - 1, in %
  std::optional<double> canopy_over_openmpi() const;
  std::optional<double> canopy_over_reference() const;
};

struct Table {
  std::string dir;
  std::vector<std::string> variants;  // present, in known_variants() order
  std::map<std::string, int> repeats;  // variant -> number of .out files
  int reports = 0;
  bool has_reference = false;  // some reduce row has a reference value
  std::vector<Row> rows;       // by collective ("MPI_Bcast" < "MPI_Reduce"), then bytes

  bool has(const std::string& variant) const;
};

// The median of `values` (the mean of the middle two for an even count); nullopt when
// empty.
std::optional<double> median(std::vector<double> values);

// Reduces a run to its rows.
Table aggregate(const RunData& run, const std::string& dir = "");

// "8 B", "64 KiB", "16 MiB"; sizes that are no whole number of a unit get one decimal
// ("1.5 KiB").
std::string human_bytes(std::int64_t bytes);

// The header line naming the variants and repeats.
std::string format_header(const Table& table);
// The fixed-width table, one line per row, with a column header.
std::string format_table(const Table& table);
// Per collective: smallest and largest speedup, whether every size is at least 0.97x
// native (the "do no harm" bound), the same from the paired speedups, median model error (learned, and before learning
// where the reports learned), native against itself (Row::native_self: this
// machine's noise between runs), and the worst interception overhead, canopy/openmpi and
// canopy/reference ratios where present.
std::string format_summary(const Table& table);

// The rows as CSV with a header line. The columns are the same whichever variants ran
// (empty cells where a value is missing), so runs can be concatenated; times in µs,
// percentages in %, algorithm empty where no report said.
std::string rows_to_csv(const Table& table);

// A chart of time per call against message size, both log scale: one panel per
// collective (MPI_Reduce left, MPI_Bcast right), a curve per variant (polylines with
// class 'curve', data-collective, data-variant, data-bytes and data-us), the
// reference dashed in the MPI_Reduce panel, a legend and `title`.
std::string plot_svg(const Table& table, const std::string& title);

}  // namespace canopy::tools::bench
