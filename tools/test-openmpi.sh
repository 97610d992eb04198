#!/usr/bin/env bash
# Builds Canopy against Open MPI (-DCANOPY_MPI=openmpi: mpicc.openmpi, mpiexec.openmpi,
# mpif90.openmpi) in ./build-openmpi (or $CANOPY_OPENMPI_BUILD_DIR) and runs the MPI
# integration tests there, natively and with libcanopy.so preloaded, C and Fortran.
# Left out, to keep it to a few minutes (tools/test.sh runs them against MPICH): the
# unit tests (they use no MPI: not even built, -DCANOPY_UNIT_TESTS=OFF), "large
# messages" (label large: ~11 GiB of memory) and "mpi preload each algorithm: ..." and
# "... each topology-aware algorithm: ..." (every algorithm again per program; the
# differential tests already force each one here). Extra arguments go to ctest instead
# of that selection, e.g. tools/test-openmpi.sh -R reduce_fortran, or -L mpi for all.
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
  sed -n '2,/^[^#]/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'
  exit 0
fi
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${CANOPY_OPENMPI_BUILD_DIR:-$here/build-openmpi}
"$here/tools/setup.sh"
source "$here/tools/common/compiler_cache.sh"
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCANOPY_MPI=openmpi -DCANOPY_UNIT_TESTS=OFF \
  "${compiler_cache[@]}" >/dev/null
# Everything, not only what the tests run: the whole project must compile against Open MPI.
cmake --build "$build" -j "$(nproc)"
cd "$build"
[ $# -eq 0 ] && set -- -L mpi -LE large -E "each (topology-aware )?algorithm:"
# MPI tests run one at a time (2 cores here; they start up to 6 ranks each).
ctest --output-on-failure "$@"
