#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <string>

#include "config/config_file.h"
#include "config/settings.h"

using canopy::config::Environment;
using canopy::config::parse_config_text;
using canopy::config::parse_settings;
using canopy::config::Rule;
using canopy::planner::Collective;

namespace {

// A temporary settings file holding `text`, removed with the object.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& text) {
    char name[] = "/tmp/canopy-config-XXXXXX";
    const int fd = mkstemp(name);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    close(fd);
    path = name;
  }
  ~TempFile() { std::remove(path.c_str()); }
};

const char* const kExample = R"({
  // Comments are allowed.
  "CANOPY_LOG_LEVEL": "info",
  "CANOPY_AUTO_TRIALS": 0,
  "CANOPY_TIMING": true,
  "rules": [
    {"collective": "reduce", "max_bytes": 4096, "algorithm": "binomial"},
    {"collective": "reduce", "min_bytes": 4097, "min_ranks": 8, "algorithm": "greedy", "segment_bytes": 65536},
    {"collective": "reduce", "segment_bytes": "auto"},
    {"collective": "bcast", "min_bytes": 1048576, "algorithm": "native"}
  ]
})";

}  // namespace

TEST_CASE("config file: settings and rules are read", "[config]") {
  const auto file = parse_config_text(kExample, "example.json");
  CHECK(file.errors.empty());
  REQUIRE(file.settings.size() == 3);
  CHECK(file.settings[0] == std::make_pair(std::string("CANOPY_AUTO_TRIALS"), std::string("0")));
  CHECK(file.settings[2] == std::make_pair(std::string("CANOPY_TIMING"), std::string("1")));
  REQUIRE(file.rules.size() == 4);
  CHECK(file.rules[0].max_bytes == 4096);
  CHECK(file.rules[0].segment_bytes == Rule::kUnset);
  CHECK(file.rules[1].min_ranks == 8);
  CHECK(file.rules[1].segment_bytes == 65536);
  CHECK(file.rules[2].segment_bytes == -1);
  CHECK(file.rules[2].algorithm.empty());
  CHECK(file.rules[3].collective == Collective::Bcast);
  CHECK(file.rules[1].origin == "rules[1] of example.json");
}

TEST_CASE("config file: rules choose by collective, size and ranks, first match per field", "[config]") {
  TempFile f(kExample);
  const auto r = parse_settings({{"CANOPY_CONFIG", f.path}});
  REQUIRE(r.errors.empty());
  const auto& s = r.settings;
  CHECK(s.config_file == f.path);
  CHECK(s.log_level == "info");
  CHECK(s.auto_trials == 0);
  CHECK(s.timing);
  auto choice = s.choice_for(Collective::Reduce, 4096, 4);
  CHECK(choice.algorithm == "binomial");
  CHECK(choice.segment_bytes == -1);
  // Messages name where the algorithm came from: the rule, or the setting.
  CHECK(choice.algorithm_origin == "CANOPY_CONFIG rules[0] of " + f.path + " (algorithm binomial)");
  choice = s.choice_for(Collective::Reduce, 4097, 4);  // rule 1 needs 8 ranks
  CHECK(choice.algorithm == "auto");
  CHECK(choice.algorithm_origin == "CANOPY_REDUCE_ALGO=auto");
  choice = s.choice_for(Collective::Reduce, 1 << 20, 8);
  CHECK(choice.algorithm == "greedy");
  CHECK(choice.segment_bytes == 65536);
  CHECK(s.choice_for(Collective::Bcast, 1 << 20, 2).algorithm == "native");
  CHECK(s.choice_for(Collective::Bcast, (1 << 20) - 1, 2).algorithm == "auto");
  CHECK_FALSE(s.always_native(Collective::Bcast));
}

