#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/CMakeLists.txt, clang) in build/fuzz and runs each for SECONDS
# (default 30) on a scratch copy of its corpus in tests/fuzz/corpus, so that the tree is never rewritten.
# The reproducers in tests/fuzz/crashes are replayed first. Exits non-zero on any finding (crash,
# sanitizer report, leak, timeout, out of memory) and prints the input that caused it, kept under
# build/fuzz/findings. Installs nothing: clang-16 and libFuzzer come from `scripts/setup.sh fuzz`.
#   tests/fuzz/run.sh [SECONDS]
# Environment: FUZZ_CXX (default clang++-16), FUZZ_JOBS targets run at once (default: CPUs, at most 2).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
seconds=${1:-30}
build=$root/build/fuzz
targets=(response_parser json_object json_path request_head request_target config_loader path_template inflate access_line jwt credentials)
declare -A dicts=([response_parser]=http [request_head]=http [request_target]=http [json_object]=json [json_path]=json [jwt]=json [config_loader]=config)

export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
echo "=== fuzz: build ($build)"
cmake -S tests/fuzz -B "$build" -G Ninja -DCMAKE_CXX_COMPILER="${FUZZ_CXX:-clang++-16}" >/dev/null
cmake --build "$build"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
findings=$build/findings
rm -rf "$findings"

echo "=== fuzz: replay tests/fuzz/crashes"
failed=0
for t in "${targets[@]}"; do
  inputs=(tests/fuzz/crashes/"$t"-*)
  [ -e "${inputs[0]}" ] || continue
  if ! "$build/bin/fuzz_$t" "${inputs[@]}" >"$work/replay-$t.log" 2>&1; then
    echo "FAIL: fuzz_$t on a reproducer in tests/fuzz/crashes:"
    tail -n 30 "$work/replay-$t.log"
    failed=1
  fi
done

# Runs one target on a scratch corpus; its log and exit status end up in $work.
run_target() {
  local t=$1 dict=()
  cp -r "tests/fuzz/corpus/$t" "$work/corpus-$t"
  mkdir -p "$findings/$t"
  [ -n "${dicts[$t]:-}" ] && dict=("-dict=tests/fuzz/dict/${dicts[$t]}.dict")
  local rc=0
  "$build/bin/fuzz_$t" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 "${dict[@]}" \
    -artifact_prefix="$findings/$t/" -print_final_stats=1 "$work/corpus-$t" >"$work/$t.log" 2>&1 || rc=$?
  echo "$rc" >"$work/$t.rc"
}

jobs=${FUZZ_JOBS:-$(nproc)}
[ "$jobs" -le 2 ] || jobs=2
echo "=== fuzz: ${#targets[@]} targets, ${seconds}s each, $jobs at a time"
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  run_target "$t" &
  running=$((running + 1))
done
wait

for t in "${targets[@]}"; do
  rc=$(cat "$work/$t.rc")
  stats=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$work/$t.log" | tail -n 1 || true)
  if [ "$rc" -eq 0 ]; then
    echo "ok   fuzz_$t: ${stats:-no stats}"
    continue
  fi
  failed=1
  echo "FAIL fuzz_$t (exit $rc):"
  grep -E 'ERROR|invariant broken|assertion failed|runtime error|SUMMARY' "$work/$t.log" | head -n 20 || true
  for input in "$findings/$t"/*; do
    [ -e "$input" ] && echo "  input: $input (replay: $build/bin/fuzz_$t $input)"
  done
done
exit "$failed"
