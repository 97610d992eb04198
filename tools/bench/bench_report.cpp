#include "tools/bench/bench_report.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "tools/common/svg.h"

namespace canopy::tools::bench {

namespace fs = std::filesystem;
using nlohmann::json;

const std::vector<std::string>& known_variants() {
  static const std::vector<std::string> variants = {"native", "canopy", "saved", "intercept", "openmpi"};
  return variants;
}

namespace {

const char* const kReduce = "MPI_Reduce";
const char* const kBcast = "MPI_Bcast";
const char* const kAllreduce = "MPI_Allreduce";

std::vector<std::string> split_words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// The line as messages quote it: long lines are cut, so the message stays one line.
std::string quote_line(const std::string& line) {
  constexpr std::size_t kMax = 100;
  return "\"" + (line.size() > kMax ? line.substr(0, kMax) + "..." : line) + "\"";
}

std::optional<std::int64_t> parse_count(const std::string& word) {
  if (word.empty() || word.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(word.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return std::nullopt;
  return v;
}

// A time: finite and not negative ("nan", "inf" and "-1" are all malformed).
std::optional<double> parse_time(const std::string& word) {
  if (word.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(word.c_str(), &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(v) || v < 0) return std::nullopt;
  return v;
}

// A number for CSV and data attributes: no unit, no padding, and ten significant
// digits, which keep every digit a timer gives without 0.1 + 0.2's tail.
std::string plain_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

std::string printf_string(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// Enough digits to tell 0.25 µs from 0.3 µs, without decimals that are noise at 10 ms.
std::string format_us(double us) {
  if (us < 10) return printf_string("%.2f", us);
  if (us < 100000) return printf_string("%.1f", us);
  return printf_string("%.0f", us);
}

std::string format_ratio(double r) { return printf_string("%.2f", r) + "\xc3\x97"; }  // ×
std::string format_pct(double p) { return printf_string("%.1f", p) + "%"; }
std::string format_signed_pct(double p) { return printf_string("%+.1f", p) + "%"; }

std::optional<double> ratio(const std::optional<double>& a, const std::optional<double>& b) {
  if (!a || !b || !(*b > 0)) return std::nullopt;
  return *a / *b;
}

}  // namespace

BenchOutput parse_bench_output(const std::string& text, const std::string& source) {
  BenchOutput out;
  std::map<std::pair<std::string, std::int64_t>, int> result_lines;  // for repeated RESULT lines
  std::istringstream in(text);
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::vector<std::string> w = split_words(line);
    if (w.empty()) continue;
    const std::string where = source + ": line " + std::to_string(number) + ": ";
    auto malformed = [&](const std::string& problem) {
      return InputError(where + "malformed " + w[0] + " line (" + problem + "): " + quote_line(line));
    };
    if (w[0] == "RESULT") {
      if (w.size() != 6)
        throw malformed("want RESULT <MPI_Reduce|MPI_Bcast|MPI_Allreduce> <bytes> <median_us> <calls> <min_us>");
      Result r;
      r.line = number;
      r.collective = w[1];
      if (r.collective != kReduce && r.collective != kBcast && r.collective != kAllreduce)
        throw malformed("collective '" + w[1] + "' is none of MPI_Reduce, MPI_Bcast, MPI_Allreduce");
      const auto bytes = parse_count(w[2]);
      if (!bytes) throw malformed("bytes '" + w[2] + "' is not a non-negative integer");
      const auto median_us = parse_time(w[3]);
      if (!median_us) throw malformed("median_us '" + w[3] + "' is not a non-negative number");
      const auto calls = parse_count(w[4]);
      if (!calls || *calls > std::numeric_limits<long>::max())
        throw malformed("calls '" + w[4] + "' is not a non-negative integer");
      const auto min_us = parse_time(w[5]);
      if (!min_us) throw malformed("min_us '" + w[5] + "' is not a non-negative number");
      r.bytes = *bytes;
      r.median_us = *median_us;
      r.calls = static_cast<long>(*calls);
      r.min_us = *min_us;
      // Two results for one size would be averaged away silently: say so instead.
      const auto [it, fresh] = result_lines.emplace(std::make_pair(r.collective, r.bytes), number);
      if (!fresh)
        throw malformed("a second result for " + r.collective + " " + std::to_string(r.bytes) +
                        " bytes; the first is on line " + std::to_string(it->second));
      out.results.push_back(r);
    } else if (w[0] == "REFERENCE") {
      if (w.size() != 3) throw malformed("want REFERENCE <bytes> <us>");
      const auto bytes = parse_count(w[1]);
      if (!bytes) throw malformed("bytes '" + w[1] + "' is not a non-negative integer");
      const auto us = parse_time(w[2]);
      if (!us) throw malformed("us '" + w[2] + "' is not a non-negative number");
      if (!out.reference_us.emplace(*bytes, *us).second)
        throw malformed("a second reference for " + std::to_string(*bytes) + " bytes");
    } else if (w[0] == "CHECK") {
      // "FAILED" may come with its colon attached ("CHECK FAILED: 3 wrong elements").
      if (w.size() >= 2 && w[1].rfind("FAILED", 0) == 0) throw CheckFailed(where + quote_line(line));
      if (w.size() != 2 || w[1] != "OK") throw malformed("want CHECK OK or CHECK FAILED ...");
      out.check_ok = true;
    }
  }
  // An output without results is a run that died before its first size.
  if (out.results.empty()) throw InputError(source + ": no RESULT line (did the benchmark finish?)");
  return out;
}

std::vector<ReportKind> parse_canopy_report(const std::string& text, const std::string& source) {
  json report;
  try {
    report = json::parse(text);
  } catch (const json::exception& e) {
    throw InputError(source + ": not JSON: " + e.what());
  }
  if (!report.is_object() || !report.contains("kinds") || !report["kinds"].is_array())
    throw InputError(source + ": not a Canopy JSON report (no \"kinds\" array)");
  std::vector<ReportKind> kinds;
  const json& rows = report["kinds"];
  for (std::size_t i = 0; i < rows.size(); ++i) {
    try {
      const json& row = rows[i];
      const std::string collective = row.at("collective").get<std::string>();
      ReportKind k;
      if (collective == "reduce") k.collective = kReduce;
      else if (collective == "bcast") k.collective = kBcast;
      else if (collective == "allreduce") k.collective = kAllreduce;
      else continue;  // a collective the benchmark does not time
      k.bytes = row.at("bytes").get<std::int64_t>();
      k.root = row.value("root", 0);
      k.algorithm = row.at("algorithm").get<std::string>();
      k.calls = row.at("calls").get<long>();
      if (row.contains("predicted_s")) k.predicted_s = row["predicted_s"].get<double>();
      if (row.contains("predicted_learned_s")) k.predicted_learned_s = row["predicted_learned_s"].get<double>();
      kinds.push_back(k);
    } catch (const json::exception& e) {
      throw InputError(source + ": kinds[" + std::to_string(i) + "]: " + e.what());
    }
  }
  return kinds;
}

namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string() + ": cannot read: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// "<variant>.<repeat>.<suffix>" with a known variant and a repeat number.
std::optional<std::pair<std::string, int>> parse_name(const std::string& name, const std::string& suffix) {
  const std::string tail = "." + suffix;
  if (name.size() <= tail.size() || name.compare(name.size() - tail.size(), tail.size(), tail) != 0)
    return std::nullopt;
  const std::string stem = name.substr(0, name.size() - tail.size());
  const std::size_t dot = stem.rfind('.');
  if (dot == std::string::npos) return std::nullopt;
  const std::string variant = stem.substr(0, dot);
  const auto repeat = parse_count(stem.substr(dot + 1));
  const auto& known = known_variants();
  if (!repeat || *repeat > std::numeric_limits<int>::max() ||
      std::find(known.begin(), known.end(), variant) == known.end())
    return std::nullopt;
  return std::make_pair(variant, static_cast<int>(*repeat));
}

}  // namespace

RunData load_run(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw InputError(dir + ": no such directory");
  // Sorted, so that of several bad files the same one is named every time.
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_regular_file()) names.push_back(entry.path().filename().string());
  if (ec) throw InputError(dir + ": cannot list: " + ec.message());
  std::sort(names.begin(), names.end());

  RunData run;
  for (const std::string& name : names) {
    const fs::path path = fs::path(dir) / name;
    if (const auto out = parse_name(name, "out")) {
      run.outputs[out->first][out->second] = parse_bench_output(read_file(path), path.string());
    } else if (const auto report = parse_name(name, "report.json"); report && report->first == "canopy") {
      const std::vector<ReportKind> kinds = parse_canopy_report(read_file(path), path.string());
      run.report_kinds.insert(run.report_kinds.end(), kinds.begin(), kinds.end());
      ++run.reports;
    }
  }
  for (const char* required : {"native", "canopy"})
    if (!run.outputs.count(required))
      throw InputError(dir + ": no " + required + ".<repeat>.out file (is this a canopy-bench-run directory?)");
  return run;
}

std::optional<double> Row::speedup() const { return ratio(native_us, canopy_us); }
std::optional<double> Row::saved_speedup() const { return ratio(native_us, saved_us); }

std::optional<double> Row::model_error_before_pct() const {
  if (!predicted_before_us || !canopy_us || *canopy_us <= 0) return std::nullopt;
  return std::abs(*predicted_before_us - *canopy_us) / *canopy_us * 100;
}

std::optional<double> Row::model_error_pct() const {
  if (!predicted_us || !canopy_us || !(*canopy_us > 0)) return std::nullopt;
  return std::abs(*predicted_us - *canopy_us) / *canopy_us * 100;
}

std::optional<double> Row::intercept_overhead_pct() const {
  const auto r = ratio(intercept_us, native_us);
  if (!r) return std::nullopt;
  return (*r - 1) * 100;
}

std::optional<double> Row::canopy_over_openmpi() const { return ratio(canopy_us, openmpi_us); }
std::optional<double> Row::canopy_over_reference() const { return ratio(canopy_us, reference_us); }

bool Table::has(const std::string& variant) const {
  return std::find(variants.begin(), variants.end(), variant) != variants.end();
}

std::optional<double> median(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

Table aggregate(const RunData& run, const std::string& dir) {
  Table table;
  table.dir = dir;
  table.reports = run.reports;
  for (const std::string& v : known_variants()) {
    const auto it = run.outputs.find(v);
    if (it == run.outputs.end()) continue;
    table.variants.push_back(v);
    table.repeats[v] = static_cast<int>(it->second.size());
  }

  using Key = std::pair<std::string, std::int64_t>;  // (collective, bytes): a row
  std::map<Key, std::map<std::string, std::vector<double>>> samples;  // row -> variant -> one value per repeat
  std::map<Key, std::map<int, std::pair<double, double>>> pairs;      // row -> repeat -> (native, canopy)
  for (const auto& [variant, repeats] : run.outputs)
    for (const auto& [repeat, output] : repeats)
      for (const Result& r : output.results) {
        samples[{r.collective, r.bytes}][variant].push_back(r.median_us);
        if (variant == "native") pairs[{r.collective, r.bytes}][repeat].first = r.median_us;
        if (variant == "canopy") pairs[{r.collective, r.bytes}][repeat].second = r.median_us;
      }

  // The reference comes from the native runs: the same MPI library as the canopy
  // runs (Canopy does not intercept MPI_Reduce_local), measured under no preload.
  std::map<std::int64_t, std::vector<double>> reference;
  if (const auto native = run.outputs.find("native"); native != run.outputs.end())
    for (const auto& [repeat, output] : native->second)
      for (const auto& [bytes, us] : output.reference_us) reference[bytes].push_back(us);

  // Per row and algorithm: calls, and calls-weighted prediction over the rows with one.
  struct Tally {
    long calls = 0;
    double weighted_predicted_s = 0;
    long predicted_calls = 0;
    double weighted_learned_s = 0;
    long learned_calls = 0;
  };
  std::map<Key, std::map<std::string, Tally>> tallies;
  for (const ReportKind& k : run.report_kinds) {
    Tally& t = tallies[{k.collective, k.bytes}][k.algorithm];
    t.calls += k.calls;
    if (k.predicted_s) {
      t.weighted_predicted_s += *k.predicted_s * static_cast<double>(k.calls);
      t.predicted_calls += k.calls;
    }
    if (k.predicted_learned_s) {
      t.weighted_learned_s += *k.predicted_learned_s * static_cast<double>(k.calls);
      t.learned_calls += k.calls;
    }
  }

  for (const auto& entry : samples) {  // std::map: by collective, then bytes
    // Not a structured binding: C++17 lambdas cannot capture one (clang refuses).
    const auto& key = entry.first;
    const auto& by_variant = entry.second;
    Row row;
    row.collective = key.first;
    row.bytes = key.second;
    auto value = [&](const char* variant) -> std::optional<double> {
      const auto it = by_variant.find(variant);
      return it == by_variant.end() ? std::nullopt : median(it->second);
    };
    row.native_us = value("native");
    row.canopy_us = value("canopy");
    row.saved_us = value("saved");
    row.intercept_us = value("intercept");
    row.openmpi_us = value("openmpi");
    if (const auto it = pairs.find(key); it != pairs.end()) {
      std::vector<double> ratios;
      for (const auto& [repeat, times] : it->second)
        if (times.first > 0 && times.second > 0) ratios.push_back(times.first / times.second);
      row.paired_speedup = median(ratios);
      std::vector<double> natives;  // by repeat (a std::map: in order)
      for (const auto& [repeat, times] : it->second)
        if (times.first > 0) natives.push_back(times.first);
      std::vector<double> steps;
      for (std::size_t i = 0; i + 1 < natives.size(); ++i) steps.push_back(natives[i] / natives[i + 1]);
      if (const auto m = median(steps)) row.native_self = std::min(*m, 1 / *m);
    }
    if (row.collective == kReduce)
      if (const auto it = reference.find(row.bytes); it != reference.end()) {
        row.reference_us = median(it->second);
        table.has_reference = true;
      }
    if (const auto it = tallies.find(key); it != tallies.end()) {
      // Auto's trials leave a few calls under each candidate; what it kept has the most.
      // Ties go to the first name alphabetically, so the choice does not depend on order.
      const std::pair<const std::string, Tally>* best = nullptr;
      for (const auto& entry : it->second)
        if (!best || entry.second.calls > best->second.calls) best = &entry;
      row.algorithm = best->first;
      if (best->first != "native" && best->second.predicted_calls > 0)
        row.predicted_us = best->second.weighted_predicted_s / static_cast<double>(best->second.predicted_calls) * 1e6;
      if (best->first != "native" && best->second.learned_calls > 0) {
        row.predicted_before_us = row.predicted_us;
        row.predicted_us = best->second.weighted_learned_s / static_cast<double>(best->second.learned_calls) * 1e6;
      }
    }
    table.rows.push_back(row);
  }
  return table;
}

std::string human_bytes(std::int64_t bytes) {
  const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  int unit = 0;
  double v = static_cast<double>(bytes);
  while (unit < 4 && v >= 1024) v /= 1024, ++unit;
  if (v == std::floor(v)) return printf_string("%.0f", v) + " " + units[unit];
  return printf_string("%.1f", v) + " " + units[unit];
}

std::string format_header(const Table& table) {
  std::string variants, repeats;
  bool same = true;
  for (const std::string& v : table.variants) {
    variants += (variants.empty() ? "" : ", ") + v;
    repeats += (repeats.empty() ? "" : ", ") + v + " " + std::to_string(table.repeats.at(v));
    same = same && table.repeats.at(v) == table.repeats.at(table.variants.front());
  }
  const int n = table.variants.empty() ? 0 : table.repeats.at(table.variants.front());
  return "canopy-bench run" + (table.dir.empty() ? std::string() : " " + table.dir) + ": variants " + variants +
         "; " + (same ? std::to_string(n) + (n == 1 ? " repeat" : " repeats") : "repeats " + repeats) + "; " +
         std::to_string(table.reports) + " Canopy report" + (table.reports == 1 ? "" : "s") +
         " (times: median over repeats of each run's time per call: its median, or its mean with --osu, --varying and --from-first)\n";
}

namespace {

// Display width: UTF-8 continuation bytes take no column (µ, ×).
std::size_t display_width(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

struct Column {
  Column(std::string header, bool right = true) : header(std::move(header)), right(right) {}
  std::string header;
  bool right;  // numbers align right, words left
  std::vector<std::string> cells;
};

std::string cell_or(const std::optional<double>& v, std::string (*format)(double), const std::string& missing) {
  return v ? format(*v) : missing;
}

std::string render(const std::vector<Column>& columns, std::size_t rows) {
  std::vector<std::size_t> widths;
  for (const Column& c : columns) {
    std::size_t w = display_width(c.header);
    for (const std::string& cell : c.cells) w = std::max(w, display_width(cell));
    widths.push_back(w);
  }
  auto line = [&](auto cell_of) {
    std::string out;
    for (std::size_t i = 0; i < columns.size(); ++i) {
      const std::string cell = cell_of(columns[i]);
      const std::string fill(widths[i] - display_width(cell), ' ');
      out += (i ? "  " : "") + (columns[i].right ? fill + cell : cell + fill);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line([](const Column& c) { return c.header; });
  for (std::size_t r = 0; r < rows; ++r) out += line([r](const Column& c) { return c.cells[r]; });
  return out;
}

}  // namespace

std::string format_table(const Table& table) {
  std::vector<Column> columns = {{"collective", false}, {"bytes"},        {"size"},
                                 {"native \xc2\xb5s"},  {"canopy \xc2\xb5s"}, {"speedup"},
                                 {"algorithm", false},  {"predicted \xc2\xb5s"}, {"model err"}};
  const bool saved = table.has("saved"), intercept = table.has("intercept"), openmpi = table.has("openmpi");
  if (saved) {
    columns.push_back({"saved \xc2\xb5s"});
    columns.push_back({"speedup saved"});
  }
  if (intercept) columns.push_back({"overhead"});
  if (openmpi) {
    columns.push_back({"openmpi \xc2\xb5s"});
    columns.push_back({"vs openmpi"});
  }
  if (table.has_reference) {
    columns.push_back({"reference \xc2\xb5s"});
    columns.push_back({"vs reference"});
  }
  for (const Row& row : table.rows) {
    std::vector<std::string> cells = {row.collective,
                                      std::to_string(row.bytes),
                                      human_bytes(row.bytes),
                                      cell_or(row.native_us, format_us, "-"),
                                      cell_or(row.canopy_us, format_us, "-"),
                                      cell_or(row.speedup(), format_ratio, "-"),
                                      row.algorithm ? *row.algorithm : "?",
                                      !row.algorithm ? "?" : cell_or(row.predicted_us, format_us, "-"),
                                      cell_or(row.model_error_pct(), format_pct, "")};
    if (saved) {
      cells.push_back(cell_or(row.saved_us, format_us, "-"));
      cells.push_back(cell_or(row.saved_speedup(), format_ratio, "-"));
    }
    if (intercept) cells.push_back(cell_or(row.intercept_overhead_pct(), format_signed_pct, "-"));
    if (openmpi) {
      cells.push_back(cell_or(row.openmpi_us, format_us, "-"));
      cells.push_back(cell_or(row.canopy_over_openmpi(), format_ratio, "-"));
    }
    if (table.has_reference) {
      cells.push_back(cell_or(row.reference_us, format_us, ""));
      cells.push_back(cell_or(row.canopy_over_reference(), format_ratio, ""));
    }
    for (std::size_t i = 0; i < columns.size(); ++i) columns[i].cells.push_back(cells[i]);
  }
  std::string out = render(columns, table.rows.size());
  // What the derived columns mean, since their headers are short.
  out += "speedup = native / canopy; model err = |predicted - canopy| / canopy";
  if (saved) out += "; speedup saved = native / saved";
  if (intercept) out += "; overhead = intercept / native - 1";
  if (openmpi) out += "; vs openmpi = canopy / openmpi";
  if (table.has_reference) out += "; vs reference = canopy / (memcpy + MPI_Reduce_local)";
  return out + "\n";
}

std::string format_summary(const Table& table) {
  std::set<std::string> collectives;
  for (const Row& row : table.rows) collectives.insert(row.collective);
  std::string out = "summary\n";
  for (const std::string& collective : collectives) {
    // The row where `value` is smallest (or largest), with its value.
    auto extreme = [&](auto value, bool largest) -> std::optional<std::pair<double, std::int64_t>> {
      std::optional<std::pair<double, std::int64_t>> best;
      for (const Row& row : table.rows) {
        if (row.collective != collective) continue;
        const std::optional<double> v = (row.*value)();
        if (v && (!best || (largest ? *v > best->first : *v < best->first))) best = std::make_pair(*v, row.bytes);
      }
      return best;
    };
    auto at = [](const std::pair<double, std::int64_t>& p, std::string (*format)(double)) {
      return format(p.first) + " at " + human_bytes(p.second);
    };
    out += "  " + collective + "\n";
    const auto slowest = extreme(&Row::speedup, false), fastest = extreme(&Row::speedup, true);
    out += "    speedup: " +
           (slowest ? "smallest " + at(*slowest, format_ratio) + ", largest " + at(*fastest, format_ratio)
                    : std::string("none (no size has both native and canopy times)")) +
           "\n";
    // The "do no harm" bound, by `value`: no size slower than 0.97x native.
    auto bound = [&](auto value) {
      int below = 0, sizes = 0;
      for (const Row& row : table.rows)
        if (row.collective == collective)
          if (const auto s = (row.*value)()) ++sizes, below += *s < 0.97;
      return "every size >= 0.97x native: " +
             (below == 0 ? "yes (" + std::to_string(sizes) + " sizes)"
                         : "no: " + std::to_string(below) + " of " + std::to_string(sizes) + " sizes below");
    };
    if (slowest) out += "    " + bound(&Row::speedup) + "\n";
    // With the rules a tuning run saved (CANOPY_SAVE_RULES): the same two lines.
    if (const auto low = extreme(&Row::saved_speedup, false)) {
      const auto high = extreme(&Row::saved_speedup, true);
      out += "    speedup saved: smallest " + at(*low, format_ratio) + ", largest " + at(*high, format_ratio) + "; " +
             bound(&Row::saved_speedup) + "\n";
    }
    // The same from each repeat's pair of runs (Row::paired_speedup).
    if (const auto low = extreme(&Row::paired, false)) {
      const auto high = extreme(&Row::paired, true);
      out += "    paired (the median of each repeat's native/canopy): smallest " + at(*low, format_ratio) +
             ", largest " + at(*high, format_ratio) + "; " + bound(&Row::paired) + "\n";
    }
    // This machine's noise between runs, on the same scale (Row::native_self).
    if (const auto low = extreme(&Row::self, false))
      out += "    native against itself (the median of each repeat's native/the next's, or its inverse): smallest " +
             at(*low, format_ratio) + "\n";
    std::vector<double> errors;
    for (const Row& row : table.rows)
      if (row.collective == collective)
        if (const auto e = row.model_error_pct()) errors.push_back(*e);
    std::vector<double> before;
    for (const Row& row : table.rows)
      if (row.collective == collective)
        if (const auto e = row.model_error_before_pct()) before.push_back(*e);
    out += "    model error: " +
           (errors.empty() ? std::string("none (no prediction: no report, or native only)")
                           : "median " + format_pct(*median(errors)) + " over " + std::to_string(errors.size()) +
                                 (errors.size() == 1 ? " size" : " sizes") +
                                 (before.empty() ? "" : " (learned; before learning " + format_pct(*median(before)) + ")")) +
           "\n";
    if (const auto worst = extreme(&Row::intercept_overhead_pct, true)) {
      // And in time: what interception adds to a call where native MPI runs anyway.
      double ns = 0;
      for (const Row& row : table.rows)
        if (row.collective == collective && row.bytes == worst->second && row.intercept_us && row.native_us)
          ns = (*row.intercept_us - *row.native_us) * 1e3;
      char text[48];
      std::snprintf(text, sizeof text, " (%+.1f ns a call)", ns);
      out += "    intercept overhead: largest " + at(*worst, format_signed_pct) + text + "\n";
    }
    if (const auto worst = extreme(&Row::canopy_over_openmpi, true))
      out += "    canopy / openmpi: worst " + at(*worst, format_ratio) + "\n";
    if (const auto worst = extreme(&Row::canopy_over_reference, true))
      out += "    canopy / reference: worst " + at(*worst, format_ratio) + "\n";
  }
  return out;
}

std::string rows_to_csv(const Table& table) {
  std::string out =
      "collective,bytes,native_us,canopy_us,speedup,algorithm,predicted_us,model_error_pct,intercept_us,"
      "intercept_overhead_pct,openmpi_us,canopy_over_openmpi,reference_us,canopy_over_reference,saved_us,saved_speedup\n";
  auto number = [](const std::optional<double>& v) { return v ? plain_number(*v) : std::string(); };
  for (const Row& row : table.rows) {
    const std::vector<std::string> cells = {row.collective,
                                            std::to_string(row.bytes),
                                            number(row.native_us),
                                            number(row.canopy_us),
                                            number(row.speedup()),
                                            row.algorithm.value_or(""),
                                            number(row.predicted_us),
                                            number(row.model_error_pct()),
                                            number(row.intercept_us),
                                            number(row.intercept_overhead_pct()),
                                            number(row.openmpi_us),
                                            number(row.canopy_over_openmpi()),
                                            number(row.reference_us),
                                            number(row.canopy_over_reference()),
                                            number(row.saved_us),
                                            number(row.saved_speedup())};
    std::string line;
    for (const std::string& cell : cells) {
      // Algorithm names are plain words; quote anyway should one ever hold a comma.
      const bool quote = cell.find_first_of(",\"\n") != std::string::npos;
      std::string text = cell;
      if (quote) {
        text.clear();
        for (char c : cell) text += c == '"' ? std::string("\"\"") : std::string(1, c);
        text = "\"" + text + "\"";
      }
      line += (line.empty() ? "" : ",") + text;
    }
    out += line + "\n";
  }
  return out;
}

namespace {

// How each curve looks; the legend names it.
struct CurveStyle {
  std::string variant;  // or "reference"
  std::string label;
  std::string colour;
  std::string dash;
};

std::vector<CurveStyle> curve_styles(const Table& table) {
  std::vector<CurveStyle> styles;
  for (const std::string& v : table.variants) {
    if (v == "native") styles.push_back({v, "native (the MPI's own)", svg::palette(0), ""});
    else if (v == "canopy") styles.push_back({v, "canopy (auto)", svg::palette(1), ""});
    else if (v == "saved") styles.push_back({v, "saved (Canopy, a tuning run's rules)", svg::palette(1), "8 3"});
    // Dotted: it should lie on native, which then still shows through.
    else if (v == "intercept")
      styles.push_back({v, "intercept (Canopy, native algorithms)", svg::palette(3), "3 3"});
    else if (v == "openmpi") styles.push_back({v, "openmpi (Open MPI's own)", svg::palette(2), ""});
  }
  if (table.has_reference) styles.push_back({"reference", "reference (memcpy + Reduce_local)", "#555", "6 3"});
  return styles;
}

std::optional<double> curve_value(const Row& row, const std::string& variant) {
  if (variant == "native") return row.native_us;
  if (variant == "canopy") return row.canopy_us;
  if (variant == "saved") return row.saved_us;
  if (variant == "intercept") return row.intercept_us;
  if (variant == "openmpi") return row.openmpi_us;
  if (variant == "reference") return row.reference_us;
  return std::nullopt;
}

// A decade tick in a unit that keeps it short: "0.1 µs", "10 µs", "1 ms".
std::string time_tick(double us) {
  if (us >= 1e6) return printf_string("%g", us / 1e6) + " s";
  if (us >= 1e3) return printf_string("%g", us / 1e3) + " ms";
  return printf_string("%g", us) + " \xc2\xb5s";
}

// Powers of two inside [lo, hi], every k-th (k = 1, 2, 4, ...: 16 B, 256 B, 4 KiB for 4)
// so that at most `most` remain.
std::vector<double> byte_ticks(double lo, double hi, std::size_t most) {
  for (int every : {1, 2, 4, 5, 10, 20, 30, 60}) {
    std::vector<double> ticks;
    for (int e = 0; e < 63; e += every) {
      const double v = std::ldexp(1.0, e);
      if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) ticks.push_back(v);
    }
    if (ticks.size() <= most) return ticks;
  }
  return {lo, hi};
}

struct PanelBox {
  double left, right, top, bottom;
};

void draw_panel(svg::Document& doc, const Table& table, const std::string& collective, const PanelBox& box,
                const std::vector<CurveStyle>& styles) {
  doc.text(box.left, box.top - 12, collective, {{"font-weight", "bold"}, {"class", "panel-title"}});
  std::vector<const Row*> rows;
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = 0;
  double y_lo = std::numeric_limits<double>::infinity(), y_hi = 0;
  for (const Row& row : table.rows) {
    if (row.collective != collective || row.bytes <= 0) continue;  // a log axis has no 0
    rows.push_back(&row);
    for (const CurveStyle& s : styles)
      if (const auto v = curve_value(row, s.variant); v && *v > 0) {
        x_lo = std::min(x_lo, static_cast<double>(row.bytes));
        x_hi = std::max(x_hi, static_cast<double>(row.bytes));
        y_lo = std::min(y_lo, *v);
        y_hi = std::max(y_hi, *v);
      }
  }
  if (!(y_hi > 0)) {
    doc.text((box.left + box.right) / 2, (box.top + box.bottom) / 2, "no " + collective + " times",
             {{"text-anchor", "middle"}, {"fill", "#777"}});
    return;
  }
  // One size still needs a range; whole decades of time frame the curves.
  if (!(x_hi > x_lo)) x_lo /= 2, x_hi *= 2;
  y_lo = std::pow(10.0, std::floor(std::log10(y_lo)));
  y_hi = std::pow(10.0, std::ceil(std::log10(y_hi)));
  if (!(y_hi > y_lo)) y_hi = y_lo * 10;

  const svg::Axis x{svg::Scale::log10(x_lo, x_hi, box.left, box.right), "message size (log scale)",
                    [](double b) { return human_bytes(std::llround(b)); }, byte_ticks(x_lo, x_hi, 7)};
  // The y label is drawn here, not by y_axis, which puts it at the document's left edge.
  const svg::Axis y{svg::Scale::log10(y_lo, y_hi, box.bottom, box.top), "", time_tick, {}};
  doc.y_axis(y, box.left, box.right);
  doc.x_axis(x, box.bottom, box.top);
  const double label_x = box.left - 58, mid = (box.top + box.bottom) / 2;
  doc.text(label_x, mid, "time per call (log scale)",
           {{"text-anchor", "middle"},
            {"transform", "rotate(-90 " + svg::coordinate(label_x) + " " + svg::coordinate(mid) + ")"}});

  for (const CurveStyle& s : styles) {
    std::vector<std::pair<double, double>> points;
    std::string bytes, us;
    for (const Row* row : rows) {
      const auto v = curve_value(*row, s.variant);
      if (!v || !(*v > 0)) continue;
      const double px = x.scale(static_cast<double>(row->bytes)), py = y.scale(*v);
      points.emplace_back(px, py);
      bytes += (bytes.empty() ? "" : " ") + std::to_string(row->bytes);
      us += (us.empty() ? "" : " ") + plain_number(*v);
      // A marker per measurement: a curve of one size is still visible, and hovering
      // names the value.
      doc.rect(px - 2, py - 2, 4, 4, s.colour, {{"class", "point"}},
               s.variant + ", " + human_bytes(row->bytes) + ": " + format_us(*v) + " \xc2\xb5s");
    }
    if (points.empty()) continue;
    svg::Attributes attributes = {{"class", "curve"}, {"data-collective", collective}, {"data-variant", s.variant},
                                  {"data-bytes", bytes}, {"data-us", us}};
    if (!s.dash.empty()) attributes.emplace_back("stroke-dasharray", s.dash);
    doc.polyline(points, s.colour, attributes);
  }
}

}  // namespace

std::string plot_svg(const Table& table, const std::string& title) {
  // A third panel where the runs timed MPI_Allreduce.
  const bool allreduce = std::any_of(table.rows.begin(), table.rows.end(),
                                     [](const Row& r) { return r.collective == kAllreduce; });
  const double height = 500, top = 80, bottom = 440, panel_width = 400;
  const double width = allreduce ? 1860 : 1340;
  const PanelBox reduce{90, 90 + panel_width, top, bottom};
  const PanelBox bcast{reduce.right + 120, reduce.right + 120 + panel_width, top, bottom};
  const PanelBox all{bcast.right + 120, bcast.right + 120 + panel_width, top, bottom};
  svg::Document doc(width, height, title);
  doc.text(reduce.left, 22, title, {{"font-weight", "bold"}, {"font-size", "15"}});
  int repeats = 0;
  for (const auto& [variant, n] : table.repeats) repeats = std::max(repeats, n);
  doc.text(reduce.left, 42,
           "median time per call over " + std::to_string(repeats) + (repeats == 1 ? " repeat" : " repeats") +
               (table.dir.empty() ? "" : " (" + table.dir + ")"));
  const std::vector<CurveStyle> styles = curve_styles(table);
  draw_panel(doc, table, kReduce, reduce, styles);
  // The reference is a floor for a reduce only: a broadcast does no reduction.
  std::vector<CurveStyle> bcast_styles;
  for (const CurveStyle& s : styles)
    if (s.variant != "reference") bcast_styles.push_back(s);
  draw_panel(doc, table, kBcast, bcast, bcast_styles);
  if (allreduce) draw_panel(doc, table, kAllreduce, all, bcast_styles);
  std::vector<svg::LegendItem> legend;
  for (const CurveStyle& s : styles) legend.push_back({s.label, s.colour, true, s.dash});
  doc.legend((allreduce ? all : bcast).right + 30, top + 10, legend);
  return doc.str();
}

}  // namespace canopy::tools::bench