TEST_CASE("config file: the environment overrides the file, rules included", "[config]") {
  TempFile f(kExample);
  const auto r = parse_settings({{"CANOPY_CONFIG", f.path},
                                 {"CANOPY_LOG_LEVEL", "error"},
                                 {"CANOPY_REDUCE_ALGO", "chain"},
                                 {"CANOPY_BCAST_ALGO", "native"}});
  REQUIRE(r.errors.empty());
  CHECK(r.settings.log_level == "error");
  CHECK(r.effective.at("CANOPY_LOG_LEVEL") == "error");
  CHECK(r.effective.at("CANOPY_AUTO_TRIALS") == "0");
  CHECK(r.effective.count("CANOPY_CONFIG") == 0);
  // The rules' algorithms give way; their segment sizes still apply.
  CHECK(r.settings.choice_for(Collective::Reduce, 100, 2).algorithm == "chain");
  CHECK(r.settings.choice_for(Collective::Reduce, 1 << 20, 8).algorithm == "chain");
  CHECK(r.settings.choice_for(Collective::Reduce, 1 << 20, 8).segment_bytes == 65536);
  CHECK(r.settings.always_native(Collective::Bcast));
}

TEST_CASE("config file: a global native with a rule for some sizes is not always native", "[config]") {
  TempFile f(R"({"CANOPY_REDUCE_ALGO": "native", "rules": [{"collective": "reduce", "min_bytes": 1024, "algorithm": "chain"}]})");
  const auto r = parse_settings({{"CANOPY_CONFIG", f.path}});
  REQUIRE(r.errors.empty());
  CHECK_FALSE(r.settings.always_native(Collective::Reduce));
  CHECK(r.settings.choice_for(Collective::Reduce, 1023, 3).algorithm == "native");
  CHECK(r.settings.choice_for(Collective::Reduce, 1024, 3).algorithm == "chain");
  CHECK(r.settings.always_native(Collective::Bcast) == false);
}

// Every problem: one line naming the file, the key or rule, the value and what is
// allowed; only the bad part is dropped.
TEST_CASE("config file: a rule described as a person reads it", "[config]") {
  const auto file = parse_config_text(R"({"rules": [
      {"collective": "reduce", "min_ranks": 2, "max_ranks": 2, "min_bytes": 65536, "max_bytes": 77935,
       "commutative": true, "algorithm": "shm-flat"},
      {"collective": "bcast", "min_bytes": 4097, "min_ranks": 8, "segment_bytes": 65536},
      {"collective": "reduce", "max_bytes": 4096, "commutative": false, "algorithm": "chain", "segment_bytes": "auto"}]})",
                                      "d.json");
  REQUIRE(file.errors.empty());
  REQUIRE(file.rules.size() == 3);
  CHECK(canopy::config::describe_rule(file.rules[0]) ==
        "reduce, 2 ranks, 65536..77935 B, commutative operations: algorithm shm-flat");
  CHECK(canopy::config::describe_rule(file.rules[1]) == "bcast, 8 ranks or more, 4097 B or more: segments of 65536 B");
  CHECK(canopy::config::describe_rule(file.rules[2]) ==
        "reduce, any ranks, up to 4096 B, non-commutative operations: algorithm chain, segments auto");
}

// "commutative" (reduce rules): a rule for commutative operations only, or ordered ones.
TEST_CASE("config file: a reduce rule may name the operations it is for", "[config]") {
  const auto file = parse_config_text(R"({"rules": [
      {"collective": "reduce", "commutative": false, "algorithm": "chain"},
      {"collective": "reduce", "commutative": true, "max_bytes": 4095, "algorithm": "binomial"}]})",
                                      "ops.json");
  REQUIRE(file.errors.empty());
  REQUIRE(file.rules.size() == 2);
  CHECK(file.rules[0].commutative == 0);
  CHECK(file.rules[1].commutative == 1);
  canopy::config::Settings s;
  s.rules = file.rules;
  CHECK(s.choice_for(Collective::Reduce, 100, 4, false).algorithm == "chain");
  CHECK(s.choice_for(Collective::Reduce, 100, 4, true).algorithm == "binomial");
  CHECK(s.choice_for(Collective::Reduce, 8192, 4, true).algorithm == "auto");
  CHECK(s.choice_for(Collective::Reduce, 8192, 4).algorithm == "auto");  // a broadcast's default: commutative
  // Ranks compare rules through their canonical text: the key is in it.
  CHECK(canopy::config::canonical({file.rules[0]}) != canopy::config::canonical({file.rules[1]}));
  Rule any = file.rules[0];
  any.commutative = -1;
  CHECK(canopy::config::canonical({any}) != canopy::config::canonical({file.rules[0]}));
}

