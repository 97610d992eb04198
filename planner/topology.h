// The network under a communicator as the planner sees it (004_*.txt, Steffenel,
// section 2.1 and 4.1): ranks share memory on nodes, nodes fall into homogeneous
// logical clusters (Lowekamp's clustering, cluster.h), every ordered pair of clusters
// has a link model, and a rank may send more slowly than the others (the slower nodes
// of 002_*.txt, Liu & Wang).
//
// Pricing one message from rank a to rank b (Network below):
//   same node, same package   Problem::model (shared memory, the homogeneous model)
//   same node, two packages   package_link where the topology has one (a socket
//                             level: hwloc's packages, shim/topology_probe.h), else
//                             Problem::model
//   different nodes           links[cluster(a) * clusters + cluster(b)]; the diagonal
//                             is between two nodes of one cluster
// and the sender's slowdown multiplies the time (a slowdown of 2 sends at half speed).
// Reductions and copies always follow Problem::model.
//
// Topology is plain data, identical on every rank of a communicator (the shim shares
// what it measured from one rank), so every rank plans the same schedule.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "planner/cost_model.h"
#include "planner/schedule.h"

namespace canopy::planner {

struct Topology {
  std::vector<int> node;         // node[rank], numbered 0..nodes-1 in order of first rank
  std::vector<int> cluster;      // cluster[rank], 0..clusters-1 in order of first rank;
                                 // ranks of one node are in one cluster
  int clusters = 1;
  std::vector<CostModel> links;  // clusters x clusters, row = sending cluster
  std::vector<double> slowdown;  // per rank, >= 1 means slower sends; empty: all 1
  std::vector<std::string> labels;  // a name per cluster (site names, for logs); may be empty
  // The package (socket) of each rank, numbered 0.. in order of first rank over the
  // whole topology, every package inside one node; empty: not known, or one per node.
  std::vector<int> package;
  // Between two packages of one node; none: Problem::model prices it as any other
  // message inside the node.
  std::optional<CostModel> package_link;

