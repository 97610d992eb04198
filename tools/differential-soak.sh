#!/usr/bin/env bash
# Differential soak: the differential test program (tests/shim/differential: reduces,
# broadcasts and allreduces of random sizes, types, operations, roots and communicator
# splits, each result compared with native MPI's) run again and again with Canopy
# preloaded, on random seeds, rank counts (2 to 7) and settings, for as long as asked.
# The MPI tests run fixed seeds; this looks for the wrong result or the hang that only
# another seed, rank count or mix of settings shows. Not a CI stage: a tool to run
# before a release or after a change to the executor, the trials or the planner.
#
# usage: tools/differential-soak.sh [--seconds N] [--mpi mpich|openmpi|both]
#   --seconds N   how long to go on (default 600); each run is a few seconds
#   --mpi M       which builds: mpich (build/), openmpi (build-openmpi/), or both,
#                 alternating (default: both where build-openmpi/ has the program)
# Each run draws one of three settings, the same on every rank:
#   auto        Canopy's defaults
#   aggressive  auto trialling from the first call, every size, rechecking often, the
#               ring made at once (CANOPY_AUTO_NATIVE_BELOW=0 CANOPY_AUTO_NATIVE_FIRST=0
#               CANOPY_AUTO_NATIVE_AFTER=0 CANOPY_AUTO_RECHECK=0.5 CANOPY_RING_AFTER=0):
#               schedules change between calls of one size
#   forced      a random algorithm of each collective from canopy-plan --list, and a
#               random CANOPY_SEGMENT_BYTES (one Canopy cannot run goes to native MPI)
# Prints a line per run; a failed run's output is kept in a directory named at the end
# with the command that repeats it. Exits 0 when every run passed, 1 otherwise.
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
  sed -n '2,/^[^#]/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'
  exit 0
fi
set -uo pipefail
die() { echo "differential-soak: $1" >&2; exit 2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=600 mpi=""
while [ $# -gt 0 ]; do
  case $1 in
    --seconds) seconds=${2:-}; [[ $seconds =~ ^[1-9][0-9]*$ ]] || die "--seconds must be a positive integer, not '$seconds'"; shift ;;
    --mpi) mpi=${2:-}; shift ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
  shift
done
mpich_build=$here/build ompi_build=$here/build-openmpi
if [ -z "$mpi" ]; then
  mpi=mpich
  [ ! -x "$ompi_build/tests/shim/differential" ] || mpi=both
fi
case $mpi in
  mpich) builds=(mpich) ;;
  openmpi) builds=(openmpi) ;;
  both) builds=(mpich openmpi) ;;
  *) die "--mpi '$mpi': allowed: mpich, openmpi, both" ;;
esac
plan=""  # canopy-plan of the first build used: the registry's algorithms
for b in "${builds[@]}"; do
  dir=$mpich_build
  [ "$b" = mpich ] || dir=$ompi_build
  for f in "$dir/tests/shim/differential" "$dir/shim/libcanopy.so" "$dir/tools/canopy-plan"; do
    [ -e "$f" ] || die "$f is missing: build first (tools/build.sh; Open MPI: tools/test-openmpi.sh)"
  done
  [ -n "$plan" ] || plan=$dir/tools/canopy-plan
done

# The algorithms of each collective, from the registry itself.
algorithms() { "$plan" --list 2>/dev/null | awk -v c="$1" '$1 == c { sub(":", "", $2); print $2 }'; }
mapfile -t reduces < <(algorithms reduce)
mapfile -t bcasts < <(algorithms bcast)
mapfile -t allreduces < <(algorithms allreduce)
[ ${#reduces[@]} -gt 0 ] && [ ${#bcasts[@]} -gt 0 ] && [ ${#allreduces[@]} -gt 0 ] ||
  die "canopy-plan --list named no algorithms"
segments=(auto 0 64 1000 4096 65536)
# Sets `picked` to a random element of the array named $1 (no subshell: one would
# repeat the parent's RANDOM sequence).
pick() { local -n list=$1; picked=${list[RANDOM % ${#list[@]}]}; }

keep=$(mktemp -d /tmp/canopy-differential-soak.XXXXXX)
end=$(($(date +%s) + seconds))
runs=0 failed=0
while [ "$(date +%s)" -lt "$end" ]; do
  b=${builds[runs % ${#builds[@]}]}
  runs=$((runs + 1))
  seed=$((RANDOM * 32768 + RANDOM)) np=$((2 + RANDOM % 6)) cases=$((50 + RANDOM % 150))
  settings=()
  case $((RANDOM % 3)) in
    0) what=auto ;;
    1) what=aggressive
       settings=(CANOPY_AUTO_NATIVE_BELOW=0 CANOPY_AUTO_NATIVE_FIRST=0 CANOPY_AUTO_NATIVE_AFTER=0
                 CANOPY_AUTO_RECHECK=0.5 CANOPY_RING_AFTER=0) ;;
    2) pick reduces; settings=(CANOPY_REDUCE_ALGO="$picked")
       pick bcasts; settings+=(CANOPY_BCAST_ALGO="$picked")
       pick allreduces; settings+=(CANOPY_ALLREDUCE_ALGO="$picked")
       pick segments; settings+=(CANOPY_SEGMENT_BYTES="$picked")
       what="forced ${settings[*]}" ;;
  esac
  if [ "$b" = mpich ]; then
    env_args=(-genv LD_PRELOAD "$mpich_build/shim/libcanopy.so")
    for s in "${settings[@]}"; do env_args+=(-genv "${s%%=*}" "${s#*=}"); done
    command=(mpiexec.mpich "${env_args[@]}" -n "$np" "$mpich_build/tests/shim/differential")
  else
    command=(mpiexec.openmpi --oversubscribe)
    [ "$(id -u)" != 0 ] || command+=(--allow-run-as-root)
    command+=(-x LD_PRELOAD="$ompi_build/shim/libcanopy.so")
    for s in "${settings[@]}"; do command+=(-x "$s"); done
    command+=(-n "$np" "$ompi_build/tests/shim/differential")
  fi
  command+=(--cases="$cases" --seed="$seed")
  # 300 s: a run takes seconds; one that does not end has hung.
  output=$(timeout 300 "${command[@]}" 2>&1)
  status=$?
  if [ "$status" = 0 ]; then
    echo "differential-soak: run $runs ($b, $np ranks, $what): $(grep -m1 'cases passed' <<< "$output")"
  else
    failed=$((failed + 1))
    [ "$status" != 124 ] || output+=$'\n'"differential-soak: the run did not end in 300 s (a hang)"
    printf '%s\n' "${command[*]}" "$output" > "$keep/run-$runs.txt"
    echo "differential-soak: run $runs ($b, $np ranks, $what): FAILED (exit status $status): $keep/run-$runs.txt"
  fi
done
echo "differential-soak: $runs runs, $failed failed, in $seconds s"
if [ "$failed" -gt 0 ]; then
  echo "differential-soak: the failed runs' commands and outputs: $keep"
  exit 1
fi
rm -rf "$keep"
