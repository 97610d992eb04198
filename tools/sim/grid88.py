#!/usr/bin/env python3
"""Writes tools/sim/platforms/grid88.xml (SimGrid) and grid88-topology.json (CANOPY_TOPOLOGY)
for the 88-machine GRID5000 experiment of Steffenel (paper 004, Section 7, Table 4).

usage: tools/sim/grid88.py [OUTDIR]   (default: tools/sim/platforms next to this script)

Also writes grid88-uplinks.xml: the same, plus one 100 Mbit/s uplink per site (each
direction) that every message leaving or entering the site crosses, so that a site's
messages to other sites share it (a variant, to see what a shared site uplink changes).

Every figure's source is written into the XML's comment; docs/simulation.md has the runs.
"""
import argparse
import json
import os

# Table 4 of 004: the 6 clusters Lowekamp's algorithm found (rho = 30%), in the table's order.
CLUSTERS = [  # (id, machines, site, host name prefix)
    ("c0", 31, "orsay", "orsay-a-"),
    ("c1", 29, "orsay", "orsay-b-"),
    ("c2", 6, "idpot", "idpot-a-"),
    ("c3", 1, "idpot", "idpot-b-"),
    ("c4", 1, "idpot", "idpot-c-"),
    ("c5", 20, "toulouse", "toulouse-"),
]
# Table 4 of 004, "Latency between different clusters (in microseconds)"; None: "-" (a
# cluster of one machine has no two machines to measure).
LAT_US = [
    [47.56, 62.10, 12181.52, 12187.24, 12197.49, 5210.99],
    [62.10, 47.92, 12181.52, 12198.03, 12195.22, 5211.47],
    [12181.52, 12181.52, 35.52, 60.08, 60.08, 5388.49],
    [12187.24, 12198.03, 60.08, None, 242.47, 5393.98],
    [12197.49, 12195.22, 60.08, 242.47, None, 5394.10],
    [5210.99, 5211.47, 5388.49, 5393.98, 5394.10, 27.53],
]
# The single machines of IDPOT (c3, c4) take IDPOT's c2 figure for their own link.
OWN_LAT_US = [LAT_US[i][i] if LAT_US[i][i] is not None else LAT_US[2][2] for i in range(6)]
LAN_BPS = 1e9        # Gigabit Ethernet inside a site
WAN_BPS = 100e6      # between sites: 4 MiB in 0.336 s, inside Table 3's g range (100-600 ms)


def bw(i, j):
    return LAN_BPS if CLUSTERS[i][2] == CLUSTERS[j][2] else WAN_BPS


def fmt_us(x):
    return ("%.3f" % x).rstrip("0").rstrip(".") + "us"


def hockney(lat_us, bps):
    return "hockney:alpha=%.8g,beta=%.6g" % (lat_us * 1e-6, 8.0 / bps)


SITES = ["orsay", "idpot", "toulouse"]


