#!/usr/bin/env bash
# The demo: builds Canopy, then runs the same unmodified MPI program (canopy-demo) on
# 2 and 4 ranks natively and with Canopy preloaded, shows the schedules Canopy chose
# and prints the timings side by side.
#   tools/demo.sh [--sizes B,B,...] [--seconds S]    (arguments go to canopy-demo)
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
  sed -n '2,/^[^#]/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'
  exit 0
fi
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${CANOPY_BUILD_DIR:-$here/build}
"$here/tools/build.sh" --target canopy canopy-demo >/dev/null
mpiexec=$(command -v mpiexec.mpich || command -v mpiexec)
demo="$build/tools/canopy-demo"
lib="$build/shim/libcanopy.so"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

for np in 2 4; do
  echo "=== $np ranks ==="
  "$mpiexec" -n "$np" "$demo" "$@" > "$out/native.txt"
  echo "-- Canopy's schedules (CANOPY_LOG_LEVEL=info):"
  LD_PRELOAD="$lib" CANOPY_LOG_LEVEL=info "$mpiexec" -n "$np" "$demo" "$@" > "$out/canopy.txt" 2> "$out/canopy.err"
  grep -v '^canopy\[0\] info: active' "$out/canopy.err" | sed 's/^/   /' || true
  echo "-- results: native $(grep '^CHECK' "$out/native.txt" | cut -d' ' -f2), canopy $(grep '^CHECK' "$out/canopy.txt" | cut -d' ' -f2)"
  printf '   %-13s %9s %14s %14s %9s\n' collective bytes "native (us)" "canopy (us)" speedup
  join -j1 <(awk '/^RESULT/{print $2"/"$3, $4}' "$out/native.txt" | sort) \
           <(awk '/^RESULT/{print $2"/"$3, $4}' "$out/canopy.txt" | sort) |
    sort -t/ -k1,1 -k2n |
    awk '{split($1, k, "/"); printf "   %-13s %9s %14.1f %14.1f %8.2fx\n", k[1], k[2], $2, $3, $2 / $3}'
  echo
done
