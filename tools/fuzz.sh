#!/usr/bin/env bash
# tools/fuzz.sh [SECONDS] [TARGET...]
# Builds canopy-fuzz with clang (libFuzzer with AddressSanitizer and
# UndefinedBehaviorSanitizer) in ./build-fuzz (or $CANOPY_FUZZ_BUILD_DIR) and runs each
# fuzz target of tests/fuzz/targets.cpp (all of them unless named) for SECONDS seconds
# (default 60), as many at once as there are cores, starting from its seeds in tests/fuzz/corpus/<target>/ and its past
# crashes in tests/fuzz/regressions/<target>/. Inputs found along the way collect in
# build-fuzz/corpus/<target>/ (not committed).
#
# A crash, leak, timeout or broken invariant stops that target with the input saved as
# build-fuzz/artifacts/<target>/crash-* (or leak-*, timeout-*, oom-*), and the script
# exits non-zero after the other targets. Replay one input:
#   CANOPY_FUZZ_TARGET=<target> build-fuzz/tests/fuzz/canopy-fuzz <file>
# Fix the code, then commit the input to tests/fuzz/regressions/<target>/: the unit
# tests (built with gcc by tools/test.sh) replay it for good.
# Needs Debian's clang and libclang-rt-14-dev (installed when run as root).
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
  sed -n '2,/^[^#]/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'
  exit 0
fi
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${CANOPY_FUZZ_BUILD_DIR:-$here/build-fuzz}
seconds=60
if [[ "${1:-}" =~ ^[0-9]+$ ]]; then
  seconds=$1
  shift
fi

"$here/tools/setup.sh"
if ! command -v clang++ >/dev/null || ! clang++ -print-file-name=libclang_rt.fuzzer-x86_64.a | grep -q /; then
  if [ "$(id -u)" -eq 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends clang libclang-rt-14-dev
  else
    echo "fuzz: needs clang and libclang-rt-14-dev: sudo apt-get install clang libclang-rt-14-dev" >&2
    exit 1
  fi
fi

cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCANOPY_FUZZ=ON -DCANOPY_SANITIZE=address,undefined -DCANOPY_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target canopy-fuzz
fuzzer=$build/tests/fuzz/canopy-fuzz

if [ $# -eq 0 ]; then
  mapfile -t targets < <(CANOPY_FUZZ_TARGET=list "$fuzzer" | cut -f1)
else
  targets=("$@")
fi
# One target per core at a time (each fuzzer is one process).
fuzz_one() {
  local t=$1
  mkdir -p "$build/corpus/$t" "$build/artifacts/$t"
  local seeds=("$here/tests/fuzz/corpus/$t")
  [ -d "$here/tests/fuzz/regressions/$t" ] && seeds+=("$here/tests/fuzz/regressions/$t")
  echo "== fuzz $t for ${seconds}s"
  # The first folder receives new inputs; the others are only read. -rss_limit_mb and
  # -timeout make runaway memory and hangs findings too.
  if CANOPY_FUZZ_TARGET=$t "$fuzzer" "$build/corpus/$t" "${seeds[@]}" -max_total_time="$seconds" \
       -rss_limit_mb=2048 -timeout=10 -max_len=4096 -print_final_stats=1 \
       -artifact_prefix="$build/artifacts/$t/" > "$build/$t.log" 2>&1; then
    echo "fuzz $t: $(grep -E '^stat::number_of_executed_units' "$build/$t.log" | awk '{print $2}') executions," \
         "no crash (log: $build/$t.log)"
  else
    echo "fuzz $t: FAILED, input in $build/artifacts/$t/; the end of $build/$t.log:" >&2
    tail -40 "$build/$t.log" >&2
    return 1
  fi
}
status=0
running=0
for t in "${targets[@]}"; do
  fuzz_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$(nproc)" ]; then
    wait -n || status=1
    running=$((running - 1))
  fi
done
while [ "$running" -gt 0 ]; do
  wait -n || status=1
  running=$((running - 1))
done
exit $status
