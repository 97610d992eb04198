#!/usr/bin/env python3
"""Writes a generated grid for SimGrid: SITES sites of NODES hosts each (CORES cores a
host), as 004's simulations drew them (Section 6, Table 3: between two clusters a latency
L of 1-15 ms and a gap g of 100-600 ms for its 4 MB message, drawn at random for every
pair), for tools/sim/canopy-sim (--ranks-per-node CORES) at up to SITES x NODES x CORES
ranks.

usage: tools/sim/gridgen.py --sites S --nodes N [--cores C] [--seed K] [--out FILE] [--topology FILE]
  --sites S    sites (clusters), 2 or more (004's Figure 8: up to 50)
  --nodes N    hosts per site
  --cores C    cores per host (default 16)
  --seed K     the draw (default 1); the same arguments write the same file
  --out FILE   where to write (default tools/sim/platforms/grid-S-N-C.xml)
  --topology FILE  also write the same grid in CANOPY_TOPOLOGY's form (canopy-plan
               --topology, CANOPY_TOPOLOGY=FILE), one rank a core as canopy-sim places
               them with --ranks-per-node C: what the planner prices it with

Inside a site (not in Table 3, which gives only T, a whole cluster's broadcast time):
hosts on 1 Gbit/s links of 12.5 us to the site's router, both directions separate
(SPLITDUPLEX: a full-duplex NIC), so two hosts of a site are 25 us apart, as 004's
Table 4 measured 27.5-47.9 us inside GRID5000's clusters. Inside a host (SimGrid's
loopback, as tools/sim/platforms/cluster-edr.xml and from the same source: this
project's 2-rank shared-memory figures) 12 GB/s and 0.3 us. Without a loopback SimGrid
sends a host's ranks' messages to one another through the host's link and back, so 16
cores talked at 1 Gbit/s through one shared link (the first 1024-rank runs, 2026-12-05:
a broadcast's ranks of one host measured 3x its prediction). Between
sites i and j a link of its own, both directions separate (SPLITDUPLEX), of latency
L_ij - 25 us (host to host: exactly L_ij) and bandwidth 4 MB x 8 / g_ij (56-336 Mbit/s).
Every drawn figure is written into the XML beside its link.
"""
import argparse
import json
import os
import random
import sys

INSIDE_US = 25.0  # host to host inside a site: two host links of 12.5 us


