#!/usr/bin/env bash
# Runs an MPI command natively and then with Canopy preloaded, and passes when both jobs
# end within BOUND seconds with an exit status from STATUSES (abort_kill.c: a rank
# calls MPI_Abort or is killed while the others wait for it in a collective): Canopy
# must not keep the other ranks alive beyond what the launcher does natively. Prints
# both statuses and durations.
#
# STATUSES is a comma-separated list because a launcher need not report one status for
# one way of ending: MPICH's mpiexec ends a job whose rank was killed with status 9 or
# 15, natively too (4 of 20 native runs of the tcp case gave 15; which one depends on
# which ranks the launcher still had to stop), so two runs' statuses need not agree.
#
# usage: job_end.sh BOUND mpich|openmpi PRELOAD STATUSES MPIEXEC ARGS...
set -uo pipefail
[ $# -ge 6 ] || { echo "usage: $0 BOUND mpich|openmpi PRELOAD STATUSES MPIEXEC ARGS..." >&2; exit 2; }
bound=$1 flavor=$2 preload=$3 statuses=$4 mpiexec=$5
shift 5
case $flavor in
  mpich) preload_args=(-genv LD_PRELOAD "$preload") ;;
  openmpi) preload_args=(-x "LD_PRELOAD=$preload") ;;
  *) echo "job_end.sh: flavor '$flavor' is not valid (allowed: mpich, openmpi)" >&2; exit 2 ;;
esac
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# run LABEL ARGS...: sets $status and $took; timeout(1) ends a job that outlives BOUND.
run() {
  local label=$1 started
  shift
  started=$(date +%s.%N)
  timeout --kill-after=5 "$bound" "$@" > "$out" 2>&1
  status=$?
  took=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
  if [ "$(awk -v t="$took" -v b="$bound" 'BEGIN { print (t >= b) }')" = 1 ]; then
    echo "FAILED: $label: the job did not end within $bound s"
    failed=1
  fi
  echo "$label: exit status $status after $took s"
  grep -E 'ends the job|MPI_Abort|BAD TERMINATION|signal|KILLED' "$out" | head -3
}

failed=0
run native "$mpiexec" "$@"
native=$status
run "with Canopy" "$mpiexec" "${preload_args[@]}" "$@"
canopy=$status
[ "$native" != 0 ] || { echo "FAILED: the native job ended with status 0: nothing ended it early"; failed=1; }
expected() { [[ ",$statuses," == *",$1,"* ]]; }
expected "$native" || { echo "FAILED: natively the job ended with status $native, not one of $statuses"; failed=1; }
expected "$canopy" || { echo "FAILED: with Canopy the job ended with status $canopy, not one of $statuses (natively $native)"; failed=1; }
[ "$failed" = 0 ] && echo "job_end: the jobs ended with status $native natively and $canopy with Canopy (expected: $statuses)"
exit "$failed"
