#!/usr/bin/env bash
# posix_segment.sh COMMAND...
# Runs COMMAND (an MPI program with Canopy preloaded and CANOPY_LOG_LEVEL=debug) and
# passes when it exits 0, at least one staging ring was made in POSIX shared memory
# (the debug line names its segments, /canopy-<pid>-<n>, one per rank of the node, up
# to eight), and no segment it named is left in /dev/shm afterwards. Prints the output
# on failure.
set -uo pipefail
out=$("$@" 2>&1)
status=$?
names=$(printf '%s\n' "$out" | grep -E 'staging ring made for .*POSIX shared memory /canopy-[0-9]+-[0-9]+' |
        grep -oE '/canopy-[0-9]+-[0-9]+' | sort -u)
left=
for name in $names; do
  [ -e "/dev/shm$name" ] && left="$left $name"
done
if [ "$status" -ne 0 ] || [ -z "$names" ] || [ -n "$left" ]; then
  printf '%s\n' "$out"
  echo "posix_segment: exit status $status, segments named: ${names:-none}, left in /dev/shm:${left:- none}" >&2
  exit 1
fi
echo "posix_segment: exit status 0, segments" $names "made and removed"
