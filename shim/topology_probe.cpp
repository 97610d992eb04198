#include "shim/topology_probe.h"

#include <hwloc.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "planner/cluster.h"
#include "planner/describe.h"
#include "planner/topology_json.h"
#include "shim/members.h"
#include "shim/platform.h"
#include "shim/polite.h"

namespace canopy::shim {

namespace {

using Pair = std::pair<int, int>;  // two ranks of a communicator: the first pings, the second echoes

constexpr int kSmall = 8;    // bytes: the latency probe of every link
constexpr int kRepeats = 5;  // measured round trips per pair and size, at most
// Nodes measured pairwise at MPI_Init (measure_near_groups): up to 16, 120 pairs. More
// are measured against representatives (measure_by_representatives).
constexpr int kMaxProbedNodes = 16;
// A pair stops repeating a size once its round trips took this long (at least one
// measured after the warm-up): a pair costs about max(50 ms, 2 round trips) a size.
constexpr double kPairSeconds = 0.05;
constexpr int kTagPing = 1, kTagStop = 2;
// A link whose probe arrives within kQuickProbeSeconds is measured once more at every
// power of two from kCurveFirstBytes to kCurveLastBytes (the probe's size aside) and
// priced from all its one-way times (planner::measured_link: a pLogP link, each size at
// its time, straight lines between), as 004's pLogP measures g at doubling sizes. Why:
// a message of the probe's size (64 KiB) carries fixed costs that larger ones share out
// (a rendezvous' round trip; SimGrid's SMPI prices a message of 65472 bytes or more at
// 11.6 times a route's latency), and a straight line through 8 bytes and the probe
// took them for bytes: 2.3e-10 s/B inside a leaf switch of the simulated EDR cluster
// and 4.2e-10 between leaves, against the platform's 8e-11, which priced the 1 MiB
// schedules at 1024 ranks at two to three times what they took, so the trials began
// late or not at all (docs/performance-history.md, section 27). A line through 8 bytes
// and 1 MiB instead (tried, section 27) priced an 80 KiB segment at 40% of its time,
// since it pays the step too; and one through 8 bytes, 64 KiB and 1 MiB (section 28)
// priced 24 KiB segments, below the step, at twice their time (the line to 64 KiB
// carries the step). Doubling sizes place a step within a factor of two wherever it is
// (an MPI's eager limit: 4-64 KiB). Only quick links: on a slow one a megabyte costs a
// long ping (16 links of 1 Gbit/s: 8 ms a one-way trip each), and there the probe's
// fixed costs are small beside its bytes. Cost: 11 sizes of at most kRepeats round
// trips a quick link, one link at a time, and its trains (train_gap).
constexpr double kQuickProbeSeconds = 50e-6;
constexpr int kCurveFirstBytes = 1 << 10;
constexpr int kCurveLastBytes = 1 << 20;

void wait(MPI_Request request) { wait_politely(&request); }

// Half the best round trip of `bytes` to `peer`, after one warm-up round trip of 8
// bytes (which pays for connecting, and lets the peer enter its echo); then tells the
// peer to stop echoing. The warm-up is small: at the probe's size it cost a transfer
// each way on every wide-area link (64 KiB at 56 Mbit/s: 9.4 ms), and the links' probe
// of a grid takes one measured trip after it where a trip is that slow; where trips are
// fast, the best of kRepeats leaves out what a first large message pays once.
double ping(MPI_Comm comm, int peer, char* buffer, int bytes) {
  double best = 1e300;
  const double start = PMPI_Wtime();
  for (int round = 0; round <= kRepeats; ++round) {
    const int size = round == 0 ? std::min(bytes, kSmall) : bytes;
    MPI_Request r;
    const double t0 = PMPI_Wtime();
    PMPI_Isend(buffer, size, MPI_BYTE, peer, kTagPing, comm, &r);
    wait(r);
    PMPI_Irecv(buffer, size, MPI_BYTE, peer, kTagPing, comm, &r);
    wait(r);
    const double now = PMPI_Wtime();
    if (round > 0) best = std::min(best, (now - t0) / 2);
    if (round > 0 && now - start > kPairSeconds) break;
  }
  MPI_Request r;
  PMPI_Isend(buffer, 0, MPI_BYTE, peer, kTagStop, comm, &r);
  wait(r);
  return best;
}

// The other side of ping(): echoes what it gets, as much as it got, until told to stop
// (the pinger alone decides how many round trips, since only it reads the clock).
void echo(MPI_Comm comm, int peer, char* buffer, int bytes) {
  for (;;) {
    MPI_Request r;
    MPI_Status status;
    PMPI_Irecv(buffer, bytes, MPI_BYTE, peer, MPI_ANY_TAG, comm, &r);
    wait_politely(&r, &status);
    if (status.MPI_TAG == kTagStop) return;
    int got = bytes;
    PMPI_Get_count(&status, MPI_BYTE, &got);
    PMPI_Isend(buffer, got, MPI_BYTE, peer, kTagPing, comm, &r);
    wait(r);
  }
}

// pLogP's gap (004, Figure 2: the round trip split into latency and gap): how soon a
// sender's next message of `bytes` may follow one, from trains sent back to back. Each
// round `peer` answers a train of one message, then one of kTrainLength, with 8 bytes
// once all arrived (absorb_trains, its receives posted ahead so that no message waits
// for a receive); the gap is the best long train's time less the best short one's, over
// the messages between them. Why: a quick link's one-way times (ping) hold a message's
// latency and its bytes alike, and priced as the ports' time they make a pipeline's
// segments queue behind each other's latency. On SimGrid's EDR cluster a 64 KiB message
// takes 17.2 us one way and its card passes it in 5.6; a 1 MiB reduce's pipelined chain
// over 16 nodes, priced at 334 us from one-way times, took 217-226, and 219 from the
// trains' gaps (docs/performance-history.md, section 30). Fixed rounds, known to both
// sides: kTrainRounds after one warm-up, two trains each.
constexpr int kTrainLength = 4;
constexpr int kTrainRounds = 3;
constexpr int kTagTrain = 9, kTagTrainEnd = 10;
// The smaller size of the two trains. Decision: the ports' line (planner::measured_link)
// goes through the gaps of sizes a pipeline's segments take (8-64 KiB) rather than an
// empty message's, where an MPI's per-message costs may differ (eager and rendezvous).
// On SMPI's EDR cluster the two lines are alike (from 8 bytes: 8.50e-11 s/B and 1.7 ns
// a message; from 8 KiB: 8.67e-11 and 0), yet the 16-node 1 MiB reduce's trials then
// settled on reduce-scatter-gather-wide in 80 segments (265-272 us a call) rather than
// 128 (165): close prices, which the planner's segment search tells apart by little.
constexpr int kTrainSmallBytes = 8 * 1024;

double train_gap(MPI_Comm comm, int peer, char* buffer, int bytes) {
  double best[2] = {1e300, 1e300};
  char answer[kSmall];
  std::vector<MPI_Request> sent(kTrainLength);
  for (int round = 0; round <= kTrainRounds; ++round)
    for (int train = 0; train < 2; ++train) {
      const int length = train == 0 ? 1 : kTrainLength;
      MPI_Request end;
      const double t0 = PMPI_Wtime();
      PMPI_Irecv(answer, kSmall, MPI_BYTE, peer, kTagTrainEnd, comm, &end);
      for (int m = 0; m < length; ++m) PMPI_Isend(buffer, bytes, MPI_BYTE, peer, kTagTrain, comm, &sent[m]);
      for (int m = 0; m < length; ++m) wait(sent[m]);
      wait(end);
      if (round > 0) best[train] = std::min(best[train], PMPI_Wtime() - t0);
    }
  return std::max(0.0, (best[1] - best[0]) / (kTrainLength - 1));
}

// The other side of train_gap(): `buffer` holds kTrainLength messages of `bytes`.
void absorb_trains(MPI_Comm comm, int peer, char* buffer, int bytes) {
  char answer[kSmall] = {};
  std::vector<MPI_Request> got(kTrainLength);
  for (int round = 0; round <= kTrainRounds; ++round)
    for (int train = 0; train < 2; ++train) {
      const int length = train == 0 ? 1 : kTrainLength;
      for (int m = 0; m < length; ++m)
        PMPI_Irecv(buffer + static_cast<std::size_t>(m) * bytes, bytes, MPI_BYTE, peer, kTagTrain, comm, &got[m]);
      for (int m = 0; m < length; ++m) wait(got[m]);
      MPI_Request end;
      PMPI_Isend(answer, kSmall, MPI_BYTE, peer, kTagTrainEnd, comm, &end);
      wait(end);
    }
}

// How measure_pairs times a pair: half the best round trip (ping, echo) or the gap of
// trains (train_gap, absorb_trains).
enum class PairTiming { kOneWay, kTrainGap };

// One-way seconds of every pair of members at every size, as [pair * sizes + size] on
// member 0 (empty elsewhere). One pair at a time, a barrier between pairs, so no two
// measurements share a link; or, `at_once`, every member walks its own pairs in the
// list's order without barriers, so pairs of different members run together (the order
// is the same on every member: no two wait for each other in a cycle; all at once a
// member other than 0 may be given its own pairs only, all of them, member 0 every
// member's, in the same order: measure_by_representatives's near pairs). Member 0 then
// gets each pair's times from the member that pinged it, one message a pinger in pair
// order (kTagResults), all received at once: a pair's times are known to its pinger
// alone, so a maximum over every member's vector (mostly zeros) along a tree took a
// latency a level where this takes one (on a grid, a wide-area one: 16 sites of 4
// nodes, the leaders' radix-8 tree crossed sites twice). Collective over the members.
constexpr int kTagResults = 6;

std::vector<double> measure_pairs(const Members& members, const std::vector<Pair>& pairs,
                                  const std::vector<int>& sizes, bool at_once = false,
                                  PairTiming timing = PairTiming::kOneWay) {
  const MPI_Comm comm = members.comm();
  const int rank = members.index();
  const std::size_t n = sizes.size();
  std::vector<double> mine;  // this member's pings' times, in pair order
  std::vector<char> buffer;
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    const auto [a, b] = pairs[k];
    if (rank == a || rank == b) {
      const bool trains = timing == PairTiming::kTrainGap;
      if (buffer.empty())
        buffer.assign(static_cast<std::size_t>(*std::max_element(sizes.begin(), sizes.end())) * (trains ? kTrainLength : 1),
                      1);
      for (std::size_t s = 0; s < n; ++s) {
        if (rank == a)
          mine.push_back(trains ? train_gap(comm, members.rank_of(b), buffer.data(), sizes[s])
                                : ping(comm, members.rank_of(b), buffer.data(), sizes[s]));
        else if (trains) absorb_trains(comm, members.rank_of(a), buffer.data(), sizes[s]);
        else echo(comm, members.rank_of(a), buffer.data(), sizes[s]);
      }
    }
    if (!at_once) members.barrier();
  }
  if (rank != 0) {
    if (!mine.empty()) {
      MPI_Request r = MPI_REQUEST_NULL;
      PMPI_Isend(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, members.rank_of(0), kTagResults, comm, &r);
      wait(r);
    }
    return {};
  }
  // Each pinger's pairs, in pair order (member 0's own are in `mine`).
  std::map<int, std::vector<std::size_t>> pinged;
  for (std::size_t k = 0; k < pairs.size(); ++k) pinged[pairs[k].first].push_back(k);
  std::map<int, std::vector<double>> received;
  std::vector<MPI_Request> requests;
  for (const auto& [pinger, ks] : pinged) {
    if (pinger == 0) continue;
    std::vector<double>& into = received[pinger];
    into.resize(ks.size() * n);
    requests.push_back(MPI_REQUEST_NULL);
    PMPI_Irecv(into.data(), static_cast<int>(into.size()), MPI_DOUBLE, members.rank_of(pinger), kTagResults, comm,
               &requests.back());
  }
  for (MPI_Request& r : requests) wait(r);
  if (pinged.count(0)) received[0] = std::move(mine);
  std::vector<double> all(pairs.size() * n, 0.0);
  for (const auto& [pinger, ks] : pinged)
    for (std::size_t j = 0; j < ks.size(); ++j)
      for (std::size_t s = 0; s < n; ++s) all[ks[j] * n + s] = received[pinger][j * n + s];
  return all;
}

std::string milliseconds(double s);

// `values` from member 0 to all, length first.
void share_ints(const Members& members, std::vector<int>& values) {
  int n = static_cast<int>(values.size());
  members.bcast(&n, static_cast<int>(sizeof n));
  values.resize(n);
  if (n == 0) return;
  members.bcast(values.data(), n * static_cast<int>(sizeof(int)));
}

// More nodes than are probed pairwise: their distances to a few representatives only,
// round by round (planner::next_representatives says which and why). Decisions:
// - A round's distances are measured all at once: every node sends 8 bytes to every
//   representative of the round, which echoes them as they come, kCoarseTrips times
//   (the first a warm-up, which pays for connecting and lets the representative enter
//   the round), and keeps half the second round trip. One at a time, N nodes against a
//   representative across a 12 ms wide-area link would take N x 2 x 24 ms (88 nodes: 4 s
//   a round). 8 bytes, not the probe: latency, as 004 clusters by, and no bandwidth
//   shared by the concurrent echoes. Two trips, not three: a third cost a wide-area round
//   trip a round (a grid of 16 sites, 1024 ranks: 4 rounds of 70-100 ms each became
//   42-71); a second sample mattered where the first is near, and those are measured
//   again alone (next point): a wide-area latency's jitter is small beside the 1 + rho
//   that Lowekamp's test allows.
// - Echoes queue at the representative (a few microseconds each on a real network):
//   nothing beside wide-area milliseconds, but as large as the differences inside a
//   site (004's Table 4: 47.6 against 62.1 us between the two Orsay clusters). So the
//   pairs found under kNearSeconds are measured again one at a time per
//   representative (ping(), as the pairwise probing does), and those times stand.
constexpr int kCoarseTrips = 2;
constexpr double kNearSeconds = 1e-3;
// Rounds stop here whatever is left: the nodes no representative reached stay
// clusters of their own (no edge merges them), which is exact, only less grouped.
constexpr int kMaxRounds = 32;
constexpr int kTagCoarse = 3, kTagEcho = 4;
// The node leaders' own collectives (shim/members.h), when they are not all of the ranks.
constexpr int kTagLeaders = 5;

// A round's coarse latencies as one member knows them: its own to each representative
// (`mine`, 0 for itself), and, where it is a representative, every member's to it
// (`heard`, 0 for itself): each node sends a representative the time it measured once
// its last echo is back, so that the representative knows its near nodes one latency
// later instead of after an allgather of every latency (on a grid, a wide-area latency
// at each of its rounds that crosses sites).
struct CoarseTimes {
  std::vector<double> mine;
  std::vector<double> heard;
};

// This member's round of coarse latencies, measured all at once as above; every member
// takes part. Each echo goes back as its ping arrives and each ping leaves as the last
// echo arrives, pair by pair: in rounds of "every node pings, then every representative
// echoes all" a near node's next ping would wait for the farthest node's (the first
// try: every Orsay node measured 12.2 ms, the IDPOT round trip).
CoarseTimes coarse_times(const Members& members, const std::vector<int>& reps) {
  static_assert(sizeof(double) == kSmall, "a measured time travels in a ping's 8 bytes");
  const MPI_Comm comm = members.comm();
  const int rank = members.index(), size = members.size();
  const int k = static_cast<int>(reps.size());
  const bool representative = std::find(reps.begin(), reps.end(), rank) != reps.end();
  CoarseTimes out{std::vector<double>(k, 0.0), std::vector<double>(representative ? size : 0, 0.0)};
  std::vector<double>& best = out.mine;
  std::vector<double> sent(k, 0.0);
  std::vector<int> echoed(k, 0), to_echo(size, representative ? kCoarseTrips : 0);
  std::vector<char> in(static_cast<std::size_t>(size + k) * kSmall), ping_bytes(kSmall, 1);
  // [0, k): the echo of this rank's ping to reps[j]; [k, k + size): rank q's next ping,
  // or after its last its time.
  std::vector<MPI_Request> requests(k + size, MPI_REQUEST_NULL), sends;
  const auto send_rep = [&](int j, const void* data) {
    sends.push_back(MPI_REQUEST_NULL);
    PMPI_Isend(data, kSmall, MPI_BYTE, members.rank_of(reps[j]), kTagCoarse, comm, &sends.back());
  };
  const auto ping_rep = [&](int j) {
    PMPI_Irecv(&in[(size + j) * kSmall], kSmall, MPI_BYTE, members.rank_of(reps[j]), kTagEcho, comm, &requests[j]);
    sent[j] = PMPI_Wtime();
    send_rep(j, ping_bytes.data());
  };
  const auto await_ping = [&](int q) {
    PMPI_Irecv(&in[q * kSmall], kSmall, MPI_BYTE, members.rank_of(q), kTagCoarse, comm, &requests[k + q]);
  };
  for (int q = 0; q < size; ++q)
    if (representative && q != rank) await_ping(q);
  for (int j = 0; j < k; ++j)
    if (reps[j] != rank) ping_rep(j);
  for (;;) {
    int index = MPI_UNDEFINED;
    waitany_politely(static_cast<int>(requests.size()), requests.data(), &index);
    if (index == MPI_UNDEFINED) break;
    if (index < k) {
      const double one_way = (PMPI_Wtime() - sent[index]) / 2;
      if (echoed[index]++ > 0) best[index] = best[index] > 0 ? std::min(best[index], one_way) : one_way;
      if (echoed[index] < kCoarseTrips) ping_rep(index);
      else send_rep(index, &best[index]);  // (best does not move: sized once)
    } else {
      const int q = index - k;
      if (to_echo[q] > 0) {
        sends.push_back(MPI_REQUEST_NULL);
        PMPI_Isend(ping_bytes.data(), kSmall, MPI_BYTE, members.rank_of(q), kTagEcho, comm, &sends.back());
        --to_echo[q];
        await_ping(q);  // its next ping, or after the last its time
      } else {
        std::memcpy(&out.heard[q], &in[q * kSmall], kSmall);
      }
    }
  }
  for (MPI_Request& r : sends) wait(r);
  return out;
}

// The distance matrix of the members (the node leaders) on member 0, 0 where not
// measured, and there the text for the log; collective over the members.
std::vector<std::vector<double>> measure_by_representatives(const Members& members, double rho, std::string& detail) {
  const int rank = members.index(), size = members.size();
  std::vector<std::vector<double>> d(rank == 0 ? size : 0, std::vector<double>(size, 0.0));
  std::vector<int> all, round{0};
  int rounds = 0;
  std::size_t near = 0;
  const double start = PMPI_Wtime();
  while (!round.empty()) {
    ++rounds;
    const int k = static_cast<int>(round.size());
    const CoarseTimes times = coarse_times(members, round);
    // Member 0 gets every latency (for the matrix); every member finds its own near
    // pairs from the times it measured or heard, member 0 everyone's, all in the same
    // order (representative, then node): the order measure_pairs walks them in, alike on
    // every member for the pairs they share, as it needs (the same times decide alike).
    std::vector<double> coarse(rank == 0 ? static_cast<std::size_t>(size) * k : 0);
    members.gather(times.mine.data(), k * static_cast<int>(sizeof(double)), coarse.data());
    std::vector<Pair> pairs;  // representative, node
    for (int j = 0; j < k; ++j)
      for (int q = 0; q < size; ++q) {
        const double t = rank == 0         ? coarse[static_cast<std::size_t>(q) * k + j]
                         : q == rank        ? times.mine[j]
                         : round[j] == rank ? times.heard[q]
                                            : 0;
        if (q == round[j] || t <= 0) continue;
        if (rank == 0) d[q][round[j]] = d[round[j]][q] = t;
        if (t < kNearSeconds) pairs.emplace_back(round[j], q);
      }
    near += pairs.size();
    const std::vector<double> precise = measure_pairs(members, pairs, {kSmall}, true);
    all.insert(all.end(), round.begin(), round.end());
    round.clear();
    if (rank == 0) {
      for (std::size_t p = 0; p < pairs.size(); ++p)
        if (precise[p] > 0) d[pairs[p].first][pairs[p].second] = d[pairs[p].second][pairs[p].first] = precise[p];
      if (rounds < kMaxRounds) {
        try {
          round = planner::next_representatives(d, all, rho);
        } catch (const std::invalid_argument&) {
          // Not expected from measured times: what was measured stands.
        }
      }
    }
    // One broadcast: a round holds at most every node.
    std::vector<int> sent(static_cast<std::size_t>(size) + 1, 0);
    sent[0] = static_cast<int>(round.size());
    std::copy(round.begin(), round.end(), sent.begin() + 1);
    members.bcast(sent.data(), (size + 1) * static_cast<int>(sizeof(int)));
    round.assign(sent.begin() + 1, sent.begin() + 1 + sent[0]);
  }
  if (rank == 0)
    detail = std::to_string(size) + " nodes probed against " + std::to_string(all.size()) +
             " representatives in " + std::to_string(rounds) + " rounds (" +
             std::to_string(static_cast<std::size_t>(size - 1) * all.size()) + " distances, " +
             std::to_string(near) + " measured again alone) in " + milliseconds(PMPI_Wtime() - start) + " ms; ";
  return d;
}

// The groups of near nodes' collectives, and their times sent to member 0.
constexpr int kTagNear = 7, kTagNearTimes = 8;

// Up to kMaxProbedNodes nodes (the members), every pair: first its 8-byte one-way time,
// all pairs at once in probe_order's rounds (`small`, on member 0); then the groups of
// near nodes (`group`, on every member: a node's group is its group's first node),
// joined by pairs under kNearSeconds (a wide-area link is a millisecond or more); then,
// inside each group, every pair at the probe's size one at a time, a barrier among the
// group's nodes between two pairs, the groups at once (`distance`, on member 0, 0
// between groups). Why so:
// - One pair after another, a barrier among all nodes between them, the probe cost
//   N(N-1)/2 pair times and as many barriers across the wide area: 16 simulated sites of
//   one node, 1-15 ms apart, took 23.3 s.
// - All at once, two pairs of a round may cross the same link (two nodes of a site each
//   probing a node of another site): the probe measured up to twice a lone one's time,
//   and the split of unequal clusters cut a generated grid's 4 sites of 3 nodes into 6
//   clusters. An 8-byte time hardly moves when it shares a link, so the wide area is
//   measured at 8 bytes, and the probe's size (what tells apart the test bed's sites,
//   which differ in bandwidth alone) runs alone inside each group, as before, where the
//   barrier is a near node's latency.
// Every pair (i, j), i < j, of `n` members, in that order.
std::vector<Pair> all_pairs(int n) {
  std::vector<Pair> pairs;
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) pairs.emplace_back(i, j);
  return pairs;
}

