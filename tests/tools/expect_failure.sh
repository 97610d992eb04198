#!/usr/bin/env bash
# expect_failure.sh STATUS REGEX -- COMMAND...
# Passes when COMMAND exits with exactly STATUS, writes nothing on stdout, and writes
# exactly one line on stderr, which matches the extended REGEX.
set -uo pipefail
want=$1 regex=$2
shift 2
[ "$1" = "--" ] && shift
err=$(mktemp)
trap 'rm -f "$err"' EXIT
out=$("$@" 2>"$err" </dev/null)
status=$?
lines=$(wc -l <"$err")
if [ "$status" -ne "$want" ] || [ -n "$out" ] || [ "$lines" -ne 1 ] || ! grep -qE -- "$regex" "$err"; then
  printf 'stdout: %s\nstderr:\n' "$out"
  cat "$err"
  echo "expect_failure: exit status $status (wanted $want), $lines stderr line(s) (wanted 1 matching '$regex')" >&2
  exit 1
fi
cat "$err"
echo "expect_failure: exit status $status, one line naming the problem"