def main():
    p = argparse.ArgumentParser(prog="tools/sim/gridgen.py", description=__doc__.split("usage:")[0].strip(),
                                epilog=__doc__.split("what the planner prices it with")[1].strip(),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sites", type=int, required=True, help="sites (clusters), 2 or more (004's Figure 8: up to 50)")
    p.add_argument("--nodes", type=int, required=True, help="hosts per site")
    p.add_argument("--cores", type=int, default=16, help="cores per host (default 16)")
    p.add_argument("--seed", type=int, default=1, help="the draw (default 1); the same arguments write the same file")
    p.add_argument("--out", help="where to write (default tools/sim/platforms/grid-S-N-C.xml)")
    p.add_argument("--topology", metavar="FILE",
                   help="also write the grid as CANOPY_TOPOLOGY JSON (canopy-plan --topology), one rank a core")
    a = p.parse_args()
    for name, value, least in (("--sites", a.sites, 2), ("--nodes", a.nodes, 1), ("--cores", a.cores, 1)):
        if value < least:
            sys.exit("tools/sim/gridgen.py: %s %d: must be %d or more" % (name, value, least))
    out = a.out or os.path.join(os.path.dirname(os.path.abspath(__file__)), "platforms",
                                "grid-%d-%d-%d.xml" % (a.sites, a.nodes, a.cores))
    rng = random.Random(a.seed)
    lines = ["<?xml version='1.0'?>",
             '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
             "<!--",
             "  Written by tools/sim/gridgen.py --sites %d --nodes %d --cores %d --seed %d (edit that)." % (
                 a.sites, a.nodes, a.cores, a.seed),
             "  %d sites x %d hosts x %d cores = %d ranks at most; site s holds ranks %d*s .. %d*s+%d"
             " with --ranks-per-node %d." % (a.sites, a.nodes, a.cores, a.sites * a.nodes * a.cores,
                                             a.nodes * a.cores, a.nodes * a.cores, a.nodes * a.cores - 1, a.cores),
             "  Between sites: L in [1, 15] ms, g in [100, 600] ms for 4 MB (004 Table 3), drawn per pair.",
             "-->",
             '<platform version="4.1">',
             '  <zone id="grid" routing="Full">']
    for s in range(a.sites):
        lines.append('    <cluster id="s%d" prefix="s%d-" radical="0-%d" suffix="" speed="1Gf" core="%d" '
                     'bw="1Gbps" lat="%gus" sharing_policy="SPLITDUPLEX" loopback_bw="12GBps" loopback_lat="0.3us" '
                     'router_id="s%d-router"/>' % (s, s, a.nodes - 1, a.cores, INSIDE_US / 2, s))
    pairs = [(i, j) for i in range(a.sites) for j in range(i + 1, a.sites)]
    links = {}  # (i, j) -> (latency us, Mbit/s) of the link as the XML writes it
    for i, j in pairs:
        lat_ms = rng.uniform(1.0, 15.0)
        g_ms = rng.uniform(100.0, 600.0)
        mbps = 4e6 * 8 / (g_ms * 1e-3) / 1e6
        link = '    <link id="s%d-s%d" bandwidth="%.3fMbps" latency="%.3fus" sharing_policy="SPLITDUPLEX"/>' % (
            i, j, mbps, lat_ms * 1e3 - INSIDE_US)
        lines.append(link + '  <!-- L %.3f ms, g %.1f ms -->' % (lat_ms, g_ms))
        links[(i, j)] = ("%.3f" % (lat_ms * 1e3 - INSIDE_US), "%.3f" % mbps)
    for i, j in pairs:
        for src, dst, direction in (("s%d" % i, "s%d" % j, "UP"), ("s%d" % j, "s%d" % i, "DOWN")):
            lines.append('    <zoneRoute src="%s" dst="%s" gw_src="%s-router" gw_dst="%s-router" symmetrical="NO">'
                         '<link_ctn id="s%d-s%d" direction="%s"/></zoneRoute>' % (src, dst, src, dst, i, j, direction))
    lines += ["  </zone>", "</platform>", ""]
    with open(out, "w") as f:
        f.write("\n".join(lines))
    print(out)
    if a.topology:
        topo = topology(a, links)
        with open(a.topology, "w") as f:  # as grid88.py writes its own: a line per array, a line per link
            f.write('{\n  "ranks": %s,\n  "nodes": %s,\n  "links": {\n' % (json.dumps(topo["ranks"]),
                                                                          json.dumps(topo["nodes"])))
            f.write(",\n".join('    "%s": "%s"' % item for item in topo["links"].items()))
            f.write("\n  }\n}\n")
        print(a.topology)


def hockney(latency_us, bits_per_second, card_bits_per_second=None):
    spec = "hockney:alpha=%.9g,beta=%.9g" % (latency_us * 1e-6, 8.0 / bits_per_second)
    return spec + (",port=%.9g" % (8.0 / card_bits_per_second) if card_bits_per_second else "")


def topology(a, links):
    """The grid as CANOPY_TOPOLOGY: a site label and a host label per rank, one rank a
    core in canopy-sim's order (--ranks-per-node CORES: host after host, site after
    site), and host-to-host links: inside a site two host links (INSIDE_US, 1 Gbit/s);
    between sites the pair's link plus the two host links, whose 1 Gbit/s is never the
    narrower (56-336 Mbit/s), and port= the hosts' 1 Gbit/s: a message between sites
    holds its hosts' links for its bytes at that rate, its latency in flight
    (planner/cost_model.h). The figures are the XML's, rounded as it writes them, so
    the planner prices the platform SMPI simulates with its latency and bandwidth
    factors at 1 (--cfg smpi/lat-factor:0:1 --cfg smpi/bw-factor:0:1)."""
    ranks, nodes = [], []
    for s in range(a.sites):
        for n in range(a.nodes):
            ranks += ["s%d" % s] * a.cores
            nodes += ["s%d-%d" % (s, n)] * a.cores
    out = {"ranks": ranks, "nodes": nodes, "links": {}}
    if a.nodes > 1:
        for s in range(a.sites):
            out["links"]["s%d" % s] = hockney(INSIDE_US, 1e9)
    for (i, j), (latency_us, mbps) in links.items():
        out["links"]["s%d-s%d" % (i, j)] = hockney(float(latency_us) + INSIDE_US, float(mbps) * 1e6, 1e9)
    return out


if __name__ == "__main__":
    main()
