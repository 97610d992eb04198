// Topology (topology.h) and its JSON form (topology_json.h): reading, writing, the
// messages for bad input, restriction to a subset of ranks, and how the simulator
// prices messages with it (Network: same node -> the base model, other nodes -> the
// link of the two clusters, the sender's slowdown scaling the time).
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "planner/problem.h"
#include "planner/registry.h"
#include "planner/simulate.h"
#include "planner/topology.h"
#include "planner/topology_json.h"

using namespace canopy::planner;
using nlohmann::json;

namespace {

// Two sites: s0 has ranks 0-2 on nodes a (ranks 0, 1) and b; s1 has ranks 3 and 4 on
// nodes c and d. Every link differs, so a message priced by the wrong one shows.
const char* const kTwoSites = R"({
  "ranks": ["s0", "s0", "s0", "s1", "s1"],
  "nodes": ["a", "a", "b", "c", "d"],
  "links": {"s0": "hockney:alpha=1e-5,beta=1e-8",
            "s0->s1": "hockney:alpha=1e-4,beta=1e-7",
            "s1->s0": "hockney:alpha=2e-4,beta=2e-7",
            "s1": "hockney:alpha=3e-5,beta=3e-8"},
  "slowdown": [2, 1, 1, 3, 1]
})";

Topology two_sites() { return topology_from_json(json::parse(kTwoSites)).topology; }

std::vector<std::string> link_specs(const Topology& t) {
  std::vector<std::string> out;
  for (const CostModel& m : t.links) out.push_back(m.spec());
  return out;
}

void check_same(const Topology& a, const Topology& b) {
  CHECK(a.node == b.node);
  CHECK(a.cluster == b.cluster);
  CHECK(a.clusters == b.clusters);
  CHECK(a.labels == b.labels);
  CHECK(a.slowdown == b.slowdown);
  CHECK(link_specs(a) == link_specs(b));
}

// The message topology_from_json throws for `text`, or "accepted".
std::string error_of(const std::string& text, const std::vector<int>& nodes = {}) {
  try {
    topology_from_json(json::parse(text), nodes);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}

// A file in /tmp holding `text`, removed at the end of the scope.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& text) {
    char name[] = "/tmp/canopy-topology-XXXXXX";
    const int fd = mkstemp(name);
    REQUIRE(fd >= 0);
    close(fd);
    path = name;
    std::ofstream(path) << text;
  }
  ~TempFile() { std::remove(path.c_str()); }
};

Schedule bcast(const char* algorithm, int p, int root, std::int64_t bytes) {
  Problem problem;
  problem.collective = Collective::Bcast;
  problem.nranks = p;
  problem.root = root;
  problem.count = bytes;
  problem.element_bytes = 1;
  problem.segment_bytes = 0;  // one segment: the makespan is a sum of messages
  const Algorithm* a = find_algorithm(Collective::Bcast, algorithm);
  REQUIRE(a != nullptr);
  return a->plan(problem);
}

}  // namespace

TEST_CASE("Topology JSON: fields read as documented", "[topology]") {
  const TopologyFile file = topology_from_json(json::parse(kTwoSites));
  const Topology& t = file.topology;
  CHECK(file.missing.empty());
  CHECK(t.nranks() == 5);
  CHECK(t.nodes() == 4);
  CHECK(t.clusters == 2);
  CHECK(t.labels == std::vector<std::string>{"s0", "s1"});
  CHECK(t.node == std::vector<int>{0, 0, 1, 2, 3});
  CHECK(t.cluster == std::vector<int>{0, 0, 0, 1, 1});
  CHECK(t.slowdown == std::vector<double>{2, 1, 1, 3, 1});
  CHECK(t.link(0, 0).alpha == 1e-5);
  CHECK(t.link(0, 1).alpha == 1e-4);
  CHECK(t.link(1, 0).alpha == 2e-4);
  CHECK(t.link(1, 1).alpha == 3e-5);
  CHECK(t.members(1) == std::vector<int>{3, 4});
  CHECK(t.same_node(0, 1));
  CHECK_FALSE(t.same_node(1, 2));
  CHECK_THAT(describe_topology(t), Catch::Contains("5 ranks on 4 nodes in 2 clusters: s0 = ranks 0-2; s1 = ranks 3-4"));
  CHECK_THAT(describe_topology(t), Catch::Contains("s1->s0 hockney:alpha=2e-04"));
  CHECK_THAT(describe_topology(t), !Catch::Contains("more"));
}

TEST_CASE("A topology's description names at most 16 links", "[topology]") {
  // Six clusters of one node: 36 links, each cluster pair's alpha its own.
  Topology t;
  t.clusters = 6;
  for (int r = 0; r < 6; ++r) {
    t.node.push_back(r);
    t.cluster.push_back(r);
  }
  for (int a = 0; a < 6; ++a)
    for (int b = 0; b < 6; ++b) t.links.push_back(hockney_model(1e-3 * (1 + a * 6 + b), 1e-9, 0));
  const std::string text = describe_topology(t);
  CHECK_THAT(text, Catch::Contains("c2->c3 hockney:alpha=0.016"));  // the 16th
  CHECK_THAT(text, !Catch::Contains("c2->c4"));
  CHECK_THAT(text, Catch::EndsWith("... and 20 more links"));
}