  int nranks() const { return static_cast<int>(node.size()); }
  int nodes() const;
  const CostModel& link(int from_cluster, int to_cluster) const { return links[from_cluster * clusters + to_cluster]; }
  double slowdown_of(int rank) const { return slowdown.empty() ? 1.0 : slowdown[rank]; }
  // The ranks of cluster c, in rank order.
  std::vector<int> members(int c) const;
  bool same_node(int a, int b) const { return node[a] == node[b]; }
  bool same_package(int a, int b) const { return package.empty() || package[a] == package[b]; }
  // Whether some node holds ranks of two packages (only then is there a socket level).
  bool splits_a_node() const;
};

// A homogeneous model no faster than any message over `t`: `inside` (the model inside a
// node) with its latency and its time per byte (at `bytes`, where a link's pLogP gap
// makes that depend on the size) raised to the largest of every link's and the package
// link's, times the largest slowdown. What a flat algorithm's estimate is priced with
// over a topology (select.cpp, price_candidate): priced with `inside` alone, a 1 MiB
// broadcast by scatter-allgather over 1024 simulated ranks on 16 sites (56-336 Mbit/s
// between them) was estimated at 4.3 ms, trialled as the fastest by far, and took 7.4 s.
CostModel slowest_link(const Topology& t, const CostModel& inside, std::int64_t bytes);

// The least time in which the links between `t`'s clusters carry what whole schedule
// `s` sends over them: for every ordered pair of clusters, its link's time for all the
// bytes of `s`'s sends from one to the other as one message (one latency, then every
// byte), the largest of these; 0 with one cluster. A bound of the network whatever the
// order of the messages, where the simulator gives every message between two clusters
// the link to itself (each rank has its ports, a link has none). What a flat
// algorithm's simulated price is raised to over several clusters (select.cpp,
// price_candidate): over 256 ranks on 16 sites of one 16-rank node each, 56-336 Mbit/s
// between sites, greedy-segmented's 1 MiB reduce simulated at 147 ms where its busiest
// link carries 693 ms of bytes (tests/planner/test_select.cpp); on a grid of that shape
// under SMPI (tools/sim/gridgen.py --sites 16 --nodes 1) rabenseifner's, simulated at
// 91 ms (bound 140), took 216 ms on average, 344 on the slowest rank.
double busiest_link(const Schedule& s, const Topology& t);

// Whether some link of `t` keeps its latency in flight (port=, CostModel::port_per_byte):
// what Algorithm::wide_area needs. Quick links whose trains showed theirs count too
// (measured_link): tried without them (docs/performance-history.md, section 30), 16
// nodes of SimGrid's EDR cluster, one rank each, lost what the wide forms gave (a 1 MiB
// reduce 192.7 -> 268.7 us, allreduce 196.4 -> 301.5); they cost 256 ranks of 16 a node,
// where hierarchical over the wide exchange among the node leaders took 310 us a 1 MiB
// reduce and over a tree 205 (the 256-rank reduce row: 222.9 -> 321.9 us).
bool keeps_latency_in_flight(const Topology& t);

// Why `algorithm`, a wide-area one (Algorithm::wide_area), declines a problem over `t`
// (null: none known), or empty: the selector's declines() and the algorithms' own plans
// ask it, so they refuse alike.
std::string wide_area_declines(const Topology* t, const std::string& algorithm);

// What CANOPY_TOPOLOGY=auto gives a link between sites far apart (shim/topology_probe.cpp):
// the probe measures a link's latency and its rate, not the network cards behind it, and
// Hockney's model then holds a rank's port for the whole latency, so that a leader's
// messages to 15 sites 1-15 ms away go one after another (docs/simulation.md). A link
// between two clusters whose latency is kWideAreaLatency or more (propagation across a
// wide area, during which a card sends other messages) gets port= at its ends' cards'
// rate, taken as the fastest per-byte time measured on a link of either end's cluster
// (a card passes at least what a link through it carried; the slower of the two ends).
// Counted: links between clusters, and a cluster's own link where it spans several nodes
// (elsewhere the probe leaves the base model there, never measured). A link that has
// port= keeps it. Returns how many links (each direction one) got it. Decision: 1 ms,
// twenty times a LAN's latency (the test bed's sites and cluster-edr's switches are
// tens of microseconds apart and keep Hockney's model), and the least latency between
// the sites of tools/sim/gridgen.py's grids, as in 004's GRID5000 (Table 4).
constexpr double kWideAreaLatency = 1e-3;
int keep_wide_area_latency_in_flight(Topology& t);

// Each cluster's network card, seconds per byte (0: not known): the fastest per-byte time
// of a link of it (CostModel::large_message_per_byte, or its port= where it has one),
// each way, its own link counted only where the cluster spans several nodes. A card
// passes at least what a link through it carried. What the wide-area links' ports
// (keep_wide_area_latency_in_flight) and the simulator's node cards (simulate.h) are
// priced at.
std::vector<double> cluster_cards(const Topology& t);

// Checks sizes and numbering (throws PlanError naming what is wrong): node and
// cluster have one entry per rank, are numbered in order of first appearance, every
// node lies in one cluster, links has clusters^2 entries, slowdowns are positive;
// packages (if any) have one entry per rank, are numbered in order of first rank, and
// every package lies in one node.
void check_topology(const Topology& t);

// The topology of the ranks `ranks` (indices into t), renumbered 0..k-1 in that order:
// how a sub-communicator or one cluster of a hierarchy sees the network. Clusters and
// nodes (and packages) are renumbered in order of first appearance; links are kept
// for the clusters that remain.
Topology restrict_topology(const Topology& t, const std::vector<int>& ranks);

// Topology::package from each rank's node and a label of its package within that node
// (any ints: a file's labels, hwloc's indices): the (node, label) pairs numbered in order
// of first rank, so one label on two nodes names two packages. Throws PlanError on
// lists of different lengths.
std::vector<int> number_packages(const std::vector<int>& node, const std::vector<int>& within_node);

// The package labels of Topology::package from each rank's node and the index of its
// package on its machine (hwloc's logical index; -1: unknown), numbered over all
// ranks in order of first rank. Empty where some rank's package is unknown (a socket
// level needs every rank placed) or no node holds ranks of two packages (nothing to
// gain). Throws PlanError on lists of different lengths.
std::vector<int> package_labels(const std::vector<int>& node, const std::vector<int>& machine_package);

// The link between two packages of one node, from one-way times (8 bytes and a probe)
// of a pair of ranks inside one package and a pair across two: `base` (the node's
// model) with its per-message cost (alpha) times across/within at 8 bytes and its
// per-byte costs (beta, pLogP's gaps) times across/within at the probe; a ratio under 1,
// or from times that are not positive, counts as 1. Decision: the base model may be
// Canopy's built-in guess, and a raw ping-pong time between packages carries MPI's own
// per-message overhead, which the guess leaves out; priced raw, every message between
// packages would look several times dearer than one inside a package and the package
// level would win on the model's word alone. Scaled, it is exactly as much dearer as
// measured. Reductions and copies stay as in `base`.
CostModel package_link_from_times(const CostModel& base, double within_small, double within_large,
                                  double across_small, double across_large);

// The link between two nodes from one-way times measured at a few sizes (bytes,
// seconds, in increasing size: CANOPY_TOPOLOGY=auto's probe, shim/topology_probe.cpp),
// reductions and copies (local and direct) as in `base`, full duplex, overlapping
// computation (as the shim's measured node model):
//  - two sizes: Hockney's line through them, alpha the first size's time (8 bytes) and
//    beta the slope; a second size no larger than the first gives latency only (the
//    smaller of the two times);
//  - three or more: pLogP with L = 0 and g(m) each size's time, straight lines between
//    sizes and the last two's slope beyond, never decreasing with size. One-way times
//    do not tell a latency in flight from a port's gap, so the ports are held for the
//    whole transfer as in Hockney's model (CostModel::ports_held_for_transfer), unless
//    `gaps` tell: fixed costs that begin at some size (a rendezvous' round trip, SMPI's
//    latency step at 65472 bytes) are priced from that size on, not spread over every
//    byte.
// `gaps`: trains' gaps (004's pLogP g, measured apart from the one-way time: the shim's
// train_gap) at two sizes, the smaller first. Where the larger size's gap is at most
// kLatencyInFlight of its one-way time, the link keeps its latency in flight: port=
// the slope between the two gaps, port_fixed= what is left of the smaller one (neither
// below 0). Elsewhere (a gap near the one-way time: the port is busy for the whole
// message, as over shared memory or where the MPI waits for a rendezvous) the ports stay
// held, which keeps the trees' closed forms (tree_price_is_exact).
// Throws PlanError on fewer than two sizes or sizes that do not increase (three or more).
CostModel measured_link(const CostModel& base, std::vector<std::pair<std::int64_t, double>> one_way,
                        const std::vector<std::pair<std::int64_t, double>>& gaps = {});
// Decision: under three quarters. SMPI's EDR links: a 64 KiB message's train gap 5.6 us
// against 17.2 one way (0.33). A gap within a quarter of the whole time changes little
// that is worth losing the closed forms for.
constexpr double kLatencyInFlight = 0.75;

// Which of MPI_COMM_WORLD's ranks share a node, seen from rank `me`, given each rank's
// node name (equal names, one node: the shim's hash of MPI_Get_processor_name, or its
// node's lowest world rank) and its node's online cores (0: unknown). What the shim
// learns at MPI_Init from one gather. Throws PlanError on lists of different lengths
// or `me` outside them.
struct NodeMap {
  int leader = 0;      // world rank of the lowest rank on `me`'s node
  int local_rank = 0;  // `me`'s rank among its node's ranks, in world order
  int local_size = 1;  // ranks on `me`'s node
  int nodes = 1;
  int max_ranks_per_node = 1;
  bool oversubscribed = false;  // some node runs more ranks than it has cores
};
NodeMap map_nodes(const std::vector<std::uint64_t>& name, const std::vector<long>& cores, int me);

// Every rank its own node in one cluster with link `link`, slowdowns as given: the
// heterogeneous cluster of 002 (Liu & Wang), where only the senders' speeds differ.
Topology slowdown_topology(const CostModel& link, std::vector<double> slowdown);

// A description for logs: "3 clusters (s0: ranks 0-1, ...), links ...".
std::string describe_topology(const Topology& t);

// How the simulator and the algorithms price messages: a model plus, optionally, a
// topology that refines it per pair of ranks.
class Network {
 public:
  Network(const CostModel& model, const Topology* topology) : model_(model), topology_(topology) {}
  const CostModel& model() const { return model_; }
  const Topology* topology() const { return topology_; }
  // The model that carries a message from rank a to rank b (before the slowdown).
  const CostModel& link(int from, int to) const;
  double transfer(int from, int to, std::int64_t bytes) const {
    return scale(from) * link(from, to).transfer(bytes);
  }
  double occupancy(int from, int to, std::int64_t bytes) const {
    return scale(from) * link(from, to).occupancy(bytes);
  }

 private:
  double scale(int from) const { return topology_ ? topology_->slowdown_of(from) : 1.0; }
  const CostModel& model_;
  const Topology* topology_;
};

}  // namespace canopy::planner
