// pLogP (004_*.txt, Steffenel, Table 1 and section 3): L + g(m) per message, the
// sender and receiver held for g(m) only.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>

#include "planner/cost_model.h"
#include "planner/registry.h"
#include "planner/simulate.h"
#include "planner/validate.h"

using namespace canopy::planner;

namespace {

Schedule bcast(const char* algorithm, int p, std::int64_t bytes) {
  Problem problem;
  problem.collective = Collective::Bcast;
  problem.nranks = p;
  problem.count = bytes;
  problem.element_bytes = 1;
  return find_algorithm(Collective::Bcast, algorithm)->plan(problem);
}

}  // namespace

TEST_CASE("pLogP: g(m) is interpolated between measured sizes and extrapolated beyond", "[plogp]") {
  const CostModel m = plogp_model(5e-6, {{0, 1e-6}, {1024, 2e-6}, {65536, 50e-6}});
  CHECK(m.gap_at(0) == Approx(1e-6));
  CHECK(m.gap_at(512) == Approx(1.5e-6));
  CHECK(m.gap_at(1024) == Approx(2e-6));
  CHECK(m.gap_at(33280) == Approx(26e-6));
  CHECK(m.gap_at(131072 - 1024) == Approx(50e-6 + 48e-6 * (131072 - 1024 - 65536) / (65536 - 1024)));
  CHECK(m.transfer(1024) == Approx(7e-6));  // L + g
  CHECK(m.occupancy(1024) == Approx(2e-6));  // g alone
  CHECK(plogp_model(1, {{100, 3}}).gap_at(1 << 20) == 3);  // one point: constant
}

TEST_CASE("pLogP: specs round-trip, files parse, bad input is named", "[plogp]") {
  const CostModel m = parse_model("plogp:L=2e-6,g=0:1e-6/65536:1e-5,gamma=1e-10");
  REQUIRE(m.kind == "plogp");
  CHECK(m.alpha == 2e-6);
  REQUIRE(m.gap.size() == 2);
  CHECK(m.gap[1].first == 65536);
  CHECK(m.gamma == 1e-10);
  const CostModel again = parse_model(m.spec());
  CHECK(again.spec() == m.spec());
  CHECK(again.gap == m.gap);

  char path[] = "/tmp/canopy-plogp-XXXXXX";
  std::FILE* f = fdopen(mkstemp(path), "w");
  std::fputs("# measured on node7\nL 2e-6\n0 1e-6   # tiny messages\n65536 1e-5\ngamma 1e-10\n", f);
  std::fclose(f);
  const CostModel from_file = parse_model(std::string("plogp:") + path);
  CHECK(from_file.spec() == m.spec());
  std::remove(path);

  auto message = [](const std::string& spec) {
    try {
      parse_model(spec);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(message("plogp:L=1e-6") == "model 'plogp' needs g=BYTES:SECONDS[/...]");
  CHECK_THAT(message("plogp:L=1e-6,g=100:1/10:2"), Catch::Contains("increasing message size"));
  CHECK_THAT(message("plogp:L=1e-6,g=100"), Catch::Contains("BYTES:SECONDS"));
  CHECK_THAT(message("plogp:/no/such/file"), Catch::Contains("cannot be read"));
}

// 004 Table 1: Flat tree (P-1) g(m) + L; binomial tree ceil(log2 P) (L + g(m)) (for
// powers of two, where every round is full).
TEST_CASE("pLogP: flat and binomial broadcasts take 004 Table 1's times", "[plogp]") {
  const CostModel m = plogp_model(3e-6, {{0, 1e-6}, {4096, 4e-6}, {1 << 20, 300e-6}});
  for (std::int64_t bytes : {8, 4096, 100000}) {
    for (int p = 2; p <= 33; ++p) {
      INFO("p = " << p << ", bytes = " << bytes);
      const Schedule flat = bcast("flat", p, bytes);
      REQUIRE(validate(flat).ok);
      const Simulation s = simulate(flat, m);
      REQUIRE(s.ok);
      CHECK(s.makespan == Approx((p - 1) * m.gap_at(bytes) + m.alpha));
      if ((p & (p - 1)) == 0) {
        const Simulation b = simulate(bcast("binomial", p, bytes), m);
        REQUIRE(b.ok);
        CHECK(b.makespan == Approx(std::log2(p) * (m.alpha + m.gap_at(bytes))));
      }
    }
  }
}
