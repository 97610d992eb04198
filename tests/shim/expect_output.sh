#!/usr/bin/env bash
# expect_output.sh MIN MAX REGEX -- COMMAND...
# Runs COMMAND and passes when it exits 0 and between MIN and MAX lines of its
# combined output match the extended REGEX, and (with EXPECT_OUTPUT_ABSENT=REGEX2 in
# the environment) none matches REGEX2. Prints the output on failure.
set -uo pipefail
min=$1 max=$2 regex=$3
shift 3
[ "$1" = "--" ] && shift
out=$("$@" 2>&1)
status=$?
matches=$(printf '%s\n' "$out" | grep -cE -- "$regex")
absent=${EXPECT_OUTPUT_ABSENT:-}
unwanted=0
[ -n "$absent" ] && unwanted=$(printf '%s\n' "$out" | grep -cE -- "$absent")
if [ "$status" -ne 0 ] || [ "$matches" -lt "$min" ] || [ "$matches" -gt "$max" ] || [ "$unwanted" -ne 0 ]; then
  printf '%s\n' "$out"
  echo "expect_output: exit status $status, $matches line(s) match '$regex' (wanted $min..$max)" \
       "${absent:+, $unwanted match '$absent' (wanted none)}" >&2
  exit 1
fi
printf '%s\n' "$out" | grep -E -- "$regex" | head -3
echo "expect_output: exit status 0, $matches line(s) match"
