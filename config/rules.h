// Per-collective rules from a CANOPY_CONFIG file: by message size and communicator
// size, force an algorithm and/or a segment size (the role of Open MPI's dynamic rules
// file and MPICH's JSON tuning file). Pure data and a pure lookup: a rule depends only
// on the collective, the message size in bytes and the communicator size, which every
// rank of a call agrees on, so every rank picks the same rule.
#pragma once

#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "planner/schedule.h"

namespace canopy::config {

struct Rule {
  planner::Collective collective = planner::Collective::Reduce;
  std::int64_t min_bytes = 0;  // message bytes, inclusive range
  std::int64_t max_bytes = INT64_MAX;
  int min_ranks = 1;  // communicator size, inclusive range
  int max_ranks = INT_MAX;
  std::string algorithm;            // "native", "auto", a planner name; "" = this rule leaves it
  std::int64_t segment_bytes = kUnset;  // -1 = auto, >= 0 forced; kUnset = this rule leaves it
  // Reduce rules only: 1 matches commutative operations only, 0 non-commutative ones
  // only, -1 (unset) every operation. As MPICH's JSON tuning files' "is_commutative":
  // an algorithm for commutative sums need not suit a user's ordered operation.
  int commutative = -1;
  std::string origin;               // where it was written, e.g. "rules[2] of /etc/canopy.json"

  static constexpr std::int64_t kUnset = -2;
  // `commutative`: the call's operation (a broadcast's: true).
  bool matches(planner::Collective c, std::int64_t bytes, int nranks, bool commutative_op = true) const {
    return c == collective && bytes >= min_bytes && bytes <= max_bytes && nranks >= min_ranks &&
           nranks <= max_ranks && (commutative < 0 || commutative == (commutative_op ? 1 : 0));
  }
};

// "native", "auto" and every registered algorithm of `c`, comma separated.
std::string algorithm_choices(planner::Collective c);
bool is_algorithm_choice(planner::Collective c, const std::string& value);

// A stable text form of the rules, for the settings fingerprint ranks compare.
std::string canonical(const std::vector<Rule>& rules);

// One rule as a person reads it: "reduce, 2 ranks, 65536..77935 B, commutative
// operations: algorithm shm-flat" (canopy-info --check-config).
std::string describe_rule(const Rule& rule);

}  // namespace canopy::config