void measure_near_groups(const Members& leaders, int probe, std::vector<std::vector<double>>& distance,
                         std::vector<std::vector<double>>& small, std::vector<int>& group) {
  const int rank = leaders.index(), N = leaders.size();
  const std::vector<Pair> pairs = all_pairs(N);
  std::vector<Pair> in_rounds;
  for (int k : planner::probe_order(pairs)) in_rounds.push_back(pairs[static_cast<std::size_t>(k)]);
  const std::vector<double> latency = measure_pairs(leaders, in_rounds, {kSmall}, true);
  small.assign(rank == 0 ? N : 0, std::vector<double>(N, 0.0));
  distance = small;
  group.assign(static_cast<std::size_t>(N), 0);
  for (int n = 0; n < N; ++n) group[n] = n;
  if (rank == 0) {
    for (std::size_t k = 0; k < in_rounds.size(); ++k)
      small[in_rounds[k].first][in_rounds[k].second] = small[in_rounds[k].second][in_rounds[k].first] = latency[k];
    // Connected components: each node takes the smallest label of a near neighbour.
    for (bool changed = true; changed;) {
      changed = false;
      for (int x = 0; x < N; ++x)
        for (int y = 0; y < N; ++y)
          if (x != y && small[x][y] < kNearSeconds && group[x] < group[y]) {
            group[y] = group[x];
            changed = true;
          }
    }
  }
  leaders.bcast(group.data(), N * static_cast<int>(sizeof(int)));
  std::map<int, std::vector<int>> groups;  // first node -> its nodes, in order
  for (int n = 0; n < N; ++n) groups[group[n]].push_back(n);
  const std::vector<int>& mine = groups[group[rank]];
  std::vector<double> times;
  if (mine.size() >= 2) {
    std::vector<int> ranks;
    for (int n : mine) ranks.push_back(leaders.rank_of(n));
    const Members near(leaders.comm(), ranks, kTagNear);
    times = measure_pairs(near, all_pairs(static_cast<int>(mine.size())), {probe});
    if (near.index() == 0 && rank != 0) {
      MPI_Request r = MPI_REQUEST_NULL;
      PMPI_Isend(times.data(), static_cast<int>(times.size()), MPI_DOUBLE, leaders.rank_of(0), kTagNearTimes,
                 leaders.comm(), &r);
      wait(r);
    }
  }
  if (rank != 0) return;
  std::map<int, std::vector<double>> received{{0, times}};
  std::vector<MPI_Request> requests;
  for (auto& [first, nodes] : groups) {
    if (first == 0 || nodes.size() < 2) continue;
    std::vector<double>& into = received[first];
    into.resize(nodes.size() * (nodes.size() - 1) / 2);
    requests.push_back(MPI_REQUEST_NULL);
    PMPI_Irecv(into.data(), static_cast<int>(into.size()), MPI_DOUBLE, leaders.rank_of(first), kTagNearTimes,
               leaders.comm(), &requests.back());
  }
  for (MPI_Request& r : requests) wait(r);
  for (const auto& [first, nodes] : groups) {
    const std::vector<Pair> inside = all_pairs(static_cast<int>(nodes.size()));
    for (std::size_t k = 0; k < inside.size(); ++k) {
      const int x = nodes[inside[k].first], y = nodes[inside[k].second];
      distance[x][y] = distance[y][x] = received[first][k];
    }
  }
}

