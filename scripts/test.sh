#!/usr/bin/env bash
# Installs what is missing, builds the release and the sanitizer (ASan+UBSan) presets, and runs the
# whole test suite (ctest) under both, then a smoke run of the benchmark kit.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
for preset in release asan; do
  echo "=== build: $preset"
  scripts/build.sh "$preset"
  echo "=== test: $preset"
  ctest --preset "$preset" -j "${GATEWAY_TEST_JOBS:-2}"
done
# The benchmark kit still works end to end (a few seconds per scenario; correctness only, never timing).
echo "=== benchmark smoke run"
loadtest/bench.sh --quick --no-build
