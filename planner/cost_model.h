// Cost models the simulator and the selector price schedules with.
//
// One parameter set covers the two models of the papers:
//  * Hockney / alpha-beta-gamma (001_*.txt, Langou): a message of m bytes costs
//    alpha + beta*m, reducing m bytes costs gamma*m. Langou's "unidirectional" system
//    is duplex=half (a rank sends or receives, not both) and overlap=false (no
//    computation while communicating).
//  * Canon & Antoniu's (d, c) model (000_*.txt): one indivisible element per rank, a
//    transfer costs d, a reduction costs c, a machine takes part in one transfer at a
//    time (duplex=half) and transfers overlap computation (overlap=true). It is the
//    Hockney form with alpha=d, beta=0, reduce_fixed=c, gamma=0.
//  * pLogP (004_*.txt, Steffenel, after Kielmann et al.): a message of m bytes holds
//    the sender's and the receiver's port for the gap g(m) and arrives after L + g(m);
//    g is measured at a few sizes and interpolated linearly in between (extrapolated
//    from the last two points beyond). pLogP has no computation term; gamma and copy
//    add Canopy's reductions and copies.
#pragma once

#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace canopy::planner {

enum class Duplex { Half, Full };

// The price of a cross-memory-attach copy (CostModel::direct_copy) until a model says
// otherwise: a fixed part per copy and a factor on the model's copy_per_byte. Measured
// on the 2-core Intel Xeon VM: one process_vm_readv moved 1 MiB in 51.8 us where a
// memcpy took 38.2 us (1.36x per byte), and 64 KiB in 2.92 us against 1.49 (1.4 us
// more: the system call and pinning the pages). Decision: those two rounded figures
// rather than a straight line through both points (0.94 us + 1.33x); with that
// machine's memcpy rate they price 64 KiB at 3.41 us (17% high) and 1 MiB at 53.0 us
// (2% high), erring against the direct steps. They are that machine's: on the 2-core
// AMD EPYC VM forced 2-rank broadcasts by cross-memory attach (one direct copy of half
// the message) took 5.5 us at 64 KiB, 9.2 at 256 KiB and 28.3 at 1 MiB, about 3 us a
// copy and 3x a local copy per byte (docs/performance/issue15/cma-2026-11-28.txt, lines
// B). So a model may carry its own (direct_per_byte, direct_fixed), which
// CANOPY_MODEL=measure times and CANOPY_LEARN refits (planner/learn.h). The fixed part
// is left out of the (d, c) model, whose units are not seconds (as
// kStagingHandoffSeconds is).
constexpr double kDirectCopyFixedSeconds = 1.4e-6;
constexpr double kDirectCopyFactor = 1.35;

struct CostModel {
  std::string kind = "hockney";  // "hockney", "overlap" or "plogp": how spec() prints it
  double alpha = 0;              // seconds (or model units) per message
  double beta = 0;               // per byte transferred
  double gamma = 0;              // per byte reduced
  double reduce_fixed = 0;       // per reduction regardless of size (the c of (d, c))
  double copy_per_byte = 0;      // per byte copied locally
  // A cross-memory-attach copy (the direct steps): direct_fixed seconds per copy (the
  // system call, pinning the pages), then direct_per_byte per byte, where 0 means
  // kDirectCopyFactor x copy_per_byte, following the copy rate wherever that is set or
  // learnt. The (d, c) model has no fixed part.
  double direct_per_byte = 0;
  double direct_fixed = kDirectCopyFixedSeconds;
  Duplex duplex = Duplex::Half;  // Full: a rank may send and receive at once
  bool overlap = false;          // true: computation runs while transfers progress
  // pLogP: g(m) at measured sizes, increasing in bytes; empty for the other models.
  // alpha is then pLogP's L.
  std::vector<std::pair<std::int64_t, double>> gap;
  // Seconds per byte a message holds the sender's and the receiver's ports (their
  // network cards' rate), its latency in flight; 0: the ports are held for the whole
  // transfer, latency included (Langou's model, and the default). A link of
  // a CANOPY_TOPOLOGY between sites (port=...): over a wide-area link alpha is mostly
  // time on the wire, and a rank can start its next message once its card has sent
  // this one's bytes, as pLogP's gap lets it (004), while beta stays the path's
  // end-to-end rate. Measured 2026-12-06 (docs/simulation.md): 16 sites of one rank,
  // 1-15 ms and 56-336 Mbit/s apart, 1 Gbit/s cards, a 1 MiB reduce-scatter-gather
  // with every operand in flight at once took 43.9 ms simulated by SMPI; with
  // port=1 Gbit/s the simulator prices it at about that, without it 13 times higher.
  // A pLogP link measured by CANOPY_TOPOLOGY=auto has it too where a train of messages
  // showed the latency in flight (planner::measured_link): its g(m) stays the one-way
  // time, what arrival needs, and the ports are held for port_fixed + port x bytes.
  double port_per_byte = 0;
  // With port_per_byte: seconds a message holds the ports whatever its size (pLogP's
  // gap of an empty message, the cards' per-message overhead); 0 by default.
  double port_fixed = 0;

