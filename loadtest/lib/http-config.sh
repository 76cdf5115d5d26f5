# Sourced by the loadtest scripts (bench.sh, cpu-split.sh): the benchmark's gateway configs, the six-call
# route of a100, bhttp and the others over HTTP to the mock at 127.0.0.1:$mock_port.

call_names=(inventory channel-price coupon review-summary logistics-eta recommendation)

# gateway_config_prelude MAX_CLIENT_CONNECTIONS: the benchmark's server, limits, log, admin and shutdown
# sections (ports picked by the kernel, no access log, no drain delay), printed. A caller's `server_threads`
# sets server.threads (else the default: one I/O thread per core).
gateway_config_prelude() {
  local clients=$1
  cat <<YAML
server:
  listen: 127.0.0.1:0${server_threads:+
  threads: $server_threads}
limits:
  max_connections: $((clients + 1000))
  max_inflight: $((clients + 1000))
log:
  access: false
admin:
  listen: 127.0.0.1:0
shutdown:
  drain_delay: 0s
  timeout: 5s
YAML
}

# All six calls over HTTP to the mock. write_http_config FILE DEADLINE MAX_CLIENT_CONNECTIONS [EXTRA]: EXTRA
# (printf %b) follows each downstream's settings; a caller's `downstream_url` replaces the mock's plain one,
# a caller's `route_extra` (printf %b: the route's auth and rate_limit keys) goes into the route before its
# calls, and a caller's `top_extra` (printf %b: a top-level section, e.g. redis) ends the file.
write_http_config() {
  local file=$1 deadline=$2 clients=$3 extra=${4:-} name url=${downstream_url:-http://127.0.0.1:$mock_port}
  local connect=${connect_timeout:-2s}
  # Each I/O thread's pool gets max_connections / threads: keep the per-thread cap above the client count
  # so that no call waits for a pooled connection (the open-file limit bounds the sockets anyway).
  local per_downstream=$(((clients + 64) * $(nproc)))
  {
    gateway_config_prelude "$clients"
    echo "downstreams:"
    # connect_timeout: at start every call opens its connection at once (6 x clients); the mock accepts on
    # one thread and its backlog overflows, so some SYNs are retried after 1 s, past the default 100 ms.
    # A caller's `connect_timeout` replaces the 2 s (coldstart keeps the default).
    for name in "${call_names[@]}"; do
      printf '  %s:\n    url: %s\n    connect_timeout: %s\n    max_connections: %s\n%b' \
        "$name" "$url" "$connect" "$per_downstream" "$extra"
    done
    cat <<YAML
routes:
  - path: /api/offer/aggregate
    method: GET
    deadline: $deadline
    params:
      sku: {required: true, pattern: '^[A-Za-z0-9_-]{1,64}\$'}
    response: array
YAML
    printf '%b' "${route_extra:-}"
    echo "    calls:"
    for name in "${call_names[@]}"; do
      printf '      - name: %s\n        downstream: %s\n        path: /%s?sku={sku}\n' "$name" "$name" "$name"
      printf '        fallback: {priceCent: -1, stock: 0}\n'
    done
    printf '%b' "${top_extra:-}"
  } >"$file"
}
