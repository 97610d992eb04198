#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "config/config_file.h"
#include "config/saved_rules.h"
#include "config/settings.h"
#include "planner/size_class.h"

using canopy::config::Decision;
using canopy::config::parse_config_text;
using canopy::config::Rule;
using canopy::config::rules_keep_size_classes;
using canopy::config::saved_rules_text;
using canopy::planner::class_first_bytes;
using canopy::planner::class_last_bytes;
using canopy::planner::Collective;
using canopy::planner::size_class;

namespace {

// A decision of the size class holding `bytes`, as the shim notes it.
Decision decided(Collective c, int ranks, std::int64_t bytes, const std::string& algorithm, int root = 0) {
  Decision d;
  d.collective = c;
  d.comm_size = ranks;
  d.root = root;
  d.first_bytes = class_first_bytes(size_class(bytes));
  d.last_bytes = class_last_bytes(size_class(bytes));
  d.commutative = c == Collective::Reduce ? 1 : -1;  // as the shim notes a sum's
  d.algorithm = algorithm;
  d.measured = "measured per call " + algorithm + " 1.0 us; chose " + algorithm;
  return d;
}

Decision waiting(Collective c, int ranks, std::int64_t bytes, const std::string& best) {
  Decision d = decided(c, ranks, bytes, best);
  d.decided = false;
  d.measured = best + " measured fastest of the schedules; native MPI's trial did not come";
  return d;
}

// The rules a saved file holds, as a later job reads them (no errors allowed).
std::vector<Rule> read_back(const std::string& text) {
  const auto file = parse_config_text(text, "saved");
  INFO(text);
  REQUIRE(file.errors.empty());
  return file.rules;
}

}  // namespace

TEST_CASE("saved rules: one rule per run of adjacent size classes with one choice", "[config][saved_rules]") {
  std::vector<Decision> decisions = {
      decided(Collective::Reduce, 2, 1 << 20, "shm-flat"),
      decided(Collective::Bcast, 2, 65536, "native"),  // another collective
      decided(Collective::Reduce, 4, 65536, "native"),  // another communicator size
  };
  // 64 KiB's class and the next four, up to 128 KiB's, in no order.
  for (int k : {4, 0, 2, 1, 3})
    decisions.push_back(decided(Collective::Reduce, 2, class_first_bytes(size_class(65536) + k), "native"));
  const std::string text = saved_rules_text(decisions, {}, "a header\nof two lines");
  CHECK(text.rfind("// a header\n// of two lines\n{", 0) == 0);
  const std::vector<Rule> rules = read_back(text);
  REQUIRE(rules.size() == 4);
  // Sorted by collective, communicator size and sizes.
  CHECK(rules[0].collective == Collective::Reduce);
  CHECK(rules[0].min_ranks == 2);
  CHECK(rules[0].max_ranks == 2);
  CHECK(rules[0].min_bytes == 65536);
  CHECK(rules[0].max_bytes == class_last_bytes(size_class(131072)));
  CHECK(rules[0].algorithm == "native");
  CHECK(rules[0].segment_bytes == Rule::kUnset);
  CHECK(rules[0].commutative == 1);  // a reduce's rule says which operations it was decided for
  CHECK(rules[1].min_bytes == class_first_bytes(size_class(1 << 20)));
  CHECK(rules[1].max_bytes == class_last_bytes(size_class(1 << 20)));
  CHECK(rules[1].algorithm == "shm-flat");
  CHECK(rules[2].min_ranks == 4);
  CHECK(rules[2].algorithm == "native");
  CHECK(rules[3].collective == Collective::Bcast);
  CHECK(rules[3].max_bytes == class_last_bytes(size_class(65536)));
  CHECK(rules[3].commutative == -1);  // a broadcast has no operation
  // What was measured stands above each rule.
  CHECK(text.find("measured per call shm-flat 1.0 us; chose shm-flat") != std::string::npos);
}

