// canopy-bench-report's analysis (tools/bench/bench_report.h): parsing canopy-bench's
// output and Canopy's report, reducing repeats to rows, and the table, CSV and chart.
#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "tools/bench/bench_report.h"

using namespace canopy::tools::bench;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// One run's output with one RESULT per (collective, bytes, median_us).
BenchOutput output(std::vector<std::tuple<std::string, std::int64_t, double>> results,
                   std::map<std::int64_t, double> reference = {}) {
  BenchOutput o;
  for (const auto& [collective, bytes, us] : results) {
    Result r;
    r.collective = collective;
    r.bytes = bytes;
    r.median_us = us;
    r.calls = 100;
    r.min_us = us;
    o.results.push_back(r);
  }
  o.reference_us = std::move(reference);
  o.check_ok = true;
  return o;
}

ReportKind kind(const std::string& collective, std::int64_t bytes, int root, const std::string& algorithm,
                long calls, std::optional<double> predicted_s) {
  ReportKind k;
  k.collective = collective;
  k.bytes = bytes;
  k.root = root;
  k.algorithm = algorithm;
  k.calls = calls;
  k.predicted_s = predicted_s;
  return k;
}

// A run with native and canopy: one reduce size, as many repeats as times given.
RunData reduce_run(const std::vector<double>& native, const std::vector<double>& canopy) {
  RunData run;
  for (std::size_t i = 0; i < native.size(); ++i)
    run.outputs["native"][static_cast<int>(i) + 1] = output({{"MPI_Reduce", 4096, native[i]}});
  for (std::size_t i = 0; i < canopy.size(); ++i)
    run.outputs["canopy"][static_cast<int>(i) + 1] = output({{"MPI_Reduce", 4096, canopy[i]}});
  return run;
}

// A copy: callers pass the temporary that aggregate returns.
Row only_row(const Table& t) {
  REQUIRE(t.rows.size() == 1);
  return t.rows.front();
}

// The message parse_bench_output throws as `E` for `text`.
template <typename E>
std::string error_of(const std::string& text) {
  try {
    parse_bench_output(text, "dir/native.2.out");
  } catch (const E& e) {
    return e.what();
  }
  FAIL("no error for: " << text);
  return "";
}

