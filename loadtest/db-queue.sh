#!/usr/bin/env bash
# The database branch under a stampede: CONNS keep-alive clients hit a route whose only call is a
# PostgreSQL query sleeping SLEEP seconds, behind the semaphore (PERMITS) in front of the pool (POOL).
# A throwaway PostgreSQL cluster is started on loopback; a sampler polls pg_stat_activity every 10 ms
# for the number of queries running at once. Prints throughput, latency, degraded answers and the
# maximum concurrency the server saw (it must never exceed PERMITS). Requests rotate over SKUs A1..A10000
# and every answer is checked by loadtest/lua/check-offers.lua (a one-entry array).
# usage: loadtest/db-queue.sh [CONNS=1000] [SLEEP=0.02] [SECONDS=10] [PERMITS=24] [POOL=32] [DEADLINE=2s]
set -euo pipefail
cd "$(dirname "$0")/.."
conns=${1:-1000}
sleep_s=${2:-0.02}
secs=${3:-10}
permits=${4:-24}
pool=${5:-32}
deadline=${6:-2s}
bin=build/release/bin
pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
work=$(mktemp -d)
as_pg=()
if [ "$(id -u)" -eq 0 ]; then
  chown postgres "$work"
  as_pg=(runuser -u postgres --)
fi
port=$((20000 + RANDOM % 10000))
gw=""
sampler=""
cleanup() {
  kill $gw $sampler 2>/dev/null || true
  wait 2>/dev/null || true
  "${as_pg[@]}" "$pgbin/pg_ctl" -D "$work/pg" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

"${as_pg[@]}" "$pgbin/initdb" -A trust --no-sync -U postgres -D "$work/pg" >/dev/null
"${as_pg[@]}" "$pgbin/pg_ctl" -w -D "$work/pg" -l "$work/pg.log" start \
  -o "-p $port -k $work -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" >/dev/null
psql=(psql -X -q -At -h 127.0.0.1 -p "$port" -U postgres -d postgres)
"${psql[@]}" -c "CREATE TABLE offers (sku text PRIMARY KEY, price_cent int, stock int);
  INSERT INTO offers SELECT 'A' || i, 100 + i % 9000, i % 500 FROM generate_series(1, 10000) i;"

cat >"$work/gateway.yaml" <<YAML
server:
  listen: 127.0.0.1:0
admin:
  listen: 127.0.0.1:0
shutdown:
  drain_delay: 0s
log:
  access: false
downstreams:
  inventory:
    kind: sql
    driver: postgres
    dsn: "host=127.0.0.1 port=$port dbname=postgres user=postgres"
    pool_size: $pool
    permits: $permits
    max_waiting: 100000
    query: SELECT pg_sleep($sleep_s), price_cent AS "priceCent", stock FROM offers WHERE sku = :sku
routes:
  - path: /api/db
    deadline: $deadline
    params:
      sku: {required: true}
    calls:
      - name: inventory
        downstream: inventory
        fallback: {priceCent: -1, stock: 0}
YAML
"$bin/gateway" --config "$work/gateway.yaml" >"$work/gateway.out" 2>"$work/gateway.err" &
gw=$!
for _ in $(seq 1 100); do grep -q "admin listening on" "$work/gateway.out" && break; sleep 0.05; done
url="http://127.0.0.1:$(sed -nE 's/.*gateway listening on [^ "]*:([0-9]+).*/\1/p' "$work/gateway.out")/api/db"

# Sampler: queries of the gateway running at once, as the server sees them.
(
  max=0
  end=$((SECONDS + secs + 3))
  while [ $SECONDS -lt $end ]; do
    n=$("${psql[@]}" -c "SELECT count(*) FROM pg_stat_activity
          WHERE state = 'active' AND application_name = 'gateway'" 2>/dev/null || echo 0)
    [ "$n" -gt "$max" ] && max=$n && echo "$max" >"$work/max"
    sleep 0.01
  done
) &
sampler=$!

cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
g0=$(cpu $gw)
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
CHECK_ENTRIES=1 wrk -t2 -c"$conns" -d"${secs}s" --timeout 10s --latency -s loadtest/lua/check-offers.lua \
  "$url" >"$work/wrk.out" || true
g1=$(cpu $gw)
kill $sampler 2>/dev/null || true
requests=$(awk '/requests in/ {print $1}' "$work/wrk.out")
hz=$(getconf CLK_TCK)
echo "connections $conns, query sleep ${sleep_s}s, permits $permits, pool $pool, deadline $deadline"
echo "capacity limit: $(awk -v p="$permits" -v s="$sleep_s" 'BEGIN {printf "%.0f", p / s}') queries/s"
grep -E "Requests/sec|50%|90%|99%|Socket errors|Non-2xx|^check:|^wrk:|^latency_ms:" "$work/wrk.out"
echo "gateway CPU per request: $(( (g1 - g0) * 1000000 / hz / (requests > 0 ? requests : 1) )) us"
echo "max concurrent queries seen by the server: $(cat "$work/max" 2>/dev/null || echo 0)"
echo "gateway peak RSS: $(awk '/VmHWM/ {print $2}' /proc/$gw/status) kB"
