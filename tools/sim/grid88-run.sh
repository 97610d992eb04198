#!/bin/bash
# grid88-run.sh: the 88-machine grid experiment of 004 (Section 7) under SMPI: a 4 MiB
# MPI_Bcast from rank 0 on tools/sim/platforms/grid88.xml, one rank a host, with each
# broadcast algorithm forced through Canopy, with auto, and with SMPI's mpich and ompi
# selectors; and canopy-plan's prediction for each algorithm on the same topology file.
#
# usage: tools/sim/grid88-run.sh OUTDIR [canopy-sim options, e.g. --cfg smpi/lat-factor:0:1]
# env:   CANOPY_PLAN  canopy-plan of an MPICH build (default build/tools/canopy-plan)
#        BUILD        the CANOPY_MPI=smpi build (default build-smpi)
#        PLATFORM     the SimGrid platform (default tools/sim/platforms/grid88.xml; its hosts
#                     in the same order, e.g. grid88-uplinks.xml)
# Prints one line per run: algorithm, predicted s, simulated us per call (slowest rank
# over 3 timed calls after 1 untimed; auto: after 10 untimed, where its trials run).
# docs/simulation.md ("The seeds' 88-machine grid") has the results.
set -euo pipefail
cd "$(dirname "$0")/../.."
case "${1:-}" in
  -h | --help) sed -n 2,14p "$0"; exit 0 ;;
  "" | -*) sed -n 2,14p "$0" >&2; exit 2 ;;
esac
out=$(mkdir -p "$1" && cd "$1" && pwd); shift
plan=${CANOPY_PLAN:-build/tools/canopy-plan}
topo=$PWD/tools/sim/platforms/grid88-topology.json
common=(--build "${BUILD:-build-smpi}" --platform "${PLATFORM:-tools/sim/platforms/grid88.xml}" --ranks 88 --ranks-per-node 1 "$@")
bench=(--collectives bcast --sizes 4194304 --calls 3)

predicted() { "$plan" bcast --topology "$topo" -p 88 --bytes 4194304 --algo "$1" | sed -n 's/^makespan \([^ ]*\) s.*/\1/p'; }
simulated() { awk '$2 == "MPI_Bcast" { print $4 }' "$1"; }

for a in grid-flat binomial grid-fef grid-ecef grid-ecef-la grid-ecef-lat grid-ecef-lat-max grid-bottomup \
         hierarchical flat chain auto; do
  warmup=1
  [ "$a" != auto ] || warmup=10
  CANOPY_TOPOLOGY=$topo CANOPY_BCAST_ALGO=$a CANOPY_LOG_LEVEL=info CANOPY_REPORT=$out/report-$a.txt \
    tools/sim/canopy-sim "${common[@]}" --modes canopy --work "$out/w-$a" -- "${bench[@]}" --warmup $warmup \
    >"$out/sim-$a.txt" 2>&1 || echo "$a: canopy-sim failed, see $out/sim-$a.txt"
  echo "$a predicted_s $(predicted "$a") simulated_us $(simulated "$out/sim-$a.txt")"
done
grep -h "chose" "$out/w-auto/run-88-canopy.out" || true
tools/sim/canopy-sim "${common[@]}" --modes mpich,ompi --work "$out/w-selectors" -- "${bench[@]}" --warmup 1 \
  >"$out/sim-selectors.txt" 2>&1 || echo "selectors: canopy-sim failed, see $out/sim-selectors.txt"
awk '$2 == "MPI_Bcast" { print "mpich simulated_us " $4; print "ompi simulated_us " $5 }' "$out/sim-selectors.txt"
