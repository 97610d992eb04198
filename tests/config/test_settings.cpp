#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>

#include "config/settings.h"
#include "planner/registry.h"

using canopy::config::Environment;
using canopy::config::parse_settings;

TEST_CASE("settings: defaults when nothing is set", "[config]") {
  const auto r = parse_settings({});
  CHECK(r.errors.empty());
  CHECK(r.warnings.empty());
  CHECK(r.settings.enable);
  CHECK(r.settings.reduce_algorithm == "auto");
  CHECK(r.settings.bcast_algorithm == "auto");
  CHECK(r.settings.segment_bytes == -1);
  CHECK(r.settings.log_level == "warn");
  CHECK(r.settings.schedule_log.empty());
  CHECK(r.settings.model.empty());
}

TEST_CASE("settings: every registered algorithm name is accepted", "[config]") {
  for (const auto& a : canopy::planner::algorithms()) {
    const std::string var = canopy::config::Settings::algorithm_variable(a.collective);
    const auto r = parse_settings({{var, std::string(a.name)}});
    CHECK(r.errors.empty());
    CHECK(r.settings.algorithm_of(a.collective) == a.name);
  }
}

TEST_CASE("settings: valid values parse", "[config]") {
  const auto r = parse_settings({{"CANOPY_ENABLE", "off"},
                                 {"CANOPY_SEGMENT_BYTES", "65536"},
                                 {"CANOPY_LOG_LEVEL", "debug"},
                                 {"CANOPY_SCHEDULE_LOG", "/tmp/x-%r.jsonl"},
                                 {"CANOPY_MODEL", "hockney:alpha=1e-6,beta=2e-10"}});
  CHECK(r.errors.empty());
  CHECK_FALSE(r.settings.enable);
  CHECK(r.settings.segment_bytes == 65536);
  CHECK(r.settings.log_level == "debug");
  CHECK(r.settings.schedule_log == "/tmp/x-%r.jsonl");
  CHECK(r.settings.model == "hockney:alpha=1e-6,beta=2e-10");
  CHECK(parse_settings({{"CANOPY_SEGMENT_BYTES", "0"}}).settings.segment_bytes == 0);
  CHECK(parse_settings({{"CANOPY_SEGMENT_BYTES", "auto"}}).settings.segment_bytes == -1);
}

// One line naming the variable, the value and what is allowed; the affected
// collectives fall back to native.
TEST_CASE("settings: a bad value gives one clear error and a safe fallback", "[config]") {
  struct Case {
    const char* var;
    const char* value;
    const char* allowed_fragment;
  };
  const Case cases[] = {
      {"CANOPY_ENABLE", "maybe", "1, 0, true, false"},
      {"CANOPY_REDUCE_ALGO", "fastest", "native, auto, binomial"},
      {"CANOPY_BCAST_ALGO", "bogus", "native, auto, binomial"},
      {"CANOPY_SEGMENT_BYTES", "-5", "auto, or an integer >= 0"},
      {"CANOPY_SEGMENT_BYTES", "12kb", "auto, or an integer >= 0"},
      {"CANOPY_LOG_LEVEL", "loud", "trace, debug, info"},
      {"CANOPY_MODEL", "hockney:alpha=x", "non-negative number"},
      {"CANOPY_MODEL", "telepathy", "default, measure, a model spec"},
      {"CANOPY_RHO", "0", "a number > 0 and <= 10"},
      {"CANOPY_RHO", "10.5", "a number > 0 and <= 10"},
      {"CANOPY_RHO", "0.2x", "a number > 0 and <= 10"},
      {"CANOPY_RHO", "nan", "a number > 0 and <= 10"},
      {"CANOPY_PROBE_BYTES", "0", "an integer from 1 to 67108864"},
      {"CANOPY_PROBE_BYTES", "67108865", "an integer from 1 to 67108864"},
      {"CANOPY_PROBE_BYTES", "64k", "an integer from 1 to 67108864"},
      {"CANOPY_AUTO_NATIVE_AFTER", "-1", "an integer from 0 to 1000000000"},
      {"CANOPY_AUTO_NATIVE_AFTER", "1000000001", "an integer from 0 to 1000000000"},
      {"CANOPY_AUTO_NATIVE_AFTER", "256k", "an integer from 0 to 1000000000"},
      {"CANOPY_AUTO_NATIVE_AFTER", "", "an integer from 0 to 1000000000"},
      {"CANOPY_AUTO_RECHECK", "-0.1", "a number from 0 to 0.5"},
      {"CANOPY_AUTO_RECHECK", "0.6", "a number from 0 to 0.5"},
      {"CANOPY_AUTO_RECHECK", "2%", "a number from 0 to 0.5"},
      {"CANOPY_AUTO_RECHECK", "", "a number from 0 to 0.5"},
      {"CANOPY_RING_AFTER", "-1", "a number of seconds from 0 to 3600, or off"},
      {"CANOPY_RING_AFTER", "3601", "a number of seconds from 0 to 3600, or off"},
      {"CANOPY_RING_AFTER", "never", "a number of seconds from 0 to 3600, or off"},
      {"CANOPY_RING_AFTER", "", "a number of seconds from 0 to 3600, or off"},
  };
  for (const Case& c : cases) {
    INFO(c.var << "=" << c.value);
    const auto r = parse_settings({{c.var, c.value}});
    REQUIRE(r.errors.size() == 1);
    const std::string& line = r.errors.front();
    CHECK(line.find(c.var) != std::string::npos);
    CHECK(line.find(c.value) != std::string::npos);
    CHECK(line.find(c.allowed_fragment) != std::string::npos);
    CHECK(line.find('\n') == std::string::npos);
  }
  CHECK_FALSE(parse_settings({{"CANOPY_ENABLE", "maybe"}}).settings.enable);
  CHECK(parse_settings({{"CANOPY_REDUCE_ALGO", "fastest"}}).settings.reduce_algorithm == "native");
  CHECK(parse_settings({{"CANOPY_REDUCE_ALGO", "fastest"}}).settings.bcast_algorithm == "auto");
  const auto seg = parse_settings({{"CANOPY_SEGMENT_BYTES", "-5"}}).settings;
  CHECK(seg.reduce_algorithm == "native");
  CHECK(seg.bcast_algorithm == "native");
  CHECK(parse_settings({{"CANOPY_LOG_LEVEL", "loud"}}).settings.log_level == "warn");
}

