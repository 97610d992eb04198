# Sourced by the test-bed tests: testbed_require_namespaces exits 77 (CTest: skipped)
# where the test bed cannot be built: not root, no CAP_NET_ADMIN (a container), no
# iproute2.
testbed_require_namespaces() {
  [ "$(id -u)" = 0 ] || { echo "SKIPPED: the test bed needs root"; exit 77; }
  command -v ip > /dev/null && command -v tc > /dev/null || { echo "SKIPPED: no ip/tc (Debian: iproute2)"; exit 77; }
  local probe=canopy-tb-probe$$ probe_ok=1
  if ! ip netns add "$probe" 2> /dev/null; then
    echo "SKIPPED: cannot create a network namespace (no CAP_NET_ADMIN?)"
    exit 77
  fi
  ip link add "ctbp$$" type bridge 2> /dev/null && ip link del "ctbp$$" || probe_ok=0
  ip netns del "$probe"
  [ "$probe_ok" = 1 ] || { echo "SKIPPED: cannot create a bridge (no CAP_NET_ADMIN?)"; exit 77; }
}

# testbed_leftovers ID: what run ID left behind (namespaces, links, state), empty if nothing.
testbed_leftovers() {
  (ip netns list | grep "canopy-tb-$1-"; ip -o link show | grep ": ctb$1-"; ls -d "/run/canopy-testbed/$1" 2> /dev/null) || true
}

# fail MESSAGE: counts a failed check and says which; the test exits with $failures.
failures=0
fail() { echo "FAILED: $*"; failures=$((failures + 1)); }
