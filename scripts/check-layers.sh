#!/usr/bin/env bash
# Fails when a file under gateway/ or app/ includes a module above its own: the modules form layers,
# listed here from the bottom up, and a module may include only itself and those below it. Also fails
# for a folder under gateway/ that is not listed (a new module takes its place in the order first).
#   runtime     Asio, stackful coroutines, threads, stacks, clocks, semaphores, counters
#   codec       text and formats: HTTP and JSON text, the JSON object scanner, templates, SQL statements,
#               content codings, addresses
#   tls         OpenSSL contexts and the TLS settings they are built from, and their reload
#   auth        JSON Web Tokens: key sets (JWKS), signature and claim verification, verified-token caches
#   limit       rate limiting: local token buckets, and cluster-wide over Redis (links, settings, GCRA script)
#   config      the configuration model and its loader
#   trace       trace context and the spans one request records (no export)
#   downstream  calls to HTTP downstreams: pools, attempts, breakers, caches, the call vocabulary
#   sql         database downstreams (PostgreSQL, SQLite)
#   observe     metrics, logs, trace export, the Prometheus exposition
#   aggregate   one request's fan-out and the merged answer
#   server      the front end: listeners, sessions, routing, pass-through, admin, reloads
#   app         main()
set -euo pipefail
cd "$(dirname "$0")/.."
layers=(runtime codec tls auth limit config trace downstream sql observe aggregate server app)
declare -A rank
for i in "${!layers[@]}"; do rank[${layers[$i]}]=$i; done

status=0
for dir in gateway/*/; do
  module=$(basename "$dir")
  [ -n "${rank[$module]:-}" ] || { echo "check-layers: gateway/$module is not in the layer list" >&2; status=1; }
done
while IFS=: read -r file _ text; do
  from=$(echo "$file" | cut -d/ -f2)
  [ "${file%%/*}" = app ] && from=app
  to=$(echo "$text" | sed -E 's#.*"gateway/([a-z_]+)/.*#\1#')
  [ -n "${rank[$from]:-}" ] && [ -n "${rank[$to]:-}" ] || continue
  if [ "${rank[$to]}" -gt "${rank[$from]}" ]; then
    echo "check-layers: $file includes $to, a layer above $from: ${text}" >&2
    status=1
  fi
done < <(grep -rn '#include "gateway/' gateway app --include='*.hpp' --include='*.cpp')
[ $status -eq 0 ] && echo "check-layers: ${#layers[@]} layers, no include runs upward"
exit $status
