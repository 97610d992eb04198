#!/usr/bin/env bash
# check_gridgen_topology.sh CANOPY_PLAN GRIDGEN
# tools/sim/gridgen.py --topology writes the grid it draws as CANOPY_TOPOLOGY: the same
# draw as the XML (the XML written with and without it is the same file), every link's
# figures the XML's (host to host: a pair's latency plus the two host links' 25 us, its
# bandwidth, the ports held at the hosts' 1 Gbit/s; inside a site 25 us and 1 Gbit/s), one rank a core as canopy-sim places
# them, and canopy-plan reads it as that many ranks on that many nodes and sites.
set -euo pipefail
plan=$1 gridgen=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 "$gridgen" --sites 3 --nodes 2 --cores 2 --seed 5 --out "$work/plain.xml" > /dev/null
python3 "$gridgen" --sites 3 --nodes 2 --cores 2 --seed 5 --out "$work/grid.xml" --topology "$work/topo.json" > /dev/null
cmp "$work/plain.xml" "$work/grid.xml"
python3 - "$work/grid.xml" "$work/topo.json" << 'EOF'
import json, re, sys
xml, topo = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))
assert topo["ranks"] == ["s0"] * 4 + ["s1"] * 4 + ["s2"] * 4, topo["ranks"]
assert topo["nodes"] == [n for s in range(3) for h in range(2) for n in ["s%d-%d" % (s, h)] * 2], topo["nodes"]
def figures(spec):
    m = re.fullmatch(r"hockney:alpha=([^,]+),beta=([^,]+)(,port=(.+))?", spec)
    return float(m.group(1)), float(m.group(2)), float(m.group(4) or 0)
drawn = re.findall(r'<link id="(s\d+-s\d+)" bandwidth="([\d.]+)Mbps" latency="([\d.]+)us"', xml)
assert len(drawn) == 3, drawn
for name, mbps, latency_us in drawn:
    alpha, beta, port = figures(topo["links"][name])
    assert port == 8e-9, (name, port)
    assert abs(alpha - (float(latency_us) + 25) * 1e-6) < 1e-12, (name, alpha, latency_us)
    assert abs(beta * float(mbps) * 1e6 / 8 - 1) < 1e-8, (name, beta, mbps)
for site in ("s0", "s1", "s2"):
    assert figures(topo["links"][site]) == (25e-6, 8e-9, 0), topo["links"][site]
assert len(topo["links"]) == 6, topo["links"]
EOF
"$plan" bcast --bytes 1048576 --topology "$work/topo.json" --algo grid-ecef | grep -q '^topology 12 ranks on 6 nodes in 3 clusters'
echo "gridgen.py --topology: the XML's draw and figures, 12 ranks on 6 nodes in 3 clusters"
