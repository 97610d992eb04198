#!/usr/bin/env bash
# Installs Canopy's build and test dependencies from Debian's packages when any is
# missing: with apt-get when run as root, otherwise it prints the command to run.
# --smpi: also SimGrid's SMPI (libsimgrid-dev: smpicc, smpicxx, smpirun) and GNU time
# (tools/sim/canopy-sim reports each simulation's peak memory), for tools/test-smpi.sh.
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
  sed -n '2,/^[^#]/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'
  exit 0
fi
set -euo pipefail
smpi=0
case "${1:-}" in
  "") ;;
  --smpi) smpi=1 ;;
  *) echo "setup: unknown option '$1' (--smpi, --help)" >&2; exit 2 ;;
esac

# openmpi-bin, libopenmpi-dev: the second MPI (tools/test-openmpi.sh); MPICH stays the
# default, named explicitly (mpicc.mpich, ...) since Debian's plain mpicc then points to Open MPI.
# libotf2-trace-dev, otf2-tools: CANOPY_TRACE_FORMAT=otf2 and its test (otf2-print).
packages=(build-essential cmake pkg-config mpich libmpich-dev openmpi-bin libopenmpi-dev libhwloc-dev
          libspdlog-dev nlohmann-json3-dev libcli11-dev catch2 gfortran iproute2 valgrind libotf2-trace-dev otf2-tools)
[ $smpi -eq 0 ] || packages+=(libsimgrid-dev time)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update
  apt-get install -y --no-install-recommends "${missing[@]}"
else
  echo "setup: missing Debian packages: ${missing[*]}" >&2
  echo "setup: install them with:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 1
fi