// The node of every rank of `comm` (a duplicate of MPI_COMM_WORLD), numbered in order
// of first rank, from every rank's node leader (gathered to all).
std::vector<int> node_of_ranks(MPI_Comm comm, int leader) {
  int size = 1;
  PMPI_Comm_size(comm, &size);
  std::vector<int> leaders(size);
  allgather_politely(&leader, 1, MPI_INT, leaders.data(), comm);
  std::map<int, int> index;
  std::vector<int> node_of(size);
  for (int q = 0; q < size; ++q) node_of[q] = index.emplace(leaders[q], static_cast<int>(index.size())).first->second;
  return node_of;
}

// The logical index of the one object of `type` whose CPUs contain `set`; -1 if none.
int containing(hwloc_topology_t topo, hwloc_obj_type_t type, hwloc_const_bitmap_t set) {
  const int n = hwloc_get_nbobjs_by_type(topo, type);
  for (int i = 0; i < n; ++i) {
    hwloc_obj_t obj = hwloc_get_obj_by_type(topo, type, i);
    if (obj && obj->cpuset && hwloc_bitmap_isincluded(set, obj->cpuset)) return static_cast<int>(obj->logical_index);
  }
  return -1;
}

// What hwloc says of this process's machine: how many packages it has (all of them,
// those outside this process's cgroup included, so that every rank of a node counts
// the same) and which package and NUMA node contain this process's CPU binding (-1
// when it is not bound, bound to every CPU it may use, or spans several). Loads only
// packages besides the objects hwloc always keeps (1-2 ms after MPI_Init, whose MPI
// already opened hwloc's plugins). HWLOC_SYNTHETIC with HWLOC_THISSYSTEM=1 gives it a
// made-up machine with this one's binding (how the tests show a socket level on a
// one-package machine).
struct Machine {
  int packages = 0;
  int package = -1;
  int numa = -1;
};

