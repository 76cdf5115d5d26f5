#!/usr/bin/env bash
# Survival check: a real gateway (with the mock downstream behind it, both on loopback port 0; an
# aggregate route and a pass-through route) takes
# SECONDS (default 20) of mutated and trickled requests from tests/fuzz/fuzz_http.py, then must still
# answer 200 to the seed route and exit 0 on SIGTERM. Exits non-zero otherwise, with the logs.
#   tests/fuzz/http_survival.sh BIN_DIR [SECONDS]      e.g. tests/fuzz/http_survival.sh build/release/bin 20
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:?usage: tests/fuzz/http_survival.sh BIN_DIR [SECONDS]}
seconds=${2:-20}
work=$(mktemp -d)
gateway_pid="" mock_pid=""
cleanup() {
  for pid in $gateway_pid $mock_pid; do kill -KILL "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "http_survival: $*" >&2
  for log in "$work"/*.out "$work"/*.err; do
    [ -s "$log" ] && { echo "--- $log" >&2; tail -n 40 "$log" >&2; }
  done
  exit 1
}

# Waits (at most 10 s) for "<what> listening on HOST:PORT" in `file`; prints PORT.
port_of() {
  local file=$1 what=$2 pid=$3
  for _ in $(seq 1 200); do
    local port
    port=$(sed -nE "s/.*$what listening on [^ \"]*:([0-9]+)(\"|\$).*/\1/p" "$file" | head -n 1)
    [ -n "$port" ] && { echo "$port"; return 0; }
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

"$bin/mock-downstream" --listen 127.0.0.1:0 >"$work/mock.out" 2>"$work/mock.err" &
mock_pid=$!
mock_port=$(port_of "$work/mock.out" mock-downstream "$mock_pid") || fail "mock-downstream did not start"

calls=(inventory channel-price coupon review-summary logistics-eta recommendation)
{
  printf 'server:\n  listen: 127.0.0.1:0\n  threads: 2\n'
  printf 'admin:\n  listen: 127.0.0.1:0\n'
  printf 'shutdown:\n  drain_delay: 0s\n  timeout: 5s\n'
  printf 'log:\n  level: warn\n  access: false\n'
  printf 'downstreams:\n'
  for c in "${calls[@]}"; do printf '  %s:\n    url: http://127.0.0.1:%s\n' "$c" "$mock_port"; done
  printf 'routes:\n  - path: /api/offer/aggregate\n    method: GET\n    deadline: 800ms\n'
  printf "    params:\n      sku: {required: true, pattern: '^[A-Za-z0-9_-]{1,64}\$'}\n"
  printf '    calls:\n'
  for c in "${calls[@]}"; do
    printf '      - {name: %s, downstream: %s, path: "/%s?sku={sku}", fallback: {priceCent: -1, stock: 0}}\n' \
      "$c" "$c" "$c"
  done
  # A pass-through route to the mock: mutated requests stream through it too.
  printf '  - path_prefix: /raw/\n    proxy: {downstream: coupon, rewrite: /, timeout: 2s, idle_timeout: 2s}\n'
} >"$work/gateway.yaml"

"$bin/gateway" --config "$work/gateway.yaml" >"$work/gateway.out" 2>"$work/gateway.err" &
gateway_pid=$!
port=$(port_of "$work/gateway.out" gateway "$gateway_pid") || fail "gateway did not start"

echo "=== http survival: ${seconds}s of mutated requests against the gateway on port $port"
python3 tests/fuzz/fuzz_http.py "$port" "$seconds" || fail "fuzz_http.py failed"
kill -0 "$gateway_pid" 2>/dev/null || fail "the gateway died under fuzz_http.py"

status=$(python3 - "$port" <<'EOF'
import http.client, sys
statuses = []
for target in ("/api/offer/aggregate?sku=A1", "/raw/coupon?sku=A1"):
    c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=5)
    c.request("GET", target)
    statuses.append(str(c.getresponse().status))
print(" ".join(statuses))
EOF
) || fail "GET /api/offer/aggregate?sku=A1 or /raw/coupon?sku=A1 failed after the fuzzing"
[ "$status" = "200 200" ] || fail "the aggregate and pass-through routes answered $status after the fuzzing"

kill -TERM "$gateway_pid"
for _ in $(seq 1 200); do
  kill -0 "$gateway_pid" 2>/dev/null || break
  sleep 0.05
done
kill -0 "$gateway_pid" 2>/dev/null && fail "the gateway did not exit within 10 s of SIGTERM"
rc=0
wait "$gateway_pid" || rc=$?
gateway_pid=""
[ "$rc" -eq 0 ] || fail "the gateway exited $rc on SIGTERM"
kill -TERM "$mock_pid"
wait "$mock_pid" || true
mock_pid=""
echo "ok   http survival: both routes still answering 200, exit 0 on SIGTERM"