TEST_CASE("saved rules: classes apart or with another choice stay apart", "[config][saved_rules]") {
  // 64 KiB and 256 KiB: the classes between them were not decided.
  const std::vector<Rule> apart = read_back(saved_rules_text(
      {decided(Collective::Reduce, 2, 65536, "native"), decided(Collective::Reduce, 2, 262144, "native")}, {}, ""));
  REQUIRE(apart.size() == 2);
  CHECK(apart[0].max_bytes == class_last_bytes(size_class(65536)));
  CHECK(apart[1].min_bytes == 262144);
  const std::vector<Rule> other = read_back(saved_rules_text(
      {decided(Collective::Reduce, 2, 65536, "native"), decided(Collective::Reduce, 2, 80000, "shm-flat")}, {}, ""));
  REQUIRE(other.size() == 2);
  CHECK(other[0].algorithm == "native");
  CHECK(other[1].algorithm == "shm-flat");
  CHECK(other[0].max_bytes + 1 == other[1].min_bytes);
}

TEST_CASE("saved rules: decisions for commutative and ordered operations stay apart", "[config][saved_rules]") {
  Decision ordered = decided(Collective::Reduce, 2, 65536, "chain");
  ordered.commutative = 0;
  const std::string text = saved_rules_text(
      {decided(Collective::Reduce, 2, 65536, "shm-flat"), ordered, decided(Collective::Reduce, 2, 80000, "shm-flat")},
      {}, "");
  const std::vector<Rule> rules = read_back(text);
  REQUIRE(rules.size() == 2);  // the two sums' classes one rule, the ordered one its own
  CHECK(text.find("reduce (non-commutative) on 2 ranks, 65536..") != std::string::npos);
  canopy::config::Settings s;
  s.rules = rules;
  CHECK(s.choice_for(Collective::Reduce, 80000, 2, true).algorithm == "shm-flat");
  CHECK(s.choice_for(Collective::Reduce, 70000, 2, false).algorithm == "chain");
  CHECK(s.choice_for(Collective::Reduce, 80000, 2, false).algorithm == "auto");  // no ordered decision there
}

TEST_CASE("saved rules: where trials differ the choice made most often wins, a tie the first", "[config][saved_rules]") {
  const std::string text = saved_rules_text({decided(Collective::Reduce, 2, 65536, "shm-flat", 0),
                                             decided(Collective::Reduce, 2, 65536, "native", 1),
                                             decided(Collective::Reduce, 2, 65536, "native", 0)},
                                            {}, "");
  const std::vector<Rule> rules = read_back(text);
  REQUIRE(rules.size() == 1);
  CHECK(rules[0].algorithm == "native");
  CHECK(text.find("2 of 3 trials chose native; 1 chose shm-flat") != std::string::npos);
  const std::vector<Rule> tie = read_back(saved_rules_text(
      {decided(Collective::Bcast, 2, 65536, "binomial", 1), decided(Collective::Bcast, 2, 65536, "native", 0)}, {}, ""));
  REQUIRE(tie.size() == 1);
  CHECK(tie[0].algorithm == "binomial");
}

TEST_CASE("saved rules: sizes whose trials did not decide get a comment, not a rule", "[config][saved_rules]") {
  const std::string text = saved_rules_text(
      {waiting(Collective::Reduce, 2, 65536, "shm-reduce-scatter-gather"), decided(Collective::Reduce, 2, 1 << 20, "shm-flat")},
      {}, "");
  const std::vector<Rule> rules = read_back(text);
  REQUIRE(rules.size() == 1);
  CHECK(rules[0].algorithm == "shm-flat");
  CHECK(text.find("reduce on 2 ranks, 65536..") != std::string::npos);
  CHECK(text.find("not decided, left to auto: shm-reduce-scatter-gather measured fastest") != std::string::npos);
  // A decision made after the wait (native's trial came) counts; the wait's note does not.
  const std::vector<Rule> later = read_back(saved_rules_text(
      {waiting(Collective::Reduce, 2, 65536, "shm-flat"), decided(Collective::Reduce, 2, 65536, "native")}, {}, ""));
  REQUIRE(later.size() == 1);
  CHECK(later[0].algorithm == "native");
  // A name the settings file does not take (none should come, but the file must read back).
  const std::string odd = saved_rules_text({decided(Collective::Bcast, 2, 65536, "no-such-algorithm")}, {}, "");
  CHECK(read_back(odd).empty());
  CHECK(odd.find("chose no-such-algorithm, which CANOPY_CONFIG does not take; no rule") != std::string::npos);
  // Nothing decided at all: a file of no rules, which still reads.
  CHECK(read_back(saved_rules_text({waiting(Collective::Bcast, 2, 65536, "shm-bcast")}, {}, "")).empty());
  CHECK(read_back(saved_rules_text({}, {}, "")).empty());
}

