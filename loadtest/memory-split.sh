#!/usr/bin/env bash
# Memory per in-flight aggregation, split by kind of mapping: the six-call route against a fresh mock
# (2 s), N requests held in flight by wrk, the gateway's /proc/PID/smaps read idle and loaded. Prints the
# resident growth per aggregation for the heap ([heap], the main arena), small anonymous mappings (mostly
# connection coroutine stacks, 64 KiB each) and large ones (the I/O threads' malloc arenas), and how many
# pages each coroutine stack holds. `bench.sh d` measures the total the same way at its own N.
#   loadtest/memory-split.sh BIN_DIR [N=400]     (BIN_DIR holds a gateway and a mock-downstream)
set -eu
bin=$(cd "$1" && pwd) n=${2:-400}
cd "$(dirname "$0")/.."
. loadtest/lib/wait-for.sh
work=$(mktemp -d)
trap 'kill $gpid $mpid 2>/dev/null; rm -rf "$work"' EXIT
$bin/mock-downstream --listen 127.0.0.1:0 --threads 2 --delay 2s > $work/mock.out 2>&1 & mpid=$!
wait_for $work/mock.out listening 10 $mpid
mport=$(grep -o '127.0.0.1:[0-9]*' $work/mock.out | head -1 | cut -d: -f2)
{
printf 'server: {listen: 127.0.0.1:0}\nadmin: {listen: 127.0.0.1:0}\nlog: {access: false}\n'
printf 'limits: {max_connections: %d, max_inflight: %d}\ndownstreams:\n' $((n + 1000)) $((n + 1000))
for c in inventory channel-price coupon review-summary logistics-eta recommendation; do
  printf '  %s: {url: "http://127.0.0.1:%s", connect_timeout: 2s, max_connections: %d}\n' $c $mport $(((n + 64) * 2))
done
printf "routes:\n  - path: /api/offer/aggregate\n    deadline: 5s\n    params: {sku: {required: true}}\n    calls:\n"
for c in inventory channel-price coupon review-summary logistics-eta recommendation; do
  printf '      - {name: %s, downstream: %s, path: "/%s?sku={sku}", fallback: {priceCent: -1}}\n' $c $c $c
done
} > $work/gw.yaml
$bin/gateway --config $work/gw.yaml > $work/gw.out 2>&1 & gpid=$!
wait_for $work/gw.out "admin listening" 10 $gpid
gport=$(grep "gateway listening" $work/gw.out | grep -o '127.0.0.1:[0-9]*' | head -1 | cut -d: -f2)
aport=$(grep "admin listening" $work/gw.out | grep -o '127.0.0.1:[0-9]*' | head -1 | cut -d: -f2)
url="http://127.0.0.1:$gport/api/offer/aggregate?sku=A1"
split() {  # resident kB by kind of mapping; with "stacks": pages per coroutine stack (after its guard)
  python3 - "$gpid" "${1:-}" <<'PY'
import re, sys, collections
kinds, stacks, cur, guard_end = collections.Counter(), collections.Counter(), None, 0
for line in open(f"/proc/{sys.argv[1]}/smaps"):
    m = re.match(r"^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$", line)
    if m:
        start, end, perms, name = int(m[1], 16), int(m[2], 16), m[3], m[4].strip()
        kind = name if name == "[heap]" else ("file" if name else ("anon<=300k" if end - start <= 300 << 10 else "anon>300k"))
        cur = (kind, start == guard_end and perms == "rw-p" and end - start == 64 << 10)
        guard_end = end if perms == "---p" and end - start == 4096 else 0
    elif line.startswith("Rss:"):
        kinds[cur[0]] += int(line.split()[1])
        if cur[1]: stacks[int(line.split()[1]) // 4] += 1
if sys.argv[2] == "stacks":
    for pages, count in sorted(stacks.items()): print(f"  {count} coroutine stacks with {pages} pages resident")
else:
    for k in ("[heap]", "anon<=300k", "anon>300k", "file"): print(k, kinds[k])
PY
}
wrk -c 20 -t 2 -d 3s "$url" > /dev/null
sleep 1
split > $work/idle
wrk -c $n -t 2 -d 9s --timeout 8s "$url" > $work/wrk.out 2>&1 & wpid=$!
sleep 5
split > $work/loaded
split stacks > $work/stacks
active=$(curl -fsS "http://127.0.0.1:$aport/metrics" | awk '/^http_server_active_requests/ {print $2}')
wait $wpid
echo "in flight: $active"
join $work/idle $work/loaded | awk -v a="$active" '{printf "%-11s %7d kB -> %7d kB  %6.0f bytes per aggregation\n", $1, $2, $3, ($3 - $2) * 1024 / a; if ($1 != "file") t += $3 - $2}
  END {printf "total (without files) %.0f bytes per aggregation\n", t * 1024 / a}'
cat $work/stacks