TEST_CASE("Topology JSON: 'A->B' beats 'A-B' beats 'default', whatever the order", "[topology]") {
  const Topology t = topology_from_json(json::parse(R"({
    "ranks": [7, 7, 9, "x"],
    "links": {"default": "hockney:alpha=1,beta=0", "7->9": "hockney:alpha=2,beta=0",
              "9-7": "hockney:alpha=3,beta=0", "7": "overlap:d=4,c=1"}})")).topology;
  REQUIRE(t.labels == std::vector<std::string>{"7", "9", "x"});  // integer labels read as text
  CHECK(t.link(0, 1).alpha == 2);
  CHECK(t.link(1, 0).alpha == 3);
  CHECK(t.link(0, 0).kind == "overlap");
  for (auto [a, b] : std::vector<std::pair<int, int>>{{1, 1}, {2, 2}, {0, 2}, {2, 0}, {1, 2}})
    CHECK(t.link(a, b).alpha == 1);
  // Without "nodes", every rank is its own node; given nodes are renumbered.
  CHECK(t.node == std::vector<int>{0, 1, 2, 3});
  const TopologyFile given = topology_from_json(json::parse(R"({"ranks": [7, 7, 9, "x"]})"), {5, 5, 2, 9});
  CHECK(given.topology.node == std::vector<int>{0, 0, 1, 2});
}

TEST_CASE("Topology JSON: labels may contain '-'", "[topology]") {
  const Topology t = topology_from_json(json::parse(R"({
    "ranks": ["grid-a", "grid-a", "grid-b"],
    "links": {"grid-a-grid-b": "hockney:alpha=1,beta=0", "grid-b->grid-a": "hockney:alpha=2,beta=0",
              "grid-a": "hockney:alpha=3,beta=0"}})")).topology;
  CHECK(t.link(0, 1).alpha == 1);
  CHECK(t.link(1, 0).alpha == 2);
  CHECK(t.link(0, 0).alpha == 3);
  // "a-b-c" splits as a | b-c and as a-b | c: refused rather than guessed.
  CHECK_THAT(error_of(R"({"ranks": ["a", "b-c", "a-b", "c"], "links": {"a-b-c": "hockney:alpha=1,beta=0"}})"),
             Catch::Contains("link \"a-b-c\" is ambiguous: it splits into labels of \"ranks\" 2 ways"));
}

TEST_CASE("Topology JSON: topology_to_json reads back the same topology", "[topology]") {
  const Topology t = two_sites();
  const json written = topology_to_json(t);
  const TopologyFile again = topology_from_json(written);
  CHECK(again.missing.empty());
  check_same(again.topology, t);
  CHECK(topology_to_json(again.topology) == written);
  // Every directed link spelled out.
  CHECK(written["links"].size() == 4);
  CHECK(written["links"]["s1->s0"] == t.link(1, 0).spec());

  SECTION("without labels or slowdowns, and with pLogP links") {
    Topology bare = slowdown_topology(plogp_model(2e-6, {{0, 1e-6}, {65536, 1e-5}}), {});
    bare.node = {0, 1, 1};
    bare.cluster = {0, 0, 0};
    check_topology(bare);
    const json out = topology_to_json(bare);
    CHECK_FALSE(out.contains("slowdown"));
    CHECK(out["ranks"] == json::array({"c0", "c0", "c0"}));
    const Topology back = topology_from_json(out).topology;
    CHECK(back.labels == std::vector<std::string>{"c0"});
    CHECK(back.node == bare.node);
    CHECK(link_specs(back) == link_specs(bare));
  }
}