TEST_CASE("settings: CANOPY_REPORT takes a path, or on and off as a boolean", "[config]") {
  CHECK(parse_settings({}).settings.report.empty());
  CHECK(parse_settings({{"CANOPY_REPORT", "/tmp/r.txt"}}).settings.report == "/tmp/r.txt");
  for (const char* on : {"1", "true", "on", "yes", "-", "stderr"}) {
    INFO(on);
    const auto r = parse_settings({{"CANOPY_REPORT", on}});
    CHECK(r.settings.report == "-");  // standard error
    CHECK(r.errors.empty());
  }
  for (const char* off : {"0", "false", "off", "no"}) {
    INFO(off);
    CHECK(parse_settings({{"CANOPY_REPORT", off}}).settings.report.empty());
  }
}

TEST_CASE("settings: CANOPY_RING_AFTER", "[config]") {
  CHECK(parse_settings({}).settings.ring_after == 0.01);
  CHECK(parse_settings({{"CANOPY_RING_AFTER", "0"}}).settings.ring_after == 0);
  CHECK(parse_settings({{"CANOPY_RING_AFTER", "2.5e-3"}}).settings.ring_after == 2.5e-3);
  CHECK(parse_settings({{"CANOPY_RING_AFTER", "3600"}}).settings.ring_after == 3600);
  CHECK(parse_settings({{"CANOPY_RING_AFTER", "off"}}).settings.ring_after < 0);
  // A bad value keeps the default rather than switching the rule off or on at once.
  CHECK(parse_settings({{"CANOPY_RING_AFTER", "soon"}}).settings.ring_after == 0.01);
}

TEST_CASE("settings: CANOPY_AUTO_NATIVE_AFTER", "[config]") {
  CHECK(parse_settings({}).settings.auto_native_after == 256);
  CHECK(parse_settings({{"CANOPY_AUTO_NATIVE_AFTER", "0"}}).settings.auto_native_after == 0);
  CHECK(parse_settings({{"CANOPY_AUTO_NATIVE_AFTER", "1000"}}).settings.auto_native_after == 1000);
  CHECK(parse_settings({{"CANOPY_AUTO_NATIVE_AFTER", "1000000000"}}).settings.auto_native_after == 1000000000);
  // A bad value keeps the default.
  CHECK(parse_settings({{"CANOPY_AUTO_NATIVE_AFTER", "later"}}).settings.auto_native_after == 256);
}

TEST_CASE("settings: CANOPY_AUTO_RECHECK", "[config]") {
  CHECK(parse_settings({}).settings.auto_recheck == 0.02);
  CHECK(parse_settings({{"CANOPY_AUTO_RECHECK", "0"}}).settings.auto_recheck == 0);
  CHECK(parse_settings({{"CANOPY_AUTO_RECHECK", "0.5"}}).settings.auto_recheck == 0.5);
  CHECK(parse_settings({{"CANOPY_AUTO_RECHECK", "1e-3"}}).settings.auto_recheck == 1e-3);
  // A bad value keeps the default.
  CHECK(parse_settings({{"CANOPY_AUTO_RECHECK", "often"}}).settings.auto_recheck == 0.02);
}

