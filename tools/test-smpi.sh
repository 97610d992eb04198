#!/usr/bin/env bash
# Builds Canopy for SimGrid's SMPI (-DCANOPY_MPI=smpi: smpicc, smpicxx; Debian's
# libsimgrid-dev, which tools/setup.sh --smpi installs) in ./build-smpi (or
# $CANOPY_SMPI_BUILD_DIR) and runs the SMPI tests there (label smpi: Canopy's shim on a
# few dozen simulated ranks of tools/sim/platforms/cluster-edr.xml, every result checked).
# Only libcanopy.so and the libraries it links are built (cmake/smpi.cmake), without debug
# information (-O2, no -g: the tests need no debugger and compile faster). Extra arguments
# go to ctest, e.g. tools/test-smpi.sh -R root.
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
  sed -n '2,/^[^#]/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'
  exit 0
fi
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${CANOPY_SMPI_BUILD_DIR:-$here/build-smpi}
"$here/tools/setup.sh" --smpi
source "$here/tools/common/compiler_cache.sh"
cmake -S "$here" -B "$build" -DCANOPY_MPI=smpi -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
  "${compiler_cache[@]}" >/dev/null
cmake --build "$build" -j "$(nproc)"
cd "$build"
[ $# -eq 0 ] && set -- -L smpi
# One simulation at a time: each is one process, and the tests are sized for 2 cores.
ctest --output-on-failure -j1 "$@"