// A fresh directory under the system's temporary directory, removed at the end.
struct TempDir {
  fs::path path;
  TempDir() {
    static std::atomic<int> counter{0};
    path = fs::temp_directory_path() /
           ("canopy-bench-report-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  void write(const std::string& name, const std::string& text) const { std::ofstream(path / name) << text; }
};

int count(const std::string& haystack, const std::string& needle) {
  int n = 0;
  for (std::size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("bench report: canopy-bench's output is read, other lines ignored") {
  const BenchOutput o = parse_bench_output(
      "# canopy-bench 4 ranks\r\n"
      "RESULT MPI_Reduce 8 0.45 100 0.41\r\n"
      "RESULTS are below\n"
      "RESULT MPI_Bcast 1048576 112.4 20 110\n"
      "REFERENCE 8 0.05\n"
      "\n"
      "CHECK OK\n",
      "x.out");
  REQUIRE(o.results.size() == 2);
  CHECK(o.results[0].collective == "MPI_Reduce");
  CHECK(o.results[0].bytes == 8);
  CHECK(o.results[0].median_us == Approx(0.45));
  CHECK(o.results[0].calls == 100);
  CHECK(o.results[0].min_us == Approx(0.41));
  CHECK(o.results[0].line == 2);
  CHECK(o.results[1].collective == "MPI_Bcast");
  CHECK(o.results[1].bytes == 1048576);
  CHECK(o.results[1].line == 4);
  REQUIRE(o.reference_us.count(8));
  CHECK(o.reference_us.at(8) == Approx(0.05));
  CHECK(o.check_ok);
}

TEST_CASE("bench report: CHECK FAILED is an error naming the file and line") {
  const std::string message =
      error_of<CheckFailed>("RESULT MPI_Reduce 8 0.4 100 0.3\nCHECK FAILED rank 1: element 3 is 7, want 6\n");
  CHECK(message.find("dir/native.2.out: line 2:") != std::string::npos);
  CHECK(message.find("element 3 is 7") != std::string::npos);
  // As canopy-bench prints it.
  CHECK(error_of<CheckFailed>("RESULT MPI_Reduce 8 0.4 100 0.3\nCHECK FAILED: 12 wrong elements\n") ==
        "dir/native.2.out: line 2: \"CHECK FAILED: 12 wrong elements\"");
}

TEST_CASE("bench report: a malformed line is an error naming the file, the line and the problem") {
  const std::string good = "RESULT MPI_Reduce 8 0.4 100 0.3\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"RESULT MPI_Reduce 8 0.4 100\n", "line 2: malformed RESULT line (want RESULT <MPI_Reduce|MPI_Bcast|MPI_Allreduce>"},
      {"RESULT MPI_Reduce 8 x 100 0.3\n", "line 2: malformed RESULT line (median_us 'x' is not a non-negative"},
      {"RESULT MPI_Reduce -8 0.4 100 0.3\n", "line 2: malformed RESULT line (bytes '-8'"},
      {"RESULT MPI_Reduce 8 0.4 1.5 0.3\n", "(calls '1.5'"},
      {"RESULT MPI_Reduce 8 0.4 100 nan\n", "(min_us 'nan'"},
      {"RESULT MPI_Gather 8 0.4 100 0.3\n", "collective 'MPI_Gather' is none of MPI_Reduce, MPI_Bcast, MPI_Allreduce"},
      {"RESULT MPI_Reduce 8 0.5 100 0.3\n", "a second result for MPI_Reduce 8 bytes; the first is on line 1"},
      {"REFERENCE 8\n", "line 2: malformed REFERENCE line"},
      {"CHECK maybe\n", "line 2: malformed CHECK line"},
  };
  for (const auto& [line, expected] : cases) {
    INFO(line);
    const std::string message = error_of<InputError>(good + line);
    CHECK(message.rfind("dir/native.2.out: ", 0) == 0);
    CHECK(message.find(expected) != std::string::npos);
    CHECK(message.find('\n') == std::string::npos);  // one line
  }
  CHECK(error_of<InputError>("CHECK OK\n") == "dir/native.2.out: no RESULT line (did the benchmark finish?)");
}

TEST_CASE("bench report: a variant's time is the median over repeats") {
  CHECK_FALSE(median({}).has_value());
  CHECK(*median({5}) == 5);
  CHECK(*median({9, 1, 5}) == 5);
  CHECK(*median({4, 1, 3, 10}) == Approx(3.5));  // the mean of the middle two

  SECTION("odd count") {
    const Row row = only_row(aggregate(reduce_run({30, 10, 20}, {7, 5, 100})));
    CHECK(*row.native_us == Approx(20));
    CHECK(*row.canopy_us == Approx(7));  // one slow repeat does not move it
    CHECK(*row.speedup() == Approx(20.0 / 7));
  }
  SECTION("even count") {
    const Table t = aggregate(reduce_run({10, 40, 20, 30}, {1, 2, 3, 4}));
    const Row row = only_row(t);
    CHECK(*row.native_us == Approx(25));
    CHECK(*row.canopy_us == Approx(2.5));
    CHECK(t.repeats.at("native") == 4);
    CHECK(format_header(t).find("variants native, canopy; 4 repeats; 0 Canopy reports") != std::string::npos);
  }
}

TEST_CASE("bench report: the paired speedup is the median of each repeat's native / canopy") {
  // The machine is quick in repeat 1, slow through repeat 2 from its canopy run on and
  // through repeat 3: the medians compare native's quick runs with canopy's slow ones
  // and say 0.33x; two of the three pairs ran in one period each and say 1x.
  const Row drift = only_row(aggregate(reduce_run({10, 10, 30}, {10, 30, 30})));
  CHECK(*drift.speedup() == Approx(10.0 / 30));
  CHECK(*drift.paired() == Approx(1.0));
  const Row alike = only_row(aggregate(reduce_run({10, 40, 20}, {10, 40, 20})));
  CHECK(*alike.paired() == Approx(1.0));
  CHECK(*alike.speedup() == Approx(1.0));
  const Row shifted = only_row(aggregate(reduce_run({10, 11, 12}, {21, 22, 6})));
  CHECK(*shifted.speedup() == Approx(11.0 / 21));
  CHECK(*shifted.paired() == Approx(11.0 / 22));  // 10/21, 11/22, 12/6: the median
  // A repeat with one variant only pairs with nothing.
  const Row unpaired = only_row(aggregate(reduce_run({10, 20, 30}, {5})));
  CHECK(*unpaired.paired() == Approx(2.0));
  // In the summary, with the do-no-harm bound: 10/11, 20/19, 30/31, the median 0.968.
  const std::string summary = format_summary(aggregate(reduce_run({10, 20, 30}, {11, 19, 31})));
  CHECK(summary.find("paired (the median of each repeat's native/canopy): smallest 0.97\u00d7 at 4 KiB") !=
        std::string::npos);
  CHECK(summary.find("every size >= 0.97x native: no: 1 of 1 sizes below") != std::string::npos);
}

TEST_CASE("bench report: native against itself is the median of each repeat's native over the next's, at most 1") {
  // 10 -> 20 -> 30: each repeat's native over the next's, 0.5 and 0.667, the median 0.583.
  const Row rising = only_row(aggregate(reduce_run({10, 20, 30}, {10, 20, 30})));
  REQUIRE(rising.self());
  CHECK(*rising.self() == Approx((0.5 + 2.0 / 3) / 2));
  // The other way the ratios are over 1 (1.5, 2): the inverse of their median.
  const Row falling = only_row(aggregate(reduce_run({30, 20, 10}, {1, 1, 1})));
  CHECK(*falling.self() == Approx(1 / 1.75));
  // Runs alike: 1, whatever canopy did.
  CHECK(*only_row(aggregate(reduce_run({7, 7, 7}, {1, 2, 3}))).self() == Approx(1.0));
  // One native repeat: nothing to compare it with.
  CHECK_FALSE(only_row(aggregate(reduce_run({10}, {5, 6}))).self().has_value());
  const std::string summary = format_summary(aggregate(reduce_run({10, 20, 30}, {11, 19, 31})));
  CHECK(summary.find("native against itself (the median of each repeat's native/the next's, or its inverse): "
                     "smallest 0.58\u00d7 at 4 KiB") != std::string::npos);
}

TEST_CASE("bench report: Canopy's algorithm has the most calls over roots and reports") {
  RunData run = reduce_run({50}, {12});
  SECTION("over roots: flat has the largest row, binomial the most calls") {
    run.report_kinds = {kind("MPI_Reduce", 4096, 0, "flat", 50, 2e-5),
                        kind("MPI_Reduce", 4096, 0, "binomial", 45, 1e-5),
                        kind("MPI_Reduce", 4096, 1, "binomial", 15, 3e-5),
                        kind("MPI_Reduce", 4096, 0, "native", 3, std::nullopt),
                        kind("MPI_Bcast", 4096, 0, "chain", 500, 1e-3)};  // another collective
    run.reports = 1;
    const Row row = only_row(aggregate(run));
    REQUIRE(row.algorithm);
    CHECK(*row.algorithm == "binomial");
    // Weighted by calls: (45 x 10 µs + 15 x 30 µs) / 60, not the rows' plain mean (20 µs).
    REQUIRE(row.predicted_us);
    CHECK(*row.predicted_us == Approx(15));
    CHECK(*row.model_error_pct() == Approx(25));  // |15 - 12| / 12
  }
  SECTION("over reports: each alone would say chain once and flat once; together flat") {
    run.report_kinds = {kind("MPI_Reduce", 4096, 0, "chain", 10, 1e-5), kind("MPI_Reduce", 4096, 0, "flat", 8, 9e-6),
                        kind("MPI_Reduce", 4096, 0, "flat", 8, 9e-6)};
    run.reports = 2;
    const Row row = only_row(aggregate(run));
    CHECK(*row.algorithm == "flat");
    CHECK(*row.predicted_us == Approx(9));
    CHECK(*row.model_error_pct() == Approx(25));  // |9 - 12| / 12
  }
  SECTION("a tie goes to the first name alphabetically") {
    run.report_kinds = {kind("MPI_Reduce", 4096, 0, "flat", 8, 9e-6), kind("MPI_Reduce", 4096, 0, "chain", 8, 1e-5)};
    run.reports = 1;
    CHECK(*only_row(aggregate(run)).algorithm == "chain");
  }
  SECTION("native: no prediction, no model error") {
    run.report_kinds = {kind("MPI_Reduce", 4096, 0, "native", 100, std::nullopt),
                        kind("MPI_Reduce", 4096, 0, "flat", 3, 9e-6)};
    run.reports = 1;
    const Table t = aggregate(run);
    const Row row = only_row(t);
    CHECK(*row.algorithm == "native");
    CHECK_FALSE(row.predicted_us);
    CHECK_FALSE(row.model_error_pct());
    const std::string table = format_table(t);
    INFO(table);
    CHECK(std::regex_search(table, std::regex(R"(MPI_Reduce +4096 +4 KiB +50\.0 +12\.0 +4\.17.. +native +-\n)")));
  }
}

TEST_CASE("bench report: the learned model's prediction (CANOPY_LEARN) is the one scored, the plan's beside it, "
          "every size at least 0.97x native is said") {
  RunData run = reduce_run({50}, {12});
  ReportKind learned = kind("MPI_Reduce", 4096, 0, "binomial", 40, 20e-6);
  learned.predicted_learned_s = 11e-6;
  run.report_kinds = {learned};
  run.reports = 1;
  const Table t = aggregate(run);
  const Row row = only_row(t);
  CHECK(*row.predicted_us == Approx(11));
  CHECK(*row.predicted_before_us == Approx(20));
  CHECK(*row.model_error_pct() == Approx(100.0 / 12));      // |11 - 12| / 12
  CHECK(*row.model_error_before_pct() == Approx(800.0 / 12));  // |20 - 12| / 12
  const std::string summary = format_summary(t);
  INFO(summary);
  CHECK(summary.find("every size >= 0.97x native: yes (1 sizes)") != std::string::npos);
  CHECK(summary.find("(learned; before learning 66.7%)") != std::string::npos);
  // Canopy at 0.96x native at one size: said.
  const std::string slower = format_summary(aggregate(reduce_run({50}, {52.1})));
  CHECK(slower.find("every size >= 0.97x native: no: 1 of 1 sizes below") != std::string::npos);
}

TEST_CASE("bench report: without a report the algorithm and prediction are '?'") {
  const Table t = aggregate(reduce_run({50, 52, 48}, {12, 11, 13}));
  const Row row = only_row(t);
  CHECK_FALSE(row.algorithm);
  CHECK_FALSE(row.predicted_us);
  CHECK_FALSE(row.model_error_pct());
  const std::string table = format_table(t);
  INFO(table);
  CHECK(std::regex_search(table, std::regex(R"(MPI_Reduce +4096 +4 KiB +50\.0 +12\.0 +4\.17.. +\? +\?\n)")));
  // The CSV leaves both empty: unknown, as opposed to "native".
  CHECK(rows_to_csv(t).find("\nMPI_Reduce,4096,50,12,4.166666667,,,,") != std::string::npos);
  CHECK(format_summary(t).find("model error: none") != std::string::npos);
  // A report that does not cover this size says nothing about it either.
  RunData run = reduce_run({50}, {12});
  run.report_kinds = {kind("MPI_Reduce", 8, 0, "flat", 100, 1e-6)};
  run.reports = 1;
  CHECK_FALSE(only_row(aggregate(run)).algorithm);
}

namespace {

// Native, canopy, intercept and openmpi over two repeats; reduce and bcast at 8 B and
// 1 MiB; the reference in the native runs.
RunData full_run() {
  RunData run;
  for (int repeat : {1, 2}) {
    const double d = repeat == 1 ? -1 : 1;  // the two repeats straddle the values below
    const std::map<std::int64_t, double> reference = {{8, 0.05 + 0.01 * d}, {1048576, 200 + 10 * d}};
    run.outputs["native"][repeat] = output({{"MPI_Reduce", 8, 0.4 + 0.1 * d}, {"MPI_Reduce", 1048576, 1200 + 100 * d},
                                            {"MPI_Bcast", 8, 0.2}, {"MPI_Bcast", 1048576, 110}},
                                           reference);
    run.outputs["canopy"][repeat] = output({{"MPI_Reduce", 8, 0.5}, {"MPI_Reduce", 1048576, 300 + 20 * d},
                                            {"MPI_Bcast", 8, 0.25}, {"MPI_Bcast", 1048576, 100}});
    run.outputs["intercept"][repeat] = output({{"MPI_Reduce", 8, 0.5}, {"MPI_Reduce", 1048576, 1212},
                                               {"MPI_Bcast", 8, 0.3}, {"MPI_Bcast", 1048576, 110}});
    run.outputs["openmpi"][repeat] = output({{"MPI_Reduce", 8, 1.0}, {"MPI_Reduce", 1048576, 600},
                                             {"MPI_Bcast", 8, 0.5}, {"MPI_Bcast", 1048576, 80}});
  }
  run.report_kinds = {kind("MPI_Reduce", 8, 0, "flat", 100, 4e-7), kind("MPI_Reduce", 1048576, 0, "flat", 100, 2.4e-4),
                      kind("MPI_Bcast", 8, 0, "native", 100, std::nullopt),
                      kind("MPI_Bcast", 1048576, 0, "chain", 100, 1.1e-4)};
  run.reports = 1;
  return run;
}

RunData without_optional_variants() {
  RunData run = full_run();
  run.outputs.erase("intercept");
  run.outputs.erase("openmpi");
  return run;
}

}  // namespace

TEST_CASE("bench report: interception overhead, Open MPI and the reference") {
  const Table t = aggregate(full_run(), "runs/np2");
  CHECK(t.variants == std::vector<std::string>{"native", "canopy", "intercept", "openmpi"});
  CHECK(t.has_reference);
  REQUIRE(t.rows.size() == 4);
  // Sorted by collective, then bytes.
  CHECK(t.rows[0].collective == "MPI_Bcast");
  CHECK(t.rows[0].bytes == 8);
  CHECK(t.rows[3].collective == "MPI_Reduce");
  CHECK(t.rows[3].bytes == 1048576);
  const Row& big_reduce = t.rows[3];
  CHECK(*big_reduce.native_us == Approx(1200));
  CHECK(*big_reduce.canopy_us == Approx(300));
  CHECK(*big_reduce.intercept_overhead_pct() == Approx(1));   // 1212 / 1200 - 1
  CHECK(*big_reduce.canopy_over_openmpi() == Approx(0.5));    // 300 / 600
  CHECK(*big_reduce.reference_us == Approx(200));
  CHECK(*big_reduce.canopy_over_reference() == Approx(1.5));  // 300 / 200
  CHECK(*big_reduce.model_error_pct() == Approx(20));         // |240 - 300| / 300
  CHECK(*t.rows[0].intercept_overhead_pct() == Approx(50));   // bcast 8 B: 0.3 / 0.2 - 1
  CHECK_FALSE(t.rows[0].reference_us);                        // a broadcast reduces nothing

  const std::string table = format_table(t);
  INFO(table);
  CHECK(std::regex_search(table, std::regex(R"(MPI_Reduce +1048576 +1 MiB +1200\.0 +300\.0 +4\.00.. +flat +240\.0)"
                                            R"( +20\.0% +\+1\.0% +600\.0 +0\.50.. +200\.0 +1\.50..\n)")));
  // Fixed width: every row ends where the header's last column does (µ and × take one
  // column each).
  const std::string header = table.substr(0, table.find('\n'));
  CHECK(header.substr(header.size() - std::string("vs reference").size()) == "vs reference");
  const std::string last_reduce = table.substr(table.find("MPI_Reduce  1048576"));
  const std::string reduce_line = last_reduce.substr(0, last_reduce.find('\n'));
  auto columns = [](const std::string& s) {
    std::size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
  };
  CHECK(columns(reduce_line) == columns(header));

  const std::string summary = format_summary(t);
  INFO(summary);
  CHECK(summary.find("  MPI_Bcast\n    speedup: smallest 0.80\xc3\x97 at 8 B, largest 1.10\xc3\x97 at 1 MiB\n") !=
        std::string::npos);
  CHECK(summary.find("    model error: median 10.0% over 1 size\n") != std::string::npos);  // bcast 1 MiB
  CHECK(summary.find("    intercept overhead: largest +50.0% at 8 B (+100.0 ns a call)\n") != std::string::npos);
  CHECK(summary.find("    canopy / openmpi: worst 1.25\xc3\x97 at 1 MiB\n") != std::string::npos);
  CHECK(summary.find("  MPI_Reduce\n    speedup: smallest 0.80\xc3\x97 at 8 B, largest 4.00\xc3\x97 at 1 MiB\n") !=
        std::string::npos);
  CHECK(summary.find("    model error: median 20.0% over 2 sizes\n") != std::string::npos);  // 20% and 20%
  CHECK(summary.find("    canopy / reference: worst 10.00\xc3\x97 at 8 B\n") != std::string::npos);
  CHECK(format_header(t) ==
        "canopy-bench run runs/np2: variants native, canopy, intercept, openmpi; 2 repeats; 1 Canopy report "
        "(times: median over repeats of each run's time per call: its median, or its mean with --osu, --varying and --from-first)\n");

  // Without the optional variants their columns and summary lines go.
  const Table p = aggregate(without_optional_variants());
  CHECK(format_table(p).find("overhead") == std::string::npos);
  CHECK(format_table(p).find("openmpi") == std::string::npos);
  CHECK(format_summary(p).find("intercept") == std::string::npos);
  CHECK(format_summary(p).find("openmpi") == std::string::npos);
}

TEST_CASE("bench report: CSV has a fixed header and plain numbers") {
  const std::string csv = rows_to_csv(aggregate(full_run()));
  const std::string header =
      "collective,bytes,native_us,canopy_us,speedup,algorithm,predicted_us,model_error_pct,intercept_us,"
      "intercept_overhead_pct,openmpi_us,canopy_over_openmpi,reference_us,canopy_over_reference,saved_us,"
      "saved_speedup\n";
  INFO(csv);
  CHECK(csv.rfind(header, 0) == 0);
  CHECK(count(csv, "\n") == 5);
  CHECK(csv.find("\nMPI_Bcast,8,0.2,0.25,0.8,native,,,0.3,50,0.5,0.5,,,,\n") != std::string::npos);
  CHECK(csv.find("\nMPI_Reduce,1048576,1200,300,4,flat,240,20,1212,1,600,0.5,200,1.5,,\n") != std::string::npos);
  // The same header without the optional variants, their cells empty.
  const std::string plain_csv = rows_to_csv(aggregate(without_optional_variants()));
  CHECK(plain_csv.rfind(header, 0) == 0);
  CHECK(plain_csv.find("\nMPI_Bcast,8,0.2,0.25,0.8,native,,,,,,,,,,\n") != std::string::npos);
}

TEST_CASE("bench report: the saved variant, a tuning run's rules, beside auto") {
  RunData run = without_optional_variants();
  for (int repeat : {1, 2})
    run.outputs["saved"][repeat] = output({{"MPI_Reduce", 8, 0.4}, {"MPI_Reduce", 1048576, repeat == 1 ? 290 : 310},
                                           {"MPI_Bcast", 8, 0.2}, {"MPI_Bcast", 1048576, 100}});
  const Table t = aggregate(run, "runs/osu");
  CHECK(t.variants == std::vector<std::string>{"native", "canopy", "saved"});
  REQUIRE(t.rows.size() == 4);
  CHECK(*t.rows[3].saved_us == Approx(300));           // the median of 290 and 310
  CHECK(*t.rows[3].saved_speedup() == Approx(4));      // 1200 / 300
  CHECK(*t.rows[0].saved_speedup() == Approx(1));      // bcast 8 B: 0.2 / 0.2, where auto ran 0.8x
  const std::string table = format_table(t);
  INFO(table);
  CHECK(std::regex_search(table, std::regex(R"(saved ..s +speedup saved +reference)")));
  CHECK(std::regex_search(table, std::regex(R"(MPI_Bcast +8 +8 B +0\.20 +0\.25 +0\.80.. +native +- +0\.20 +1\.00..)")));
  CHECK(table.find("speedup saved = native / saved") != std::string::npos);
  const std::string summary = format_summary(t);
  INFO(summary);
  CHECK(summary.find("  MPI_Bcast\n    speedup: smallest 0.80\xc3\x97 at 8 B, largest 1.10\xc3\x97 at 1 MiB\n"
                     "    every size >= 0.97x native: no: 1 of 2 sizes below\n"
                     "    speedup saved: smallest 1.00\xc3\x97 at 8 B, largest 1.10\xc3\x97 at 1 MiB; every size >= "
                     "0.97x native: yes (2 sizes)\n") != std::string::npos);
  const std::string csv = rows_to_csv(t);
  CHECK(csv.find("\nMPI_Reduce,1048576,1200,300,4,flat,240,20,,,,,200,1.5,300,4\n") != std::string::npos);
  const std::string svg = plot_svg(t, "saved");
  CHECK(count(svg, "data-variant='saved'") == 2);
  CHECK(format_summary(aggregate(without_optional_variants())).find("saved") == std::string::npos);
}

TEST_CASE("bench report: the chart has a curve per variant per collective") {
  const std::string svg = plot_svg(aggregate(full_run()), "np2 & friends");
  CHECK(svg.rfind("<svg ", 0) == 0);
  CHECK(svg.find("<title>np2 &amp; friends</title>") != std::string::npos);
  CHECK(count(svg, "class='curve'") == 9);  // 4 variants x 2 collectives, and the reference
  for (const char* collective : {"MPI_Reduce", "MPI_Bcast"})
    for (const char* variant : {"native", "canopy", "intercept", "openmpi"}) {
      INFO(collective << " " << variant);
      const std::string curve = std::string("class='curve' data-collective='") + collective + "' data-variant='" +
                                variant + "' data-bytes='8 1048576'";
      CHECK(count(svg, curve) == 1);
    }
  // The reference: dashed, in the reduce panel only, through the native runs' medians.
  CHECK(svg.find("data-collective='MPI_Reduce' data-variant='reference' data-bytes='8 1048576' data-us='0.05 200' "
                 "stroke-dasharray='6 3'") != std::string::npos);
  CHECK(svg.find("data-collective='MPI_Bcast' data-variant='reference'") == std::string::npos);
  CHECK(svg.find("data-variant='canopy' data-bytes='8 1048576' data-us='0.5 300'") != std::string::npos);
  // A legend row per curve, and both panels titled.
  for (const char* label : {">native (the MPI&apos;s own)<", ">canopy (auto)<", ">openmpi (Open MPI&apos;s own)<",
                            ">reference (memcpy + Reduce_local)<", ">MPI_Reduce<", ">MPI_Bcast<"})
    CHECK(svg.find(label) != std::string::npos);

  // Native and canopy only: two curves per panel.
  RunData plain = without_optional_variants();
  for (auto& entry : plain.outputs["native"]) entry.second.reference_us.clear();
  const std::string plain_svg = plot_svg(aggregate(plain), "t");
  CHECK(count(plain_svg, "class='curve'") == 4);
  CHECK(count(plain_svg, "data-variant='native'") == 2);
  CHECK(count(plain_svg, "data-variant='canopy'") == 2);
}

TEST_CASE("bench report: sizes read as people write them") {
  CHECK(human_bytes(0) == "0 B");
  CHECK(human_bytes(8) == "8 B");
  CHECK(human_bytes(1000) == "1000 B");
  CHECK(human_bytes(1024) == "1 KiB");
  CHECK(human_bytes(65536) == "64 KiB");
  CHECK(human_bytes(1536) == "1.5 KiB");
  CHECK(human_bytes(16 << 20) == "16 MiB");
  CHECK(human_bytes(std::int64_t{3} << 30) == "3 GiB");
}

TEST_CASE("bench report: Canopy's JSON report is read, a bad one is an error naming the file") {
  const json report = {
      {"canopy_version", "0.1.0"},
      {"kinds",
       {{{"collective", "reduce"}, {"comm_size", 4}, {"root", 1}, {"bytes", 65536}, {"algorithm", "binomial"},
         {"segments", 2}, {"calls", 37}, {"measured_s", {{"min", 1e-5}, {"mean", 2e-5}, {"max", 3e-5}}},
         {"predicted_s", 1.5e-5}},
        {{"collective", "bcast"}, {"comm_size", 4}, {"root", 0}, {"bytes", 8}, {"algorithm", "native"},
         {"segments", 1}, {"calls", 5}, {"reason", "auto-chose-native"}}}}};
  const std::vector<ReportKind> kinds = parse_canopy_report(report.dump(), "r.json");
  REQUIRE(kinds.size() == 2);
  CHECK(kinds[0].collective == "MPI_Reduce");
  CHECK(kinds[0].root == 1);
  CHECK(kinds[0].bytes == 65536);
  CHECK(kinds[0].algorithm == "binomial");
  CHECK(kinds[0].calls == 37);
  CHECK(*kinds[0].predicted_s == Approx(1.5e-5));
  CHECK(kinds[1].collective == "MPI_Bcast");
  CHECK_FALSE(kinds[1].predicted_s);

  CHECK_THROWS_WITH(parse_canopy_report("{\"kinds\": [", "d/canopy.1.report.json"),
                    Catch::StartsWith("d/canopy.1.report.json: not JSON"));
  CHECK_THROWS_WITH(parse_canopy_report("{\"rows\": []}", "d/canopy.1.report.json"),
                    "d/canopy.1.report.json: not a Canopy JSON report (no \"kinds\" array)");
  CHECK_THROWS_WITH(
      parse_canopy_report(R"({"kinds": [{"collective": "reduce", "bytes": 8, "algorithm": "flat"}]})", "r.json"),
      Catch::StartsWith("r.json: kinds[0]: ") && Catch::Contains("calls"));
}

TEST_CASE("bench report: a run directory is read by file name") {
  TempDir dir;
  const std::string d = dir.path.string();
  CHECK_THROWS_WITH(load_run(d + "/missing"), d + "/missing: no such directory");
  CHECK_THROWS_WITH(load_run(d), d + ": no native.<repeat>.out file (is this a canopy-bench-run directory?)");
  dir.write("native.1.out", "RESULT MPI_Reduce 8 0.4 100 0.3\nCHECK OK\n");
  dir.write("native.2.out", "RESULT MPI_Reduce 8 0.6 100 0.3\nCHECK OK\n");
  CHECK_THROWS_WITH(load_run(d), d + ": no canopy.<repeat>.out file (is this a canopy-bench-run directory?)");
  dir.write("canopy.1.out", "RESULT MPI_Reduce 8 0.3 100 0.2\nCHECK OK\n");
  dir.write("canopy.2.out", "RESULT MPI_Reduce 8 0.3 100 0.2\nCHECK OK\n");
  // Not a variant, not a repeat, not canopy's report: ignored.
  dir.write("notes.txt", "RESULT nonsense\n");
  dir.write("extra.1.out", "RESULT nonsense\n");
  dir.write("native.x.out", "RESULT nonsense\n");
  dir.write("intercept.1.report.json", "not JSON");
  RunData run = load_run(d);
  CHECK(run.outputs.size() == 2);
  CHECK(run.outputs["native"].size() == 2);
  CHECK(run.reports == 0);
  CHECK(*only_row(aggregate(run)).native_us == Approx(0.5));

  dir.write("canopy.2.report.json",
            R"({"kinds": [{"collective": "reduce", "root": 0, "bytes": 8, "algorithm": "flat", "calls": 9,
                "predicted_s": 2.5e-7}]})");
  run = load_run(d);
  CHECK(run.reports == 1);
  const Row row = only_row(aggregate(run));
  CHECK(*row.algorithm == "flat");
  CHECK(*row.predicted_us == Approx(0.25));

  dir.write("canopy.3.out", "RESULT MPI_Reduce 8 0.3 100 0.2\nRESULT MPI_Bcast 8 y 100 0.2\n");
  CHECK_THROWS_WITH(load_run(d), Catch::StartsWith(d + "/canopy.3.out: line 2: malformed RESULT line"));
  dir.write("canopy.3.out", "RESULT MPI_Reduce 8 0.3 100 0.2\nCHECK FAILED rank 1 got 5\n");
  CHECK_THROWS_AS(load_run(d), CheckFailed);
  CHECK_THROWS_WITH(load_run(d), d + "/canopy.3.out: line 2: \"CHECK FAILED rank 1 got 5\"");
}

TEST_CASE("bench report: the checked-in fixture (tests/tools/bench_fixture)") {
  const Table t = aggregate(load_run(CANOPY_SOURCE_DIR "/tests/tools/bench_fixture"));
  CHECK(t.variants.size() == 4);
  CHECK(t.repeats.at("canopy") == 3);
  CHECK(t.reports == 2);  // repeat 3 wrote none
  REQUIRE(t.rows.size() == 6);
  const Row& reduce_64k = t.rows[4];
  CHECK(reduce_64k.collective == "MPI_Reduce");
  CHECK(reduce_64k.bytes == 65536);
  CHECK(*reduce_64k.native_us == Approx(96));
  CHECK(*reduce_64k.algorithm == "binomial");  // over roots 0 and 1, against flat's larger single rows
  CHECK(*reduce_64k.predicted_us == Approx(39));
  CHECK(*reduce_64k.model_error_pct() == Approx(2.5));
  CHECK(*t.rows[0].algorithm == "native");  // bcast 8 B: auto kept native
}