TEST_CASE("settings: CANOPY_TOPOLOGY, CANOPY_RHO and CANOPY_PROBE_BYTES", "[config]") {
  const auto defaults = parse_settings({}).settings;
  CHECK(defaults.topology == "auto");
  CHECK(defaults.rho == 0.2);
  CHECK(defaults.probe_bytes == 65536);
  const auto r = parse_settings(
      {{"CANOPY_TOPOLOGY", "/etc/sites.json"}, {"CANOPY_RHO", "10"}, {"CANOPY_PROBE_BYTES", "1"}});
  CHECK(r.errors.empty());
  CHECK(r.settings.topology == "/etc/sites.json");  // read at MPI_Init, not here
  CHECK(r.settings.rho == 10);
  CHECK(r.settings.probe_bytes == 1);
  CHECK(parse_settings({{"CANOPY_TOPOLOGY", "none"}}).settings.topology == "none");
  CHECK(parse_settings({{"CANOPY_PROBE_BYTES", "67108864"}}).settings.probe_bytes == 67108864);
  // Bad values keep the defaults; an empty topology means none.
  CHECK(parse_settings({{"CANOPY_RHO", "-1"}}).settings.rho == 0.2);
  CHECK(parse_settings({{"CANOPY_PROBE_BYTES", "0"}}).settings.probe_bytes == 65536);
  const auto empty = parse_settings({{"CANOPY_TOPOLOGY", ""}});
  REQUIRE(empty.errors.size() == 1);
  CHECK(empty.errors[0].find("CANOPY_TOPOLOGY='' is not valid (allowed: auto, none, or a path") != std::string::npos);
  CHECK(empty.settings.topology == "none");
}

TEST_CASE("settings: unknown CANOPY_ names are reported, others ignored", "[config]") {
  const auto r = parse_settings({{"CANOPY_REDUCE_ALGOS", "binomial"}, {"PATH", "/bin"}});
  CHECK(r.errors.empty());
  REQUIRE(r.warnings.size() == 1);
  CHECK(r.warnings[0].find("CANOPY_REDUCE_ALGOS") != std::string::npos);
  CHECK(r.warnings[0].find("CANOPY_REDUCE_ALGO,") != std::string::npos);  // lists the known names
}

TEST_CASE("settings: fingerprint changes with planning settings only", "[config]") {
  using canopy::config::fingerprint;
  const Environment base{{"CANOPY_REDUCE_ALGO", "binomial"}};
  Environment logged = base;
  logged["CANOPY_LOG_LEVEL"] = "info";
  logged["CANOPY_SCHEDULE_LOG"] = "/tmp/a";
  CHECK(fingerprint(base) == fingerprint(logged));
  Environment other = base;
  other["CANOPY_SEGMENT_BYTES"] = "64";
  CHECK(fingerprint(base) != fingerprint(other));
  CHECK(fingerprint({{"CANOPY_REDUCE_ALGO", "native"}}) != fingerprint(base));
  Environment unknown = base;
  unknown["CANOPY_FROBNICATE"] = "1";
  CHECK(fingerprint(base) == fingerprint(unknown));
}

TEST_CASE("settings: the table lists every setting with default, allowed values and example", "[config]") {
  const std::string table = canopy::config::settings_table();
  for (const auto& s : canopy::config::setting_specs()) {
    INFO(s.name);
    CHECK(table.find(s.name) != std::string::npos);
    CHECK(table.find(s.allowed) != std::string::npos);
    CHECK(table.find(s.example) != std::string::npos);
  }
}