Machine this_machine() {
  Machine out;
  // Under SMPI hwloc would describe the real machine, not the simulated host: no
  // packages are known there (every rank unbound, as on a machine hwloc cannot read).
  if (!platform().hwloc_describes_node) return out;
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) return out;
  hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
  hwloc_topology_set_all_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_NONE);  // not needed: load faster
  hwloc_topology_set_type_filter(topo, HWLOC_OBJ_PACKAGE, HWLOC_TYPE_FILTER_KEEP_ALL);
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (set && hwloc_topology_load(topo) == 0) {
    out.packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
    if (hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0 && !hwloc_bitmap_iszero(set) &&
        !hwloc_bitmap_isincluded(hwloc_topology_get_allowed_cpuset(topo), set)) {
      out.package = containing(topo, HWLOC_OBJ_PACKAGE, set);
      out.numa = containing(topo, HWLOC_OBJ_NUMANODE, set);
    }
  }
  hwloc_bitmap_free(set);
  hwloc_topology_destroy(topo);
  return out;
}

// First line of a small text file, or "" where it cannot be read.
std::string first_line(const char* path) {
  std::string line;
  if (std::FILE* f = std::fopen(path, "r")) {
    char buffer[4096];
    if (std::fgets(buffer, sizeof buffer, f)) line = buffer;
    std::fclose(f);
  }
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  return line;
}

