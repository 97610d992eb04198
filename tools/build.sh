#!/usr/bin/env bash
# Configures and builds Canopy in ./build (or $CANOPY_BUILD_DIR), installing the
# dependencies first if needed. Compiles through ccache where it is installed.
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
  sed -n '2,/^[^#]/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'
  exit 0
fi
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${CANOPY_BUILD_DIR:-$here/build}
"$here/tools/setup.sh"
source "$here/tools/common/compiler_cache.sh"
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${compiler_cache[@]}" >/dev/null
cmake --build "$build" -j "$(nproc)" "$@"
