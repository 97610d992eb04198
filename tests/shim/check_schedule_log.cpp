// Checks a CANOPY_SCHEDULE_LOG written while log_calls ran on N ranks: every line is
// valid JSON whose schedule reads back into the IR and passes the validator, its
// summary fields agree with the schedule, and the lines describe exactly the calls
// log_calls made, each distinct schedule once. A line serves the calls of
// first_bytes..last_bytes (a size class), and its schedule was made for a count of
// that class.
//   check_schedule_log N FILE...
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

#include "planner/schedule_json.h"
#include "planner/validate.h"

using Call = std::tuple<std::string, int, int, long long>;  // collective, comm size, root, bytes

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: check_schedule_log NRANKS FILE...\n";
    return 2;
  }
  const int p = std::stoi(argv[1]);
  const int evens = (p + 1) / 2, odds = p / 2;
  // The last call, log_calls's MPI_Allreduce of one int (whose schedule's root is 0).
  std::multiset<Call> expected = {
      {"reduce", p, 0, 4000}, {"reduce", p, p - 1, 56}, {"bcast", p, 1 % p, 100}, {"allreduce", p, 0, 4}};
  // The sub-communicator reduce runs on each half of the split.
  std::set<Call> sub = {{"reduce", evens, 0, 4}};
  if (odds > 0) sub.insert({"reduce", odds, 0, 4});
  int failures = 0;
  auto fail = [&](const std::string& why) {
    std::cerr << "check_schedule_log: " << why << "\n";
    ++failures;
  };
  for (int f = 2; f < argc; ++f) {
    std::ifstream in(argv[f]);
    if (!in) {
      fail(std::string("cannot read ") + argv[f]);
      continue;
    }
    std::multiset<Call> seen;
    std::string line;
    int lines = 0;
    while (std::getline(in, line)) {
      ++lines;
      try {
        const auto j = nlohmann::json::parse(line);
        const auto s = canopy::planner::schedule_from_json(j.at("schedule"));
        const auto v = canopy::planner::validate(s);
        if (!v) fail(std::string(argv[f]) + " line " + std::to_string(lines) + ": invalid schedule: " + v.summary());
        if (j.at("comm_size") != s.nranks || j.at("root") != s.root || j.at("bytes") != s.bytes() ||
            j.at("count") != s.count ||
            j.at("algorithm") != s.algorithm || j.at("segments") != s.segments.size() ||
            j.at("collective") != canopy::planner::to_string(s.collective))
          fail(std::string(argv[f]) + " line " + std::to_string(lines) + ": summary disagrees with the schedule");
        // Positive for any schedule that moves data; 0 for one that has nothing to do.
        const bool moves_data = s.total_steps() > 0 && s.nranks > 1;
        if (!j.at("predicted_s").is_number() || j.at("predicted_s").get<double>() < 0 ||
            (moves_data && j.at("predicted_s").get<double>() <= 0))
          fail(std::string(argv[f]) + " line " + std::to_string(lines) + ": predicted time missing or not positive");
        const long long first = j.at("first_bytes").get<long long>(), last = j.at("last_bytes").get<long long>();
        if (!(first <= s.bytes() && s.bytes() <= last))
          fail(std::string(argv[f]) + " line " + std::to_string(lines) + ": its schedule's " +
               std::to_string(s.bytes()) + " B lie outside the sizes it serves");
        // The call it served: the one of log_calls's sizes in its range.
        long long served = -1;
        for (long long b : {4000LL, 56LL, 100LL, 4LL})
          if (first <= b && b <= last) served = b;
        seen.insert(Call{j.at("collective").get<std::string>(), j.at("comm_size").get<int>(), j.at("root").get<int>(),
                         served});
      } catch (const std::exception& e) {
        fail(std::string(argv[f]) + " line " + std::to_string(lines) + ": " + e.what());
      }
    }
    // Each file must hold the world calls exactly once (the repeated reduce too), and
    // the reduce on the half of the split this rank belongs to.
    for (const Call& c : expected)
      if (seen.count(c) != 1) fail(std::string(argv[f]) + ": expected exactly one line for " + std::get<0>(c) +
                                   " on " + std::to_string(std::get<1>(c)) + " ranks, root " +
                                   std::to_string(std::get<2>(c)) + ", " + std::to_string(std::get<3>(c)) + " B");
    int sub_lines = 0;
    for (const Call& c : seen)
      if (!expected.count(c)) {
        if (sub.count(c)) ++sub_lines;
        else fail(std::string(argv[f]) + ": a line for a call log_calls never made");
      }
    if (sub_lines != 1)
      fail(std::string(argv[f]) + ": expected one line for the sub-communicator reduce, found " +
           std::to_string(sub_lines));
  }
  if (failures == 0) std::cout << "check_schedule_log: " << (argc - 2) << " file(s) describe the calls that ran\n";
  return failures ? 1 : 0;
}
