#!/usr/bin/env bash
# User-space instructions per request, counted by callgrind: a figure a busy or noisy machine does not
# move (system calls and waiting are not counted), for a guard in CI and for comparing two builds.
#
#   loadtest/instructions.sh [--bin DIR] [--requests N] [--check BASELINE] [SCENARIO...]
#
# Scenarios (default: all):
#   seed   config/gateway.yaml as shipped (inventory on SQLite, five HTTP calls, compression on, access
#          log off), GET /api/offer/aggregate?sku=A<i>
#   http6  the benchmark's a100/bhttp route: six HTTP calls, no SQL
# Each: a fresh mock (1 ms delay) and a one-thread gateway under callgrind; 200 warm-up requests, the
# counters zeroed, N (default 2000) requests in turn on one keep-alive connection, each answer read whole
# and checked (200, no fallback), the counters dumped. Prints "SCENARIO INSTRUCTIONS_PER_REQUEST".
# Repeated runs agree to within 0.1%. With PROFILE_DIR set, each scenario's callgrind file is kept there
# (callgrind.SCENARIO; read it with callgrind_annotate).
#
# --check BASELINE: a file of "SCENARIO INSTRUCTIONS" lines (loadtest/instructions-baseline); exits 1 when
# a scenario's count is more than 3% above its baseline. A count more than 3% below is reported too (the
# baseline is then stale: lower it in a commit that says why), without failing. The baseline moves only in
# a commit that says why.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/release/bin requests=2000 baseline= scenarios=()
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=$2; shift 2 ;;
    --requests) requests=$2; shift 2 ;;
    --check) baseline=$2; shift 2 ;;
    seed | http6) scenarios+=("$1"); shift ;;
    *) sed -n '2,18s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
  esac
