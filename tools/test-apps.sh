#!/usr/bin/env bash
# Real applications from Debian's packages, run on 2 ranks with Canopy's Open MPI build
# preloaded (both programs are linked to Open MPI): LAMMPS's melt example (the Lennard-
# Jones melt of LAMMPS's examples/melt, written out below, 2000 steps) and HPC
# Challenge with its example input. Checks that
#   - LAMMPS's thermo table with Canopy equals the native run's, to every printed digit;
#   - every HPCC check passes with Canopy (no "FAILED", no failed residual checks);
#   - Canopy's report (CANOPY_REPORT) counts both programs' MPI_Allreduce calls.
# Installs lammps and hpcc (as root; otherwise prints the apt-get command) and uses
# ./build-openmpi (or $CANOPY_OPENMPI_BUILD_DIR), built by tools/test-openmpi.sh.
# Prints "test-apps: N passed, 0 failed" at the end; exits 1 on any failure.
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
  sed -n '2,/^[^#]/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'
  exit 0
fi
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${CANOPY_OPENMPI_BUILD_DIR:-$here/build-openmpi}
lib=$build/shim/libcanopy.so
[ -f "$lib" ] || { echo "test-apps: $lib is missing: run tools/test-openmpi.sh first" >&2; exit 2; }
missing=()
for p in lammps hpcc; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "test-apps: install ${missing[*]}: sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 2
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
mpirun=(mpiexec.openmpi --oversubscribe -n 2)
[ "$(id -u)" -eq 0 ] && mpirun+=(--allow-run-as-root)
canopy=(-x "LD_PRELOAD=$lib" -x CANOPY_REPORT="$work/report.txt")
passed=0 failed=0
check() {
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "test-apps: FAILED: $*" >&2; fi
}
# The report counts this many MPI_Allreduce calls (its "calls by size" rows).
allreduce_calls() { awk '$1 == "allreduce" && $NF ~ /^[0-9]+$/ { n += $(NF - 2) } END { print n + 0 }' "$1"; }

cat > in.melt <<'EOF'
units           lj
atom_style      atomic
lattice         fcc 0.8442
region          box block 0 10 0 10 0 10
create_box      1 box
create_atoms    1 box
mass            1 1.0
velocity        all create 3.0 87287 loop geom
pair_style      lj/cut 2.5
pair_coeff      1 1 1.0 1.0 2.5
neighbor        0.3 bin
neigh_modify    every 20 delay 0 check no
fix             1 all nve
thermo          100
run             2000
EOF
thermo() { awk '/^ *Step/ { on = 1 } /^Loop time/ { on = 0 } on' "$1"; }
"${mpirun[@]}" lmp -in in.melt -log none > lammps-native.txt 2>&1
"${mpirun[@]}" "${canopy[@]}" lmp -in in.melt -log none > lammps-canopy.txt 2>&1
thermo lammps-native.txt > native.thermo
thermo lammps-canopy.txt > canopy.thermo
check test "$(wc -l < native.thermo)" -gt 20
check cmp -s native.thermo canopy.thermo
mv report.txt lammps-report.txt
lammps_allreduces=$(allreduce_calls lammps-report.txt)
check test "$lammps_allreduces" -gt 0
echo "test-apps: LAMMPS melt, 2000 steps: thermo output identical to native ($(wc -l < native.thermo) lines);" \
  "Canopy counted $lammps_allreduces MPI_Allreduce calls"
grep '^calls:' lammps-report.txt | sed 's/^/  /'

cp /usr/share/doc/hpcc/examples/_hpccinf.txt hpccinf.txt
"${mpirun[@]}" "${canopy[@]}" hpcc > hpcc-canopy.txt 2>&1
check grep -q "End of HPC Challenge tests" hpccoutf.txt
check test "$(grep -c FAILED hpccoutf.txt)" -eq 0
check test "$(grep -Ec '^ *[1-9][0-9]* tests completed and failed residual checks' hpccoutf.txt)" -eq 0
hpcc_allreduces=$(allreduce_calls report.txt)
check test "$hpcc_allreduces" -gt 0
echo "test-apps: HPCC example input: $(grep -c PASSED hpccoutf.txt) checks PASSED, none FAILED;" \
  "Canopy counted $hpcc_allreduces MPI_Allreduce calls"
grep '^calls:' report.txt | sed 's/^/  /'
echo "test-apps: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
