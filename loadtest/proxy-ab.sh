#!/usr/bin/env bash
# Back-to-back CPU of two builds on a pass-through route, finer than bench.sh's whole microseconds: runs in
# the order base, new, new, base (ROUNDS times), each a fresh mock and gateway (one thread each) and wrk at
# 100 connections for SECS on TARGET, and prints per run the gateway's and the mock's CPU per request (from
# /proc/PID/stat ticks) and their ratio. Compare the ratios: they move less with the host than either.
# usage: loadtest/proxy-ab.sh BASE_DIR NEW_DIR [ROUNDS=2] [SECS=10] [TARGET=/files/1k]
#        (each DIR holds a gateway and a mock-downstream)
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
BASE=$(cd "$1" && pwd); NEW=$(cd "$2" && pwd); ROUNDS=${3:-2}; SECS=${4:-10}; TARGET=${5:-/files/1k}
{ printf '{"pad":"'; head -c $((1024 - 10)) /dev/zero | tr '\0' x; printf '"}'; } > $work/1k.json
tick=$(getconf CLK_TCK)
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
run() {
  local bin=$1 label=$2
  "$bin/mock-downstream" --listen 127.0.0.1:0 --threads 1 --body "blob/1k=@$work/1k.json" > $work/mock.out 2>&1 &
  local mpid=$!
  for i in $(seq 50); do grep -q "listening" $work/mock.out 2>/dev/null && break; sleep 0.1; done
  local mport=$(grep -o '127.0.0.1:[0-9]*' $work/mock.out | head -1 | cut -d: -f2)
  cat > $work/gw.yaml <<YAML
server: {listen: 127.0.0.1:0, threads: 1}
admin: {listen: 127.0.0.1:0}
log: {level: warn}
downstreams:
  files: {url: "http://127.0.0.1:$mport", max_connections: 256}
routes:
  - path_prefix: /files/
    proxy: {downstream: files, rewrite: /blob/, timeout: 30s, idle_timeout: 60s}
  - path: /agg
    calls:
      - {name: a, downstream: files, path: /a}
YAML
  "$bin/gateway" --config $work/gw.yaml > $work/gw.out 2>&1 &
  local gpid=$!
  for i in $(seq 50); do grep -q "gateway listening" $work/gw.out 2>/dev/null && break; sleep 0.1; done
  local gport=$(grep "gateway listening" $work/gw.out | grep -o '127.0.0.1:[0-9]*' | head -1 | cut -d: -f2)
  wrk -t1 -c50 -d2s "http://127.0.0.1:$gport$TARGET" > /dev/null
  local c0=$(cpu $gpid) m0=$(cpu $mpid)
  local out=$(wrk -t1 -c100 -d${SECS}s "http://127.0.0.1:$gport$TARGET")
  local c1=$(cpu $gpid) m1=$(cpu $mpid)
  local reqs=$(echo "$out" | grep "requests in" | awk '{print $1}')
  local non2xx=$(echo "$out" | grep -c "Non-2xx" || true)
  echo "$label $(awk -v c=$((c1-c0)) -v m=$((m1-m0)) -v t=$tick -v r=$reqs 'BEGIN{printf "gateway %.2f us/req mock %.2f us/req ratio %.3f (%d reqs)", c/t*1e6/r, m/t*1e6/r, c/m, r}') non2xx=$non2xx"
  kill $gpid $mpid; wait $gpid $mpid 2>/dev/null || true
}
for r in $(seq $ROUNDS); do run "$BASE" base; run "$NEW" new; run "$NEW" new; run "$BASE" base; done