done
[ ${#scenarios[@]} -gt 0 ] || scenarios=(seed http6)
for tool in valgrind callgrind_control python3 sqlite3; do
  command -v "$tool" >/dev/null || { echo "instructions.sh: $tool is missing (scripts/setup.sh bench)" >&2; exit 2; }
done
[ -x "$bin/gateway" ] && [ -x "$bin/mock-downstream" ] || { echo "instructions.sh: no gateway in $bin" >&2; exit 2; }
bin=$(cd "$bin" && pwd)
work=$(mktemp -d)
mpid= gpid=
cleanup() {
  [ -z "$gpid" ] || kill "$gpid" 2>/dev/null || true
  [ -z "$mpid" ] || kill "$mpid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

. loadtest/lib/wait-for.sh

start_mock() {
  rm -f "$work/mock.out"
  "$bin/mock-downstream" --listen 127.0.0.1:0 --threads 1 --delay 1ms >"$work/mock.out" 2>&1 &
  mpid=$!
  wait_for "$work/mock.out" listening 10 "$mpid"
  mock_port=$(grep -o '127.0.0.1:[0-9]*' "$work/mock.out" | head -1 | cut -d: -f2)
}

config_seed() {
  scripts/seed-db.sh "$work/offers.db" >/dev/null
  sed -e "s/127\.0\.0\.1:9001/127.0.0.1:$mock_port/" -e "s/0\.0\.0\.0:8080/127.0.0.1:0/" \
    -e "s/0\.0\.0\.0:9901/127.0.0.1:0/" -e "s/^\( *access:\) true/\1 false/" \
    -e "s/^\( *threads:\) 0 /\1 1 /" -e "s/^\( *watch_config:\) true/\1 false/" \
    -e "s|data/offers.db|$work/offers.db|" config/gateway.yaml >"$work/gw.yaml"
  if grep -qE "9001|0\.0\.0\.0|access: true|threads: 0 |data/offers" "$work/gw.yaml"; then
    echo "instructions.sh: config/gateway.yaml changed shape: cannot rewrite it (see $work/gw.yaml)" >&2
    exit 2
  fi
}

config_http6() {
  local name
  {
    printf 'server: {listen: 127.0.0.1:0, threads: 1, watch_config: false}\n'
    printf 'admin: {listen: 127.0.0.1:0}\nlog: {level: warn, access: false}\ndownstreams:\n'
    for name in inventory channel-price coupon review-summary logistics-eta recommendation; do
      printf '  %s: {url: "http://127.0.0.1:%s", max_connections: 64}\n' "$name" "$mock_port"
    done
    printf 'routes:\n  - path: /api/offer/aggregate\n    deadline: 800ms\n'
    printf "    params: {sku: {required: true, pattern: '^[A-Za-z0-9_-]{1,64}\$'}}\n    calls:\n"
    for name in inventory channel-price coupon review-summary logistics-eta recommendation; do
      printf '      - {name: %s, downstream: %s, path: "/%s?sku={sku}", fallback: {priceCent: -1}}\n' \
        "$name" "$name" "$name"
    done
  } >"$work/gw.yaml"
}

# send N: N requests in turn on one keep-alive connection; fails on an answer that is not a 200 or that
# has a fallback in it (a count of a degraded path is not the count of the route).
send() {
  python3 - "$gport" "$1" <<'PY'
import socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
s = socket.create_connection(("127.0.0.1", port))
buf = b""
for i in range(n):
    req = "GET /api/offer/aggregate?sku=A%d HTTP/1.1\r\nHost: gw\r\nUser-Agent: count\r\nAccept: */*\r\n\r\n"
    s.sendall((req % (i % 10000 + 1)).encode())
    while True:
        h = buf.find(b"\r\n\r\n")
        if h >= 0:
            head = buf[:h].decode("latin-1").split("\r\n")
            length = 0
            for line in head[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            if len(buf) >= h + 4 + length:
                body = buf[h + 4:h + 4 + length]
                buf = buf[h + 4 + length:]
                break
        data = s.recv(65536)
        if not data:
            sys.exit("connection closed after %d answers" % i)
        buf += data
    if not head[0].startswith("HTTP/1.1 200"):
        sys.exit("answer %d: %s: %s" % (i, head[0], body[:200]))
    if b"\"degraded\":true" in body:
        sys.exit("answer %d is degraded: %s" % (i, body[:300]))
PY
}

measure() {  # measure SCENARIO: prints its instructions per request
  start_mock
  "config_$1"
  rm -f "$work/gw.out"
  valgrind --tool=callgrind --callgrind-out-file="$work/cg.%p" "$bin/gateway" --config "$work/gw.yaml" \
    >"$work/gw.out" 2>&1 &
  gpid=$!
  wait_for "$work/gw.out" "gateway listening" 120 "$gpid"
  gport=$(grep "gateway listening" "$work/gw.out" | grep -o '127.0.0.1:[0-9]*' | head -1 | cut -d: -f2)
  send 200
  callgrind_control -z "$gpid" >/dev/null 2>&1
  send "$requests"
  callgrind_control -d "$gpid" >/dev/null 2>&1
  local i
  for i in $(seq 100); do [ -s "$work/cg.$gpid.1" ] && grep -q '^summary:' "$work/cg.$gpid.1" && break; sleep 0.1; done
  local ir
  ir=$(awk '/^summary:/ {print $2; exit}' "$work/cg.$gpid.1")
  [ -z "${PROFILE_DIR:-}" ] || cp "$work/cg.$gpid.1" "$PROFILE_DIR/callgrind.$1"
  kill "$gpid" "$mpid"
  wait "$gpid" "$mpid" 2>/dev/null || true
  gpid= mpid=
  rm -f "$work"/cg.*
  awk -v i="$ir" -v n="$requests" 'BEGIN {printf "%.0f\n", i / n}'
}

status=0
for scenario in "${scenarios[@]}"; do
  count=$(measure "$scenario")
  line="$scenario $count"
  if [ -n "$baseline" ]; then
    base=$(awk -v s="$scenario" '$1 == s {print $2}' "$baseline")
    if [ -z "$base" ]; then
      line+="  (no baseline in $baseline)"
      status=1
    else
      change=$(awk -v c="$count" -v b="$base" 'BEGIN {printf "%+.1f", (c - b) * 100 / b}')
      line+="  baseline $base, $change%"
      if awk -v c="$count" -v b="$base" 'BEGIN {exit !(c > b * 1.03)}'; then
        line+="  FAIL: more than 3% above the baseline"
        status=1
      elif awk -v c="$count" -v b="$base" 'BEGIN {exit !(c < b * 0.97)}'; then
        line+="  (more than 3% below: the baseline is stale; lower it in a commit that says why)"
      fi
    fi
  fi
  echo "$line"
done
exit $status
