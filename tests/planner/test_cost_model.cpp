// Cost models: the Hockney / alpha-beta-gamma model of 001 (Langou) and the (d, c)
// overlap model of 000 (Canon & Antoniu), their text specs and the parser.
#include <catch2/catch.hpp>

#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "planner/cost_model.h"
#include "planner/tree_price.h"

using namespace canopy::planner;

namespace {

void check_same(const CostModel& a, const CostModel& b) {
  CHECK(a.kind == b.kind);
  CHECK(a.alpha == b.alpha);
  CHECK(a.beta == b.beta);
  CHECK(a.gamma == b.gamma);
  CHECK(a.reduce_fixed == b.reduce_fixed);
  CHECK(a.copy_per_byte == b.copy_per_byte);
  CHECK(a.direct_per_byte == b.direct_per_byte);
  CHECK(a.direct_fixed == b.direct_fixed);
  CHECK(a.duplex == b.duplex);
  CHECK(a.overlap == b.overlap);
  CHECK(a.port_per_byte == b.port_per_byte);
  CHECK(a.port_fixed == b.port_fixed);
  CHECK(a == b);
}

// parse_model must throw std::invalid_argument whose message contains every needle.
void check_bad_spec(const std::string& spec, const std::vector<std::string>& needles) {
  CAPTURE(spec);
  try {
    parse_model(spec);
    FAIL_CHECK("parse_model accepted it");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    CAPTURE(what);
    for (const auto& needle : needles) {
      CAPTURE(needle);
      CHECK(what.find(needle) != std::string::npos);
    }
  }
}

}  // namespace

TEST_CASE("Cost model: Langou's alpha + beta m and gamma m, and the (d, c) model as its special case "
          "alpha = d, beta = 0, c per reduction",
          "[cost_model]") {
  const CostModel h = hockney_model(2, 0.5, 0.25);
  CHECK(h.transfer(8) == 2 + 0.5 * 8);
  CHECK(h.reduce(8) == 0.25 * 8);
  CHECK(h.copy(8) == 0);
  CHECK(h.duplex == Duplex::Half);  // unidirectional
  CHECK_FALSE(h.overlap);           // no computation during communication

  const CostModel dc = overlap_model(3, 5);
  for (std::int64_t bytes : {0, 1, 1000}) {
    CHECK(dc.transfer(bytes) == 3);  // d, whatever the size
    CHECK(dc.reduce(bytes) == 5);    // c
  }
  CHECK(dc.duplex == Duplex::Half);  // one transfer at a time (one-port)
  CHECK(dc.overlap);                 // transfers overlap computations
}

TEST_CASE("Cost model: parse_model(spec()) gives the model back", "[cost_model]") {
  std::vector<CostModel> models = {default_model(), hockney_model(2e-6, 1e-10, 1e-10), hockney_model(0, 0, 0),
                                   hockney_model(1.0 / 3, 0.1, 1e-300), overlap_model(1, 2),
                                   overlap_model(0.1, 1.0 / 7), overlap_model(0, 0)};
  CostModel tuned = hockney_model(5e-7, 3.3e-11, 2.2e-11);
  tuned.copy_per_byte = 1.7e-11;
  tuned.duplex = Duplex::Full;
  models.push_back(tuned);
  tuned.overlap = true;
  tuned.duplex = Duplex::Half;
  models.push_back(tuned);
  tuned.direct_per_byte = 1.0 / 3 * 1e-10;  // a learnt cross-memory-attach price
  models.push_back(tuned);
  tuned.direct_fixed = 3.1e-6;
  models.push_back(tuned);
  tuned.port_per_byte = 8e-9;  // a link between sites: its latency in flight
  models.push_back(tuned);
  tuned.port_fixed = 3e-7;
  models.push_back(tuned);
  CostModel plogp = plogp_model(1e-6, {{1, 1e-7}, {65536, 5e-6}});
  plogp.direct_per_byte = 4e-11;
  models.push_back(plogp);
  plogp.alpha = 0;  // a measured link with its latency in flight (planner::measured_link)
  plogp.port_per_byte = 8e-11;
  plogp.port_fixed = 2e-7;
  models.push_back(plogp);
  for (const CostModel& m : models) {
    CAPTURE(m.spec());
    const CostModel back = parse_model(m.spec());
    check_same(back, m);
    CHECK(back.spec() == m.spec());
  }
}