TEST_CASE("Topology JSON: read_topology_file reads a file and names it in errors", "[topology]") {
  const TempFile good(kTwoSites);
  check_same(read_topology_file(good.path).topology, two_sites());

  auto file_error = [](const std::string& path) {
    try {
      read_topology_file(path);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(file_error("/no/such/topology.json") == "cannot read topology file /no/such/topology.json");
  const TempFile garbage("{\"ranks\": [");
  CHECK_THAT(file_error(garbage.path), Catch::StartsWith("topology file " + garbage.path + " is not JSON"));
  const TempFile unknown(R"({"ranks": ["s0"], "site": 1})");
  CHECK(file_error(unknown.path) ==
        unknown.path + ": topology: unknown key \"site\" (allowed: ranks, nodes, links, slowdown, packages, package_link)");
}

TEST_CASE("Topology JSON: every bad field is named with its value", "[topology]") {
  const std::string link = R"("hockney:alpha=1e-5,beta=1e-9")";
  CHECK(error_of("[1, 2]") == "topology: expected a JSON object, got [1,2]");
  CHECK(error_of(R"({"ranks": ["s0"], "slowdowns": [1]})") ==
        "topology: unknown key \"slowdowns\" (allowed: ranks, nodes, links, slowdown, packages, package_link)");
  CHECK(error_of(R"({"nodes": ["a"]})") == "topology: \"ranks\" (a cluster label per rank) is required");
  SECTION("labels") {
    CHECK_THAT(error_of(R"({"ranks": []})"), Catch::Contains("\"ranks\" must be a non-empty array of labels") &&
                                                  Catch::EndsWith("got []"));
    CHECK_THAT(error_of(R"({"ranks": "s0"})"), Catch::EndsWith("got \"s0\""));
    CHECK(error_of(R"({"ranks": ["s0", 1.5]})") ==
          "topology: \"ranks\"[1] is 1.5; labels are strings or integers");
    CHECK(error_of(R"({"ranks": ["s0"], "nodes": [true]})") ==
          "topology: \"nodes\"[0] is true; labels are strings or integers");
  }
  SECTION("counts") {
    CHECK(error_of(R"({"ranks": ["s0", "s0", "s1"], "nodes": ["a", "b"]})") ==
          "topology: \"nodes\" has 2 labels for 3 ranks (one per rank, as \"ranks\")");
    CHECK(error_of(R"({"ranks": ["s0", "s0", "s1"]})", {0, 1}) ==
          "topology: 2 nodes known for the 3 ranks of \"ranks\"");
    CHECK(error_of(R"({"ranks": ["s0", "s0", "s1"], "slowdown": [1, 2]})") ==
          "topology: \"slowdown\" must be an array of 3 numbers (one per rank), got 2 entries");
    CHECK(error_of(R"({"ranks": ["s0"], "slowdown": 2})") ==
          "topology: \"slowdown\" must be an array of 1 numbers (one per rank), got 2");
  }
  SECTION("slowdown values") {
    for (const char* bad : {"0", "-1", "\"fast\"", "null", "[2]"}) {
      INFO(bad);
      CHECK(error_of(std::string(R"({"ranks": ["s0", "s0"], "slowdown": [1, )") + bad + "]}") ==
            std::string("topology: \"slowdown\"[1] is ") + bad + "; slowdowns are positive numbers up to 1e9");
    }
    CHECK_THAT(error_of(R"({"ranks": ["s0"], "slowdown": [2e9]})"), Catch::Contains("\"slowdown\"[0] is 2"));
  }
  SECTION("links") {
    CHECK(error_of(R"({"ranks": ["s0", "s1"], "links": ["s0-s1"]})") ==
          "topology: \"links\" must be an object of \"A-B\": \"model spec\", got [\"s0-s1\"]");
    CHECK(error_of(R"({"ranks": ["s0", "s1"], "links": {"s0-s1": 5}})") ==
          "topology: link \"s0-s1\" must be a cost model spec string, got 5");
    CHECK_THAT(error_of(R"({"ranks": ["s0", "s1"], "links": {"s0-s1": "hockney:alpha=x,beta=1"}})"),
               Catch::StartsWith("topology: link \"s0-s1\": model parameter alpha='x'"));
    CHECK_THAT(error_of(R"({"ranks": ["s0", "s1"], "links": {"s0-s1": "warp:speed=9"}})"),
               Catch::StartsWith("topology: link \"s0-s1\": ") && Catch::Contains("warp"));
    CHECK(error_of(R"({"ranks": ["s0", "s1"], "links": {"s0-s9": )" + link + "}}") ==
          "topology: link \"s0-s9\" names \"s9\", which is not a label of \"ranks\"");
    CHECK(error_of(R"({"ranks": ["s0", "s1"], "links": {"s9->s0": )" + link + "}}") ==
          "topology: link \"s9->s0\" names \"s9\", which is not a label of \"ranks\"");
    CHECK(error_of(R"({"ranks": ["s0", "s1"], "links": {"s0s1": )" + link + "}}") ==
          "topology: link key \"s0s1\" is not \"A-B\", \"A->B\", a cluster label or \"default\"");
  }
  SECTION("a node in two clusters") {
    CHECK(error_of(R"({"ranks": ["s0", "s0", "s1"], "nodes": ["a", "b", "b"]})") ==
          "topology: node \"b\" holds rank 1 of cluster \"s0\" and rank 2 of cluster \"s1\"; a node lies in one "
          "cluster");
    CHECK_THAT(error_of(R"({"ranks": ["s0", "s1"]})", {4, 4}), Catch::Contains("node \"4\" holds rank 0"));
  }
}

TEST_CASE("Topology JSON: pairs without a link and no default are listed as missing", "[topology]") {
  // s0 spans two nodes and s1 one: s1's own link carries nothing, so it is not missing.
  const std::string ranks = R"("ranks": ["s0", "s0", "s1"])";
  const TopologyFile none = topology_from_json(json::parse("{" + ranks + "}"));
  CHECK(none.missing == std::vector<std::pair<int, int>>{{0, 0}, {0, 1}, {1, 0}});
  const TopologyFile one_way =
      topology_from_json(json::parse("{" + ranks + R"(, "links": {"s0->s1": "hockney:alpha=1,beta=0"}})"));
  CHECK(one_way.missing == std::vector<std::pair<int, int>>{{0, 0}, {1, 0}});
  // A missing link still has a model (the default one), so the topology is usable.
  CHECK(one_way.topology.link(1, 0).spec() == default_model().spec());
  const TopologyFile with_default =
      topology_from_json(json::parse("{" + ranks + R"(, "links": {"default": "hockney:alpha=1,beta=0"}})"));
  CHECK(with_default.missing.empty());
  // On one node, s0 needs no link of its own either.
  const TopologyFile shared =
      topology_from_json(json::parse("{" + ranks + R"(, "nodes": [1, 1, 2], "links": {"s0-s1": "hockney:alpha=1,beta=0"}})"));
  CHECK(shared.missing.empty());
}

namespace {

// check_topology's message, or "accepted".
std::string error_of_topology(const Topology& t) {
  try {
    check_topology(t);
  } catch (const PlanError& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("Topology: check_topology rejects what the planner cannot use", "[topology]") {
  Topology t;
  t.node = {0, 0};
  t.cluster = {0, 1};
  t.clusters = 2;
  t.links.assign(4, default_model());
  CHECK(error_of_topology(t) == "topology: node 0 spans clusters 0 and 1");
  t.node = {0, 1};
  CHECK(error_of_topology(t) == "accepted");
  t.links.pop_back();
  CHECK(error_of_topology(t) == "topology: 3 links for 2 clusters (want clusters^2)");
  t.links.push_back(default_model());
  t.slowdown = {1, 0};
  CHECK(error_of_topology(t) == "topology: slowdowns must be positive");
  t.slowdown.clear();
  t.cluster = {1, 0};
  CHECK_THAT(error_of_topology(t), Catch::Contains("numbered 0, 1, ... in order of first rank (rank 0)"));
}

TEST_CASE("Topology: restrict_topology renumbers and keeps the links", "[topology]") {
  const Topology t = two_sites();
  // Ranks 4, 1, 0 of the five: s1 comes first now.
  const Topology r = restrict_topology(t, {4, 1, 0});
  check_topology(r);
  CHECK(r.nranks() == 3);
  CHECK(r.node == std::vector<int>{0, 1, 1});  // old nodes d, a, a
  CHECK(r.cluster == std::vector<int>{0, 1, 1});
  CHECK(r.clusters == 2);
  CHECK(r.labels == std::vector<std::string>{"s1", "s0"});
  CHECK(r.slowdown == std::vector<double>{1, 1, 2});
  CHECK(r.link(0, 1).spec() == t.link(1, 0).spec());
  CHECK(r.link(1, 0).spec() == t.link(0, 1).spec());
  CHECK(r.link(0, 0).spec() == t.link(1, 1).spec());
  CHECK(r.link(1, 1).spec() == t.link(0, 0).spec());
  // One cluster alone keeps only its own link.
  const Topology s1 = restrict_topology(t, t.members(1));
  CHECK(s1.clusters == 1);
  CHECK(link_specs(s1) == std::vector<std::string>{t.link(1, 1).spec()});
  CHECK(s1.slowdown == std::vector<double>{3, 1});
}

// Hockney links, one segment of 1000 bytes: each message costs alpha + beta * 1000
// times its sender's slowdown.
//   same node (base model, alpha 1e-6, beta 1e-9)  2e-6
//   s0 -> s0 between nodes                         1e-5 + 1e-5 = 2e-5
//   s0 -> s1                                       1e-4 + 1e-4 = 2e-4
//   s1 -> s0                                       2e-4 + 2e-4 = 4e-4
//   s1 -> s1 between nodes                         3e-5 + 3e-5 = 6e-5
// Slowdowns: rank 0 sends at half speed, rank 3 at a third. Half duplex: the root's
// one port sends the flat tree's messages one after the other, so its makespan is
// their sum; the chain's messages follow each other too.
TEST_CASE("Topology: the simulator prices each message by its pair of ranks", "[topology]") {
  const Topology t = two_sites();
  const CostModel base = hockney_model(1e-6, 1e-9, 0);
  const std::int64_t bytes = 1000;
  SECTION("flat from rank 0: to its node, to s0's other node, twice to s1; all slowed by 2") {
    const Schedule s = bcast("flat", 5, 0, bytes);
    const Simulation sim = simulate(s, base, &t);
    REQUIRE(sim.ok);
    CHECK(sim.makespan == Approx(2 * (2e-6 + 2e-5 + 2 * 2e-4)));
    // Without the topology every message is the base model's.
    CHECK(simulate(s, base).makespan == Approx(4 * 2e-6));
  }
  SECTION("flat from rank 3: three times to s0, once within s1; all slowed by 3") {
    const Simulation sim = simulate(bcast("flat", 5, 3, bytes), base, &t);
    REQUIRE(sim.ok);
    CHECK(sim.makespan == Approx(3 * (3 * 4e-4 + 6e-5)));
  }
  SECTION("chain 0 -> 1 -> 2 -> 3 -> 4: each hop its own link and its sender's slowdown") {
    const Schedule s = bcast("chain", 5, 0, bytes);
    const Simulation sim = simulate(s, base, &t);
    REQUIRE(sim.ok);
    CHECK(sim.makespan == Approx(2 * 2e-6 + 2e-5 + 2e-4 + 3 * 6e-5));
    // The hop into s1 (rank 2's send) starts when the first two have arrived.
    const auto send_of = [&](int rank) {
      for (std::size_t i = 0; i < s.steps[rank].size(); ++i)
        if (s.steps[rank][i].kind == StepKind::Send) return sim.timing[rank][i];
      FAIL("rank " << rank << " sends nothing");
      return StepTiming{};
    };
    CHECK(send_of(2).start == Approx(2 * 2e-6 + 2e-5));
    CHECK(send_of(2).end - send_of(2).start == Approx(2e-4));
  }
  SECTION("a topology of another size is refused") {
    const Simulation sim = simulate(bcast("flat", 4, 0, bytes), base, &t);
    CHECK_FALSE(sim.ok);
    CHECK(sim.error == "the topology has 5 ranks, the schedule 4");
  }
}

// ---- Packages (the socket level) -----------------------------------------------------

TEST_CASE("Topology: number_packages numbers (node, label) pairs in order of first rank", "[topology][packages]") {
  // Label 7 on node 0 and on node 1 are two packages; the order is of first rank, not of label.
  CHECK(number_packages({0, 0, 1, 1, 0}, {7, 3, 7, 7, 3}) == std::vector<int>{0, 1, 2, 2, 1});
  CHECK(number_packages({}, {}).empty());
  CHECK_THROWS_AS(number_packages({0, 0}, {0}), PlanError);
}

TEST_CASE("Topology: package_labels numbers each node's packages over all ranks, or gives none",
          "[topology][packages]") {
  // Two nodes; node 0's ranks on machine packages 1,0,1; node 1's on 0,0.
  CHECK(package_labels({0, 0, 0, 1, 1}, {1, 0, 1, 0, 0}) == std::vector<int>{0, 1, 0, 2, 2});
  // Every node on one package: nothing to split.
  CHECK(package_labels({0, 0, 1, 1}, {0, 0, 1, 1}).empty());
  // One rank unbound (-1): no socket level at all.
  CHECK(package_labels({0, 0, 0}, {0, 1, -1}).empty());
  CHECK_THROWS_AS(package_labels({0, 0}, {0}), PlanError);
}

TEST_CASE("Topology: packages are checked, restricted, described, and price messages between them",
          "[topology][packages]") {
  Topology t;
  t.node = {0, 0, 0, 1};
  t.cluster = {0, 0, 0, 0};
  t.links = {hockney_model(1e-4, 1e-8, 0)};
  t.package = {0, 1, 0, 2};
  t.package_link = hockney_model(3e-6, 2e-10, 0);
  CHECK(error_of_topology(t) == "accepted");
  CHECK(t.splits_a_node());
  t.package = {0, 1, 0};
  CHECK(error_of_topology(t) == "topology: 3 package labels for 4 ranks");
  t.package = {1, 0, 1, 2};
  CHECK_THAT(error_of_topology(t), Catch::Contains("packages must be numbered 0, 1, ... in order of first rank (rank 0)"));
  t.package = {0, 1, 0, 1};
  CHECK(error_of_topology(t) == "topology: package 1 spans nodes 0 and 1");
  t.package = {0, 1, 0, 2};

  const CostModel shm = hockney_model(1e-6, 1e-10, 0);
  const Network net(shm, &t);
  CHECK(&net.link(0, 2) == &shm);                 // one package
  CHECK(net.link(0, 1).spec() == t.package_link->spec());  // two packages of one node
  CHECK(net.link(1, 3).spec() == t.links[0].spec());       // two nodes
  CHECK_THAT(describe_topology(t), Catch::Contains("packages 3, per rank 0 1 0 2, between packages hockney"));

  // Restricted to ranks 3, 2, 0: packages renumbered (2 -> 0, 0 -> 1), the link kept, and
  // no node split any more.
  const Topology r = restrict_topology(t, {3, 2, 0});
  check_topology(r);
  CHECK(r.package == std::vector<int>{0, 1, 1});
  CHECK(r.package_link->spec() == t.package_link->spec());
  CHECK_FALSE(r.splits_a_node());
  CHECK(restrict_topology(t, {1, 0}).splits_a_node());

  // Without package_link, a message between packages is priced as any inside the node.
  t.package_link.reset();
  CHECK(&Network(shm, &t).link(0, 1) == &shm);
}

TEST_CASE("Topology JSON: packages are labels within the rank's node, package_link a model spec",
          "[topology][packages]") {
  const TopologyFile file = topology_from_json(json::parse(R"({
    "ranks": ["a", "a", "a", "a", "a", "a"],
    "nodes": ["n0", "n0", "n0", "n1", "n1", "n1"],
    "packages": [0, 1, 0, 0, 1, 1],
    "package_link": "hockney:alpha=2e-6,beta=1e-10",
    "links": {"a": "hockney:alpha=5e-5,beta=1e-9"}})"));
  const Topology& t = file.topology;
  CHECK(t.package == std::vector<int>{0, 1, 0, 2, 3, 3});
  REQUIRE(t.package_link);
  CHECK(t.package_link->alpha == 2e-6);
  const json written = topology_to_json(t);
  const Topology back = topology_from_json(written).topology;
  CHECK(back.package == t.package);
  CHECK(back.package_link->spec() == t.package_link->spec());
  CHECK(topology_to_json(back) == written);

  auto error_of = [](const char* text) {
    try {
      topology_from_json(json::parse(text));
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(error_of(R"({"ranks": [0, 0], "nodes": [0, 0], "packages": [0]})") ==
        "topology: \"packages\" has 1 labels for 2 ranks (one per rank, as \"ranks\")");
  CHECK_THAT(error_of(R"({"ranks": [0, 0], "nodes": [0, 0], "packages": [0, 1], "package_link": 3})"),
             Catch::Contains("link \"package_link\" must be a cost model spec string, got 3"));
  CHECK_THAT(error_of(R"({"ranks": [0, 0], "nodes": [0, 0], "packages": [0, 1], "package_link": "hockney:alpha=-1"})"),
             Catch::Contains("link \"package_link\": "));
  CHECK_THAT(error_of(R"({"ranks": [0], "sockets": [0]})"),
             Catch::Contains("unknown key \"sockets\" (allowed: ranks, nodes, links, slowdown, packages, package_link)"));
}

TEST_CASE("Topology: the link between packages is the node's model scaled by the measured ratios, "
          "never below 1",
          "[topology][packages]") {
  const CostModel base = hockney_model(2e-6, 1e-10, 3e-10);
  // Across: 1.5x the per-message time, 2x at the probe.
  const CostModel link = package_link_from_times(base, 4e-6, 10e-6, 6e-6, 20e-6);
  CHECK(link.alpha == Approx(3e-6));
  CHECK(link.beta == Approx(2e-10));
  CHECK(link.gamma == base.gamma);
  CHECK(link.copy_per_byte == base.copy_per_byte);
  // Faster across than within (noise, or a shared core within): the base model.
  CHECK(package_link_from_times(base, 4e-6, 10e-6, 3e-6, 9e-6).spec() == base.spec());
  // Times that are no times: the base model.
  CHECK(package_link_from_times(base, 0, 0, 6e-6, 20e-6).spec() == base.spec());
  // pLogP: the gaps scale as beta does.
  const CostModel plogp = plogp_model(1e-6, {{0, 1e-6}, {65536, 8e-6}});
  const CostModel scaled = package_link_from_times(plogp, 1e-6, 1e-5, 1e-6, 3e-5);
  CHECK(scaled.alpha == plogp.alpha);
  CHECK(scaled.gap_at(65536) == Approx(24e-6));
}

TEST_CASE("Topology: map_nodes groups ranks by node name, in world order, and finds oversubscription", "[topology]") {
  using canopy::planner::map_nodes;
  // Names 7 and 9 interleaved: ranks 0, 2, 3 on one node, 1 and 4 on the other.
  const std::vector<std::uint64_t> name{7, 9, 7, 7, 9};
  const std::vector<long> cores{4, 4, 4, 4, 4};
  const auto m3 = map_nodes(name, cores, 3);
  CHECK(m3.leader == 0);
  CHECK(m3.local_rank == 2);
  CHECK(m3.local_size == 3);
  CHECK(m3.nodes == 2);
  CHECK(m3.max_ranks_per_node == 3);
  CHECK_FALSE(m3.oversubscribed);
  const auto m4 = map_nodes(name, cores, 4);
  CHECK(m4.leader == 1);
  CHECK(m4.local_rank == 1);
  CHECK(m4.local_size == 2);
  // Every rank computes the same nodes, oversubscription and largest node.
  for (int me = 0; me < 5; ++me) {
    const auto m = map_nodes(name, cores, me);
    CHECK(m.nodes == 2);
    CHECK(m.max_ranks_per_node == 3);
    CHECK(m.leader == (name[me] == 7 ? 0 : 1));
  }
  // Three ranks on a node whose ranks report 2 cores: oversubscribed, seen from every
  // rank, also from the other node; 0 cores (unknown) never counts.
  const std::vector<long> small{2, 4, 2, 2, 4};
  for (int me = 0; me < 5; ++me) CHECK(map_nodes(name, small, me).oversubscribed);
  CHECK_FALSE(map_nodes(name, std::vector<long>(5, 0), 0).oversubscribed);
  // Distinct names: every rank its own node.
  const auto alone = map_nodes({0, 1, 2}, {1, 1, 1}, 2);
  CHECK(alone.leader == 2);
  CHECK(alone.local_rank == 0);
  CHECK(alone.nodes == 3);
  CHECK(alone.max_ranks_per_node == 1);
  CHECK_THROWS_AS(map_nodes({1, 2}, {1}, 0), canopy::planner::PlanError);
  CHECK_THROWS_AS(map_nodes({1, 2}, {1, 1}, 2), canopy::planner::PlanError);
}

TEST_CASE("Topology: links of a millisecond or more between clusters keep their latency in flight, at the slower "
          "end's fastest measured rate (keep_wide_area_latency_in_flight, what CANOPY_TOPOLOGY=auto gives them)",
          "[topology]") {
  // Three clusters: c0 of two nodes (their link measured at 8e-9 s/B), c1 and c2 of one
  // node each (their own links the base model, never measured). c0-c1 and c1-c2 are
  // wide-area links, c0-c2 a LAN's 20 us.
  Topology t;
  t.node = {0, 0, 1, 2, 3};
  t.cluster = {0, 0, 0, 1, 2};
  t.clusters = 3;
  const CostModel base = hockney_model(1e-6, 1e-10, 0);
  const CostModel c0 = hockney_model(25e-6, 8e-9, 0);
  const CostModel c0c1 = hockney_model(5e-3, 3e-8, 0), c1c2 = hockney_model(1e-3, 2e-8, 0);
  const CostModel c0c2 = hockney_model(20e-6, 4e-9, 0);
  t.links = {c0, c0c1, c0c2, c0c1, base, c1c2, c0c2, c1c2, base};
  check_topology(t);
  CHECK(keep_wide_area_latency_in_flight(t) == 4);  // c0-c1 and c1-c2, each way
  // c0's card: its fastest link, 4e-9 to c2; c1's: 2e-8 (its own link is never used);
  // c2's: 4e-9. A link's port is the slower end's.
  CHECK(t.link(0, 1).port_per_byte == 2e-8);
  CHECK(t.link(1, 0).port_per_byte == 2e-8);
  CHECK(t.link(1, 2).port_per_byte == 2e-8);
  CHECK(t.link(2, 1).port_per_byte == 2e-8);
  for (int a = 0; a < 3; ++a) CHECK(t.link(a, a).port_per_byte == 0);
  CHECK(t.link(0, 2).port_per_byte == 0);  // 20 us: Hockney's model as measured
  CHECK(keeps_latency_in_flight(t));
  // Once given, kept: a second pass changes nothing.
  const Topology once = t;
  CHECK(keep_wide_area_latency_in_flight(t) == 0);
  CHECK(link_specs(t) == link_specs(once));
  // A grid whose sites are all near (test bed, cluster-edr): nothing changes.
  Topology near = t;
  for (CostModel& l : near.links) l = hockney_model(std::min(l.alpha, 50e-6), l.beta, 0);
  CHECK(keep_wide_area_latency_in_flight(near) == 0);
  CHECK_FALSE(keeps_latency_in_flight(near));
}

TEST_CASE("Topology: a link measured at three sizes prices each side of a fixed cost that begins between them "
          "(measured_link, what CANOPY_TOPOLOGY=auto gives quick links)",
          "[topology][plogp]") {
  CostModel base = hockney_model(1e-6, 1e-10, 3e-10);
  base.copy_per_byte = 2e-10;
  // One-way times of the simulated EDR cluster's link inside a leaf switch (SMPI 3.32,
  // docs/performance-history.md section 27): 8 B, then 64 KiB past SMPI's latency step,
  // then 1 MiB.
  const double t8 = 1.6e-6, t64k = 16.7e-6, t1m = 99.3e-6;
  const CostModel three = measured_link(base, {{8, t8}, {65536, t64k}, {1 << 20, t1m}});
  CHECK(three.kind == "plogp");
  CHECK(three.alpha == 0);
  CHECK(three.ports_held_for_transfer());  // L = 0: the port is held for the whole time
  CHECK(three.occupancy(1 << 20) == three.transfer(1 << 20));
  CHECK(three.gamma == base.gamma);
  CHECK(three.copy_per_byte == base.copy_per_byte);
  CHECK(three.duplex == Duplex::Full);
  CHECK(three.overlap);
  // Each measured size at its measured time, and straight lines between.
  CHECK(three.transfer(8) == Approx(t8));
  CHECK(three.transfer(65536) == Approx(t64k));
  CHECK(three.transfer(1 << 20) == Approx(t1m));
  CHECK(three.transfer(0) == Approx(t8));
  const double slope = (t1m - t64k) / ((1 << 20) - 65536);
  CHECK(three.large_message_per_byte() == Approx(slope));
  CHECK(three.transfer(80 * 1024) == Approx(t64k + slope * 16 * 1024));
  CHECK(three.transfer(4 << 20) == Approx(t1m + slope * (3 << 20)));
  // The two-size line through 8 B and 64 KiB (the probe alone) prices the 1 MiB message
  // at over twice what it took; the line through 8 B and 1 MiB prices 80 KiB under its time.
  const CostModel probe_only = measured_link(base, {{8, t8}, {65536, t64k}});
  CHECK(probe_only.kind == "hockney");
  CHECK(probe_only.alpha == t8);
  CHECK(probe_only.beta == Approx((t64k - t8) / (65536 - 8)));
  CHECK(probe_only.transfer(1 << 20) > 2 * t1m);
  const CostModel far_line = measured_link(base, {{8, t8}, {1 << 20, t1m}});
  CHECK(far_line.transfer(80 * 1024) < 0.6 * three.transfer(80 * 1024));
  // A larger size measured quicker than a smaller one (noise) is priced at the smaller's.
  const CostModel noisy = measured_link(base, {{8, t8}, {65536, t64k}, {1 << 20, t64k / 2}});
  CHECK(noisy.transfer(1 << 20) == Approx(t64k));
  // A second size no larger than the first: latency only, the smaller time.
  const CostModel flat = measured_link(base, {{8, 3e-6}, {8, 2e-6}});
  CHECK(flat.alpha == 2e-6);
  CHECK(flat.beta == 0);
  // Spec text reads back the same link (the probe shares topologies as text).
  CHECK(parse_model(three.spec()) == three);
  CHECK_THROWS_WITH(measured_link(base, {{8, t8}}), Catch::Contains("two sizes"));
  CHECK_THROWS_WITH(measured_link(base, {{8, t8}, {65536, t64k}, {4096, t1m}}), Catch::Contains("must increase"));
}

TEST_CASE("Topology: a measured link whose trains show its latency in flight frees the ports at the trains' gaps "
          "(measured_link with gaps)",
          "[topology][plogp]") {
  const CostModel base = hockney_model(1e-6, 1e-10, 3e-10);
  const std::vector<std::pair<std::int64_t, double>> one_way{{8, 2.0e-6}, {8192, 2.8e-6}, {65536, 17.2e-6},
                                                              {1 << 20, 100.8e-6}};
  // SMPI's EDR link (docs/performance-history.md, section 30): trains of 8 KiB and 64 KiB
  // leave 0.9 and 5.6 us between messages, a third of the one-way time at 64 KiB.
  const CostModel in_flight = measured_link(base, one_way, {{8192, 0.9e-6}, {65536, 5.6e-6}});
  const double per_byte = (5.6e-6 - 0.9e-6) / (65536 - 8192);
  CHECK(in_flight.port_per_byte == Approx(per_byte));
  CHECK(in_flight.port_fixed == Approx(0.9e-6 - per_byte * 8192));
  CHECK_FALSE(in_flight.ports_held_for_transfer());
  CHECK(in_flight.transfer(65536) == Approx(17.2e-6));  // arrival as measured
  CHECK(in_flight.occupancy(65536) == Approx(5.6e-6));  // the ports: the train's gap
  CHECK(in_flight.occupancy(1 << 20) == Approx(in_flight.port_fixed + per_byte * (1 << 20)));
  CHECK(parse_model(in_flight.spec()) == in_flight);
  // Every rank's segments of a pipeline: 16 messages of 64 KiB from one rank to another
  // arrive 15 gaps after the first's one-way time, not 15 one-way times.
  {
    Problem p;
    p.collective = Collective::Bcast;
    p.nranks = 2;
    p.count = 16 * 65536;
    p.element_bytes = 1;
    p.segment_bytes = 65536;
    for (const auto& [link, last] : {std::pair{in_flight, 15 * 5.6e-6 + 17.2e-6},
                                     std::pair{measured_link(base, one_way), 16 * 17.2e-6}}) {
      p.model = link;
      CHECK(simulate(find_algorithm(Collective::Bcast, "chain")->plan(p), link).makespan == Approx(last).epsilon(0.01));
    }
  }
  // A gap near the one-way time (the port busy for the whole message): held, as without trains.
  const CostModel held = measured_link(base, one_way, {{8192, 2.6e-6}, {65536, 16.0e-6}});
  CHECK(held.port_per_byte == 0);
  CHECK(held.ports_held_for_transfer());
  CHECK(held == measured_link(base, one_way));
  // Gaps that fall with size (noise) give no port line; a smaller gap above the line's
  // start gives no negative port_fixed.
  CHECK(measured_link(base, one_way, {{8192, 6e-6}, {65536, 5.6e-6}}).port_per_byte == 0);
  CHECK(measured_link(base, one_way, {{8192, 0.1e-6}, {65536, 5.6e-6}}).port_fixed == 0);
}

TEST_CASE("Topology: a measured pLogP link counts as its latency and slope where a topology is priced whole "
          "(slowest_link) and as its card's rate between sites (keep_wide_area_latency_in_flight)",
          "[topology][plogp]") {
  const CostModel base = hockney_model(1e-6, 1e-11, 0);  // the node, quicker than any link
  const CostModel quick = measured_link(base, {{8, 2e-6}, {65536, 20e-6}, {1 << 20, 100e-6}});
  // Two clusters of two nodes each, far apart; c1's own link faster a byte than c0's.
  Topology t;
  t.node = {0, 1, 2, 3};
  t.cluster = {0, 0, 1, 1};
  t.clusters = 2;
  const CostModel wide = hockney_model(5e-3, 3e-8, 0);
  t.links = {quick, wide, wide, hockney_model(2e-6, 1e-11, 0)};
  check_topology(t);
  // slowest_link: the wide link's latency; per byte at 1 MiB the wide link's. At 8 bytes
  // the quick link's latency is its 8-byte time, not its L of 0.
  Topology near = t;
  near.links = {quick, quick, quick, quick};
  const CostModel at8 = slowest_link(near, base, 8);
  CHECK(at8.alpha == Approx(2e-6));
  const CostModel at1m = slowest_link(near, base, 1 << 20);
  CHECK(at1m.transfer(1 << 20) == Approx(100e-6));
  CHECK(at1m.kind == "hockney");
  // The wide links' port, the slower end's card: c0's, its measured link's slope at
  // large messages (8.1e-11 s/B; its 8 B to 64 KiB line would give 2.7e-10).
  CHECK(keep_wide_area_latency_in_flight(t) == 2);
  CHECK(t.link(0, 1).port_per_byte == Approx(quick.large_message_per_byte()));
}
