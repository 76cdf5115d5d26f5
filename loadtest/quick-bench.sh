#!/usr/bin/env bash
# Quick single-scenario measurement on loopback: the mock answers every HTTP seed path after DELAY (the
# inventory call goes to the SQLite branch of the default config), wrk drives
# CONNS keep-alive connections at the seed route for SECONDS, and the gateway's and the mock's CPU time
# (utime+stime from /proc) is divided by completed requests.
# usage: loadtest/quick-bench.sh [CONNS=100] [DELAY=150ms] [SECONDS=15]   (needs wrk: apt-get install wrk)
set -euo pipefail
cd "$(dirname "$0")/.."
conns=${1:-100}
delay=${2:-150ms}
secs=${3:-15}
bin=build/release/bin
work=$(mktemp -d)
trap 'kill $gw $mock 2>/dev/null || true; wait 2>/dev/null; rm -rf "$work"' EXIT
scripts/seed-db.sh data/offers.db  # the default config's inventory branch

"$bin/mock-downstream" --listen 127.0.0.1:0 --delay "$delay" >"$work/mock.out" 2>"$work/mock.err" &
mock=$!
for _ in $(seq 1 100); do grep -q "listening on" "$work/mock.out" && break; sleep 0.05; done
mock_port=$(sed -n 's/.*listening on .*:\([0-9]*\)$/\1/p' "$work/mock.out")
sed -e "s/127.0.0.1:9001/127.0.0.1:$mock_port/" -e "s/0.0.0.0:8080/127.0.0.1:0/" -e "s/0.0.0.0:9901/127.0.0.1:0/" \
  -e "s/drain_delay: 5s/drain_delay: 0s/" config/gateway.yaml >"$work/gateway.yaml"
"$bin/gateway" --config "$work/gateway.yaml" >"$work/gateway.out" 2>"$work/gateway.err" &
gw=$!
for _ in $(seq 1 100); do grep -q "admin listening on" "$work/gateway.out" && break; sleep 0.05; done
url="http://127.0.0.1:$(sed -nE 's/.*gateway listening on [^ "]*:([0-9]+).*/\1/p' "$work/gateway.out")/api/offer/aggregate?sku=A1"

cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
wrk -t2 -c"$conns" -d2s "$url" >/dev/null  # warm-up: pools filled, stacks cached
g0=$(cpu $gw); m0=$(cpu $mock)
wrk -t2 -c"$conns" -d"${secs}s" --latency "$url" >"$work/wrk.out"
g1=$(cpu $gw); m1=$(cpu $mock)
requests=$(awk '/requests in/ {print $1}' "$work/wrk.out")
hz=$(getconf CLK_TCK)
grep -E "Requests/sec|50%|90%|99%|Socket errors|Non-2xx" "$work/wrk.out"
echo "gateway CPU per request: $(( (g1 - g0) * 1000000 / hz / requests )) us"
echo "mock CPU per request (six calls): $(( (m1 - m0) * 1000000 / hz / requests )) us"
echo "gateway peak RSS: $(awk '/VmHWM/ {print $2}' /proc/$gw/status) kB"
