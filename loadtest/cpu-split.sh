#!/usr/bin/env bash
# CPU per request split into user and system time, and context switches per request, under a100's load
# (the six-call route, every downstream 150 ms, 100 connections): a fresh mock and gateway from BIN_DIR,
# wrk for 16 s, and the gateway's and the mock's /proc counters read over 8 s in its middle. With
# PROFILE=FILE, `perf record -e cpu-clock:u` samples the gateway's user time over the same 8 s into FILE
# (read it with `perf report -i FILE --no-children --sort sym`; `perf annotate -i FILE -s SYMBOL` shows
# where a function's samples fall).
#
#   loadtest/cpu-split.sh BIN_DIR [LABEL] [THREADS]   (BIN_DIR holds a gateway and a mock-downstream;
#                                                      THREADS: server.threads, default 0)
#
# The figures come from clock ticks (10 ms) over about 5,000 requests, so one run is good to about 2 µs per
# request, and runs of one build differ by up to 15% on a busy host: compare builds in turn, several
# rounds, or use compare.sh for the total.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { sed -n '2,12s/^# \{0,1\}//p' "$0" >&2; exit 2; }
bin=$1 label=${2:-$(basename "$1")} threads=${3:-0} conns=100 secs=16
for tool in wrk python3; do
  command -v "$tool" >/dev/null || { echo "cpu-split.sh: $tool is missing (scripts/setup.sh bench)" >&2; exit 2; }
done
[ -z "${PROFILE:-}" ] || command -v perf >/dev/null || { echo "cpu-split.sh: perf is missing" >&2; exit 2; }
work=$(mktemp -d)
mpid= gpid= wpid=
cleanup() {
  for p in $wpid $gpid $mpid; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

. loadtest/lib/wait-for.sh
. loadtest/lib/http-config.sh

"$bin/mock-downstream" --listen 127.0.0.1:0 --threads "$(nproc)" --delay 150ms >"$work/mock.out" 2>&1 &
mpid=$!
wait_for "$work/mock.out" listening 10 "$mpid"
mock_port=$(grep -o '127.0.0.1:[0-9]*' "$work/mock.out" | head -1 | cut -d: -f2)
[ "$threads" = 0 ] || server_threads=$threads
write_http_config "$work/gw.yaml" 800ms "$conns"  # a100's config
"$bin/gateway" --config "$work/gw.yaml" >"$work/gw.out" 2>&1 &
gpid=$!
wait_for "$work/gw.out" "admin listening" 10 "$gpid"
gw_port=$(grep -o 'gateway listening on [0-9.]*:[0-9]*' "$work/gw.out" | grep -o '[0-9]*$' | head -1)
wrk -t2 -c"$conns" -d"${secs}s" "http://127.0.0.1:$gw_port/api/offer/aggregate?sku=A1" >"$work/wrk.out" 2>&1 &
wpid=$!

switches() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/^voluntary_ctxt/ {v += $2} /^nonvoluntary_ctxt/ {n += $2} END {print v + 0, n + 0}'; }
ticks() { awk '{print $14, $15}' /proc/"$1"/stat; }
sleep 5
before="$(switches "$gpid") $(switches "$mpid") $(ticks "$gpid") $(ticks "$mpid") $(date +%s.%N)"
if [ -n "${PROFILE:-}" ]; then
  perf record -q -e cpu-clock:u -F 20000 -p "$gpid" -o "$PROFILE" -- sleep 8 >/dev/null 2>&1
else
  sleep 8
fi
after="$(switches "$gpid") $(switches "$mpid") $(ticks "$gpid") $(ticks "$mpid") $(date +%s.%N)"
wait "$wpid"
wpid=
rps=$(awk '/Requests\/sec/ {print $2}' "$work/wrk.out")
python3 - "$label" "$rps" "$before" "$after" "$(getconf CLK_TCK)" <<'PY'
import sys
label, rps = sys.argv[1], float(sys.argv[2])
b = [float(x) for x in sys.argv[3].split()]
a = [float(x) for x in sys.argv[4].split()]
tick_us = 1e6 / float(sys.argv[5])
d = [y - x for x, y in zip(b, a)]
n = rps * d[8]  # requests in the window
print("%-14s %4.0f req/s | gateway: user %5.1f  system %5.1f us/req, switches %.2f voluntary %.2f involuntary"
      " | mock: user %5.1f  system %5.1f us/req" % (label, rps, d[4] * tick_us / n, d[5] * tick_us / n,
                                                     d[0] / n, d[1] / n, d[6] * tick_us / n, d[7] * tick_us / n))
PY
