#!/usr/bin/env bash
# Issue 14 on the test bed: the program that hung in MPI_Finalize (ten 1 MiB calls,
# MPI_Reduce and MPI_Bcast in turn, on 3 sites x 2 ranks, MPICH 4.0.2 over UCX tcp) runs
# RUNS times with Canopy preloaded, and every run must end with status 0 within BOUND
# seconds, every rank having checked its results and left MPI_Finalize:
#   (a) Canopy plain: no trials, no topology discovery (CANOPY_AUTO_TRIALS=0,
#       CANOPY_TOPOLOGY=none);
#   (b) with everything that adds messages: auto's trials with native MPI among the
#       candidates from the first call (CANOPY_AUTO_NATIVE_AFTER=0: by default native's
#       trial waits for a size's 256th call), CANOPY_TOPOLOGY=auto's probes between the
#       sites (the default) and CANOPY_VERIFY=1.
# Without Canopy's help (CANOPY_FINALIZE_PROGRESS=0), and natively, 5 of 5 runs hung
# there (docs/shutdown.md); the regression that proves it without root is
# tests/shim/finalize_tcp.sh. Prints each run's duration and the slowest.
# Exits 77 (CTest: skipped) where network namespaces cannot be made.
#
# usage: testbed_finalize.sh CANOPY_TESTBED FINALIZE_TCP LIBCANOPY [RUNS [BOUND]]
set -uo pipefail
[ $# -ge 3 ] || { echo "usage: $0 CANOPY_TESTBED FINALIZE_TCP LIBCANOPY [RUNS [BOUND]]" >&2; exit 2; }
testbed=$1 program=$2 lib=$3 runs=${4:-20} bound=${5:-30}

. "$(dirname "${BASH_SOURCE[0]}")/testbed_common.sh"
testbed_require_namespaces

out=$(mktemp)
trap 'rm -f "$out"' EXIT

# run_case TITLE ENV...: RUNS runs of finalize_tcp in one test bed, then the checks.
run_case() {
  local title=$1
  shift
  echo "=== $title"
  env "$@" "$testbed" --repeat "$runs" --timeout "$bound" --preload "$lib" -- "$program" > "$out" 2>&1
  local status=$?
  grep -E '^testbed: (run|repeat)|FAILED|error' "$out"
  [ "$status" = 0 ] || fail "$title: canopy-testbed exited with status $status"
  local ended passed left slowest
  ended=$(grep -c '^testbed: repeat [0-9]*/[0-9]*: exit status 0 after ' "$out")
  [ "$ended" = "$runs" ] || fail "$title: $ended of $runs runs ended with status 0 within $bound s"
  passed=$(grep -c '^finalize_tcp: rank [0-5]: [0-9]* checks passed' "$out")
  left=$(grep -c '^finalize_tcp: rank [0-5] left MPI_Finalize' "$out")
  [ "$passed" = $((6 * runs)) ] || fail "$title: $passed of $((6 * runs)) rank results checked out"
  [ "$left" = $((6 * runs)) ] || fail "$title: $left of $((6 * runs)) ranks left MPI_Finalize"
  slowest=$(sed -n 's/^testbed: repeat [0-9]*\/[0-9]*: exit status [0-9]* after \([0-9.]*\) s$/\1/p' "$out" | sort -g | tail -1)
  echo "$title: $ended/$runs runs ended cleanly, $left ranks left MPI_Finalize, slowest run ${slowest:-?} s (bound $bound s)"
  local id
  id=$(sed -n 's/^testbed: run \([0-9a-f]\{4\}\):.*/\1/p' "$out")
  [ -z "$id" ] || [ -z "$(testbed_leftovers "$id")" ] || fail "$title: run $id left namespaces or links behind"
}

run_case "Canopy, no trials, no topology discovery" CANOPY_AUTO_TRIALS=0 CANOPY_TOPOLOGY=none
run_case "Canopy with trials, topology discovery and CANOPY_VERIFY=1" CANOPY_VERIFY=1 CANOPY_AUTO_NATIVE_AFTER=0

[ "$failures" = 0 ] && echo "testbed finalize: all checks passed"
exit $((failures > 0))
