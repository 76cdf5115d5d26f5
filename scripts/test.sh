#!/usr/bin/env bash
# Installs what is missing, builds the release, portable (read_readiness on public Asio API only) and
# sanitizer (ASan+UBSan) presets, and runs the whole test suite (ctest) under each, then the fuzz targets
# briefly, then a smoke run of the benchmark kit, then the guard on instructions per request. The portable build follows the release one: only the
# files that differ are compiled again, the rest comes from ccache.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build test fuzz bench
for preset in release portable asan; do
  echo "=== build: $preset"
  scripts/build.sh "$preset"
  echo "=== test: $preset"
  ctest --preset "$preset" -j "${GATEWAY_TEST_JOBS:-2}" | tee "build/$preset/ctest.log"
  # No test may vanish unnoticed (a target left out of the build, a case no longer registered): fewer
  # tests run than the floor in tests/minimum-test-count fails. Raise the floor when tests are added.
  ran=$(sed -nE 's/.* tests failed out of ([0-9]+)$/\1/p' "build/$preset/ctest.log" | tail -1)
  floor=$(grep -v '^#' tests/minimum-test-count)
  if [ "${ran:-0}" -lt "$floor" ]; then
    echo "test.sh: $preset ran ${ran:-0} tests, fewer than the floor of $floor (tests/minimum-test-count)" >&2
    exit 1
  fi
done
# libFuzzer targets, each for a bounded time on the committed corpus, and mutated HTTP against the real
# gateway with a survival check.
echo "=== fuzz"
tests/fuzz/run.sh 20
tests/fuzz/http_survival.sh build/release/bin 20
# The benchmark kit still works end to end (a few seconds per scenario; correctness only, never timing).
echo "=== benchmark smoke run"
loadtest/bench.sh --quick --no-build
# User-space instructions per request on the seed route and the six-call route, counted by callgrind (a
# busy machine does not move them): more than 3% over loadtest/instructions-baseline fails. The baseline
# moves only in a commit that says why.
echo "=== instructions per request (loadtest/instructions-baseline)"
loadtest/instructions.sh --bin build/release/bin --check loadtest/instructions-baseline
