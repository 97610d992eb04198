#!/usr/bin/env bash
# each_algorithm.sh CANOPY_INFO MPIEXEC NP PROGRAM [ARGS...]
# Runs PROGRAM once per registered algorithm, with CANOPY_REDUCE_ALGO,
# CANOPY_BCAST_ALGO or CANOPY_ALLREDUCE_ALGO forcing it (the other collective stays on auto when the name
# exists for one only), so every algorithm the planner offers is checked for results
# in the shim. The list comes from canopy-info, so a new algorithm is covered at once.
# CANOPYTEST_ALGORITHMS=ERE keeps only the algorithms whose "collective name" matches
# (e.g. '^reduce (hierarchical|grid-.*)$'); it must match at least one.
set -euo pipefail
info=$1 mpiexec=$2 np=$3
shift 3
filter=${CANOPYTEST_ALGORITHMS:-.}
list() { "$info" --list-algorithms | sed 's/^ *//; s/:.*//' | grep -E -- "$filter" || true; }
status=0
runs=0
while read -r collective name; do
  var=CANOPY_REDUCE_ALGO
  [ "$collective" = bcast ] && var=CANOPY_BCAST_ALGO
  [ "$collective" = allreduce ] && var=CANOPY_ALLREDUCE_ALGO
  echo "== $var=$name"
  # </dev/null: mpiexec forwards stdin, and would eat the rest of the list.
  if ! env "$var=$name" "$mpiexec" -n "$np" "$@" </dev/null; then
    echo "each_algorithm: FAILED with $var=$name" >&2
    status=1
  fi
  runs=$((runs + 1))
done < <(list)
expected=$(list | wc -l)
if [ "$expected" -eq 0 ]; then
  echo "each_algorithm: no algorithm matches '$filter'" >&2
  status=1
elif [ "$runs" -ne "$expected" ]; then
  echo "each_algorithm: ran $runs of $expected algorithms" >&2
  status=1
fi
exit $status