// Whether this machine may have several packages, answered without hwloc where the
// kernel says it has one (cpu0's package holds every online CPU): loading hwloc costs
// 1-3 ms of MPI_Init (2 ranks here), which a one-package machine, running with the
// default CANOPY_TOPOLOGY=auto, should not pay for nothing. Where hwloc is told of
// another machine (HWLOC_XMLFILE, HWLOC_SYNTHETIC) or the files are missing (not
// Linux), hwloc answers. Every rank of a node reads the same files: the same answer.
bool may_have_several_packages() {
  if (!platform().hwloc_describes_node) return false;  // a simulated host: see this_machine()
  if (std::getenv("HWLOC_XMLFILE") || std::getenv("HWLOC_SYNTHETIC")) return true;
  const std::string online = first_line("/sys/devices/system/cpu/online");
  const std::string package = first_line("/sys/devices/system/cpu/cpu0/topology/package_cpus_list");
  return online.empty() || package.empty() || online != package;
}

// Every rank's package and NUMA node, on rank 0 as [package, numa] per rank, and the
// text for the log: "package per rank 0,0,1,1 (NUMA node 0,0,1,1, ...)".
std::vector<int> gather_placement(MPI_Comm comm, const Machine& machine, std::string& text) {
  int rank = 0, size = 1;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &size);
  int mine[2] = {machine.package, machine.numa};
  std::vector<int> all(rank == 0 ? 2 * size : 0);
  gather_politely(mine, 2, MPI_INT, all.data(), 0, comm);
  if (rank != 0) return all;
  if (std::all_of(all.begin(), all.end(), [](int x) { return x < 0; })) {
    text = "ranks not bound to one package";
    return all;
  }
  auto list = [&](int field) {
    std::string out;
    for (int q = 0; q < size && q < 64; ++q) out += (q ? "," : "") + std::to_string(all[2 * q + field]);
    return size > 64 ? out + ",..." : out;
  };
  text = "package per rank " + list(0) + " (NUMA node " + list(1) + ", -1: unbound or spanning several)";
  return all;
}

// The link of one-way times at 8 bytes, at `probe` bytes and at the sizes of `curve`
// where measured (quick links: curve_sizes) (planner::measured_link).
// With `gaps` (trains' gaps at two sizes, train_gap), the link keeps its latency in
// flight where they show it (planner::measured_link).
planner::CostModel link_model(double small, double large, std::int64_t probe, const planner::CostModel& base,
                              const std::vector<std::pair<std::int64_t, double>>& curve = {},
                              const std::vector<std::pair<std::int64_t, double>>& gaps = {}) {
  // A probe of 8 bytes or less is a latency-only pair, which a map of sizes would merge
  // or reorder.
  if (probe <= kSmall) return planner::measured_link(base, {{kSmall, small}, {probe, large}});
  std::map<std::int64_t, double> times{{kSmall, small}};
  times.emplace(probe, large);
  for (const auto& point : curve) times.emplace(point);
  return planner::measured_link(base, {times.begin(), times.end()}, gaps);
}

// The sizes a quick link is measured at besides 8 bytes and the probe's (above).
std::vector<int> curve_sizes(int probe) {
  std::vector<int> sizes;
  for (int bytes = kCurveFirstBytes; bytes <= kCurveLastBytes; bytes *= 2)
    if (bytes != probe) sizes.push_back(bytes);
  return sizes;
}

std::string microseconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", s * 1e6);
  return text;
}

std::string milliseconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", s * 1e3);
  return text;
}