TEST_CASE("config file: bad entries give one clear line each and are dropped alone", "[config]") {
  struct Case {
    const char* rule;
    const char* fragment;
  };
  const Case cases[] = {
      {R"({"collective": "gather", "algorithm": "chain"})", "collective=\"gather\" is not valid (allowed: reduce, bcast, allreduce)"},
      {R"({"algorithm": "chain"})", "has no collective"},
      {R"({"collective": "reduce", "algorithm": "fastest"})", "algorithm=\"fastest\" is not valid (allowed: native, auto, binomial"},
      {R"({"collective": "reduce", "max_bytes": -1, "algorithm": "chain"})", "max_bytes=-1 is not valid (allowed: an integer from 0"},
      {R"({"collective": "reduce", "min_ranks": 0, "algorithm": "chain"})", "min_ranks=0 is not valid"},
      {R"({"collective": "reduce", "segment_bytes": "big"})", "segment_bytes=\"big\" is not valid (allowed: \"auto\" or an integer >= 0)"},
      {R"({"collective": "reduce", "max_size": 5, "algorithm": "chain"})", "unknown key \"max_size\" (allowed: collective, min_bytes"},
      {R"({"collective": "reduce"})", "sets neither algorithm nor segment_bytes"},
      {R"({"collective": "reduce", "commutative": "yes", "algorithm": "chain"})", "commutative=\"yes\" is not valid (allowed: true, false)"},
      {R"({"collective": "bcast", "commutative": true, "algorithm": "chain"})", "commutative applies to reduce and allreduce rules only"},
      {R"({"collective": "reduce", "min_bytes": 10, "max_bytes": 5, "algorithm": "chain"})", "min_bytes is larger than max_bytes"},
      {R"(7)", "is not an object"},
  };
  for (const Case& c : cases) {
    const std::string text = std::string(R"({"CANOPY_AUTO_TRIALS": 3, "rules": [)") + c.rule +
                             R"(, {"collective": "bcast", "algorithm": "chain"}]})";
    INFO(text);
    const auto file = parse_config_text(text, "f.json");
    REQUIRE(file.errors.size() == 1);
    CHECK(file.errors[0].find("CANOPY_CONFIG='f.json': rules[0] ") != std::string::npos);
    CHECK(file.errors[0].find(c.fragment) != std::string::npos);
    CHECK(file.errors[0].find("the rule is ignored") != std::string::npos);
    CHECK(file.errors[0].find('\n') == std::string::npos);
    REQUIRE(file.rules.size() == 1);  // the good rule stays
    CHECK(file.rules[0].collective == Collective::Bcast);
    CHECK(file.settings.size() == 1);
  }
}

