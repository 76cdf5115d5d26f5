#!/usr/bin/env bash
# Quick start: installs the build packages that are missing (not the test suite's), builds the two binaries
# it runs (gateway and mock-downstream, preset quickstart), creates the inventory database
# (data/offers.db) if missing, starts the bundled mock downstreams and the gateway on
# config/gateway.yaml, and prints a curl line to try. Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
scripts/build.sh quickstart
scripts/seed-db.sh data/offers.db

bin=build/quickstart/bin
config="${GATEWAY_CONFIG:-config/gateway.yaml}"
logs=$(mktemp -d)
# The seed's downstream latencies: the mock answers each path after its own delay.
"$bin/mock-downstream" --listen 127.0.0.1:9001 \
  --path inventory=ok:120ms --path channel-price=ok:150ms --path coupon=ok:110ms \
  --path review-summary=ok:180ms --path logistics-eta=ok:250ms --path recommendation=ok:200ms \
  >"$logs/mock.out" 2>"$logs/mock.err" &
mock_pid=$!
gateway_pid=""
trap 'kill $mock_pid $gateway_pid 2>/dev/null || true; wait 2>/dev/null; rm -rf "$logs"' EXIT
trap 'exit 0' INT TERM

# Waits (bounded) for a process to print its "listening on" line.
wait_listening() {
  local pid=$1 out=$2 err=$3
  for _ in $(seq 1 200); do
    grep -q "listening on" "$out" && return 0
    kill -0 "$pid" 2>/dev/null || { cat "$out" "$err" >&2; exit 1; }
    sleep 0.05
  done
  echo "not listening after 10 s" >&2
  cat "$err" >&2
  exit 1
}
wait_listening $mock_pid "$logs/mock.out" "$logs/mock.err"

"$bin/gateway" --config "$config" >"$logs/gateway.out" 2> >(tee "$logs/gateway.err" >&2) &
gateway_pid=$!
wait_listening $gateway_pid "$logs/gateway.out" "$logs/gateway.err"
cat "$logs/gateway.out"
echo
echo "Try:  curl 'http://127.0.0.1:8080/api/offer/aggregate?sku=A1'"
echo "(Ctrl-C stops the gateway and the mock downstreams)"
wait $gateway_pid