std::string matrix_text(const std::vector<std::vector<double>>& d) {
  std::string out = "[";
  for (std::size_t i = 0; i < d.size(); ++i) {
    out += i ? "; " : "";
    for (std::size_t j = 0; j < d[i].size(); ++j) out += (j ? " " : "") + milliseconds(d[i][j]);
  }
  return out + "]";
}

// Clusters numbered in order of first node (what planner::Topology requires).
std::vector<int> renumbered(std::vector<int> labels) {
  std::map<int, int> index;
  for (int& l : labels) l = index.emplace(l, static_cast<int>(index.size())).first->second;
  return labels;
}

// CANOPY_TOPOLOGY=auto: the node leaders measure the distance matrix, rank 0 clusters
// it, then the leaders measure one link per cluster and per pair of clusters. Rank 0
// of `comm` ends with the topology in `t` and what it measured in `detail`.
void measure_network(MPI_Comm comm, const config::Settings& s, const planner::CostModel& base,
                     const std::vector<int>& node, planner::Topology& t, std::string& detail) {
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  // The first rank of every node, in node order: a leader's index among `leaders` is
  // its node's number. Only the leaders measure; the others go straight to waiting for
  // rank 0's result.
  std::vector<int> first;
  for (int r = 0; r < static_cast<int>(node.size()); ++r)
    if (node[r] == static_cast<int>(first.size())) first.push_back(r);
  if (first[node[rank]] != rank) return;
  const int N = static_cast<int>(first.size());
  // Where every rank leads its node (one rank a node), the leaders are `comm` itself,
  // in the same order, with the MPI's own collectives; else their collectives are
  // point-to-point among them on `comm` (no communicator to make: shim/members.h).
  const Members leaders = N == static_cast<int>(node.size()) ? Members::whole(comm) : Members(comm, first, kTagLeaders);
  rank = leaders.index();  // rank 0 of `comm` leads node 0: member 0
  // Up to kMaxProbedNodes nodes every pair is measured at 8 bytes, and at the probe's
  // size inside groups of near nodes (measure_near_groups); beyond, each node's 8-byte
  // latency to a few representatives (measure_by_representatives). Lowekamp's
  // algorithm takes the pairs not measured as missing links.
  const bool pairwise = N <= kMaxProbedNodes;
  const int probe = static_cast<int>(s.probe_bytes);
  // What Lowekamp's algorithm clusters (`distance`, 0 where not measured), what
  // split_unequal_clusters compares (`unequal`), the 8-byte one-way times where
  // measured (`small`: the links' latency), all on member 0; and each node's group of
  // near nodes (pairwise only; else one group each).
  std::vector<std::vector<double>> distance, unequal, small;
  std::vector<int> group(static_cast<std::size_t>(N));  // (measure_near_groups fills it)
  for (int n = 0; n < N && !pairwise; ++n) group[n] = n;
  if (pairwise) {
    measure_near_groups(leaders, probe, distance, small, group);
    unequal = distance;
    for (int x = 0; rank == 0 && x < N; ++x)
      for (int y = 0; y < N; ++y)
        if (group[x] != group[y]) unequal[x][y] = small[x][y];
  } else {
    distance = measure_by_representatives(leaders, s.rho, detail);
    unequal = small = distance;
  }
  std::vector<int> cluster;
  if (rank == 0) {
    try {
      cluster = renumbered(planner::lowekamp_clusters(distance, s.rho));
      const std::vector<int> split = planner::split_unequal_clusters(unequal, cluster, s.rho);
      const int before = *std::max_element(cluster.begin(), cluster.end()) + 1;
      const int after = *std::max_element(split.begin(), split.end()) + 1;
      if (after != before)
        detail += "Lowekamp's " + std::to_string(before) + " clusters split to " + std::to_string(after) +
                  " (nodes unequally far from other clusters); ";
      cluster = split;
    } catch (const std::invalid_argument& e) {
      // Not expected from measured times; every node its own cluster is still exact.
      detail += std::string("clustering failed (") + e.what() + "); ";
      cluster.assign(N, 0);
      for (int n = 0; n < N; ++n) cluster[n] = n;
    }
  }
  // (One label per leader, a length every leader knows: one broadcast, not share_ints's two.)
  cluster.resize(static_cast<std::size_t>(N));
  leaders.bcast(cluster.data(), N * static_cast<int>(sizeof(int)));
  const int C = *std::max_element(cluster.begin(), cluster.end()) + 1;
  // 004 section 4.1.3: one sample per cluster (two of its nodes) and per pair of
  // clusters, links taken as symmetric: C(C-1)/2 + C at most, at the probe's size (the
  // 8-byte time of a link is one of `small`'s). Pairwise, between the clusters' first
  // nodes: those of a group of near nodes were measured there one at a time, the
  // others are measured now, all at once in probe_order's rounds, so a round holds one
  // pair of a cluster's and no two of its pairs share a link between sites. With
  // representatives, all at once between nodes spread over the clusters' members
  // (cluster a's (b mod its size)-th with b's (a mod its size)-th), so that a cluster of
  // many nodes does not measure its C links one after another (16 clusters of 4 nodes
  // took 8 pair times as written, 5 in rounds).
  std::vector<std::vector<int>> members(C);
  for (int n = 0; n < N; ++n) members[cluster[n]].push_back(n);
  const auto spread = [&](int c, int other) { return members[c][other % members[c].size()]; };
  std::vector<Pair> links, known, to_measure;
  for (int c = 0; c < C; ++c)
    if (members[c].size() >= 2) links.emplace_back(members[c][0], members[c][1]);
  for (int a = 0; a < C; ++a)
    for (int b = a + 1; b < C; ++b)
      links.emplace_back(pairwise ? Pair(members[a][0], members[b][0]) : Pair(spread(a, b), spread(b, a)));
  for (const Pair& l : links) (pairwise && group[l.first] == group[l.second] ? known : to_measure).push_back(l);
  links = known;
  for (int k : planner::probe_order(to_measure)) links.push_back(to_measure[static_cast<std::size_t>(k)]);
  const double links_start = PMPI_Wtime();
  const std::vector<double> link_times =
      measure_pairs(leaders, std::vector<Pair>(links.begin() + known.size(), links.end()), {probe}, true);
  // Quick links once more at curve_sizes (above), one pair at a time: member 0 knows
  // every link's probe time and tells the others which.
  const auto probe_time = [&](std::size_t k) {
    return k < known.size() ? distance[links[k].first][links[k].second] : link_times[k - known.size()];
  };
  std::vector<int> quick;
  for (std::size_t k = 0; rank == 0 && probe > kSmall && k < links.size(); ++k)
    if (probe_time(k) > 0 && probe_time(k) < kQuickProbeSeconds) quick.push_back(static_cast<int>(k));
  share_ints(leaders, quick);
  std::vector<Pair> quick_pairs;
  for (int k : quick) quick_pairs.push_back(links[static_cast<std::size_t>(k)]);
  const std::vector<int> curve = curve_sizes(probe);
  const std::vector<double> curve_times = measure_pairs(leaders, quick_pairs, curve);
  // And their trains' gaps at kTrainSmallBytes and the probe's size (train_gap).
  const std::vector<int> train_sizes{std::min(kTrainSmallBytes, probe / 2), probe};
  const std::vector<double> train_gaps =
      measure_pairs(leaders, quick_pairs, train_sizes, false, PairTiming::kTrainGap);
  const double links_seconds = PMPI_Wtime() - links_start;
  if (rank != 0) return;

  t.node = node;
  for (int n : node) t.cluster.push_back(cluster[n]);
  t.clusters = C;
  // A cluster of one node never carries a message between two of its nodes; its own
  // link keeps the base model.
  t.links.assign(static_cast<std::size_t>(C) * C, base);
  // A link's 8-byte time: its own pair's where measured (pairwise, every pair), else a
  // representative's to the other cluster (every node measured it).
  const auto small_between = [&](int x, int y) {
    if (small[x][y] > 0) return small[x][y];
    for (int u : members[cluster[x]])
      for (int v : members[cluster[y]])
        if (u != v && small[u][v] > 0) return small[u][v];
    return 0.0;
  };
  for (std::size_t k = 0; k < links.size(); ++k) {
    const auto [x, y] = links[k];
    const auto again = std::find(quick.begin(), quick.end(), static_cast<int>(k));
    std::vector<std::pair<std::int64_t, double>> points, gaps;
    if (again != quick.end()) {
      const auto q = static_cast<std::size_t>(again - quick.begin());
      for (std::size_t j = 0; j < curve.size(); ++j) points.emplace_back(curve[j], curve_times[q * curve.size() + j]);
      for (std::size_t j = 0; j < train_sizes.size(); ++j)
        gaps.emplace_back(train_sizes[j], train_gaps[q * train_sizes.size() + j]);
    }
    const planner::CostModel m = link_model(small_between(x, y), probe_time(k), probe, base, points, gaps);
    t.links[cluster[x] * C + cluster[y]] = t.links[cluster[y] * C + cluster[x]] = m;
  }
  if (!quick.empty())
    detail += std::to_string(quick.size()) + " links under " + microseconds(kQuickProbeSeconds) + " us at " +
              std::to_string(probe) + " B measured again at " + std::to_string(curve.size()) + " sizes from " +
              std::to_string(kCurveFirstBytes) + " to " + std::to_string(kCurveLastBytes) +
              " B and by trains of " + std::to_string(kTrainLength) + " (pLogP links); ";
  // Links between sites far apart keep their latency in flight (port=, planner/topology.h).
  if (const int kept = planner::keep_wide_area_latency_in_flight(t); kept > 0)
    detail += std::to_string(kept / 2) + " links of " + milliseconds(planner::kWideAreaLatency) +
              " ms or more keep their latency in flight (port= at the cards' measured rate); ";
  if (pairwise)
    detail += "one-way times between nodes (ms; " + std::to_string(probe) + " B inside a group of near nodes, " +
              std::to_string(kSmall) + " B between groups): " + matrix_text(unequal);
  if (links.size() > known.size())
    detail += std::string(pairwise ? "; " : "") + std::to_string(links.size() - known.size()) +
              " links probed in " + milliseconds(links_seconds) + " ms";
}

