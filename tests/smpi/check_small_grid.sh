#!/usr/bin/env bash
# A generated grid of few nodes (tools/sim/gridgen.py --sites 4 --nodes 3 --cores 1: 12
# hosts, one rank each), few enough that CANOPY_TOPOLOGY=auto (the default) measures
# every pair of nodes at MPI_Init, all at once in rounds of disjoint pairs, where two
# pairs of a round may cross the same link between two sites. The clusters must be the
# four sites, and every link between sites must be the platform's own: its latency
# within 10% of the drawn one (host to host, as gridgen.py writes it) and its bandwidth
# within 10% (the links are measured again one pair a cluster a round, so none shares
# its link with another probe); the program's broadcasts checked.
# usage: check_small_grid.sh BUILD_DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 "$here/tools/sim/gridgen.py" --sites 4 --nodes 3 --cores 1 --seed 3 --out "$work/grid.xml" >/dev/null
CANOPY_REPORT=$work/report.txt "$here/tools/sim/canopy-sim" --build "$1" --platform "$work/grid.xml" \
  --ranks 12 --ranks-per-node 1 --modes canopy --timeout 150 --work "$work/run" \
  --cfg smpi/lat-factor:0:1 --cfg smpi/bw-factor:0:1 -- --sizes 8 --collectives bcast --warmup 0 --calls 2
expected="12 ranks on 12 nodes in 4 clusters: c0 = ranks 0-2; c1 = ranks 3-5; c2 = ranks 6-8; c3 = ranks 9-11;"
if ! grep -qF "$expected" "$work/report.txt"; then
  echo "expected the topology line to begin: $expected"
  echo "it was: $(grep '^topology' "$work/report.txt" | cut -c1-400)"
  exit 1
fi
python3 - "$work/grid.xml" "$work/report.txt" <<'EOF'
import re, sys
platform, report = open(sys.argv[1]).read(), open(sys.argv[2]).read()
topology = next(line for line in report.splitlines() if line.startswith("topology"))
bad = 0
for i, j, mbps, lat_ms in re.findall(r'<link id="s(\d+)-s(\d+)" bandwidth="([\d.]+)Mbps".*?<!-- L ([\d.]+) ms', platform):
    m = re.search(r"c%s->c%s hockney:alpha=([^,]+),beta=([^,]+)," % (i, j), topology)
    if not m:
        print("no link c%s->c%s in the report" % (i, j))
        bad += 1
        continue
    alpha, beta = float(m.group(1)), float(m.group(2))
    want_alpha, want_beta = float(lat_ms) * 1e-3, 8 / (float(mbps) * 1e6)
    ok = abs(alpha / want_alpha - 1) <= 0.1 and abs(beta / want_beta - 1) <= 0.1
    bad += not ok
    print("c%s->c%s: alpha %.3f ms (platform %.3f), 1/beta %.1f Mbit/s (platform %s)%s" % (
        i, j, alpha * 1e3, want_alpha * 1e3, 8 / beta / 1e6, mbps, "" if ok else "  <- more than 10% off"))
sys.exit(1 if bad else 0)
EOF
echo "the four sites found, their links as the platform's; $(grep "MPI_Init" "$work/report.txt")"