  // From the start of a transfer to the data's arrival.
  double transfer(std::int64_t bytes) const {
    return gap.empty() ? alpha + beta * static_cast<double>(bytes) : alpha + gap_at(bytes);
  }
  // How long a transfer holds the sender's and the receiver's ports.
  double occupancy(std::int64_t bytes) const {
    const double whole = gap.empty() ? transfer(bytes) : gap_at(bytes);
    return port_per_byte > 0 ? std::min(whole, port_fixed + port_per_byte * static_cast<double>(bytes)) : whole;
  }
  // The ports are held for the whole transfer (Hockney without port=, or pLogP with
  // L = 0, as the probe's measured links: planner::measured_link): what the closed forms
  // that count a message as one busy interval assume.
  bool ports_held_for_transfer() const { return port_per_byte == 0 && (gap.empty() || alpha == 0); }
  double gap_at(std::int64_t bytes) const;
  // Seconds per byte of large messages: beta, or pLogP's slope between its last two
  // sizes (0 with one). What a card's rate is read from (keep_wide_area_latency_in_flight).
  double large_message_per_byte() const;
  double reduce(std::int64_t bytes) const { return reduce_fixed + gamma * static_cast<double>(bytes); }
  double copy(std::int64_t bytes) const { return copy_per_byte * static_cast<double>(bytes); }
  // A Read or Write of `bytes` between two processes' memory (schedule.h, the direct
  // steps: process_vm_readv/writev): direct_fixed, then direct_per_byte_or_derived() per
  // byte (nothing per byte where copies are free).
  double direct_copy(std::int64_t bytes) const {
    return direct_fixed + direct_per_byte_or_derived() * static_cast<double>(bytes);
  }
  double direct_per_byte_or_derived() const {
    return direct_per_byte > 0 ? direct_per_byte : kDirectCopyFactor * copy_per_byte;
  }

  std::string spec() const;  // parse_model(spec()) gives this model back

  // Every field, once: what equality compares and what the keys of remembered plans and
  // prices are made of (hierarchy.cpp's level plans, shim/prices.cpp's memo), so that a
  // field added above is added here and nowhere else. spec() prints the model as text
  // and leaves out fields at their defaults: it has a line per field of its own.
  auto fields() const {
    return std::tie(kind, alpha, beta, gamma, reduce_fixed, copy_per_byte, direct_per_byte, direct_fixed, duplex,
                    overlap, gap, port_per_byte, port_fixed);
  }
  // Every field equal (the shim keeps plans by the model they were made with).
  bool operator==(const CostModel& o) const { return fields() == o.fields(); }
};

CostModel hockney_model(double alpha, double beta, double gamma);
CostModel overlap_model(double d, double c);

// Canopy's built-in parameters for shared-memory MPI on one node, until measured.
// alpha 2 us, 10 GB/s transfers, 10 GB/s reductions and copies, full duplex,
// overlapping computation (the executor keeps transfers in flight while reducing).
CostModel default_model();

// pLogP with latency L and gaps g (pairs of bytes and seconds, at least one).
CostModel plogp_model(double L, std::vector<std::pair<std::int64_t, double>> gap);

// Parses "hockney:alpha=A,beta=B,gamma=G[,copy=C][,direct=D,direct_fixed=S][,port=P]
// [,duplex=half|full][,overlap=0|1]", "overlap:d=D,c=C",
// "plogp:L=L,g=M1:G1/M2:G2/...[,gamma=G,copy=C,direct=D,direct_fixed=S,duplex=..,overlap=..]"
// or "plogp:FILE" (a file of lines "L <seconds>", "<bytes> <g seconds>", optionally
// "gamma <s/byte>", "copy <s/byte>", "direct <s/byte>" and "direct_fixed <s>"; #
// starts a comment). direct and direct_fixed default to 0 (derived from copy) and
// kDirectCopyFixedSeconds, and spec() writes them only otherwise. Throws
// std::invalid_argument naming the bad part and what is allowed.
CostModel parse_model(const std::string& spec);

}  // namespace canopy::planner
