#!/usr/bin/env bash
# Builds Canopy with AddressSanitizer and UndefinedBehaviorSanitizer
# (-DCANOPY_SANITIZE=address,undefined, or $CANOPY_SANITIZE) in ./build-asan (or
# $CANOPY_ASAN_BUILD_DIR) and runs the tests there: the unit tests, then the MPI
# integration tests, whose programs are sanitized too and get the sanitized
# libcanopy.so preloaded after the ASan runtime (mpiexec and its proxies included).
# Any ASan report, any undefined behaviour and any leak (except MPICH's own, listed in
# tests/sanitizers/lsan.supp) fails the test it happens in.
# Left out of the MPI tests unless arguments are given (CI's time; tools/test.sh runs
# them unsanitized): the "each algorithm" and "each topology-aware algorithm" runs of
# the test programs (every algorithm's executor path runs sanitized in the differential
# tests, 12 random cases each here instead of 70), the test programs run natively
# (nothing of Canopy's runs there, except in reduce_kernels_check, which does run),
# the test bed (the demo under network emulation) and the messages over 2 GiB (labels
# native, testbed, large), and a few MPI tests whose code runs sanitized in a sibling
# (heavy_mpi below); of the unit tests, the nine longest sweeps (heavy_sweeps below).
# Extra arguments go to ctest instead, e.g. tools/test-sanitizers.sh -R reduce_special.
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
  sed -n '2,/^[^#]/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'
  exit 0
fi
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${CANOPY_ASAN_BUILD_DIR:-$here/build-asan}
# The longest unit sweeps (four minutes of the sanitized unit tests on 2 cores):
# the same code runs sanitized in their smaller siblings (the bcast and other trees'
# sweeps, the hierarchy's fixed cases, the allreduce compositions over a topology and
# through the ring, every selection test that ranks an allreduce) and in the MPI tests
# below, whose executor runs each rank's view (the rank views' two sweeps: 46 s at a few
# hundred ranks alone in CI's run of 2026-12-05, whose whole stage took 19:44 of CI's 50
# minutes). CI's ASan unit tests took 247 s with the first three left out (70 s of it
# the bounding sweep). Also left out (CI of 2026-12-06, 52 minutes in all, the ASan
# unit tests 275 s): the segment-size search's sweep (30 s; make_plan's sanitized
# tests search too), the flat, chain and binary reduces' sweep over p = 1..33 (24 s;
# their builders run sanitized in the differential MPI tests) and the binomial
# broadcast's (19 s; the other broadcast trees' sweep stays). And (CI of 2026-12-07,
# 49:50 in all, the sanitized stage 19:31) scatter-allgather's price against 2000
# simulated random instances (29 s sanitized, 7 unsanitized; its plan and simulation run
# sanitized in the broadcast trees' sweep, its price in every selection test).
heavy_sweeps="Rank views equal the schedule's own steps|Binomial reduce \(Langou 001|Hierarchy: on random multi-cluster"
heavy_sweeps+="|Scatter-allgather's price: under pLogP"
heavy_sweeps+="|Select: bounding never changes|Allreduce algorithms validate and simulate: p = 1\.\.17"
heavy_sweeps+="|Select: the search over m / 2\^i stops past the valley|flat, chain and binary reduce validate for p = 1\.\.33"
heavy_sweeps+="|Binomial bcast \(Langou 001"
# MPI tests whose code runs sanitized in a sibling (about 110 s of CI's 10 minutes of
# sanitized MPI tests, 2026-12-05): the soak (its calls are the differential tests'),
# the topology file's np5 matrices and differential (its np4 differential and the
# hierarchical stages' reduce stay), the broadcast twins of the hierarchical stages and
# the hwloc packages, and the saved rules over varying counts (the saved rules' own
# tests stay).
heavy_mpi="soak np2|topology file (reduce|bcast)_matrix np5|topology file differential np5"
heavy_mpi+="|hierarchical stages inside each node: bcast_matrix|hierarchical by package: bcast_matrix"
heavy_mpi+="|saved rules, varying counts"

"$here/tools/setup.sh"
# -g1: line tables only (stack traces keep their lines; compiling takes less time).
# -O1: the build took 422 s instead of about 530 s at -O2 here; the sanitized tests ran
# as long (unit tests 172 s against 174 s, MPI tests within 25 s of 431 s).
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DCANOPY_SANITIZE="${CANOPY_SANITIZE:-address,undefined}" -DCANOPY_DIFFERENTIAL_CASES=12 >/dev/null
cmake --build "$build" -j "$(nproc)"
cd "$build"
if [ $# -eq 0 ]; then
  ctest --output-on-failure -LE mpi -j "$(nproc)" -E "$heavy_sweeps"
  ctest --output-on-failure -L mpi -LE "native|testbed|large" -E "each (topology-aware )?algorithm:|$heavy_mpi"
  # One native test is Canopy's own code: its reduction loops against MPI_Reduce_local.
  ctest --output-on-failure -R "reduce kernels equal MPI_Reduce_local"
else
  ctest --output-on-failure -LE mpi -j "$(nproc)" "$@"
  ctest --output-on-failure -L mpi "$@"
fi
