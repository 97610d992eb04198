#!/usr/bin/env bash
# CANOPY_TOPOLOGY=auto on 8 nodes of cluster-edr (one rank each, SMPI's own latency and
# bandwidth factors): the link it measures between nodes must carry the platform's
# per-byte time for large messages (the slope from 64 KiB to 1 MiB), 1 / (0.94 x 12.5
# GB/s) (SMPI's bandwidth factor from 65472 bytes; the EDR links' rate), within 20%. A
# line through 8 bytes and the 64 KiB probe alone read SMPI's latency step there (11.6
# times a route's latency) as bytes: 2.3e-10 s/B, 2.7 times it. Quick links are
# measured again at doubling sizes from 1 KiB to 1 MiB and priced at each
# (shim/topology_probe.cpp, curve_sizes; planner::measured_link), so 32 KiB, below the
# step, must also take under half 64 KiB's time. And trains of messages sent back to back
# (train_gap) show the latency in flight: the link's port= (the ports' time per byte)
# must be the same rate within 20%, where the one-way time of 64 KiB is three times its
# bytes' (shim/topology_probe.cpp, planner::measured_link). The program's broadcasts checked.
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
m = re.search(r"c0->c0 plogp:L=0,g=([^,]+),", topology)
if not m:
    sys.exit("no pLogP link c0->c0 in the report's topology line: " + topology[:400])
g = {int(b): float(t) for b, t in (point.split(":") for point in m.group(1).split("/"))}
if not {8, 32768, 65536, 1048576} <= set(g):
    sys.exit("the link c0->c0 was not measured at 8 B, 32 KiB, 64 KiB and 1 MiB: " + m.group(1))
beta, want = (g[1048576] - g[65536]) / (1048576 - 65536), 1 / (0.94 * 12.5e9)
print("measured %.3g s/B from 64 KiB to 1 MiB against the platform's %.3g (%.2fx)" % (beta, want, beta / want))
# SMPI's step at 65472 bytes: 32 KiB, below it, takes well under half of 64 KiB's time.
print("one-way 32 KiB %.3g s, 64 KiB %.3g s" % (g[32768], g[65536]))
port = re.search(r"c0->c0 plogp:[^ ]*,port=([0-9.e+-]+)", topology)
if not port:
    sys.exit("the link c0->c0 has no port= (its trains did not show the latency in flight): " + topology[:600])
port = float(port.group(1))
print("port %.3g s/B against the platform's %.3g (%.2fx)" % (port, want, port / want))
sys.exit(0 if abs(beta / want - 1) <= 0.2 and g[32768] < 0.5 * g[65536] and abs(port / want - 1) <= 0.2 else 1)
PY