TEST_CASE("settings: CANOPY_MODEL takes default, measure, a spec or a file", "[config]") {
  CHECK(parse_settings({{"CANOPY_MODEL", "default"}}).settings.model.empty());
  CHECK(parse_settings({{"CANOPY_MODEL", "measure"}}).settings.model == "measure");
  CHECK(parse_settings({{"CANOPY_MODEL", "overlap:d=1,c=2"}}).settings.model == "overlap:d=1,c=2");

  char path[] = "/tmp/canopy-model-XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  const std::string text = "# fitted on node42\n\n  hockney:alpha=3e-6,beta=2e-10,gamma=1e-10  \n";
  REQUIRE(write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  close(fd);
  const auto from_file = parse_settings({{"CANOPY_MODEL", path}});
  CHECK(from_file.errors.empty());
  CHECK(from_file.settings.model == "hockney:alpha=3e-6,beta=2e-10,gamma=1e-10");

  std::FILE* f = std::fopen(path, "w");
  std::fputs("hockney:alpha=fast\n", f);
  std::fclose(f);
  const auto bad_file = parse_settings({{"CANOPY_MODEL", path}});
  REQUIRE(bad_file.errors.size() == 1);
  CHECK(bad_file.errors[0].find("alpha='fast'") != std::string::npos);
  CHECK(bad_file.settings.reduce_algorithm == "native");
  std::remove(path);
}

TEST_CASE("settings: CANOPY_FAULT and CANOPY_VERIFY", "[config]") {
  CHECK(parse_settings({}).settings.fault == "none");
  CHECK_FALSE(parse_settings({}).settings.verify);
  for (const char* f : {"none", "planner-error", "invalid-schedule"}) {
    const auto r = parse_settings({{"CANOPY_FAULT", f}});
    CHECK(r.errors.empty());
    CHECK(r.settings.fault == f);
  }
  const auto bad_fault = parse_settings({{"CANOPY_FAULT", "meteor"}});
  REQUIRE(bad_fault.errors.size() == 1);
  CHECK(bad_fault.errors[0].find("CANOPY_FAULT='meteor' is not valid (allowed: none, planner-error") == 0);
  CHECK(bad_fault.settings.fault == "none");
  CHECK(parse_settings({{"CANOPY_VERIFY", "1"}}).settings.verify);
  CHECK(parse_settings({{"CANOPY_VERIFY", "Yes"}}).settings.verify);
  CHECK_FALSE(parse_settings({{"CANOPY_VERIFY", "off"}}).settings.verify);
  const auto bad_verify = parse_settings({{"CANOPY_VERIFY", "always"}});
  REQUIRE(bad_verify.errors.size() == 1);
  CHECK(bad_verify.errors[0].find("CANOPY_VERIFY='always' is not valid") == 0);
  CHECK_FALSE(bad_verify.settings.verify);
  // Both change what ranks do collectively, so ranks must agree on them.
  using canopy::config::fingerprint;
  CHECK(fingerprint({{"CANOPY_VERIFY", "1"}}) != fingerprint({}));
  CHECK(fingerprint({{"CANOPY_FAULT", "planner-error"}}) != fingerprint({}));
}

TEST_CASE("settings: CANOPY_FINALIZE_PROGRESS", "[config]") {
  CHECK(parse_settings({}).settings.finalize_progress);
  CHECK_FALSE(parse_settings({{"CANOPY_FINALIZE_PROGRESS", "0"}}).settings.finalize_progress);
  CHECK(parse_settings({{"CANOPY_FINALIZE_PROGRESS", "on"}}).settings.finalize_progress);
  // A bad value keeps the safe behaviour: MPI_Finalize that cannot hang on a peer.
  const auto bad = parse_settings({{"CANOPY_FINALIZE_PROGRESS", "sometimes"}});
  REQUIRE(bad.errors.size() == 1);
  CHECK(bad.errors[0] ==
        "CANOPY_FINALIZE_PROGRESS='sometimes' is not valid (allowed: 1, 0, true, false, on, off, yes, no); "
        "MPI_Finalize keeps UCX progressing (the default)");
  CHECK(bad.settings.finalize_progress);
  // Rank-local (it sends nothing of Canopy's), so ranks may differ in it without
  // switching Canopy off; CANOPY_ENABLE=0 leaves it on.
  using canopy::config::fingerprint;
  CHECK(fingerprint({{"CANOPY_FINALIZE_PROGRESS", "0"}}) == fingerprint({}));
  CHECK(parse_settings({{"CANOPY_ENABLE", "0"}}).settings.finalize_progress);
}

TEST_CASE("settings: CANOPY_SHM", "[config]") {
  CHECK(parse_settings({}).settings.shm == "auto");
  CHECK(parse_settings({{"CANOPY_SHM", "auto"}}).settings.shm == "auto");
  CHECK(parse_settings({{"CANOPY_SHM", "off"}}).settings.shm == "off");
  CHECK(parse_settings({{"CANOPY_SHM", "window"}}).settings.shm == "window");
  CHECK(parse_settings({{"CANOPY_SHM", "posix"}}).settings.shm == "posix");
  const auto bad = parse_settings({{"CANOPY_SHM", "cma"}});
  REQUIRE(bad.errors.size() == 1);
  CHECK(bad.errors[0] == "CANOPY_SHM='cma' is not valid (allowed: auto, window, posix, off); no staging ring (as off)");
  CHECK(bad.settings.shm == "off");
  // It changes which schedules ranks plan, so ranks must agree on it.
  CHECK(canopy::config::fingerprint({{"CANOPY_SHM", "auto"}}) != canopy::config::fingerprint({}));
}