TEST_CASE("Cost model: every field, changed alone, makes another model (CostModel::fields)", "[cost_model]") {
  // fields() is what equality, the level plans' keys (hierarchy.cpp) and the price memo's
  // keys (shim/prices.cpp) are made of: a field it leaves out would let plans and prices
  // made for one model stand for another. A new field: a line below (the REQUIRE counts).
  const CostModel base = plogp_model(1e-6, {{1, 1e-7}, {65536, 5e-6}});
  std::vector<std::pair<std::string, CostModel>> changed;
  auto with = [&](const std::string& field, auto change) {
    CostModel m = base;
    change(m);
    changed.emplace_back(field, m);
  };
  with("kind", [](CostModel& m) { m.kind = "hockney"; });
  with("alpha", [](CostModel& m) { m.alpha = 2e-6; });
  with("beta", [](CostModel& m) { m.beta = 1e-10; });
  with("gamma", [](CostModel& m) { m.gamma = 1e-10; });
  with("reduce_fixed", [](CostModel& m) { m.reduce_fixed = 1e-7; });
  with("copy_per_byte", [](CostModel& m) { m.copy_per_byte = 2e-11; });
  with("direct_per_byte", [](CostModel& m) { m.direct_per_byte = 4e-11; });
  with("direct_fixed", [](CostModel& m) { m.direct_fixed = 3e-6; });
  with("duplex", [](CostModel& m) { m.duplex = m.duplex == Duplex::Full ? Duplex::Half : Duplex::Full; });
  with("overlap", [](CostModel& m) { m.overlap = !m.overlap; });
  with("gap", [](CostModel& m) { m.gap.back().second = 6e-6; });
  with("port_per_byte", [](CostModel& m) { m.port_per_byte = 8e-11; });
  with("port_fixed", [](CostModel& m) { m.port_fixed = 2e-7; });
  REQUIRE(changed.size() == std::tuple_size_v<decltype(CostModel{}.fields())>);
  for (const auto& [field, m] : changed) {
    CAPTURE(field);
    CHECK_FALSE(m == base);
  }
}

TEST_CASE("Cost model: parse_model reads the documented forms and defaults", "[cost_model]") {
  const CostModel h = parse_model("hockney:alpha=2,beta=0.5");
  check_same(h, hockney_model(2, 0.5, 0));
  const CostModel full = parse_model("hockney:duplex=full,overlap=1,gamma=1e-9,beta=1e-10,alpha=1e-6,copy=2e-10");
  CHECK(full.alpha == 1e-6);
  CHECK(full.beta == 1e-10);
  CHECK(full.gamma == 1e-9);
  CHECK(full.copy_per_byte == 2e-10);
  CHECK(full.duplex == Duplex::Full);
  CHECK(full.overlap);
  CHECK(full.direct_per_byte == 0);  // derived from copy (CostModel::direct_copy)
  CHECK(full.direct_fixed == kDirectCopyFixedSeconds);
  const CostModel direct = parse_model("hockney:alpha=1e-6,beta=1e-10,copy=2e-10,direct=5e-10,direct_fixed=3e-6");
  CHECK(direct.direct_per_byte == 5e-10);
  CHECK(direct.direct_fixed == 3e-6);
  check_same(parse_model("overlap:c=2,d=1"), overlap_model(1, 2));
}

TEST_CASE("Cost model: port= holds the ports for the bytes at the cards' rate, the latency in flight",
          "[cost_model]") {
  // A wide-area link: 10 ms, 100 Mbit/s end to end, behind 1 Gbit/s cards.
  const CostModel wan = parse_model("hockney:alpha=1e-2,beta=8e-8,port=8e-9");
  CHECK(wan.port_per_byte == 8e-9);
  CHECK(wan.transfer(1000) == Approx(1e-2 + 8e-5));  // arrival: latency and the path's rate
  CHECK(wan.occupancy(1000) == Approx(8e-6));         // ports: the bytes at the cards' rate
  CHECK_FALSE(wan.ports_held_for_transfer());
  const CostModel held = parse_model("hockney:alpha=1e-2,beta=8e-8");
  CHECK(held.occupancy(1000) == held.transfer(1000));  // Langou's: the whole transfer
  CHECK(held.ports_held_for_transfer());
  CHECK_FALSE(held == wan);  // plans made under one are not the other's (the shim's plan cache)
  // The trees' recurrences are exact under full duplex with overlap, not with port= (the
  // simulator keeps a link's segments between two ranks apart, they do not).
  CHECK(tree_price_is_exact(parse_model("hockney:alpha=1e-2,beta=8e-8,duplex=full,overlap=1")));
  CHECK_FALSE(tree_price_is_exact(parse_model("hockney:alpha=1e-2,beta=8e-8,port=8e-9,duplex=full,overlap=1")));
}

