#!/usr/bin/env bash
# expect_counts.sh COUNT=REGEX... -- COMMAND...
# Runs COMMAND and passes when it exits 0 and, for each COUNT=REGEX, the number of
# lines of its combined output that match the extended REGEX is COUNT: a number N
# (exactly N) or a range MIN-MAX. Prints the output on failure. With
# EXPECT_SKIP_UNLESS=REGEX in the environment, a run that exits 0 with no line matching
# REGEX is skipped (exit 77; ctest's SKIP_RETURN_CODE) rather than judged: for checks
# that hold only on some machines (a node with fewer cores than ranks).
set -uo pipefail
wants=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do wants+=("$1"); shift; done
[ $# -gt 0 ] && shift
out=$("$@" 2>&1)
status=$?
if [ "$status" -eq 0 ] && [ -n "${EXPECT_SKIP_UNLESS:-}" ] && ! printf '%s\n' "$out" | grep -qE -- "$EXPECT_SKIP_UNLESS"; then
  echo "expect_counts: no line matches '$EXPECT_SKIP_UNLESS': skipped"
  exit 77
fi
failed=0
report=
for want in "${wants[@]}"; do
  count=${want%%=*} regex=${want#*=}
  least=${count%-*} most=${count#*-}
  got=$(printf '%s\n' "$out" | grep -cE -- "$regex")
  report="$report
  $got line(s) (wanted $count) match '$regex'"
  { [ "$got" -ge "$least" ] && [ "$got" -le "$most" ]; } || failed=1
done
if [ "$status" -ne 0 ] || [ "$failed" -ne 0 ]; then
  printf '%s\n' "$out"
  echo "expect_counts: exit status $status;$report" >&2
  exit 1
fi
echo "expect_counts: exit status 0;$report"