TEST_CASE("config file: unreadable, not JSON, or bad values", "[config]") {
  const auto missing = parse_settings({{"CANOPY_CONFIG", "/no/such/canopy.json"}, {"CANOPY_REDUCE_ALGO", "chain"}});
  REQUIRE(missing.errors.size() == 1);
  CHECK(missing.errors[0] == "CANOPY_CONFIG='/no/such/canopy.json': cannot read the file; it is ignored");
  CHECK(missing.settings.reduce_algorithm == "chain");  // the environment still applies

  CHECK(parse_config_text("{\"rules\": [", "x").errors.at(0).find("is not a JSON object") != std::string::npos);
  CHECK(parse_config_text("[1, 2]", "x").errors.at(0).find("is not a JSON object") != std::string::npos);
  CHECK(parse_config_text(R"({"rules": {}})", "x").errors.at(0).find("\"rules\" is not a list") != std::string::npos);
  CHECK(parse_config_text(R"({"CANOPY_MODEL": {"alpha": 1}})", "x").errors.at(0).find(
            "\"CANOPY_MODEL\"={\"alpha\":1} is not valid (allowed: a string, a number or a boolean)") != std::string::npos);
  CHECK(parse_config_text(R"({"CANOPY_CONFIG": "other.json"})", "x").errors.at(0).find("cannot name another") !=
        std::string::npos);

  // A bad value in the file is reported like a bad environment variable, naming the file.
  TempFile f(R"({"CANOPY_SEGMENT_BYTES": "lots", "CANOPY_FROB": 1})");
  const auto r = parse_settings({{"CANOPY_CONFIG", f.path}});
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].find("CANOPY_SEGMENT_BYTES='lots' (from CANOPY_CONFIG='" + f.path + "') is not valid") == 0);
  REQUIRE(r.warnings.size() == 1);
  CHECK(r.warnings[0].find("unknown setting CANOPY_FROB") != std::string::npos);
}

TEST_CASE("config file: numbers that are not integers (CANOPY_RHO)", "[config]") {
  TempFile f(R"({"CANOPY_RHO": 0.35, "CANOPY_PROBE_BYTES": 1048576})");
  const auto r = parse_settings({{"CANOPY_CONFIG", f.path}});
  CHECK(r.errors.empty());
  CHECK(r.settings.rho == 0.35);
  CHECK(r.settings.probe_bytes == 1048576);
}

TEST_CASE("config file: ranks with different rules have different fingerprints", "[config]") {
  using canopy::config::fingerprint_in_force;
  TempFile a(R"({"rules": [{"collective": "reduce", "max_bytes": 4096, "algorithm": "binomial"}]})");
  TempFile b(R"({"rules": [{"collective": "reduce", "max_bytes": 4095, "algorithm": "binomial"}]})");
  TempFile a_again(R"({"rules": [{"max_bytes": 4096, "algorithm": "binomial", "collective": "reduce"}]})");
  const auto fa = fingerprint_in_force(parse_settings({{"CANOPY_CONFIG", a.path}}));
  CHECK(fa != fingerprint_in_force(parse_settings({{"CANOPY_CONFIG", b.path}})));
  CHECK(fa != fingerprint_in_force(parse_settings({})));
  // Same content under another path: the same fingerprint.
  CHECK(fa == fingerprint_in_force(parse_settings({{"CANOPY_CONFIG", a_again.path}})));
}

// Found by fuzzing (tests/fuzz/regressions/config): names and values with control
// characters must not split a message over several lines.
TEST_CASE("config file: messages stay on one line whatever the names and values hold", "[config]") {
  const auto file = parse_config_text("{\"rules\": [{\"collective\": \"reduce\", \"seg\\nment\": 1}, "
                                      "{\"collective\": \"bcast\", \"algorithm\": \"a\\nb\"}]}",
                                      "f.json");
  REQUIRE(file.errors.size() == 2);
  for (const auto& e : file.errors) CHECK(e.find('\n') == std::string::npos);
  TempFile f("{\"CANOPY_REDUCE_ALGO\": \"fast\\nest\", \"CANOPY_X\\n\": 1}");
  const auto r = parse_settings({{"CANOPY_CONFIG", f.path}});
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].find("CANOPY_REDUCE_ALGO='fast\\nest'") != std::string::npos);
  REQUIRE(r.warnings.size() == 1);
  CHECK(r.warnings[0].find('\n') == std::string::npos);
}
