#!/usr/bin/env bash
# CANOPY_TOPOLOGY=auto on 8 nodes of cluster-edr (one rank each, SMPI's own latency and
# bandwidth factors): the link it measures between nodes must carry the platform's
# per-byte time for large messages, 1 / (0.94 x 12.5 GB/s) (SMPI's bandwidth factor from
# 65472 bytes; the EDR links' rate), within 20%. The 64 KiB probe alone read SMPI's
# latency step there (11.6 times a route's latency) as bytes: 2.3e-10 s/B, 2.7 times
# it; quick links are measured again at 1 MiB for their per-byte time
# (shim/topology_probe.cpp, kSlopeBytes). The program's broadcasts checked.
# usage: check_probe_rate.sh BUILD_DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
CANOPY_REPORT=$work/report.txt "$here/tools/sim/canopy-sim" --build "$1" --ranks 8 --ranks-per-node 1 \
  --modes canopy --timeout 150 --work "$work/run" -- --sizes 8 --collectives bcast --warmup 0 --calls 2
python3 - "$work/report.txt" <<'PY'
import re, sys
topology = next(line for line in open(sys.argv[1]) if line.startswith("topology"))
m = re.search(r"c0->c0 hockney:alpha=([^,]+),beta=([^,]+),", topology)
if not m:
    sys.exit("no link c0->c0 in the report's topology line: " + topology[:400])
beta, want = float(m.group(2)), 1 / (0.94 * 12.5e9)
print("measured %.3g s/B against the platform's %.3g (%.2fx)" % (beta, want, beta / want))
sys.exit(0 if abs(beta / want - 1) <= 0.2 else 1)
PY
