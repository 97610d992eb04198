#include "shim/report.h"

#include <mpi.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "planner/describe.h"
#include "shim/canopy.h"
#include "shim/comm_state.h"
#include "shim/fallback.h"
#include "shim/gather_text.h"
#include "shim/runtime.h"

namespace canopy::shim {

namespace {

using nlohmann::json;

// Size buckets by powers of 16, the granularity at which algorithm choices change.
std::string size_bucket(std::int64_t bytes) {
  if (bytes < 0) return "unknown";
  if (bytes == 0) return "0 B";
  static const char* const names[] = {"1 B - 16 B",      "17 B - 256 B",      "257 B - 4 KiB",
                                      "4 KiB - 64 KiB",  "64 KiB - 1 MiB",    "1 MiB - 16 MiB",
                                      "16 MiB - 256 MiB", "256 MiB - 4 GiB"};
  std::int64_t upper = 16;
  for (const char* name : names) {
    if (bytes <= upper) return name;
    upper *= 16;
  }
  return "over 4 GiB";
}

std::string pad(std::string s, std::size_t width, bool right = false) {
  if (s.size() >= width) return s;
  return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

std::string seconds(double s) { return planner::format_seconds(s); }

// The log's sentence for a FallbackReason name.
std::string reason_text(const std::string& name) {
  for (int r = 0; r < kFallbackReasons; ++r)
    if (name == fallback_name(static_cast<FallbackReason>(r))) return fallback_text(static_cast<FallbackReason>(r));
  return name;
}

}  // namespace

json plan_cache_json() {
  const PlanCacheStats c = CommState::cache_stats();
  return {{"plans", c.plans},         {"hits", c.hits},           {"evictions", c.evictions},
          {"most_held", c.most_held}, {"most_bytes", c.most_bytes}, {"limit", CommState::kMaxPlans},
          {"limit_bytes", CommState::kMaxPlanBytes}};
}

namespace {

// The ranks' plan caches: plans made and hits summed over ranks, the largest cache any
// rank held.
json merge_plan_caches(const std::vector<json>& caches) {
  long plans = 0, hits = 0, evictions = 0, most_held = 0, most_bytes = 0, limit = 0, limit_bytes = 0;
  for (const json& c : caches) {
    plans += c.value("plans", 0L);
    hits += c.value("hits", 0L);
    evictions += c.value("evictions", 0L);
    most_held = std::max(most_held, c.value("most_held", 0L));
    most_bytes = std::max(most_bytes, c.value("most_bytes", 0L));
    limit = std::max(limit, c.value("limit", 0L));
    limit_bytes = std::max(limit_bytes, c.value("limit_bytes", 0L));
  }
  const long lookups = plans + hits;
  return {{"plans", plans},       {"hits", hits},
          {"hit_rate", lookups ? static_cast<double>(hits) / lookups : 0.0},
          {"evictions", evictions}, {"most_held_per_communicator", most_held},
          {"most_bytes_per_communicator", most_bytes}, {"limit_per_communicator", limit},
          {"limit_bytes_per_communicator", limit_bytes}};
}

}  // namespace

json build_report(const JobFacts& job, const std::vector<json>& per_rank, const std::vector<json>& caches) {
  // One entry per kind of call, merged over ranks.
  struct Kind {
    json first;  // the first rank's record: what the kind is
    long rank_calls = 0;
    double total = 0, min = 1e300, max = 0, slowest_rank_mean = 0;
  };
  std::map<std::string, Kind> kinds;
  std::vector<double> rank_time(per_rank.size(), 0.0);
  for (std::size_t r = 0; r < per_rank.size(); ++r) {
    for (const json& rec : per_rank[r]) {
      const long calls = rec.at("calls").get<long>();
      if (calls == 0) continue;
      const std::string key = rec.at("collective").get<std::string>() + "|" + rec.at("comm_size").dump() + "|" +
                              rec.at("root").dump() + "|" + rec.at("bytes").dump() + "|" +
                              rec.at("algorithm").get<std::string>() + "|" + rec.value("reason", "") + "|" +
                              rec.value("schedule_id", "");
      Kind& k = kinds[key];
      if (k.first.is_null()) k.first = rec;
      const double total = rec.at("total_s").get<double>();
      k.rank_calls += calls;
      k.total += total;
      k.min = std::min(k.min, rec.at("min_s").get<double>());
      k.max = std::max(k.max, rec.at("max_s").get<double>());
      k.slowest_rank_mean = std::max(k.slowest_rank_mean, total / calls);
      rank_time[r] += total;
    }
  }

  json rows = json::array();
  std::map<std::pair<std::string, std::string>, json> buckets;
  std::map<std::pair<std::string, std::string>, long> fallbacks;
  long calls_all = 0, calls_canopy = 0;
  for (auto& [key, k] : kinds) {
    const int comm_size = k.first.at("comm_size").get<int>();
    // A call on n ranks is recorded by each of them.
    const long calls = comm_size > 0 ? (k.rank_calls + comm_size - 1) / comm_size : k.rank_calls;
    const std::string collective = k.first.at("collective").get<std::string>();
    const std::string algorithm = k.first.at("algorithm").get<std::string>();
    const bool native = algorithm == "native";
    json row = {{"collective", collective},
                {"comm_size", comm_size},
                {"root", k.first.at("root")},
                {"bytes", k.first.at("bytes")},
                {"algorithm", algorithm},
                {"segments", k.first.at("segments")},
                {"calls", calls},
                {"measured_s",
                 {{"min", k.min}, {"mean", k.total / k.rank_calls}, {"max", k.max},
                  {"slowest_rank_mean", k.slowest_rank_mean}}}};
    if (k.first.contains("reason")) row["reason"] = k.first["reason"];
    if (k.first.contains("schedule_id")) row["schedule_id"] = k.first["schedule_id"];
    if (!native) {
      const double predicted = k.first.at("predicted_s").get<double>();
      row["predicted_s"] = predicted;
      // The slowest rank's mean stands for a call's duration: a collective is over
      // when its last rank is.
      if (predicted > 1e-9) row["measured_over_predicted"] = k.slowest_rank_mean / predicted;
      // CANOPY_LEARN: the same schedule under the model its communicator learned.
      if (k.first.contains("predicted_learned_s")) {
        const double learned = k.first.at("predicted_learned_s").get<double>();
        row["predicted_learned_s"] = learned;
        if (learned > 1e-9) row["measured_over_learned"] = k.slowest_rank_mean / learned;
      }
    }
    rows.push_back(row);
    json& b = buckets[{collective, size_bucket(k.first.at("bytes").get<std::int64_t>())}];
    if (b.is_null()) b = {{"calls", 0}, {"canopy", 0}, {"native", 0}};
    b["calls"] = b["calls"].get<long>() + calls;
    b[native ? "native" : "canopy"] = b[native ? "native" : "canopy"].get<long>() + calls;
    calls_all += calls;
    if (!native) calls_canopy += calls;
    else fallbacks[{collective, k.first.value("reason", "")}] += calls;
  }
  std::sort(rows.begin(), rows.end(), [](const json& a, const json& b) {
    return std::make_tuple(a["collective"].get<std::string>(), a["comm_size"].get<int>(), a["bytes"].get<long>(),
                           a["root"].get<int>(), a["algorithm"].get<std::string>()) <
           std::make_tuple(b["collective"].get<std::string>(), b["comm_size"].get<int>(), b["bytes"].get<long>(),
                           b["root"].get<int>(), b["algorithm"].get<std::string>());
  });
  json by_size = json::array();
  for (auto& [cb, b] : buckets) {
    b["collective"] = cb.first;
    b["size"] = cb.second;
    by_size.push_back(b);
  }
  json fallback_rows = json::array();
  for (const auto& [cr, n] : fallbacks)
    fallback_rows.push_back(
        {{"collective", cr.first}, {"reason", cr.second}, {"reason_text", reason_text(cr.second)}, {"calls", n}});

  double time_sum = 0, time_max = 0;
  int time_max_rank = 0;
  for (std::size_t r = 0; r < rank_time.size(); ++r) {
    time_sum += rank_time[r];
    if (rank_time[r] > time_max) {
      time_max = rank_time[r];
      time_max_rank = static_cast<int>(r);
    }
  }
  json settings = json::object();
  for (const auto& [k, v] : job.settings) settings[k] = v;
  return {{"canopy_version", CANOPY_VERSION_STRING},
          {"job",
           {{"ranks", job.ranks},
            {"nodes", job.nodes},
            {"max_ranks_per_node", job.max_ranks_per_node},
            {"cores_per_node", job.cores_per_node},
            {"oversubscribed", job.oversubscribed}}},
          // What CANOPY_TOPOLOGY found: measured at MPI_Init, read from a file, or none
          // (every message priced by the model, as for one node).
          {"topology",
           {{"nodes", job.nodes},
            {"clusters", job.clusters},
            {"source", job.topology_source},
            {"network_discovery", job.topology_source == "measured"},
            {"description", job.topology}}},
          {"startup_s",
           {{"canopy_in_mpi_init", job.startup_seconds}, {"probing", job.probe_seconds}, {"staging_ring", job.ring_seconds},
            {"code_reading", job.code_seconds}}},
          {"model", job.model},
          {"model_source", job.model_source},
          {"learned_model", job.learned_model},
          {"config_file", job.config_file},
          {"rules", job.rules},
          {"settings", settings},
          {"totals",
           {{"calls", calls_all},
            {"canopy_calls", calls_canopy},
            {"native_calls", calls_all - calls_canopy},
            {"time_in_collectives_s",
             {{"mean_per_rank", rank_time.empty() ? 0.0 : time_sum / rank_time.size()},
              {"max_rank", time_max_rank},
              {"max", time_max}}}}},
          {"by_size", by_size},
          {"kinds", rows},
          {"fallbacks", fallback_rows},
          // Plans are made per size class and kept per communicator up to the limit,
          // least recently used out first (shim/comm_state.h).
          {"plan_cache", merge_plan_caches(caches)}};
}

std::string report_text(const json& report) {
  std::ostringstream out;
  const json& job = report.at("job");
  out << "Canopy " << report.at("canopy_version").get<std::string>() << " report: " << job.at("ranks") << " ranks on "
      << job.at("nodes") << (job.at("nodes") == 1 ? " node" : " nodes") << " (at most " << job.at("max_ranks_per_node")
      << " per node, " << job.at("cores_per_node") << " cores per node"
      << (job.at("oversubscribed").get<bool>() ? ", oversubscribed" : "") << ")\n";
  const json& topology = report["topology"];
  if (topology.value("description", "").empty())
    out << "topology: " << topology["nodes"] << " node(s), no network topology (every message priced by the model)\n";
  else
    out << "topology (" << topology["source"].get<std::string>() << "): " << topology["description"].get<std::string>()
        << "\n";
  if (report.contains("startup_s"))
    out << "Canopy's part of MPI_Init (rank 0): " << seconds(report["startup_s"].value("canopy_in_mpi_init", 0.0))
        << ", of which probing the network and the model " << seconds(report["startup_s"].value("probing", 0.0))
        << ", MPI_COMM_WORLD's staging ring " << seconds(report["startup_s"].value("staging_ring", 0.0))
        << " and reading Canopy's code once " << seconds(report["startup_s"].value("code_reading", 0.0)) << "\n";
  out << "model (" << report.value("model_source", "built-in") << "): " << report.at("model").get<std::string>()
      << "\n";
  if (!report.value("learned_model", "").empty())
    out << "model learned by MPI_COMM_WORLD's calls (CANOPY_LEARN): " << report["learned_model"].get<std::string>()
        << "\n";
  if (!report.at("config_file").get<std::string>().empty())
    out << "settings file: " << report["config_file"].get<std::string>() << " (" << report["rules"] << (report["rules"] == 1 ? " rule" : " rules") << ")\n";
  std::string settings;
  for (const auto& [k, v] : report.at("settings").items()) settings += (settings.empty() ? "" : " ") + k + "=" + v.get<std::string>();
  out << "settings: " << (settings.empty() ? "(none: defaults)" : settings) << "\n\n";

  const json& t = report.at("totals");
  out << "calls: " << t["calls"] << " MPI_Reduce/MPI_Bcast/MPI_Allreduce; " << t["canopy_calls"] << " ran a Canopy schedule, "
      << t["native_calls"] << " native MPI\n";
  const json& time = t["time_in_collectives_s"];
  out << "time in these calls: mean " << seconds(time["mean_per_rank"].get<double>()) << " per rank, max "
      << seconds(time["max"].get<double>()) << " (rank " << time["max_rank"] << ")\n\n";

  out << "calls by size\n  " << pad("collective", 11) << pad("size", 18) << pad("calls", 8, true)
      << pad("canopy", 8, true) << pad("native", 8, true) << "\n";
  for (const json& b : report.at("by_size"))
    out << "  " << pad(b["collective"].get<std::string>(), 11) << pad(b["size"].get<std::string>(), 18)
        << pad(b["calls"].dump(), 8, true) << pad(b["canopy"].dump(), 8, true) << pad(b["native"].dump(), 8, true)
        << "\n";

  out << "\nwhat ran (measured: per call on one rank; vs model: the slowest rank's mean / prediction; learned: "
         "the prediction of the model learned from the calls, CANOPY_LEARN)\n  "
      << pad("collective", 11) << pad("ranks", 6, true) << pad("root", 5, true) << pad("bytes", 11, true) << "  "
      << pad("algorithm", 22) << pad("segs", 5, true) << pad("calls", 7, true) << pad("predicted", 11, true)
      << pad("mean", 11, true) << pad("min", 11, true) << pad("max", 11, true) << pad("vs model", 9, true)
      << pad("learned", 11, true) << pad("vs learned", 11, true) << "\n";
  for (const json& k : report.at("kinds")) {
    const json& m = k["measured_s"];
    const bool native = k["algorithm"] == "native";
    out << "  " << pad(k["collective"].get<std::string>(), 11) << pad(k["comm_size"].dump(), 6, true)
        << pad(k["root"].dump(), 5, true) << pad(k["bytes"].dump(), 11, true) << "  "
        << pad(k["algorithm"].get<std::string>(), 22) << pad(native ? "-" : k["segments"].dump(), 5, true)
        << pad(k["calls"].dump(), 7, true)
        << pad(native ? "-" : seconds(k["predicted_s"].get<double>()), 11, true)
        << pad(seconds(m["mean"].get<double>()), 11, true) << pad(seconds(m["min"].get<double>()), 11, true)
        << pad(seconds(m["max"].get<double>()), 11, true);
    char ratio[32] = "-";
    if (k.contains("measured_over_predicted"))
      std::snprintf(ratio, sizeof ratio, "%.2fx", k["measured_over_predicted"].get<double>());
    out << pad(ratio, 9, true);
    if (k.contains("predicted_learned_s")) {
      char learned[32] = "-";
      if (k.contains("measured_over_learned"))
        std::snprintf(learned, sizeof learned, "%.2fx", k["measured_over_learned"].get<double>());
      out << pad(seconds(k["predicted_learned_s"].get<double>()), 11, true) << pad(learned, 11, true);
    }
    out << "\n";
  }
  out << "\nnative MPI ran instead of Canopy\n";
  if (report.at("fallbacks").empty()) out << "  never\n";
  for (const json& f : report["fallbacks"])
    out << "  " << pad(f["collective"].get<std::string>(), 8) << pad(f["calls"].dump(), 8, true) << " calls: "
        << f["reason"].get<std::string>() << " (" << f["reason_text"].get<std::string>() << ")\n";
  if (report.contains("plan_cache")) {
    const json& c = report["plan_cache"];
    char rate[32];
    std::snprintf(rate, sizeof rate, "%.1f%%", 100 * c.value("hit_rate", 0.0));
    out << "\nplan cache (all ranks): " << c.value("plans", 0L) << " plans made, " << c.value("hits", 0L)
        << " hits (" << rate << " of lookups), " << c.value("evictions", 0L) << " evicted; at most "
        << c.value("most_held_per_communicator", 0L) << " plans ("
        << (c.value("most_bytes_per_communicator", 0L) + 1023) / 1024 << " KiB) held per communicator, limit "
        << c.value("limit_per_communicator", 0L) << " plans or " << c.value("limit_bytes_per_communicator", 0L) / 1048576
        << " MiB\n";
  }
  return out.str();
}

std::string write_report(const std::string& path, const std::string& format, const JobFacts& job) {
  Runtime& rt = runtime();
  MPI_Comm comm = rt.report_comm;
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  const std::string mine = json{{"calls", rt.stats.to_json()}, {"plan_cache", plan_cache_json()}}.dump();
  const std::vector<std::string> all = gather_text(comm, mine);
  if (rank != 0) return "";
  if (all.empty()) return "CANOPY_REPORT: gathering the ranks' counts failed; no report";
  std::vector<json> per_rank, caches;
  for (const std::string& text : all) {
    json both = json::parse(text);
    per_rank.push_back(std::move(both["calls"]));
    caches.push_back(std::move(both["plan_cache"]));
  }
  const json report = build_report(job, per_rank, caches);
  const std::string text = format == "json" ? report.dump(2) + "\n" : report_text(report);
  if (path == "-") {
    // One write, so that other ranks' output interleaves with it at most at its ends.
    return std::fwrite(text.data(), 1, text.size(), stderr) == text.size() && std::fflush(stderr) == 0
               ? ""
               : "CANOPY_REPORT: writing to standard error failed";
  }
  std::ofstream file(path);
  if (!file) return "CANOPY_REPORT='" + path + "': cannot open the file for writing; no report";
  file << text;
  return file ? "" : "CANOPY_REPORT='" + path + "': writing failed";
}

}  // namespace canopy::shim
