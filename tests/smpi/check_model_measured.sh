#!/usr/bin/env bash
# A job without CANOPY_MODEL that spans several nodes measures its model at MPI_Init
# beside the network (shim/runtime.cpp, measures_model_with_network), and the figures are
# the platform's. SMPI charges no time for computation (canopy-sim runs it with
# smpi/simulate-computation:no), so the measured reduction and copy rates must be far
# under the built-in model's 1e-10 s/B, which priced reductions the simulated machine
# does not pay for; with ranks 0 and 1 on one node, alpha and beta are that node's
# loopback (cluster-edr.xml: 12 GB/s, SMPI's bandwidth factor 0.94 from 65472 bytes,
# within 25%), and with one rank a node they stay the built-in ones (2e-6, 1e-10: the
# ping-pong would time a link between nodes, which the topology prices). The program's
# calls checked.
# usage: check_model_measured.sh BUILD_DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for per_node in 4 1; do
  CANOPY_REPORT=$work/report-$per_node.txt "$here/tools/sim/canopy-sim" --build "$1" --ranks 8 \
    --ranks-per-node $per_node --modes canopy --timeout 150 --work "$work/run-$per_node" -- --sizes 8 \
    --collectives bcast --warmup 0 --calls 2
done
python3 - "$work/report-4.txt" "$work/report-1.txt" <<'PY'
import re, sys
def model(path, nodes):
    line = next(l for l in open(path) if l.startswith("model"))
    want = "model (measured: the job spans %d nodes): hockney:" % nodes
    if not line.startswith(want):
        sys.exit("%s: the model line does not start with %r: %s" % (path, want, line.strip()))
    return {k: float(v) for k, v in re.findall(r"(alpha|beta|gamma|copy)=([0-9.e+-]+)", line)}
ok = True
shared, alone = model(sys.argv[1], 2), model(sys.argv[2], 8)
for name, m in (("4 ranks a node", shared), ("1 rank a node", alone)):
    print("%s: %s" % (name, m))
    if not (m["gamma"] < 1e-12 and m["copy"] < 1e-12):
        print("  gamma and copy should be far under 1e-10 s/B (SMPI charges no computation)"); ok = False
want = 1 / (0.94 * 12e9)
print("4 ranks a node: beta %.3g s/B against the loopback's %.3g (%.2fx)" % (shared["beta"], want, shared["beta"] / want))
if abs(shared["beta"] / want - 1) > 0.25 or not 0 < shared["alpha"] < 2e-6:
    print("  alpha, beta should be the node's loopback"); ok = False
if (alone["alpha"], alone["beta"]) != (2e-6, 1e-10):
    print("  with one rank a node alpha, beta should stay the built-in 2e-6, 1e-10"); ok = False
sys.exit(0 if ok else 1)
PY
