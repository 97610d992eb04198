#!/usr/bin/env bash
# Builds Canopy and runs every test: the planner/config unit tests, then the MPI
# integration tests (natively and with libcanopy.so preloaded). Extra arguments go to
# ctest, e.g. tools/test.sh -R reduce_matrix.
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
  sed -n '2,/^[^#]/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'
  exit 0
fi
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${CANOPY_BUILD_DIR:-$here/build}
"$here/tools/build.sh"
cd "$build"
# Unit tests are quick and independent; MPI tests run one at a time (2 cores here).
ctest --output-on-failure -LE mpi -j "$(nproc)" "$@"
ctest --output-on-failure -L mpi "$@"