// CANOPY_TOPOLOGY=FILE: rank 0 reads the file; the links it leaves out are measured
// like the others (between the first ranks of the two clusters; for a cluster's own
// link, between its first two nodes). Rank 0 ends with the topology in `t`, or the
// reason it cannot be used.
std::string read_file(MPI_Comm comm, const config::Settings& s, const planner::CostModel& base,
                      const std::vector<int>& node, planner::Topology& t, std::string& detail) {
  int rank = 0, size = 1;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &size);
  std::string error;
  planner::TopologyFile file;
  // Flattened: cluster a, cluster b, rank x, rank y for every link to measure.
  std::vector<int> plan;
  if (rank == 0) {
    try {
      file = planner::read_topology_file(s.topology, node);
      if (file.topology.nranks() != size)
        throw std::invalid_argument("it describes " + std::to_string(file.topology.nranks()) +
                                    " ranks and MPI_COMM_WORLD has " + std::to_string(size));
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (error.empty()) {
      const planner::Topology& f = file.topology;
      std::set<Pair> unordered;
      for (const auto& [a, b] : file.missing) unordered.emplace(std::min(a, b), std::max(a, b));
      for (const auto& [a, b] : unordered) {
        const std::vector<int> in_a = f.members(a), in_b = f.members(b);
        int y = -1;
        for (int r : in_b)
          if (f.node[r] != f.node[in_a[0]]) {
            y = r;
            break;
          }
        if (y < 0) continue;  // a cluster of one node: its own link is never used
        plan.insert(plan.end(), {a, b, in_a[0], y});
      }
    }
  }
  share_ints(Members::whole(comm), plan);
  std::vector<Pair> pairs;
  for (std::size_t i = 0; i < plan.size(); i += 4) pairs.emplace_back(plan[i + 2], plan[i + 3]);
  const int probe = static_cast<int>(s.probe_bytes);
  const std::vector<double> times = measure_pairs(Members::whole(comm), pairs, {kSmall, probe});
  if (rank != 0 || !error.empty()) return error;

  t = file.topology;
  const auto missing = [&](int a, int b) {
    return std::find(file.missing.begin(), file.missing.end(), Pair(a, b)) != file.missing.end();
  };
  std::string measured;
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    const int a = plan[4 * k], b = plan[4 * k + 1];
    const planner::CostModel m = link_model(times[2 * k], times[2 * k + 1], probe, base);
    for (const Pair& ab : {Pair(a, b), Pair(b, a)})
      if (missing(ab.first, ab.second)) t.links[ab.first * t.clusters + ab.second] = m;
    measured += (measured.empty() ? "" : ", ") + t.labels[a] + (a == b ? "" : "-" + t.labels[b]) + " (ranks " +
                std::to_string(pairs[k].first) + "-" + std::to_string(pairs[k].second) + ")";
  }
  detail = "from " + s.topology + (measured.empty() ? "; no link measured" : "; measured links " + measured);
  return "";
}

