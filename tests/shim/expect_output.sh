#!/usr/bin/env bash
# expect_output.sh MIN MAX REGEX -- COMMAND...
# Runs COMMAND and passes when it exits 0 and between MIN and MAX lines of its
# combined output match the extended REGEX, and (with EXPECT_OUTPUT_ABSENT=REGEX2 in
# the environment) none matches REGEX2. Prints the output on failure. The counting is
# expect_counts.sh's.
set -uo pipefail
min=$1 max=$2 regex=$3
shift 3
[ "$1" = "--" ] && shift
wants=("$min-$max=$regex")
[ -n "${EXPECT_OUTPUT_ABSENT:-}" ] && wants+=("0=$EXPECT_OUTPUT_ABSENT")
exec bash "$(dirname "$0")/expect_counts.sh" "${wants[@]}" -- "$@"