TEST_CASE("saved rules: the rules the job ran with follow the decisions", "[config][saved_rules]") {
  const auto given = parse_config_text(R"({"rules": [
      {"collective": "reduce", "max_bytes": 4096, "algorithm": "binomial"},
      {"collective": "bcast", "min_bytes": 4097, "min_ranks": 8, "algorithm": "chain", "segment_bytes": 65536},
      {"collective": "bcast", "segment_bytes": "auto"}]})",
                                       "given");
  REQUIRE(given.errors.empty());
  const std::vector<Rule> rules =
      read_back(saved_rules_text({decided(Collective::Reduce, 2, 1 << 20, "shm-flat")}, given.rules, ""));
  REQUIRE(rules.size() == 4);
  CHECK(rules[0].algorithm == "shm-flat");
  const std::vector<Rule> carried(rules.begin() + 1, rules.end());
  CHECK(canopy::config::canonical(carried) == canopy::config::canonical(given.rules));
  // Carried alone (nothing decided), no stray separator.
  CHECK(canopy::config::canonical(read_back(saved_rules_text({}, given.rules, ""))) ==
        canopy::config::canonical(given.rules));
}

TEST_CASE("saved rules: a decision travels between ranks as JSON", "[config][saved_rules]") {
  Decision d = waiting(Collective::Bcast, 16, 3 << 20, "shm-bcast");
  d.root = 5;
  const Decision back = canopy::config::decision_from_json(canopy::config::to_json(d));
  CHECK(back.collective == d.collective);
  CHECK(back.comm_size == 16);
  CHECK(back.root == 5);
  CHECK(back.first_bytes == d.first_bytes);
  CHECK(back.last_bytes == d.last_bytes);
  CHECK(back.commutative == -1);
  CHECK(back.decided == false);
  CHECK(back.algorithm == "shm-bcast");
  CHECK(back.measured == d.measured);
  CHECK_THROWS(canopy::config::decision_from_json({{"collective", "gather"}}));
}

TEST_CASE("saved rules: rules of whole size classes keep plans per class", "[config][saved_rules]") {
  CHECK(rules_keep_size_classes({}));
  // Saved rules are whole classes.
  const std::vector<Rule> saved = read_back(saved_rules_text(
      {decided(Collective::Reduce, 2, 65536, "native"), decided(Collective::Bcast, 2, 100, "binomial"),
       decided(Collective::Bcast, 3, 8, "binomial")},
      {}, ""));
  CHECK(rules_keep_size_classes(saved));
  Rule r;
  r.algorithm = "binomial";
  CHECK(rules_keep_size_classes({r}));  // every size
  r.max_bytes = 4096;                   // 4096 opens a class: its last byte is past 4096
  CHECK_FALSE(rules_keep_size_classes({r}));
  r.max_bytes = 4095;
  CHECK(rules_keep_size_classes({r}));
  r.min_bytes = 4097;  // inside 4096's class
  CHECK_FALSE(rules_keep_size_classes({r}));
  r.min_bytes = 40;  // sizes up to 64 B are classes of one size
  CHECK(rules_keep_size_classes({r}));
  r.segment_bytes = 65536;  // a forced segment size applies per count
  CHECK_FALSE(rules_keep_size_classes({r}));
  r.segment_bytes = -1;  // "auto"
  CHECK(rules_keep_size_classes({r}));
  // Every count of a class then gets the same choice.
  canopy::config::Settings s;
  s.rules = saved;
  for (std::int64_t bytes : {65536L, 70000L, class_last_bytes(size_class(65536))})
    CHECK(s.choice_for(Collective::Reduce, bytes, 2).algorithm == "native");
  CHECK(s.choice_for(Collective::Reduce, class_last_bytes(size_class(65536)) + 1, 2).algorithm == "auto");
  CHECK(s.choice_for(Collective::Reduce, 65535, 2).algorithm == "auto");
}
