#!/usr/bin/env bash
# The simulated ranks' shared memo of prices (shim/process_memo.h) changes nothing but
# the simulation's wall time: the same program on the same platform, with every rank
# pricing for itself (CANOPYTEST_PROCESS_MEMO=off) and with the memo, must choose the
# same schedules at the same calls, so every simulated time is the same to the last
# digit printed, and the report's rows of what ran are the same. auto with trials from
# the first call, 24 ranks as 6 nodes of 4, sizes of several classes, a non-zero root,
# learning on (price gradients are memoized too). usage: check_process_memo.sh BUILD_DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for memo in off on; do
  CANOPYTEST_PROCESS_MEMO=$memo CANOPY_AUTO_NATIVE_FIRST=0 CANOPY_REPORT=$work/report-$memo.txt \
    "$here/tools/sim/canopy-sim" --build "$1" --ranks 24 --ranks-per-node 4 --modes canopy --require-canopy \
    --timeout 120 --work "$work/run-$memo" -- --sizes 8,65544,1048576 --warmup 0 --calls 6 --root 5 >"$work/out-$memo"
  grep '^RESULT' "$work/run-$memo/run-24-canopy.out" >"$work/results-$memo"
  sed -n '/^what ran/,/^$/p' "$work/report-$memo.txt" >"$work/ran-$memo"
done
[ -s "$work/results-on" ] && [ -s "$work/ran-on" ] || { echo "no RESULT lines or no report rows"; exit 1; }
if ! diff "$work/results-off" "$work/results-on" || ! diff "$work/ran-off" "$work/ran-on"; then
  echo "the memo changed what the simulated ranks did (above: without it <, with it >)"
  exit 1
fi
echo "same $(wc -l <"$work/results-on") results and $(($(wc -l <"$work/ran-on") - 2)) rows of what ran with and without the memo"
