#!/usr/bin/env bash
# Checks a CANOPY_TRACE_FORMAT=otf2 archive of a job of N ranks with otf2-print (OTF2's
# own reader): every rank a location with events, every region entered as often as
# left, some sends, and every send matched by a receive (the same sender, receiver and
# tag, as many times).
#   check_otf2.sh OTF2_PRINT N ARCHIVE/traces.otf2
set -euo pipefail
print=$1 ranks=$2 archive=$3
out=$("$print" "$archive") || { echo "check_otf2: otf2-print cannot read $archive" >&2; exit 1; }
fail=0
problem() { echo "check_otf2: $*" >&2; fail=1; }
enters=$(grep -c '^ENTER ' <<<"$out" || true)
leaves=$(grep -c '^LEAVE ' <<<"$out" || true)
[ "$enters" -gt 0 ] || problem "no ENTER event"
[ "$enters" -eq "$leaves" ] || problem "$enters ENTER but $leaves LEAVE events"
for ((r = 0; r < ranks; r++)); do
  awk -v r="$r" '$1 == "ENTER" && $2 == r { found = 1 } END { exit !found }' <<<"$out" || problem "rank $r has no events"
done
for kind in send receive; do
  grep -q "Region: \"canopy $kind\"" <<<"$out" || problem "no canopy $kind step"
done
# (location, peer, tag) of each send as (sender, receiver, tag), and of each receive.
sends=$(awk '$1 == "MPI_SEND" { match($0, /Receiver: [0-9]+/); p = substr($0, RSTART + 10, RLENGTH - 10);
                                match($0, /Tag: [0-9]+/); t = substr($0, RSTART + 5, RLENGTH - 5); print $2, p, t }' <<<"$out" | sort)
receives=$(awk '$1 == "MPI_RECV" { match($0, /Sender: [0-9]+/); p = substr($0, RSTART + 8, RLENGTH - 8);
                                   match($0, /Tag: [0-9]+/); t = substr($0, RSTART + 5, RLENGTH - 5); print p, $2, t }' <<<"$out" | sort)
[ -n "$sends" ] || problem "no MPI_SEND event"
[ "$sends" = "$receives" ] || problem "sends and receives do not match: $(diff <(echo "$sends") <(echo "$receives") | head -5 | tr '\n' ' ')"
[ "$fail" -eq 0 ] || exit 1
echo "check_otf2: $enters regions entered and left, $(wc -l <<<"$sends") messages matched on $ranks ranks; OK"