// The socket level. Rank 0 gives `t` the probed packages where it names none (every
// rank bound to one package, and some node's ranks on two: planner::package_labels),
// then, where a node's ranks lie on two packages and no link between packages is
// given, two of them (the first rank a of the first such node and the first rank of
// another package there) ping-pong 8 bytes and the probe, and so do a and another rank
// of its package where there is one: the link is the base model scaled by the ratio
// (planner::package_link_from_times says why), else the raw times as for a link between
// nodes. Collective over `comm`; `error` (rank 0) skips all but the collective part.
void add_packages(MPI_Comm comm, const config::Settings& s, const planner::CostModel& base,
                  const std::vector<int>& node, const std::vector<int>& placement, const std::string& error,
                  planner::Topology& t, std::string& detail) {
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  std::vector<int> ranks;  // across: a, b; then within a's package: a, c (if any)
  if (rank == 0 && error.empty()) {
    if (t.package.empty()) {
      std::vector<int> machine_package;
      for (std::size_t q = 0; q < node.size(); ++q) machine_package.push_back(placement[2 * q]);
      t.package = planner::package_labels(node, machine_package);
    }
    if (t.splits_a_node() && !t.package_link) {
      for (int a = 0; a < t.nranks() && ranks.empty(); ++a)
        for (int b = a + 1; b < t.nranks() && ranks.empty(); ++b)
          if (t.same_node(a, b) && !t.same_package(a, b)) ranks = {a, b};
      for (int c = 0; c < t.nranks() && ranks.size() == 2; ++c)
        if (c != ranks[0] && t.package[c] == t.package[ranks[0]]) ranks.insert(ranks.end(), {ranks[0], c});
    }
  }
  share_ints(Members::whole(comm), ranks);
  if (ranks.empty()) return;
  std::vector<Pair> pairs;
  for (std::size_t i = 0; i < ranks.size(); i += 2) pairs.emplace_back(ranks[i], ranks[i + 1]);
  const int probe = static_cast<int>(s.probe_bytes);
  const std::vector<double> times = measure_pairs(Members::whole(comm), pairs, {kSmall, probe});
  if (rank != 0) return;
  const std::string across = "ranks " + std::to_string(ranks[0]) + "-" + std::to_string(ranks[1]);
  if (pairs.size() == 2) {
    t.package_link = planner::package_link_from_times(base, times[2], times[3], times[0], times[1]);
    detail += "; between packages measured (" + across + ", against ranks " + std::to_string(ranks[2]) + "-" +
              std::to_string(ranks[3]) + " in one: one-way " + microseconds(times[0]) + " vs " +
              microseconds(times[2]) + " us at 8 B, " + microseconds(times[1]) + " vs " + microseconds(times[3]) +
              " us at " + std::to_string(probe) + " B)";
  } else {
    t.package_link = link_model(times[0], times[1], probe, base);
    detail += "; between packages measured (" + across + ")";
  }
}

// Rank 0's status and topology text to every rank of `comm`.
void share_text(MPI_Comm comm, int& status, std::string& text) {
  long long header[2] = {status, static_cast<long long>(text.size())};
  bcast_politely(header, 2, MPI_LONG_LONG, 0, comm);
  status = static_cast<int>(header[0]);
  text.resize(static_cast<std::size_t>(header[1]));
  if (text.empty()) return;
  bcast_politely(text.data(), static_cast<int>(text.size()), MPI_CHAR, 0, comm);
}

}  // namespace

TopologyProbe probe_topology(const config::Settings& s, const planner::CostModel& base, int nodes, int node_leader) {
  TopologyProbe out;
  const bool from_file = s.topology != "auto" && s.topology != "none";
  if (s.topology == "none") return out;
  const double start = PMPI_Wtime();
  // On one node, auto has only packages to find: a machine of one package returns
  // here, communicating nothing (every rank of the node counts the same packages).
  const bool one_node_auto = !from_file && nodes <= 1;
  if (one_node_auto && !may_have_several_packages()) return out;
  const Machine machine = this_machine();
  if (one_node_auto && machine.packages < 2) return out;
  // A private communicator: no match with the application's messages. Nonblocking, as
  // MPICH's blocking collectives busy-poll (80 ms for a Comm_split_type at 4 ranks on 2
  // cores, hence the node leader from discover_nodes). Under SMPI MPI_COMM_WORLD itself
  // (shim/platform.h says why).
  MPI_Comm comm = MPI_COMM_NULL;
  if (!platform().probe_duplicates_world) {
    comm = MPI_COMM_WORLD;
  } else if (platform().nonblocking_dup) {
    MPI_Request dup;
    PMPI_Comm_idup(MPI_COMM_WORLD, &comm, &dup);
    wait(dup);
  } else {
    PMPI_Comm_dup(MPI_COMM_WORLD, &comm);
  }
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  const std::vector<int> node = node_of_ranks(comm, node_leader);
  std::string placed;
  const std::vector<int> placement = gather_placement(comm, machine, placed);
  planner::Topology t;
  std::string detail;
  std::string error = from_file ? read_file(comm, s, base, node, t, detail) : "";
  if (!from_file && nodes > 1) measure_network(comm, s, base, node, t, detail);
  if (!from_file && nodes <= 1 && rank == 0) {  // one node: no network to measure
    t.node = node;
    t.cluster.assign(node.size(), 0);
    t.links = {base};
    detail = "one node";
  }
  add_packages(comm, s, base, node, placement, error, t, detail);
  int status = 0;
  std::string text;
  if (rank == 0 && error.empty()) try {
      planner::check_topology(t);
      text = planner::topology_to_json(t).dump();
    } catch (const std::exception& e) {
      error = e.what();
    }
  if (rank == 0) status = error.empty() ? 0 : 1;
  share_text(comm, status, text);
  if (comm != MPI_COMM_WORLD) PMPI_Comm_free(&comm);

  out.source = from_file ? "file" : "measured";
  try {
    // Every rank reads the same text, rank 0 included: identical topologies everywhere.
    if (status == 0) {
      auto shared = std::make_shared<planner::Topology>(planner::topology_from_json(nlohmann::json::parse(text)).topology);
      const bool trivial =
          shared->nodes() == 1 && shared->clusters == 1 && shared->slowdown.empty() && !shared->splits_a_node();
      out.description = planner::describe_topology(*shared);
      if (rank == 0)
        out.summary = out.description + "; " + detail + "; " + placed + "; discovery took " +
                      planner::format_seconds(PMPI_Wtime() - start);
      if (!trivial) out.topology = std::move(shared);
      return out;
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  out.failed = true;
  if (rank == 0)
    out.error = "CANOPY_TOPOLOGY='" + s.topology + "' is not valid: " + error +
                " (allowed: auto, none, or a path to a JSON topology file); native MPI_Reduce and MPI_Bcast run";
  return out;
}

}  // namespace canopy::shim
