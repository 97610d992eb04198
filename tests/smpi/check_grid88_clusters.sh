#!/usr/bin/env bash
# 004's 88 machines (tools/sim/platforms/grid88.xml), one rank each: more nodes than
# Canopy measures pairwise, so CANOPY_TOPOLOGY=auto (the default) measures them against
# representatives at MPI_Init. Its clusters must be the six Lowekamp's algorithm found
# on GRID5000 (004, Table 4, rho = 30%: 31 and 29 machines at Orsay, 6 + 1 + 1 at IDPOT,
# 20 at Toulouse), the platform's hosts in that order, every result of the program's
# broadcasts checked. usage: check_grid88_clusters.sh BUILD_DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
CANOPY_RHO=0.3 CANOPY_REPORT=$work/report.txt "$here/tools/sim/canopy-sim" --build "$1" --platform grid88 \
  --ranks 88 --ranks-per-node 1 --modes canopy --timeout 150 --work "$work/run" \
  --cfg smpi/lat-factor:0:1 --cfg smpi/bw-factor:0:1 -- --sizes 8 --collectives bcast --warmup 0 --calls 2
expected="88 ranks on 88 nodes in 6 clusters: c0 = ranks 0-30; c1 = ranks 31-59; c2 = ranks 60-65; c3 = ranks 66; c4 = ranks 67; c5 = ranks 68-87;"
if ! grep -qF "$expected" "$work/report.txt"; then
  echo "expected the topology line to begin: $expected"
  echo "it was: $(grep '^topology' "$work/report.txt" | cut -c1-400)"
  exit 1
fi
echo "clusters as 004's Table 4; $(grep "MPI_Init" "$work/report.txt")"