TEST_CASE("Cost model: a pLogP link with port= arrives after its one-way time and frees the ports after "
          "port_fixed + port x bytes",
          "[cost_model]") {
  // One-way times as the probe measures them on SimGrid's EDR cluster (L = 0): 2 us at 8 B,
  // 17.2 us at 64 KiB (SMPI's latency step), 100.8 us at 1 MiB; the cards pass 64 KiB in
  // 5.6 us (docs/performance-history.md, section 30).
  CostModel link = parse_model(
      "plogp:L=0,g=8:2e-6/65536:1.72e-5/1048576:1.008e-4,port=8.5e-11,port_fixed=1e-7,duplex=full,overlap=1");
  CHECK(link.port_per_byte == 8.5e-11);
  CHECK(link.port_fixed == 1e-7);
  CHECK(link.transfer(65536) == Approx(1.72e-5));               // arrival: the measured time
  CHECK(link.occupancy(65536) == Approx(1e-7 + 8.5e-11 * 65536));  // ports: the train's gap
  CHECK(link.occupancy(8) == Approx(1e-7 + 8.5e-11 * 8));
  CHECK_FALSE(link.ports_held_for_transfer());
  // Never longer than the whole transfer: a port line above the measured time is not used.
  link.port_fixed = 1e-3;
  CHECK(link.occupancy(65536) == Approx(1.72e-5));
  const CostModel held = parse_model("plogp:L=0,g=8:2e-6/65536:1.72e-5,duplex=full,overlap=1");
  CHECK(held.ports_held_for_transfer());
  CHECK(held.occupancy(65536) == held.transfer(65536));
  // The trees' recurrences hold a port for a message's whole time: not with port=.
  CHECK(tree_price_is_exact(held));
  CHECK_FALSE(tree_price_is_exact(link));
}

TEST_CASE("Cost model: a bad spec throws std::invalid_argument naming the bad key or value",
          "[cost_model]") {
  check_bad_spec("hockney:alpha=1e-6,beta=1e-10,port_fixed=1e-7", {"port_fixed", "port=P"});
  check_bad_spec("logp:L=1,o=2,g=3", {"logp", "hockney", "overlap"});
  check_bad_spec("", {"allowed"});
  check_bad_spec("hockney:beta=1", {"alpha"});
  check_bad_spec("hockney:alpha=1", {"beta"});
  check_bad_spec("overlap:d=1", {"c=VALUE"});
  check_bad_spec("overlap:c=1", {"d=VALUE"});
  check_bad_spec("hockney:alpha=fast,beta=1", {"alpha", "fast"});
  check_bad_spec("hockney:alpha=1,beta=-2", {"beta", "-2"});
  check_bad_spec("hockney:alpha=1,beta=2x", {"beta", "2x"});
  check_bad_spec("hockney:alpha=1,beta=", {"beta"});
  check_bad_spec("hockney:alpha=inf,beta=1", {"alpha", "inf"});
  check_bad_spec("hockney:alpha=nan,beta=1", {"alpha", "nan"});
  check_bad_spec("hockney:alpha=1e999,beta=1", {"alpha", "1e999"});
  check_bad_spec("hockney:alpha=1,beta=1,duplex=quarter", {"duplex", "quarter", "half", "full"});
  check_bad_spec("hockney:alpha=1,beta=1,overlap=yes", {"overlap", "yes"});
  check_bad_spec("hockney:alpha=1,beta=1,delta=3", {"delta"});
  check_bad_spec("hockney:alpha=1,beta=1,direct=-1e-10", {"direct", "-1e-10"});
  check_bad_spec("hockney:alpha=1,beta=1,direct_fixed=x", {"direct_fixed", "x"});
  check_bad_spec("overlap:d=1,c=2,direct=1", {"direct"});
  check_bad_spec("overlap:d=1,c=2,duplex=full", {"duplex"});
  check_bad_spec("hockney:alpha=1,beta", {"beta", "key=value"});
  check_bad_spec("hockney:alpha=1,,beta=2", {"key=value"});
  check_bad_spec("hockney:=1,alpha=1,beta=2", {"=1", "key=value"});
  check_bad_spec("overlap:d=1,c=0.5.5", {"c", "0.5.5"});
}
