#!/usr/bin/env bash
# The CPU a pass-through request costs, finer than bench.sh's whole microseconds. Each run starts a fresh
# mock (a 1 KiB body at /blob/1k) and a one-thread gateway with a route `/files/` -> `/blob/`.
#   loadtest/proxy-cpu.sh ab BASE_DIR NEW_DIR [ROUNDS=2] [SECS=10] [TARGET=/files/1k]
#     two builds back to back (base, new, new, base; ROUNDS times), wrk at 100 connections for SECS: the
#     gateway's and the mock's CPU per request from /proc/PID/stat ticks, and their ratio (compare the
#     ratios: they move less with the host than either figure).
#   loadtest/proxy-cpu.sh instructions DIR LABEL [TARGET=/files/1k] [N=4000]
#     the gateway under callgrind: 200 warm-up requests, counters zeroed, N requests on one keep-alive
#     connection, counters dumped; instructions per request (repeatable on a busy machine; system calls
#     are not counted).
# Each DIR holds a gateway and a mock-downstream.
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
{ printf '{"pad":"'; head -c $((1024 - 10)) /dev/zero | tr '\0' x; printf '"}'; } >"$work/1k.json"
tick=$(getconf CLK_TCK)
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }

# start BIN [WRAPPER...]: a mock and a gateway (run through WRAPPER, e.g. valgrind); sets mpid, gpid, gport.
start() {
  local bin=$1
  shift
  "$bin/mock-downstream" --listen 127.0.0.1:0 --threads 1 --body "blob/1k=@$work/1k.json" >"$work/mock.out" 2>&1 &
  mpid=$!
  for _ in $(seq 50); do grep -q listening "$work/mock.out" 2>/dev/null && break; sleep 0.1; done
  local mport
  mport=$(grep -o '127.0.0.1:[0-9]*' "$work/mock.out" | head -1 | cut -d: -f2)
  cat >"$work/gw.yaml" <<YAML
server: {listen: 127.0.0.1:0, threads: 1}
admin: {listen: 127.0.0.1:0}
log: {level: warn}
downstreams:
  files: {url: "http://127.0.0.1:$mport", max_connections: 256}
routes:
  - path_prefix: /files/
    proxy: {downstream: files, rewrite: /blob/, timeout: 30s, idle_timeout: 60s}
YAML
  "$@" "$bin/gateway" --config "$work/gw.yaml" >"$work/gw.out" 2>&1 &
  gpid=$!
  for _ in $(seq 300); do grep -q "gateway listening" "$work/gw.out" 2>/dev/null && break; sleep 0.1; done
  gport=$(grep "gateway listening" "$work/gw.out" | grep -o '127.0.0.1:[0-9]*' | head -1 | cut -d: -f2)
}
stop() {
  kill "$gpid" "$mpid"
  wait "$gpid" "$mpid" 2>/dev/null || true
}

# requests N TARGET: N requests in turn on one keep-alive connection, each answer read whole.
requests() {
  python3 - "$gport" "$2" "$1" <<'PY'
import socket, sys
port, target, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
s = socket.create_connection(("127.0.0.1", port))
req = ("GET %s HTTP/1.1\r\nHost: gw\r\nUser-Agent: bench\r\nAccept: */*\r\n\r\n" % target).encode()
buf = b""
for _ in range(n):
    s.sendall(req)
    while True:
        h = buf.find(b"\r\n\r\n")
        if h >= 0:
            length = 0
            for line in buf[:h].decode().split("\r\n"):
                if line.lower().startswith("content-length:"):
                    length = int(line.split(":")[1])
            if len(buf) >= h + 4 + length:
                buf = buf[h + 4 + length:]
                break
        buf += s.recv(65536)
PY
}

ab_run() {
  local label=$1 secs=$2 target=$3
  start "$4"
  wrk -t1 -c50 -d2s "http://127.0.0.1:$gport$target" >/dev/null
  local c0 m0 c1 m1 out reqs
  c0=$(cpu "$gpid") m0=$(cpu "$mpid")
  out=$(wrk -t1 -c100 -d"${secs}s" "http://127.0.0.1:$gport$target")
  c1=$(cpu "$gpid") m1=$(cpu "$mpid")
  reqs=$(echo "$out" | awk '/requests in/ {print $1}')
  echo "$label $(awk -v c=$((c1 - c0)) -v m=$((m1 - m0)) -v t="$tick" -v r="$reqs" 'BEGIN {
    printf "gateway %.2f us/req mock %.2f us/req ratio %.3f (%d reqs)", c / t * 1e6 / r, m / t * 1e6 / r, c / m, r }')" \
    "non2xx=$(echo "$out" | grep -c Non-2xx || true)"
  stop
}

case "${1:-}" in
  ab)
    base=$(cd "$2" && pwd) new=$(cd "$3" && pwd) rounds=${4:-2} secs=${5:-10} target=${6:-/files/1k}
    for _ in $(seq "$rounds"); do
      ab_run base "$secs" "$target" "$base"
      ab_run new "$secs" "$target" "$new"
      ab_run new "$secs" "$target" "$new"
      ab_run base "$secs" "$target" "$base"
    done
    ;;
  instructions)
    bin=$(cd "$2" && pwd) label=$3 target=${4:-/files/1k} n=${5:-4000}
    start "$bin" valgrind --tool=callgrind --callgrind-out-file="$work/cg.%p"
    requests 200 "$target"
    callgrind_control -z "$gpid" >/dev/null 2>&1
    requests "$n" "$target"
    callgrind_control -d "$gpid" >/dev/null 2>&1
    sleep 1
    ir=$(awk '/^summary:/ {print $2; exit}' "$work/cg.$gpid.1")
    stop
    echo "$label $target: $(awk -v i="$ir" -v n="$n" 'BEGIN {printf "%.0f", i / n}') instructions/request"
    ;;
  *)
    sed -n '2,12s/^# \{0,1\}//p' "$0" >&2
    exit 2
    ;;
esac
