#!/usr/bin/env bash
# Quick start: installs what is missing, builds the release binaries, starts the bundled mock downstreams
# and the gateway on config/gateway.yaml, and prints a curl line to try. Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh release

bin=build/release/bin
config="${GATEWAY_CONFIG:-config/gateway.yaml}"
mock_log=$(mktemp)
# The seed's downstream latencies (ms): the mock answers each path after its own delay.
"$bin/mock-downstream" --listen 127.0.0.1:9001 \
  --path inventory=ok:120ms --path channel-price=ok:150ms --path coupon=ok:110ms \
  --path review-summary=ok:180ms --path logistics-eta=ok:250ms --path recommendation=ok:200ms \
  >"$mock_log" 2>&1 &
mock_pid=$!
trap 'kill $mock_pid 2>/dev/null || true; rm -f "$mock_log"' EXIT

for _ in $(seq 1 100); do
  grep -q "listening on" "$mock_log" && break
  kill -0 $mock_pid 2>/dev/null || { cat "$mock_log"; exit 1; }
  sleep 0.05
done

echo
echo "Try:  curl 'http://127.0.0.1:8080/api/offer/aggregate?sku=A1'"
echo
"$bin/gateway" --config "$config"