def xml(uplinks=False):
    out = []
    out.append("""<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<!--
  grid88: the 88 machines of GRID5000 in 6 clusters of Steffenel's experiment (paper 004,
  Section 7, Table 4), for tools/sim/canopy-sim (one rank a host: --ranks-per-node 1).
  Written by tools/sim/grid88.py; edit that, not this file.

  Clusters (Table 4's header, in its order; hosts in this order are ranks 0-87):
    c0 31 x Orsay     orsay-a-0 ... orsay-a-30       ranks  0-30
    c1 29 x Orsay     orsay-b-0 ... orsay-b-28       ranks 31-59
    c2  6 x IDPOT     idpot-a-0 ... idpot-a-5        ranks 60-65
    c3  1 x IDPOT     idpot-b-0                      rank  66
    c4  1 x IDPOT     idpot-c-0                      rank  67
    c5 20 x Toulouse  toulouse-0 ... toulouse-19     ranks 68-87

  Latency. Table 4 gives "the latency between every two clusters or between two machines
  in the same cluster", in microseconds, measured with pLogP (004 Section 7 and its ref.
  [31]); pLogP's L is a one-way figure (half a round trip's latency part), so here it is
  the one-way latency of a route: SimGrid sums the latencies of a route's links, and
  - inside cluster i each host's private link to its cluster's router has latency L_ii/2,
    so host to host in one cluster is L_ii (47.56, 47.92, 35.52 and 27.53 us from the
    table's diagonal). c3 and c4 have one machine each ("-" in the table); their private
    links take c2's 35.52/2 us (the other IDPOT machines'), which only enters their
    routes to other clusters;
  - between clusters i and j a link of its own (one per pair, both directions) of
    latency L_ij - L_ii/2 - L_jj/2, so host to host is exactly Table 4's L_ij.
  SMPI multiplies route latencies by its smpi/lat-factor (by default up to 11.6x for
  large messages, a calibration to a real cluster); docs/simulation.md says which runs
  set it to 1 (--cfg smpi/lat-factor:0:1) so that these figures hold as written.

  Bandwidth (not in 004's tables):
  - host links 1 Gbit/s: GRID5000's nodes of the time (2006-2007: Orsay's gdx and
    Toulouse's clusters, IDPOT) had Gigabit Ethernet; cluster-pair links inside one site
    (c0-c1 at Orsay; c2, c3, c4 at IDPOT) 1 Gbit/s too;
  - cluster-pair links between sites 100 Mbit/s: chosen, not measured, so that a 4 MiB
    message's gap is 4194304 x 8 / 1e8 = 0.336 s, inside Table 3's g range (100-600 ms,
    "average values measured over GRID5000"). At 1 Gbit/s it would be 34 ms, under
    Table 3's minimum. Every message between two clusters in one direction shares its
    pair's one link; the two directions are separate (SPLITDUPLEX, full duplex, like the
    clusters' host links), so SimGrid's TCP cross traffic (network/crosstraffic: a flow
    also loads the reverse direction with 5% of its rate, for the acknowledgements) does
    not slow a one-way transfer (with one SHARED link a 4 MiB message took 5% longer).
  speed 1 Gflop/s is never used (canopy-sim runs with smpi/simulate-computation:no).@UPLINKS@
-->
<platform version="4.1">
  <zone id="grid88" routing="Full">""".replace("@UPLINKS@", """

  grid88-uplinks.xml only: each site (orsay, idpot, toulouse) has an uplink of
  100 Mbit/s and no latency, split duplex (UP: leaving the site, DOWN: entering it);
  a message between two sites crosses its source site's uplink UP, the pair's link and
  the destination's DOWN, so all the messages leaving one site share 100 Mbit/s (an
  assumption to test, not a GRID5000 figure).""" if uplinks else ""))
    for i, (cid, n, site, prefix) in enumerate(CLUSTERS):
        out.append('    <!-- %s: %d x %s, L_%d%d = %s -->' % (
            cid, n, site, i, i, "%.2f us" % LAT_US[i][i] if LAT_US[i][i] else "- (c2's 35.52 us)"))
        out.append('    <cluster id="%s" prefix="%s" radical="0-%d" suffix="" speed="1Gf" core="1"'
                   ' bw="1Gbps" lat="%s" router_id="%s-router"/>' % (
                       cid, prefix, n - 1, fmt_us(OWN_LAT_US[i] / 2), cid))
    pairs = [(i, j) for i in range(6) for j in range(i + 1, 6)]
    if uplinks:
        for site in SITES:
            out.append('    <link id="uplink-%s" bandwidth="100Mbps" latency="0us" sharing_policy="SPLITDUPLEX"/>' % site)
    for i, j in pairs:
        lat = LAT_US[i][j] - OWN_LAT_US[i] / 2 - OWN_LAT_US[j] / 2
        assert lat > 0
        out.append('    <link id="%s-%s" bandwidth="%s" latency="%s" sharing_policy="SPLITDUPLEX"/>'
                   '  <!-- Table 4: %.2f us -->' % (
                       CLUSTERS[i][0], CLUSTERS[j][0], "1Gbps" if bw(i, j) == LAN_BPS else "100Mbps",
                       fmt_us(lat), LAT_US[i][j]))
    for i, j in pairs:
        a, b = CLUSTERS[i][0], CLUSTERS[j][0]
        for src, dst, direction in ((a, b, "UP"), (b, a, "DOWN")):
            ctn = '<link_ctn id="%s-%s" direction="%s"/>' % (a, b, direction)
            si, sj = (CLUSTERS[i][2], CLUSTERS[j][2]) if direction == "UP" else (CLUSTERS[j][2], CLUSTERS[i][2])
            if uplinks and si != sj:
                ctn = ('<link_ctn id="uplink-%s" direction="UP"/>%s<link_ctn id="uplink-%s" direction="DOWN"/>'
                       % (si, ctn, sj))
            out.append('    <zoneRoute src="%s" dst="%s" gw_src="%s-router" gw_dst="%s-router" symmetrical="NO">'
                       '%s</zoneRoute>' % (src, dst, src, dst, ctn))
    out.append("  </zone>\n</platform>\n")
    return "\n".join(out)


def topology():
    ranks, nodes = [], []
    for cid, n, site, prefix in CLUSTERS:
        for k in range(n):
            ranks.append(cid)
            nodes.append("%s%d" % (prefix, k))
    links = {}
    for i, (cid, n, _, _) in enumerate(CLUSTERS):
        if n > 1:
            links[cid] = hockney(LAT_US[i][i], LAN_BPS)
    for i in range(6):
        for j in range(i + 1, 6):
            links["%s-%s" % (CLUSTERS[i][0], CLUSTERS[j][0])] = hockney(LAT_US[i][j], bw(i, j))
    return {"ranks": ranks, "nodes": nodes, "links": links}


def main():
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "platforms")
    parser = argparse.ArgumentParser(
        description="Writes grid88.xml, grid88-uplinks.xml (SimGrid platforms) and grid88-topology.json "
        "(CANOPY_TOPOLOGY) for the 88-machine GRID5000 experiment of paper 004, Section 7, Table 4; "
        "every figure's source is in the XML's comment, the runs in docs/simulation.md.")
    parser.add_argument("outdir", nargs="?", default=here,
                        help="an existing folder to write the three files into (default: %(default)s)")
    outdir = parser.parse_args().outdir
    if not os.path.isdir(outdir):
        parser.error("OUTDIR '%s' is not an existing folder" % outdir)
    with open(os.path.join(outdir, "grid88.xml"), "w") as f:
        f.write(xml())
    with open(os.path.join(outdir, "grid88-uplinks.xml"), "w") as f:
        f.write(xml(uplinks=True))
    topo = topology()
    with open(os.path.join(outdir, "grid88-topology.json"), "w") as f:
        f.write("{\n")
        f.write('  "ranks": %s,\n' % json.dumps(topo["ranks"]))
        f.write('  "nodes": %s,\n' % json.dumps(topo["nodes"]))
        f.write('  "links": {\n')
        items = list(topo["links"].items())
        for k, (name, link) in enumerate(items):
            f.write('    "%s": "%s"%s\n' % (name, link, "," if k + 1 < len(items) else ""))
        f.write("  }\n}\n")


if __name__ == "__main__":
    main()
