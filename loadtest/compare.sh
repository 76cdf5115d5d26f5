#!/usr/bin/env bash
# Back-to-back comparison of builds: runs `bench.sh SCENARIOS` against a base build and each variant in the
# order base, V1, V1, base, V2, V2, base, ... (each variant run next to a base run, once after it and once
# before it), and prints for every variant and scenario the gateway-to-mock CPU ratio of each pair and the
# mean change. The ratio is steadier than either CPU figure alone: the mock's cost moves with the host as
# much as the gateway's. loadtest/results/ is left as it was.
#
# usage: loadtest/compare.sh BASE_DIR NAME=DIR [NAME=DIR...]   (each DIR holds a gateway and a mock-downstream)
# environment: COMPARE_SCENARIOS (default "a100 bhttp"), COMPARE_OUT (file for the raw rows; default a
#              temporary file, printed at the end)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
[ $# -ge 2 ] || {
  sed -n '8,10s/^# \{0,1\}//p' "$0" >&2
  exit 2
}
base=$1
shift
read -r -a scenarios <<<"${COMPARE_SCENARIOS:-a100 bhttp}"
raw=${COMPARE_OUT:-$(mktemp -t compare.XXXXXX)}
: >"$raw"

saved=$(mktemp -d -t compare-results.XXXXXX)
cp -a "$root/loadtest/results/." "$saved/"
restore() {
  rm -rf "$root/loadtest/results"
  mkdir -p "$root/loadtest/results"
  cp -a "$saved/." "$root/loadtest/results/"
  rm -rf "$saved"
}
trap restore EXIT

# run LABEL PAIR DIR: one bench run; appends "LABEL PAIR SCENARIO GATEWAY_US MOCK_US" per scenario.
run() {
  local label=$1 pair=$2 dir=$3
  echo "== compare: $label (pair $pair) from $dir" >&2
  GATEWAY_BENCH_BIN=$dir "$root/loadtest/bench.sh" "${scenarios[@]}" >/dev/null
  awk -F'|' -v label="$label" -v pair="$pair" '
    NF > 12 && $2 ~ /^ [a-z0-9-]+ $/ && $2 != " scenario " {
      gsub(/ /, "", $2); gsub(/ /, "", $11); sub(/^ +/, "", $13); split($13, m, " ")
      print label, pair, $2, $11, m[1]
    }' "$root/loadtest/results/latest.md" >>"$raw"
}

run base 0 "$base"
for spec in "$@"; do
  name=${spec%%=*}
  dir=${spec#*=}
  run "$name" 1 "$dir"
  run "$name" 2 "$dir"
  run "base-after-$name" 2 "$base"
done

# The base run before a variant's pair 1 is the one just before it; pair 2's is the one just after.
awk '
  { label[NR] = $1; pair[NR] = $2; sc[NR] = $3; g[NR] = $4; m[NR] = $5; n = NR }
  END {
    print "| variant | scenario | pair | base: gateway / mock µs | variant: gateway / mock µs | ratio base | ratio variant | change |"
    print "|---|---|---|---:|---:|---:|---:|---:|"
    for (i = 1; i <= n; i++) {
      if (label[i] ~ /^base/) continue
      # the matching base row: same scenario, nearest base run before (pair 1) or after (pair 2)
      j = 0
      if (pair[i] == 1) { for (k = i - 1; k >= 1; k--) if (label[k] ~ /^base/ && sc[k] == sc[i]) { j = k; break } }
      else { for (k = i + 1; k <= n; k++) if (label[k] ~ /^base/ && sc[k] == sc[i]) { j = k; break } }
      if (j == 0 || m[j] == 0 || m[i] == 0) continue
      rb = g[j] / m[j]; rv = g[i] / m[i]; ch = (rv / rb - 1) * 100
      printf "| %s | %s | %d | %d / %d | %d / %d | %.3f | %.3f | %+.1f%% |\n", label[i], sc[i], pair[i], g[j], m[j], g[i], m[i], rb, rv, ch
      key = label[i] " " sc[i]; if (!(key in cnt)) keys[++nk] = key; sum[key] += ch; cnt[key]++
    }
    print ""
    print "| variant | scenario | mean change of the ratio without the mechanism |"
    print "|---|---|---:|"
    for (i = 1; i <= nk; i++) { split(keys[i], p, " "); printf "| %s | %s | %+.1f%% |\n", p[1], p[2], sum[keys[i]] / cnt[keys[i]] }
  }' "$raw"
echo "raw rows: $raw" >&2
