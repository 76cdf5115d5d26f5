#!/usr/bin/env bash
# Installs what is missing, builds the release, portable (read_readiness on public Asio API only) and
# sanitizer (ASan+UBSan) presets, and runs the whole test suite (ctest) under each, then the fuzz targets
# briefly, then a smoke run of the benchmark kit. The portable build follows the release one: only the
# files that differ are compiled again, the rest comes from ccache.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build test fuzz
for preset in release portable asan; do
  echo "=== build: $preset"
  scripts/build.sh "$preset"
  echo "=== test: $preset"
  ctest --preset "$preset" -j "${GATEWAY_TEST_JOBS:-2}"
done
# libFuzzer targets, each for a bounded time on the committed corpus, and mutated HTTP against the real
# gateway with a survival check.
echo "=== fuzz"
tests/fuzz/run.sh 20
tests/fuzz/http_survival.sh build/release/bin 20
# The benchmark kit still works end to end (a few seconds per scenario; correctness only, never timing).
echo "=== benchmark smoke run"
loadtest/bench.sh --quick --no-build
