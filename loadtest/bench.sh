#!/usr/bin/env bash
# The benchmark kit: builds the release binaries if needed, installs wrk and gnuplot when missing, then runs
# each scenario against a fresh mock-downstream and gateway on loopback (ports picked by the kernel) and
# prints a markdown table, also written to loadtest/results/latest.md with a latency plot per scenario.
# See loadtest/README.md for the scenarios and how each figure is computed.
#
# usage: loadtest/bench.sh [--quick] [--no-build] [SCENARIO...]
#   scenarios: a100 a100tls trace accesslog floor a1000 coldstart b bhttp floorb c hang-breaker tail flap d e proxy soak
#              graph jwt ratelimit-local ratelimit-redis
#              (default: all)
#   --quick     a few seconds and a few connections per scenario, results in loadtest/results/quick/; exits
#               non-zero when any answer is bad or any error occurred (correctness only, never timing)
#   --no-build  use build/release/bin (or $GATEWAY_BENCH_BIN) as it is
# environment: GATEWAY_BENCH_BIN (directory with gateway and mock-downstream; implies --no-build), WRK_THREADS,
#              MOCK_THREADS (default: nproc), BENCH_DB=sqlite (scenario e without PostgreSQL),
#              BENCH_KEEP=1 (keep the temporary directory with every process's output),
#              SOAK_SECONDS (120), SOAK_WARMUP (a quarter of it), SOAK_ABORT_RATE (10 per second),
#              SOAK_SAMPLE (5 s between RSS samples): the soak scenario (--quick: 8 s, 2 s, 10/s, 1 s),
#              COLDSTART_RUNS (3), COLDSTART_BACKLOG (the mock's listen backlog; default somaxconn)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
bin=${GATEWAY_BENCH_BIN:-$root/build/release/bin}
all_scenarios=(a100 a100tls trace accesslog floor a1000 coldstart b bhttp floorb c hang-breaker tail flap d e proxy soak graph
  jwt ratelimit-local ratelimit-redis)

usage() { sed -n '7,19s/^# \{0,1\}//p' "$root/loadtest/bench.sh"; }

quick=0
build=1
[ -z "${GATEWAY_BENCH_BIN:-}" ] || build=0
scenarios=()
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 ;;
    --no-build) build=0 ;;
    -h | --help) usage; exit 0 ;;
    a100 | a100tls | trace | accesslog | floor | a1000 | coldstart | b | bhttp | floorb | c | hang-breaker | tail | flap | d | e | proxy | soak | graph | \
      jwt | ratelimit-local | ratelimit-redis)
      scenarios+=("$1") ;;
    *) echo "bench.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
[ ${#scenarios[@]} -gt 0 ] || scenarios=("${all_scenarios[@]}")

if [ $quick -eq 1 ]; then results=$root/loadtest/results/quick; else results=$root/loadtest/results; fi
wrk_threads=${WRK_THREADS:-$(nproc)}
mock_threads=${MOCK_THREADS:-$(nproc)}
hz=$(getconf CLK_TCK)

# ---------------------------------------------------------------------------------------------- harness

work=$(mktemp -d -t gateway-bench.XXXXXX)
pids=()  # every background process still running
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do stop_process "$pid"; done
  if [ "${BENCH_KEEP:-0}" = 1 ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { echo "== $*" >&2; }
die() {
  echo "bench.sh: $*" >&2
  exit 1
}

# Sends SIGTERM (if still running) and waits up to 10 s, then SIGKILL. Sets stop_status to the exit status.
stop_process() {
  local pid=$1 i
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 200); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  kill -KILL "$pid" 2>/dev/null && echo "bench.sh: process $pid did not stop on SIGTERM; killed" >&2
  stop_status=0
  wait "$pid" 2>/dev/null || stop_status=$?
  forget "$pid"
}
forget() {
  local kept=() p
  for p in "${pids[@]}"; do [ "$p" = "$1" ] || kept+=("$p"); done
  pids=("${kept[@]+"${kept[@]}"}")
}

# Waits (at most 10 s) for a line matching PATTERN in FILE written by process PID; dies if it exits first.
wait_for_line() {
  local file=$1 pattern=$2 pid=$3 what=$4 errfile=$5 i
  for i in $(seq 1 200); do
    grep -q "$pattern" "$file" 2>/dev/null && return 0
    if ! kill -0 "$pid" 2>/dev/null; then
      die "$what exited before listening; its stderr ends with:
$(tail -n 20 "$errfile")"
    fi
    sleep 0.05
  done
  die "$what did not print '$pattern' within 10 s; its stderr ends with:
$(tail -n 20 "$errfile")"
}

# The port of NAME's first plain (or TLS) "NAME listening on HOST:PORT" line in FILE: a line of its own,
# or the message of a JSON log line (the gateway's, with log.format json).
port_of() { sed -nE "s/.*$2 listening on [^ \"]*:([0-9]+)(\"|\$).*/\1/p" "$1" | sed -n 1p; }
tls_port_of() { sed -nE "s/.*$2 listening on [^ \"]*:([0-9]+) \(tls\).*/\1/p" "$1" | sed -n 1p; }  # the mock's first HTTPS one

# start_mock NAME ARGS...: sets mock_pid and mock_port.
start_mock() {
  local name=$1
  shift
  "$bin/mock-downstream" --listen 127.0.0.1:0 --threads "$mock_threads" "$@" \
    >"$work/$name.mock.out" 2>"$work/$name.mock.err" &
  mock_pid=$!
  pids+=("$mock_pid")
  wait_for_line "$work/$name.mock.out" "^mock-downstream listening on" "$mock_pid" mock-downstream \
    "$work/$name.mock.err"
  mock_port=$(port_of "$work/$name.mock.out" mock-downstream)
}

# start_gateway NAME CONFIG: checks the config, starts the gateway; sets gw_pid, gw_port, admin_port.
start_gateway() {
  local name=$1 config=$2
  "$bin/gateway" --check "$config" >"$work/$name.check" 2>&1 || die "generated config rejected:
$(cat "$work/$name.check")"
  "$bin/gateway" --config "$config" >"$work/$name.gateway.out" 2>"$work/$name.gateway.err" &
  gw_pid=$!
  pids+=("$gw_pid")
  wait_for_line "$work/$name.gateway.out" "admin listening on" "$gw_pid" gateway "$work/$name.gateway.err"
  gw_port=$(port_of "$work/$name.gateway.out" gateway)
  admin_port=$(port_of "$work/$name.gateway.out" admin)
  [ -n "$gw_port" ] && [ -n "$admin_port" ] || die "cannot read the gateway's ports from its stdout"
}

# start_floor NAME: floor-proxy (loadtest/floor/) in the gateway's place, against the running mock; sets
# gw_pid and gw_port, and no admin_port (it has no metrics).
start_floor() {
  local name=$1
  "$bin/floor-proxy" --listen 127.0.0.1:0 --downstream "127.0.0.1:$mock_port" --threads "$(nproc)" \
    >"$work/$name.floor.out" 2>"$work/$name.floor.err" &
  gw_pid=$!
  pids+=("$gw_pid")
  wait_for_line "$work/$name.floor.out" "^floor listening on" "$gw_pid" floor-proxy "$work/$name.floor.err"
  gw_port=$(port_of "$work/$name.floor.out" floor)
  admin_port=""
}

# Stops the gateway (a drain with drain_delay 0s: it must exit 0; floor-proxy just ends) and the mock.
stop_servers() {
  local name=$1
  if [ -n "${gw_pid:-}" ]; then
    stop_process "$gw_pid"
    [ "$stop_status" -eq 0 ] || [ -z "$admin_port" ] ||
      problem "$name: the gateway exited with status $stop_status on SIGTERM"
    gw_pid=""
    gw_procs=()
  fi
  if [ -n "${mock_pid:-}" ]; then
    stop_process "$mock_pid"
    mock_pid=""
  fi
}

# ------------------------------------------------------------------------------------------------ configs

. loadtest/lib/http-config.sh

# config/gateway.yaml as shipped (inventory on SQLite), pointed at the mock, on free loopback ports, without
# the access log and the drain delay.
write_default_config() {
  local file=$1
  sed -e "s/127\.0\.0\.1:9001/127.0.0.1:$mock_port/" -e "s/0\.0\.0\.0:8080/127.0.0.1:0/" \
    -e "s/0\.0\.0\.0:9901/127.0.0.1:0/" -e "s/^\( *drain_delay:\) [0-9a-z]*/\1 0s/" \
    -e "s/^\( *access:\) true/\1 false/" config/gateway.yaml >"$file"
  if grep -qE "9001|0\.0\.0\.0|access: true" "$file"; then
    die "config/gateway.yaml changed shape: cannot rewrite its addresses or access log (see $file)"
  fi
}

# -------------------------------------------------------------------------------------------- measurement

cpu_ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }  # utime + stime
sys_ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{print $13}'; }        # stime
status_kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }     # VmRSS, VmHWM
# The server under test is gw_pid, or the processes in gw_procs when set (nginx: its master and workers).
# server_sum FUNCTION [ARG]: FUNCTION PID [ARG] summed over them (for VmHWM an upper bound of the peak).
gw_procs=()
server_sum() {
  local p sum=0
  for p in "${gw_procs[@]:-$gw_pid}"; do sum=$((sum + $("$1" "$p" ${2:+"$2"}))); done
  echo "$sum"
}
mock_stats() { curl -fsS --max-time 5 "http://127.0.0.1:$mock_port/__stats"; }
mock_calls() { mock_stats | grep -o '"requests":[0-9]*' | tail -n 1 | cut -d: -f2; }
metric() {  # metric NAME: the first sample of that family from the admin listener
  curl -fsS --max-time 5 "http://127.0.0.1:$admin_port/metrics" |
    awk -v n="$1" '!found && ($1 == n || index($1, n "{") == 1) {print $2; found = 1}'
}
metric_sum() {  # metric_sum NAME: the sum of every sample of that family (0 when it has none)
  curl -fsS --max-time 5 "http://127.0.0.1:$admin_port/metrics" |
    awk -v n="$1" '$1 == n || index($1, n "{") == 1 {sum += $2} END {printf "%d", sum}'
}
fallbacks() {  # the gateway's fallbacks by call since it started, e.g. "coupon=3, inventory=12", or "none"
  [ -n "$admin_port" ] || { echo "- (no gateway)"; return; }
  curl -fsS --max-time 5 "http://127.0.0.1:$admin_port/metrics" | awk '
    /^gateway_fallbacks_total\{/ && $2 > 0 {
      match($1, /call="[^"]*"/); out = out sep substr($1, RSTART + 6, RLENGTH - 7) "=" $2; sep = ", " }
    END {print out == "" ? "none" : out}'
}
answer_statuses() {  # the gateway's answers other than 200 since it started, by status, e.g. "502=1", or "none"
  [ -n "$admin_port" ] || { echo "- (no gateway)"; return; }
  curl -fsS --max-time 5 "http://127.0.0.1:$admin_port/metrics" | awk '
    /^http_server_request_duration_seconds_count\{/ && $2 > 0 && $1 !~ /status_code="200"/ {
      match($1, /status_code="[^"]*"/); n[substr($1, RSTART + 13, RLENGTH - 14)] += $2 }
    END {for (c in n) {out = out sep c "=" n[c]; sep = ", "}; print out == "" ? "none" : out}'
}
field() { sed -n "s/.*[ :]$2=\([^ ]*\).*/\1/p" "$1" | sed -n 1p; }  # key=value from check-offers.lua
calc() { awk "BEGIN {printf \"$1\", $2}"; }                          # calc FORMAT EXPRESSION

rows=()      # table rows
notes=()     # one line per scenario with what the table cannot hold
checks=()    # targets, full runs only
problems=()  # bad answers, errors: fail a quick run
problem() { problems+=("$*"); }

# add_row SCENARIO CONNS RPS LIMIT GOOD_RPS P50 P90 P99 P999 ERRORS GW_CPU RSS_KB MOCK_REQ MOCK_CALL
add_row() {
  local rps=$3
  [ "$4" = - ] || rps="$3 ($(calc %.1f "100 * $3 / $4")%)"
  local rss=-
  [ "${12}" = - ] || rss=$(calc %.1f "${12} / 1024")
  local mock=-
  [ "${13}" = - ] || mock="${13} (${14})"
  rows+=("| $1 | $2 | $rps | $5 | $6 | $7 | $8 | $9 | ${10} | ${11} | $rss | $mock |")
}

# check_target TEXT VALUE OP BOUND: records whether a measured value meets a target (full runs only).
check_target() {
  [ $quick -eq 0 ] || return 0
  local verdict=MISSED
  awk "BEGIN {exit !($2 $3 $4)}" && verdict=met
  checks+=("- $1: $2 (target $3 $4): **$verdict**")
}

plot() {  # plot NAME TITLE: renders $work/NAME.dat into results/NAME.png
  gnuplot -e "data='$work/$1.dat'; out='$results/$1.png'; name='$2'" loadtest/plot.gp 2>"$work/$1.gnuplot" ||
    die "gnuplot failed for $1: $(cat "$work/$1.gnuplot")"
}

# start_wrk NAME CONNS SECONDS PATH [ENTRIES]: wrk through wrk_script (check-offers.lua; a caller's local
# wrk_script=check-bytes.lua with check_bytes for pass-through routes) in the background, output in
# $work/NAME.wrk; sets wrk_pid. finish_wrk NAME waits for it. A caller's check_tokens (a file, one token a
# line) and check_tag_header / check_tag_values go to check-offers.lua (a bearer token, a header per request).
wrk_script=loadtest/lua/check-offers.lua
start_wrk() {
  local threads=$((wrk_threads < $2 ? wrk_threads : $2))
  CHECK_ENTRIES=${5:-6} CHECK_BYTES=${check_bytes:-} CHECK_LATENCY_FILE=$work/$1.dat \
    CHECK_TOKENS_FILE=${check_tokens:-} CHECK_TAG_HEADER=${check_tag_header:-} CHECK_TAG_VALUES=${check_tag_values:-1} \
    wrk -t"$threads" -c"$2" -d"$3s" --timeout 10s --latency -s "$wrk_script" \
    "http://127.0.0.1:$gw_port$4" >"$work/$1.wrk" 2>&1 &
  wrk_pid=$!
  pids+=("$wrk_pid")
}
finish_wrk() {
  local status=0
  wait "$wrk_pid" || status=$?
  forget "$wrk_pid"
  [ $status -eq 0 ] || die "wrk failed for $1 (status $status): $(tail -n 5 "$work/$1.wrk")"
  grep -q "^check:" "$work/$1.wrk" || die "wrk printed no check line for $1: $(tail -n 5 "$work/$1.wrk")"
}
run_wrk() {
  start_wrk "$@"
  finish_wrk "$1"
}

# measure NAME CONNS SECONDS LIMIT TITLE [WARM [PROBE [PATH [ENTRIES]]]]: a warm-up of WARM seconds (default
# 2, 1 when quick; 0: none) at the same connection count (pools filled, stacks cached), then the measured
# wrk run with CPU time read around it; PROBE (a function) runs while wrk does. Adds the table row and plot.
measure() {
  local name=$1 conns=$2 secs=$3 limit=$4 title=$5 warm=${6:-} probe=${7:-} path=${8:-/api/offer/aggregate}
  local entries=${9:-6}
  [ -n "$warm" ] || warm=$((quick == 1 ? 1 : 2))
  if [ "$warm" -gt 0 ]; then
    say "$name: warm-up, ${warm} s"
    run_wrk "$name.warm" "$conns" "$warm" "$path" "$entries"
  fi
  local g0 g1 s0 s1 m0=- m1 c0 c1
  g0=$(server_sum cpu_ticks)
  s0=$(server_sum sys_ticks)
  if [ -n "${mock_pid:-}" ]; then m0=$(cpu_ticks "$mock_pid"); c0=$(mock_calls); fi
  say "$name: $conns connections, $secs s"
  start_wrk "$name" "$conns" "$secs" "$path" "$entries"
  [ -z "$probe" ] || "$probe"
  finish_wrk "$name"
  g1=$(server_sum cpu_ticks)
  s1=$(server_sum sys_ticks)
  local out=$work/$name.wrk
  local requests secs_run errors bad gw_cpu gw_sys mock_req=- mock_call=-
  requests=$(field "$out" requests)
  [ "$requests" -gt 0 ] || die "$name: no request completed; wrk said: $(tail -n 5 "$out")"
  secs_run=$(calc %.3f "$(field "$out" duration_us) / 1000000")
  bad=$(field "$out" bad)
  errors=$(($(field "$out" connect) + $(field "$out" read) + $(field "$out" write) + $(field "$out" timeout) + bad))
  gw_cpu=$(calc %.0f "($g1 - $g0) * 1000000 / $hz / $requests")
  gw_sys=$(calc %.0f "($s1 - $s0) * 1000000 / $hz / $requests")
  if [ "$m0" != - ]; then
    m1=$(cpu_ticks "$mock_pid")
    c1=$(mock_calls)
    mock_req=$(calc %.0f "($m1 - $m0) * 1000000 / $hz / $requests")
    mock_call=$(calc %.0f "($m1 - $m0) * 1000000 / $hz / ($c1 > $c0 ? $c1 - $c0 : 1)")
  fi
  last_rps=$(calc %.1f "$requests / $secs_run")
  last_requests=$requests
  last_p50=$(field "$out" p50)
  last_p99=$(field "$out" p99)
  last_rss=$(server_sum status_kb VmHWM)
  last_gw_cpu=$gw_cpu
  last_mock_req=$mock_req
  last_mock_call=$mock_call
  add_row "$name" "$conns" "$last_rps" "$limit" "$(calc %.1f "$(field "$out" good) / $secs_run")" \
    "$(calc %.1f "$last_p50")" "$(calc %.1f "$(field "$out" p90)")" "$(calc %.1f "$last_p99")" \
    "$(calc %.1f "$(field "$out" p999)")" "$errors" "$gw_cpu" "$last_rss" "$mock_req" "$mock_call"
  notes+=("- $name: $(field "$out" answers) answers, $(field "$out" degraded) degraded, $bad bad ($(field "$out" non200) not 200), socket errors connect/read/write/timeout $(field "$out" connect)/$(field "$out" read)/$(field "$out" write)/$(field "$out" timeout), max latency $(calc %.1f "$(field "$out" max)") ms; gateway CPU in the kernel $gw_sys of $gw_cpu µs/req$(
    [ "$mock_req" = - ] || [ "$mock_req" -eq 0 ] || echo ", $(calc %.2f "$gw_cpu / $mock_req") of the mock's"); fallbacks by call since the start (warm-up included): $(fallbacks)")
  [ "$errors" -eq 0 ] || problem "$name: $errors errors ($bad bad answers; the gateway's answers other than 200 since its start: $(answer_statuses))"
  plot "$name" "$title"
}

limit_of() { calc %.1f "$1 * 1000 / $2"; }  # connections / downstream delay (ms): the most req/s possible

# --------------------------------------------------------------------------------------------- scenarios

# a: every downstream (inventory too) answers after a fixed 150 ms.
scenario_a() {
  local name=$1 conns=$2 secs=$3
  start_mock "$name" --delay 150ms
  write_http_config "$work/$name.yaml" 800ms "$conns"
  start_gateway "$name" "$work/$name.yaml"
  measure "$name" "$conns" "$secs" "$(limit_of "$conns" 150)" \
    "$name: $conns connections, every downstream 150 ms; latency by percentile"
  stop_servers "$name"
}

scenario_a100() {
  if [ $quick -eq 1 ]; then scenario_a a100 20 3; else scenario_a a100 100 20; fi
  check_target "a100: throughput, req/s (>= 99% of 666.7)" "$last_rps" ">=" 660
  check_target "a100: P50 ms" "$last_p50" "<=" 152
  check_target "a100: P99 ms" "$last_p99" "<=" 160
  check_target "a100: gateway CPU per request, us" "$last_gw_cpu" "<=" 150
  check_target "a100: mock CPU per call, us" "$last_mock_call" "<=" 70
  a100_gw_cpu=$last_gw_cpu a100_mock_req=$last_mock_req  # for a100tls's line, when it runs too
}

# a100tls: a100's load and config with every downstream reached over https:// on the mock's TLS listener
# (a CA and a server certificate made for the run), then what a handshake costs the gateway. Four runs,
# each with a fresh mock and gateway, in pairs back to back: TLS and plain HTTP with keep-alive (the plain
# one is a100 again, the reference within the same minute), then TLS and plain HTTP with keep-alive to
# the downstreams defeated (idle_timeout 1us: every call finds its pooled connection too old and opens a
# new one), at a fifth of the connections (a handshake per call would saturate the two CPUs). The TLS
# handshakes come from the gateway's /metrics, the new connections from the mock's /__stats. TLS over
# plain per request is R + h x H in each pair (R: the records, h: handshakes per request, H: one
# handshake's CPU), so H = (difference without keep-alive - difference with it) / (h without - h with).
# `openssl s_time` against the mock adds a full handshake's client CPU (the gateway mostly resumes).
make_tls_files() {  # sets tls_dir: ca.crt, server.crt and server.key (EC P-256, 127.0.0.1 and localhost)
  tls_dir=$work/tls
  [ ! -s "$tls_dir/server.crt" ] || return 0
  mkdir -p "$tls_dir"
  # Its own openssl config: no system openssl.cnf is read (as tests/support/tls_files.cpp does).
  cat >"$tls_dir/openssl.cnf" <<'CNF'
[req]
distinguished_name = dn
prompt = no
[dn]
CN = bench
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,DNS:localhost
CNF
  local cnf=$tls_dir/openssl.cnf key=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  {
    openssl req -x509 -config "$cnf" -extensions ca "${key[@]}" -keyout "$tls_dir/ca.key" \
      -out "$tls_dir/ca.crt" -days 2 -subj /CN=gateway-bench-ca &&
      openssl req -new -config "$cnf" "${key[@]}" -keyout "$tls_dir/server.key" -out "$tls_dir/server.csr" \
        -subj /CN=localhost &&
      openssl x509 -req -in "$tls_dir/server.csr" -CA "$tls_dir/ca.crt" -CAkey "$tls_dir/ca.key" \
        -CAcreateserial -days 2 -out "$tls_dir/server.crt" -extfile "$cnf" -extensions server
  } >"$tls_dir/openssl.log" 2>&1 || die "making the TLS certificates failed: $(tail -n 5 "$tls_dir/openssl.log")"
}
tls_handshakes() {  # "FULL RESUMED": the gateway's TLS handshakes with its downstreams so far, all summed
  curl -fsS --max-time 5 "http://127.0.0.1:$admin_port/metrics" | awk '
    /^gateway_downstream_tls_handshakes_total\{/ {if ($1 ~ /resumed="true"/) r += $2; else f += $2}
    END {printf "%d %d\n", f, r}'
}
mock_connections() { mock_stats | grep -o '"connections_total":[0-9]*' | sed -n 1p | cut -d: -f2; }

# a100tls_run NAME CONNS SECS SCHEME KEEP: one measured run (after its warm-up) of a100's load, the six
# downstreams over SCHEME (http or https), KEEP keep-alive or nokeep; sets run_conns (new downstream
# connections per request while measured), run_full / run_resumed (TLS handshakes while measured) and
# run_hs (those per request).
a100tls_run() {
  local name=$1 conns=$2 secs=$3 scheme=$4 keep=$5 extra='' downstream_url='' warm=$((quick == 1 ? 1 : 2))
  local h0 h1 n0 n1
  if [ "$scheme" = https ]; then
    start_mock "$name" --delay 150ms --tls-listen 127.0.0.1:0 --tls-cert "$tls_dir/server.crt" \
      --tls-key "$tls_dir/server.key"
    tls_port=$(tls_port_of "$work/$name.mock.out" mock-downstream)
    [ -n "$tls_port" ] || die "$name: the mock printed no HTTPS listener"
    downstream_url=https://127.0.0.1:$tls_port
    extra="    tls: {ca_file: '$tls_dir/ca.crt', server_name: localhost, verify: true}\n"
  else
    start_mock "$name" --delay 150ms
  fi
  [ "$keep" = keep ] || extra+="    idle_timeout: 1us\n"
  write_http_config "$work/$name.yaml" 800ms "$conns" "$extra"
  start_gateway "$name" "$work/$name.yaml"
  say "$name: warm-up, $warm s"
  run_wrk "$name.warm" "$conns" "$warm" /api/offer/aggregate
  h0=$(tls_handshakes)
  n0=$(mock_connections)
  measure "$name" "$conns" "$secs" "$(limit_of "$conns" 150)" \
    "$name: $conns connections, every downstream 150 ms over $scheme, keep-alive: $keep; latency by percentile" 0
  h1=$(tls_handshakes)
  n1=$(mock_connections)
  run_conns=$(calc %.3f "($n1 - $n0) / $last_requests")
  run_full=$((${h1% *} - ${h0% *}))
  run_resumed=$((${h1#* } - ${h0#* }))
  run_hs=$(calc %.3f "($run_full + $run_resumed) / $last_requests")
  if [ "$scheme" = https ]; then
    notes+=("- $name: TLS handshakes since the gateway started (warm-up included): full ${h1% *}, resumed ${h1#* }; while measured: full $run_full, resumed $run_resumed, $(calc %.1f "1000 * ($run_full + $run_resumed) / $last_requests") per 1000 requests; new downstream connections per request (the mock's count): $run_conns")
  else
    notes+=("- $name: new downstream connections per request while measured (the mock's count): $run_conns")
  fi
}

# s_time_us MODE SECONDS: client user CPU per connection (µs) of `openssl s_time MODE` against the mock's
# HTTPS listener (tls_port); a handshake and nothing else (no request), so the mock's delay is not in it.
s_time_us() {
  local out=$work/s_time$1.out
  timeout $(($2 + 10)) openssl s_time -connect "127.0.0.1:$tls_port" "$1" -time "$2" >"$out" 2>&1 || true
  sed -n 's/^[0-9]* connections in [0-9.]*s; \([0-9.]*\) connections\/user sec.*/\1/p' "$out" |
    awk '$1 > 0 {printf "%.0f", 1000000 / $1; found = 1} END {if (!found) print "-"}'
}

scenario_a100tls() {
  local conns=100 secs=20 nk_conns=20 nk_secs=10 full_us
  [ $quick -eq 0 ] || { conns=20; secs=3; nk_conns=10; nk_secs=3; }
  make_tls_files
  local tls_cpu tls_mock tls_hs tls_n plain_cpu plain_mock tls_nk_cpu tls_nk_hs tls_nk_n plain_nk_cpu plain_nk_n
  a100tls_run a100tls "$conns" "$secs" https keep
  tls_cpu=$last_gw_cpu tls_mock=$last_mock_req tls_hs=$run_hs tls_n=$((run_full + run_resumed))
  stop_servers a100tls
  a100tls_run a100tls-plain "$conns" "$secs" http keep
  plain_cpu=$last_gw_cpu plain_mock=$last_mock_req
  stop_servers a100tls-plain
  a100tls_run a100tls-nokeep "$nk_conns" "$nk_secs" https nokeep
  tls_nk_cpu=$last_gw_cpu tls_nk_hs=$run_hs tls_nk_n=$run_conns
  say "a100tls: openssl s_time -new against the mock, $((nk_secs / 3 + 1)) s"
  full_us=$(s_time_us -new $((nk_secs / 3 + 1)))
  stop_servers a100tls-nokeep
  a100tls_run a100tls-plain-nokeep "$nk_conns" "$nk_secs" http nokeep
  plain_nk_cpu=$last_gw_cpu plain_nk_n=$run_conns
  stop_servers a100tls-plain-nokeep

  # TLS over plain per request: R (records) + handshakes per request x H, with and without keep-alive.
  local per_hs=- records=-
  if awk "BEGIN {exit !($tls_nk_hs - $tls_hs > 1 && $plain_nk_n > 1)}"; then
    per_hs=$(calc %.0f "(($tls_nk_cpu - $plain_nk_cpu) - ($tls_cpu - $plain_cpu)) / ($tls_nk_hs - $tls_hs)")
    records=$(calc %.0f "($tls_cpu - $plain_cpu) - $tls_hs * $per_hs")
  else
    problem "a100tls: keep-alive was not defeated (per request: $tls_nk_hs TLS handshakes, $plain_nk_n new plain connections)"
  fi
  local vs_a100=
  [ -z "${a100_gw_cpu:-}" ] ||
    vs_a100="; a100 in this run: $a100_gw_cpu µs, a100tls $(calc %.2f "$tls_cpu / $a100_gw_cpu") times that (gateway-to-mock CPU $(calc %.2f "$tls_cpu / $tls_mock") against $(calc %.2f "$a100_gw_cpu / $a100_mock_req"))"
  notes+=("- a100tls: gateway CPU per request with TLS to every downstream $tls_cpu µs against $plain_cpu µs over plain HTTP (a100tls-plain, the same load just after): $(calc %.2f "$tls_cpu / $plain_cpu") times, +$((tls_cpu - plain_cpu)) µs per request; of that, the $tls_n handshakes while measured ($tls_hs per request) about $(calc %.0f "$tls_hs * ${per_hs/-/0}") µs and the TLS records (encryption, reads and writes through OpenSSL) $records µs, $(calc %.1f "${records/-/0} / 6") µs per call; gateway-to-mock CPU $(calc %.2f "$tls_cpu / $tls_mock") against $(calc %.2f "$plain_cpu / $plain_mock")$vs_a100")
  notes+=("- a100tls: handshake cost, keep-alive defeated at $nk_conns connections (per request $tls_nk_hs TLS handshakes and $tls_nk_n new connections over TLS, $plain_nk_n over plain HTTP): TLS over plain $((tls_nk_cpu - plain_nk_cpu)) µs per request without keep-alive, $((tls_cpu - plain_cpu)) with it: (($tls_nk_cpu - $plain_nk_cpu) - ($tls_cpu - $plain_cpu)) / ($tls_nk_hs - $tls_hs) = **$per_hs µs of gateway CPU per handshake** (resumed ones almost all: see a100tls-nokeep); a full handshake's client user CPU by \`openssl s_time -new\` against the mock (the same OpenSSL, no request): $full_us µs")
}

# floor: a100's load against floor-proxy instead of the gateway: the same seven exchanges per request on raw
# epoll with no HTTP library and no JSON, i.e. the least CPU and latency this machine allows for the
# workload. Its row is a reference for the gateway's, not a product.
scenario_floor() {
  local conns=100 secs=20
  [ $quick -eq 0 ] || { conns=20; secs=3; }
  start_mock floor --delay 150ms
  start_floor floor
  measure floor "$conns" "$secs" "$(limit_of "$conns" 150)" \
    "floor (raw epoll, no gateway): $conns connections, every downstream 150 ms; latency by percentile"
  stop_servers floor
}

# Runs of one load in a few states, alternated (this machine drifts by more than the differences such
# scenarios measure): after each run's `measure`, `tally STATE` adds its gateway CPU per request and its
# gateway-to-mock CPU ratio (which cancels most of the drift); `tally_versus` compares two states' means.
declare -A tally_cpu=() tally_rel=() tally_runs=() tally_count=()
tally() {
  tally_cpu[$1]=$(calc %.4f "${tally_cpu[$1]:-0} + $last_gw_cpu")
  tally_rel[$1]=$(calc %.6f "${tally_rel[$1]:-0} + $last_gw_cpu / $last_mock_req")
  tally_runs[$1]+="$last_gw_cpu "
  tally_count[$1]=$((${tally_count[$1]:-0} + 1))
}
# tally_versus SCENARIO BASE STATE WHAT [LIMIT]: a note on STATE (WHAT) against BASE, both means; with
# LIMIT, the two targets: STATE's CPU and ratio at most LIMIT % of BASE's.
tally_versus() {
  local scenario=$1 base=$2 state=$3 what=$4 limit=${5:-} cpu_base cpu rel_base rel
  cpu_base=$(calc %.1f "${tally_cpu[$base]} / ${tally_count[$base]}")
  cpu=$(calc %.1f "${tally_cpu[$state]} / ${tally_count[$state]}")
  rel_base=$(calc %.3f "${tally_rel[$base]} / ${tally_count[$base]}")
  rel=$(calc %.3f "${tally_rel[$state]} / ${tally_count[$state]}")
  notes+=("- $scenario: gateway CPU per request $what ${tally_runs[$state]}µs (mean $cpu) against $base ${tally_runs[$base]}µs (mean $cpu_base): $(calc %+.1f "($cpu - $cpu_base) * 100 / $cpu_base")%; gateway-to-mock CPU $rel against $rel_base: $(calc %+.1f "($rel - $rel_base) * 100 / $rel_base")%")
  [ -n "$limit" ] || return 0
  check_target "$scenario: gateway CPU per request $what, % of $base (<= $limit)" \
    "$(calc %.1f "$cpu * 100 / $cpu_base")" "<=" "$limit"
  check_target "$scenario: gateway-to-mock CPU $what, % of $base (<= $limit)" \
    "$(calc %.1f "$rel * 100 / $rel_base")" "<=" "$limit"
}

# trace: a100's load with tracing off, at 1% and at 100% sampling (wrk sends no traceparent, so
# sample_ratio decides), exporting to the mock's /__sink, which reads each export whole and answers 200
# like a collector; two rounds of the three, each run with a fresh mock and gateway (see tally). What a
# server span per request and a client span per call cost the gateway in CPU, and whether the export
# keeps up (spans exported and dropped).
scenario_trace() {
  local conns=100 secs=20 round ratio name exported dropped
  [ $quick -eq 0 ] || { conns=20; secs=3; }
  for round in 1 2; do
    for ratio in off 0.01 1; do
      name=trace-$ratio-$round
      start_mock "$name" --delay 150ms
      write_http_config "$work/$name.yaml" 800ms "$conns"
      if [ "$ratio" != off ]; then
        printf 'tracing:\n  enabled: true\n  endpoint: http://127.0.0.1:%s/__sink\n  sample_ratio: %s\n' \
          "$mock_port" "$ratio" >>"$work/$name.yaml"
        printf '  max_queue_spans: 65536\n  max_batch_spans: 4096\n  batch_delay: 200ms\n' >>"$work/$name.yaml"
      fi
      start_gateway "$name" "$work/$name.yaml"
      measure "$name" "$conns" "$secs" "$(limit_of "$conns" 150)" \
        "$name: a100 with tracing $ratio (round $round); latency by percentile"
      tally "tracing-$ratio"
      if [ "$ratio" != off ]; then
        sleep 0.5  # the last batch
        exported=$(metric gateway_trace_spans_exported_total)
        dropped=$(metric gateway_trace_spans_dropped_total)
        notes+=("- $name: spans since the start (warm-up included) exported ${exported:-?}, dropped ${dropped:-?}")
      fi
      stop_servers "$name"
    done
  done
  tally_versus trace tracing-off tracing-0.01 "at 1% sampling" 103
  tally_versus trace tracing-off tracing-1 "at 100% sampling"
}

# accesslog: a100's load with the access log off and on (JSON, the gateway's stdout to a file, as in a
# container whose runtime collects it), alternated off, on, off, on, each with a fresh mock and gateway
# (see tally): what a line per request costs in gateway CPU.
scenario_accesslog() {
  local conns=100 secs=20 round state name lines
  [ $quick -eq 0 ] || { conns=20; secs=3; }
  for round in 1 2; do
    for state in off on; do
      name=accesslog-$state-$round
      start_mock "$name" --delay 150ms
      write_http_config "$work/$name.yaml" 800ms "$conns"
      [ "$state" = off ] || sed -i 's/^  access: false$/  access: true/' "$work/$name.yaml"
      start_gateway "$name" "$work/$name.yaml"
      measure "$name" "$conns" "$secs" "$(limit_of "$conns" 150)" \
        "$name: a100 with the access log $state (round $round); latency by percentile"
      tally "access-log-$state"
      stop_servers "$name"
      if [ "$state" = on ]; then
        lines=$(grep -c '"request_id"' "$work/$name.gateway.out" || true)
        notes+=("- $name: $lines access log lines written to the gateway's stdout (a file)")
      fi
    done
  done
  tally_versus accesslog access-log-off access-log-on "with the access log on" 105
}

scenario_a1000() {
  if [ $quick -eq 1 ]; then scenario_a a1000 100 3; else scenario_a a1000 1000 20; fi
  check_target "a1000: gateway CPU per request, us" "$last_gw_cpu" "<=" 150
  check_target "a1000: gateway peak RSS, MB" "$(calc %.1f "$last_rss / 1024")" "<=" 50
  check_target "a1000: mock CPU per call, us" "$last_mock_call" "<=" 70
}

# b's realistic per-downstream delays, as the mock's options (b, bhttp and floorb).
b_delays=(--path channel-price=ok:150ms --path coupon=ok:110ms --path review-summary=ok:180ms
  --path logistics-eta=ok:250ms --path recommendation=ok:200ms --path inventory=ok:120ms)

# b, bhttp: the measured run at the caller's `conns` and `secs` (b's limit: the slowest call, 250 ms), then
# the gateway's CPU and RSS targets.
measure_b_load() {
  local name=$1 title=$2
  measure "$name" "$conns" "$secs" "$(limit_of "$conns" 250)" "$title"
  stop_servers "$name"
  check_target "$name: gateway CPU per request, us" "$last_gw_cpu" "<=" 150
  check_target "$name: gateway peak RSS, MB" "$(calc %.1f "$last_rss / 1024")" "<=" 50
}

# b: the shipped config (inventory on SQLite), realistic per-path delays for the five HTTP calls.
scenario_b() {
  local conns=1000 secs=20
  [ $quick -eq 0 ] || { conns=50; secs=3; }
  scripts/seed-db.sh data/offers.db >&2
  start_mock b "${b_delays[@]}"
  write_default_config "$work/b.yaml"
  start_gateway b "$work/b.yaml"
  measure_b_load b "b: $conns connections, default config, downstreams 110-250 ms; latency by percentile"
  check_target "b: mock CPU per call, us" "$last_mock_call" "<=" 70
}

# bhttp: b as the delays are listed (inventory too at 120 ms over HTTP), with a100's generated config:
# six HTTP calls, the same exchanges as floorb, so the two rows compare directly.
scenario_bhttp() {
  local conns=1000 secs=20
  [ $quick -eq 0 ] || { conns=50; secs=3; }
  start_mock bhttp "${b_delays[@]}"
  write_http_config "$work/bhttp.yaml" 800ms "$conns"
  start_gateway bhttp "$work/bhttp.yaml"
  measure_b_load bhttp "bhttp: $conns connections, six HTTP calls 110-250 ms; latency by percentile"
}

# graph: a product page composed of dependent calls (README, "Composing calls"): the product (40 ms), then
# its seller (30 ms) and its reviews (60 ms) with values of the product's answer, then one call per review's
# author (20 ms each, three reviews) with values of each review. Run in sequence the six calls would take
# 190 ms; the graph's critical path (product, reviews, an author) is 120 ms, and the latency is compared
# with it. An array response of four entries (the authors' entry lists the three).
scenario_graph() {
  local conns=100 secs=20
  [ $quick -eq 0 ] || { conns=20; secs=3; }
  printf '%s\n' '{"source":"product","id":"{seg.1}","sellerId":"s-{seg.1}","price":{"cent":1250}}' >"$work/graph.product.json"
  printf '%s\n' '{"id":"{seg.1}","name":"Seller {seg.1}"}' >"$work/graph.seller.json"
  printf '%s\n' '{"product":"{query.product}","reviews":[{"author":"a1-{query.product}","stars":5},{"author":"a2","stars":3},{"author":"a3","stars":4}]}' >"$work/graph.reviews.json"
  printf '%s\n' '{"id":"{seg.1}","name":"Author {seg.1}"}' >"$work/graph.author.json"
  start_mock graph --path 'product/*=ok:40ms' --path 'seller/*=ok:30ms' --path 'reviews=ok:60ms' \
    --path 'author/*=ok:20ms' --body "product/*=@$work/graph.product.json" --body "seller/*=@$work/graph.seller.json" \
    --body "reviews=@$work/graph.reviews.json" --body "author/*=@$work/graph.author.json"
  {
    gateway_config_prelude "$conns"
    cat <<YAML
downstreams:
  shop:
    url: http://127.0.0.1:$mock_port
    max_connections: $(((conns + 64) * $(nproc) * 3))
    connect_timeout: 2s
routes:
  - path: /page
    deadline: 800ms
    params:
      sku: {required: true}
    calls:
      - name: product
        downstream: shop
        path: /product/{sku}
        required: true
      - name: seller
        downstream: shop
        after: [product]
        path: /seller/{product.sellerId}
      - name: reviews
        downstream: shop
        after: [product]
        path: /reviews?product={product.id}
      - name: authors
        downstream: shop
        after: [reviews]
        for_each: '{reviews.reviews}'
        path: /author/{item.author}
YAML
  } >"$work/graph.yaml"
  start_gateway graph "$work/graph.yaml"
  measure graph "$conns" "$secs" "$(limit_of "$conns" 120)" \
    "graph: $conns connections, product 40 ms -> seller 30 ms + reviews 60 ms -> 3 authors 20 ms; latency by percentile" \
    "" "" /page 4
  notes+=("- graph: P50 $(calc %.1f "$last_p50") ms, P99 $(calc %.1f "$last_p99") ms against a critical path of 120 ms (the six calls in sequence: 190 ms): P50 - critical path = $(calc %.1f "$last_p50 - 120") ms")
  check_target "graph: P50 ms (critical path 120 ms + 5)" "$last_p50" "<=" 125
  stop_servers graph
}

# ------------------------------------------------------------------------- identity and rate limits

# jwt, ratelimit-local, ratelimit-redis: a100's route, load and downstreams (150 ms), with the route's front
# door (README, "Identity and rate limits") switched on, each next to a plain a100 run in the same minute
# (its "-plain" row): what a verified token, a local limit and a Redis round trip cost the gateway per
# request. Each run has a fresh mock and gateway; the notes give every variant's CPU per request and P99
# against the plain run's, and the gateway-to-mock CPU ratio (which cancels most of the host's drift).

# edge_run NAME CONNS SECS TITLE [PROBE]: a100 with the caller's route_extra / top_extra (the route's auth
# and rate_limit, a top-level section) and check_tokens / check_tag_header / check_tag_values (what wrk
# sends; the warm-up sends the caller's check_tokens_warm instead, when set); its own warm-up, then
# `measure` (PROBE runs during it). The servers are left running (the caller reads what it needs, then
# stop_servers NAME).
edge_run() {
  local name=$1 conns=$2 secs=$3 title=$4 probe=${5:-} warm=$((quick == 1 ? 1 : 2))
  start_mock "$name" --delay 150ms
  write_http_config "$work/$name.yaml" 800ms "$conns"
  start_gateway "$name" "$work/$name.yaml"
  say "$name: warm-up, $warm s"
  check_tokens=${check_tokens_warm:-${check_tokens:-}} run_wrk "$name.warm" "$conns" "$warm" /api/offer/aggregate
  measure "$name" "$conns" "$secs" "$(limit_of "$conns" 150)" "$title; latency by percentile" 0 "$probe"
}

# edge_versus SCENARIO BASE_NAME BASE_CPU BASE_MOCK BASE_P99 NAME [WHAT]: a note on the last run (NAME)
# against the plain one: gateway CPU per request and its difference, gateway-to-mock CPU, P99 and its
# difference; WHAT is appended.
edge_versus() {
  local scenario=$1 base=$2 base_cpu=$3 base_mock=$4 base_p99=$5 name=$6 what=${7:-}
  notes+=("- $scenario: $name gateway CPU $last_gw_cpu µs/req against $base_cpu ($base): **$(calc %+.0f "$last_gw_cpu - $base_cpu") µs/req**; gateway-to-mock CPU $(calc %.3f "$last_gw_cpu / $last_mock_req") against $(calc %.3f "$base_cpu / $base_mock") ($(calc %+.1f "100 * ($last_gw_cpu / $last_mock_req) / ($base_cpu / $base_mock) - 100")%); P50 $(calc %.1f "$last_p50") ms, P99 $(calc %.1f "$last_p99") ms against $(calc %.1f "$base_p99") ($(calc %+.1f "$last_p99 - $base_p99") ms)$what")
}

# edge_limited NAME: a problem unless the route's answers carry the limits' RateLimit-Policy field.
edge_limited() {
  curl -s -D - -o /dev/null --max-time 5 -H 'X-Tenant: tag-1' \
    "http://127.0.0.1:$gw_port/api/offer/aggregate?sku=A1" | grep -qi '^RateLimit-Policy: "per-client"' ||
    problem "$1: the answer carries no RateLimit-Policy field: is the limit configured?"
}

# jwt: auth.jwt against a JWKS file, RS256 (RSA 2048) and ES256 (P-256) tokens made for the run by jwt-tokens
# (loadtest/jwt_tokens.cpp). "hit": as many tokens as connections, sent round-robin: once seen, each is in
# the per-thread verified-token cache (1024 per route and I/O thread, direct-mapped; jwt-tokens puts the
# first tokens in distinct slots), so a request costs a lookup. "miss": 20000 tokens round-robin, far more
# than the cache holds and more than a run sends, so nearly every request checks a signature; the miss
# runs' warm-ups send the last tenth of the tokens, which the measured run does not reach (each wrk thread
# sends about 6,600 from its start, 0 or 7,919), so that none of them is in the cache when measured.
scenario_jwt() {
  local conns=100 secs=20 count=20000 alg lower kind name base_cpu base_mock base_p99
  [ $quick -eq 0 ] || { conns=20; secs=3; count=2048; }
  [ -x "$bin/jwt-tokens" ] || die "jwt: no $bin/jwt-tokens (built with the release preset)"
  for alg in RS256 ES256; do
    lower=${alg,,}
    say "jwt: $count $alg tokens"
    "$bin/jwt-tokens" --alg "$alg" --count "$count" --jwks "$work/jwt-$lower.jwks" \
      --tokens "$work/jwt-$lower-miss.tokens" --issuer https://idp.bench --audience bench 2>"$work/jwt-$lower.err" ||
      die "jwt-tokens failed: $(cat "$work/jwt-$lower.err")"
    head -n "$conns" "$work/jwt-$lower-miss.tokens" >"$work/jwt-$lower-hit.tokens"
    tail -n $((count / 10)) "$work/jwt-$lower-miss.tokens" >"$work/jwt-$lower-miss-warm.tokens"
  done
  edge_run jwt-plain "$conns" "$secs" "jwt-plain: a100, no auth (the reference)"
  base_cpu=$last_gw_cpu base_mock=$last_mock_req base_p99=$last_p99
  stop_servers jwt-plain
  for alg in RS256 ES256; do
    lower=${alg,,}
    for kind in hit miss; do
      name=jwt-$lower-$kind
      local route_extra="    auth:\n      jwt:\n        jwks_file: '$work/jwt-$lower.jwks'\n        algorithms: [$alg]\n        issuers: [https://idp.bench]\n        audiences: [bench]\n        forward_claims: {sub: X-User-Id}\n"
      local check_tokens=$work/jwt-$lower-$kind.tokens check_tokens_warm=
      [ "$kind" = hit ] || check_tokens_warm=$work/jwt-$lower-miss-warm.tokens
      edge_run "$name" "$conns" "$secs" \
        "$name: a100 with auth.jwt, $alg, $(wc -l <"$check_tokens") tokens round-robin (cache $kind)"
      edge_versus jwt jwt-plain "$base_cpu" "$base_mock" "$base_p99" "$name" \
        "; refusals $(metric_sum gateway_auth_refusals_total)"
      # The front door is really there: no token, no answer.
      local status
      status=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$gw_port/api/offer/aggregate?sku=A1")
      [ "$status" = 401 ] || problem "$name: a request without a token was answered $status, not 401"
      stop_servers "$name"
    done
  done
}

# ratelimit_route BACKEND: two limits that never refuse (a million a second), one per client address and
# one per value of X-Tenant (wrk sends 8 values round-robin), on BACKEND.
ratelimit_route() {
  printf '    rate_limit:\n'
  printf "      - {name: per-client, key: client, rate: 1000000/s, burst: 1000000, backend: %s}\n" "$1"
  printf "      - {name: per-tenant, key: 'header:X-Tenant', rate: 1000000/s, burst: 1000000, backend: %s}\n" "$1"
}

# ratelimit-local: a100 with the two limits on the local backend; zero refusals expected (a 429 is a bad
# answer, so --quick fails on one).
scenario_ratelimit_local() {
  local conns=100 secs=20 base_cpu base_mock base_p99
  [ $quick -eq 0 ] || { conns=20; secs=3; }
  local check_tag_header=X-Tenant check_tag_values=8
  edge_run ratelimit-local-plain "$conns" "$secs" "ratelimit-local-plain: a100, no limit (the reference)"
  base_cpu=$last_gw_cpu base_mock=$last_mock_req base_p99=$last_p99
  stop_servers ratelimit-local-plain
  local route_extra
  route_extra=$(ratelimit_route local)
  route_extra+=$'\n'
  edge_run ratelimit-local "$conns" "$secs" "ratelimit-local: a100 with two local limits (client, X-Tenant)"
  edge_versus ratelimit-local ratelimit-local-plain "$base_cpu" "$base_mock" "$base_p99" ratelimit-local \
    "; 429s $(metric_sum gateway_rate_limited_total)"
  edge_limited ratelimit-local
  stop_servers ratelimit-local
}

# start_redis NAME: a redis-server of its own on a free loopback port (no persistence); sets redis_pid and
# redis_port. A port already taken: another one is drawn (8 tries).
start_redis() {
  local name=$1 attempt
  command -v redis-server >/dev/null || die "no redis-server (scripts/setup.sh bench installs it)"
  for attempt in 1 2 3 4 5 6 7 8; do
    # Below Linux's ephemeral range (32768+), as tests/support/redis_server.cpp does.
    redis_port=$((15000 + RANDOM % 15000))
    redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
      --logfile '' >"$work/$name.redis.out" 2>&1 &
    redis_pid=$!
    pids+=("$redis_pid")
    local i
    for i in $(seq 1 200); do
      grep -q "Ready to accept connections" "$work/$name.redis.out" && return 0
      kill -0 "$redis_pid" 2>/dev/null || break
      sleep 0.05
    done
    stop_process "$redis_pid"
    grep -q "in use" "$work/$name.redis.out" || die "redis-server did not start: $(tail -n 5 "$work/$name.redis.out")"
  done
  die "redis-server found no free port in 8 tries"
}

# The probe of the stall run: redis-server stopped (SIGSTOP) from a third of the run to two thirds.
redis_stall() {
  sleep "$(calc %.1f "$stall_secs / 3")"
  kill -STOP "$redis_pid"
  sleep "$(calc %.1f "$stall_secs / 3")"
  kill -CONT "$redis_pid"
}

# ratelimit-redis: the same two limits on backend: redis against a redis-server of the scenario's own (one
# connection per I/O thread, timeout 20 ms): the gateway's CPU per request and redis-server's. Then the
# stall run: redis-server stopped for the middle third of the run; every answer must still be a 200 (the
# local fallback bucket decides after the timeout) and P99 stay within the downstreams' 150 ms plus the
# timeout and a margin.
redis_timeout_ms=20
scenario_ratelimit_redis() {
  local conns=100 secs=20 base_cpu base_mock base_p99 r0 r1 name
  [ $quick -eq 0 ] || { conns=20; secs=3; }
  local check_tag_header=X-Tenant check_tag_values=8
  edge_run ratelimit-redis-plain "$conns" "$secs" "ratelimit-redis-plain: a100, no limit (the reference)"
  base_cpu=$last_gw_cpu base_mock=$last_mock_req base_p99=$last_p99
  stop_servers ratelimit-redis-plain
  local route_extra top_extra
  route_extra=$(ratelimit_route redis)
  route_extra+=$'\n'
  for name in ratelimit-redis ratelimit-redis-stall; do
    start_redis "$name"
    top_extra="redis: {url: 'redis://127.0.0.1:$redis_port', timeout: ${redis_timeout_ms}ms}\n"
    if [ "$name" = ratelimit-redis ]; then
      # redis-server's CPU around the measured run (edge_run's warm-up is not in it).
      start_mock "$name" --delay 150ms
      write_http_config "$work/$name.yaml" 800ms "$conns"
      start_gateway "$name" "$work/$name.yaml"
      run_wrk "$name.warm" "$conns" $((quick == 1 ? 1 : 2)) /api/offer/aggregate
      r0=$(cpu_ticks "$redis_pid")
      measure "$name" "$conns" "$secs" "$(limit_of "$conns" 150)" \
        "$name: a100 with two limits on Redis (client, X-Tenant); latency by percentile" 0
      r1=$(cpu_ticks "$redis_pid")
      edge_versus ratelimit-redis ratelimit-redis-plain "$base_cpu" "$base_mock" "$base_p99" "$name" \
        "; redis-server CPU **$(calc %.1f "($r1 - $r0) * 1000000 / $hz / $last_requests") µs/req** (2 scripts a request); fallbacks to the local bucket $(metric_sum gateway_rate_limit_fallbacks_total), 429s $(metric_sum gateway_rate_limited_total)"
    else
      local stall_secs=$secs
      edge_run "$name" "$conns" "$secs" \
        "$name: ratelimit-redis with redis-server stopped for the middle third" redis_stall
      edge_versus ratelimit-redis ratelimit-redis-plain "$base_cpu" "$base_mock" "$base_p99" "$name" \
        " (redis-server SIGSTOPped for $(calc %.1f "$secs / 3") s of $secs); fallbacks to the local bucket $(metric_sum gateway_rate_limit_fallbacks_total), 429s $(metric_sum gateway_rate_limited_total)"
      check_target "ratelimit-redis-stall: P99 ms (150 + timeout $redis_timeout_ms + 10)" "$last_p99" "<=" \
        $((150 + redis_timeout_ms + 10))
    fi
    edge_limited "$name"
    stop_servers "$name"
    stop_process "$redis_pid"
  done
}

# floorb: b's load and downstream delays against floor-proxy (inventory over HTTP at 120 ms, as the mock
# answers it): what the same exchanges, with b's staggered answers, cost with no gateway at all.
scenario_floorb() {
  local conns=1000 secs=20
  [ $quick -eq 0 ] || { conns=50; secs=3; }
  start_mock floorb "${b_delays[@]}"
  start_floor floorb
  measure floorb "$conns" "$secs" "$(limit_of "$conns" 250)" \
    "floor (raw epoll, no gateway): $conns connections, downstream delays as in b; latency by percentile"
  stop_servers floorb
}

# coldstart: a gateway started and hit at once by 1000 connections (no warm-up), every downstream healthy
# (150 ms) with the default connect_timeout (100 ms) and breaker settings: every call opens a connection at
# first, 6000 at once. Counts degraded answers (a healthy downstream: there must be none) and the circuits
# that opened. Runs COLDSTART_RUNS times (3; 1 when quick), each with a fresh mock and gateway; the mock
# listens with the system's largest backlog, or COLDSTART_BACKLOG (511: nginx's default).
scenario_coldstart() {
  local conns=1000 secs=12 runs=${COLDSTART_RUNS:-3} run opened degraded summary=
  [ $quick -eq 0 ] || { conns=200; secs=3; runs=1; }
  for run in $(seq 1 "$runs"); do
    local name=coldstart-$run
    start_mock "$name" --delay 150ms ${COLDSTART_BACKLOG:+--backlog "$COLDSTART_BACKLOG"}
    connect_timeout=100ms write_http_config "$work/$name.yaml" 800ms "$conns"
    start_gateway "$name" "$work/$name.yaml"
    measure "$name" "$conns" "$secs" "$(limit_of "$conns" 150)" \
      "$name: $conns connections from the start, every downstream 150 ms; latency by percentile" 0
    opened=$(curl -fsS --max-time 5 "http://127.0.0.1:$admin_port/metrics" |
      awk '/^gateway_(endpoint_)?circuit_transitions_total\{.*to="open"/ {n += $2} END {print n + 0}')
    degraded=$(field "$work/$name.wrk" degraded)
    summary+="${summary:+, }run $run: $degraded degraded of $last_requests, $opened circuits opened"
    # Targets of a full run only: how many answers a loaded machine gets in time is timing, not correctness.
    check_target "$name: degraded answers from healthy downstreams" "$degraded" "<=" 0
    check_target "$name: circuits opened against healthy downstreams" "$opened" "<=" 0
    stop_servers "$name"
  done
  notes+=("- coldstart (mock backlog ${COLDSTART_BACKLOG:-somaxconn}): $summary")
}

# hang-breaker: a100's load (100 connections, 150 ms downstreams, 800 ms deadline) with coupon hung from
# the start and every circuit breaker at its defaults. Reports how long after the first request coupon's
# circuit opened, then measures a window once it is open: answers no longer wait for the deadline (only
# the half-open probes after each 5 s cooldown do).
circuit_state() {  # circuit_state DOWNSTREAM: its gateway_circuit_state sample, or empty
  curl -fsS --max-time 5 "http://127.0.0.1:$admin_port/metrics" |
    awk -v want="gateway_circuit_state{downstream=\"$1\"}" '$1 == want {print $2}'
}
scenario_hang_breaker() {
  local conns=100 secs=20 opened_ms=- t0 state=
  [ $quick -eq 0 ] || { conns=20; secs=3; }
  start_mock hang-breaker --delay 150ms --path coupon=hang
  write_http_config "$work/hang-breaker.yaml" 800ms "$conns"
  start_gateway hang-breaker "$work/hang-breaker.yaml"
  say "hang-breaker: $conns connections until coupon's circuit opens (at most 10 s)"
  t0=$(date +%s%N)
  start_wrk hang-breaker.open "$conns" 10 /api/offer/aggregate
  while kill -0 "$wrk_pid" 2>/dev/null; do
    state=$(circuit_state coupon)
    if [ "$state" = 2 ]; then
      opened_ms=$((($(date +%s%N) - t0) / 1000000))
      break
    fi
    sleep 0.01
  done
  finish_wrk hang-breaker.open
  [ "$opened_ms" != - ] || die "hang-breaker: coupon's circuit did not open within 10 s (state '$state')"
  measure hang-breaker "$conns" "$secs" "$(limit_of "$conns" 150)" \
    "hang-breaker: $conns connections, coupon hung, circuit breaker open; latency by percentile" 0
  notes+=("- hang-breaker: coupon's circuit opened $opened_ms ms after the load started (breaker defaults: 50% of at least 20 calls in 10 s); transitions to open during the run: $(curl -fsS --max-time 5 "http://127.0.0.1:$admin_port/metrics" | awk '/^gateway_circuit_transitions_total\{downstream="coupon",to="open"\}/ {print $2}')")
  stop_servers hang-breaker
  check_target "hang-breaker: P50 ms" "$last_p50" "<=" 160
  check_target "hang-breaker: P99 ms" "$last_p99" "<=" 200
}

# tail: a100's load with every downstream answering 2% of its calls in 700 ms instead of 150 ms, so that
# about 11% of the aggregated answers wait for a slow call: hedging off, then on (a hedge after the p95 of
# recent latencies, at least 155 ms, within a 10% budget). Reports the aggregate P99 and the extra calls.
hedges_so_far() {
  curl -fsS --max-time 5 "http://127.0.0.1:$admin_port/metrics" |
    awk '/^gateway_downstream_hedges_total/ {n += $2} END {print n + 0}'
}
scenario_tail() {
  local conns=100 secs=20 mode extra hedges hedges0
  [ $quick -eq 0 ] || { conns=20; secs=3; }
  for mode in off on; do
    local name=tail-hedge-$mode hedge=
    [ $mode = off ] || hedge='    hedge: {delay: p95, min_delay: 155ms, budget_percent: 10}\n'
    start_mock "$name" --delay 150ms,p98=700ms
    write_http_config "$work/$name.yaml" 800ms "$conns" "$hedge"
    start_gateway "$name" "$work/$name.yaml"
    say "$name: warm-up, 2 s"
    run_wrk "$name.warm" "$conns" 2 /api/offer/aggregate
    hedges0=$(hedges_so_far)
    measure "$name" "$conns" "$secs" "$(limit_of "$conns" 150)" \
      "$name: $conns connections, downstreams 150 ms with 2% at 700 ms, hedging $mode; latency by percentile" 0
    hedges=$(($(hedges_so_far) - hedges0))
    extra=$(calc %.1f "100 * $hedges / (6 * $last_requests)")
    notes+=("- $name: $hedges hedges while measured, $extra% of the $((6 * last_requests)) calls of its answers")
    stop_servers "$name"
    [ $mode = off ] || {
      check_target "tail: P99 ms with hedging" "$last_p99" "<=" 330
      check_target "tail: extra calls with hedging, %" "$extra" "<=" 10
    }
  done
}

# flap: coupon alternates between healthy and hung every 5 s while 100 connections run for 30 s; the good
# (not degraded) answers per second with the circuit breaker at its defaults, with consecutive_failures: 5
# as well, and with it off.
flap_toggle() {  # runs in the background: coupon hung in odd 5 s periods, healthy in even ones
  local i
  for i in 1 2 3 4 5 6; do
    sleep 5
    if [ $((i % 2)) -eq 1 ]; then
      curl -fsS --max-time 2 "http://127.0.0.1:$mock_port/__control?path=coupon&mode=hang" >/dev/null
    else
      curl -fsS --max-time 2 "http://127.0.0.1:$mock_port/__control?path=coupon&mode=ok" >/dev/null
    fi
  done
}
scenario_flap() {
  local conns=100 secs=30 mode toggler
  [ $quick -eq 0 ] || { conns=20; secs=6; }
  for mode in on consecutive off; do
    local name=flap-breaker-$mode extra=
    [ $mode = off ] && extra='    circuit_breaker: {enabled: false}\n'
    [ $mode = consecutive ] && extra='    circuit_breaker: {consecutive_failures: 5}\n'
    start_mock "$name" --delay 150ms
    write_http_config "$work/$name.yaml" 800ms "$conns" "$extra"
    start_gateway "$name" "$work/$name.yaml"
    flap_toggle &
    toggler=$!
    pids+=("$toggler")
    measure "$name" "$conns" "$secs" "$(limit_of "$conns" 150)" \
      "$name: $conns connections, coupon hung every other 5 s, circuit breaker $mode; latency by percentile" 0
    kill "$toggler" 2>/dev/null || true
    wait "$toggler" 2>/dev/null || true
    forget "$toggler"
    notes+=("- $name: good answers per second $(calc %.1f "$(field "$work/$name.wrk" good) / $(field "$work/$name.wrk" duration_us) * 1000000"), all answers per second $last_rps")
    stop_servers "$name"
  done
}

# c: coupon hangs; 800 ms deadline; sequential single requests timed by curl.
scenario_c() {
  local n=20 i out code ms bad=0
  [ $quick -eq 0 ] || n=3
  start_mock c --delay 150ms --path coupon=hang
  write_http_config "$work/c.yaml" 800ms 10
  start_gateway c "$work/c.yaml"
  say "c: $n sequential requests, coupon hangs, deadline 800 ms"
  : >"$work/c.times"
  for i in $(seq 1 "$n"); do
    out=$(curl -sS -o "$work/c.body" -w '%{http_code} %{time_total}' --max-time 5 \
      "http://127.0.0.1:$gw_port/api/offer/aggregate?sku=A$i") || out="000 5"
    code=${out% *}
    ms=$(calc %.1f "${out#* } * 1000")
    echo "$ms" >>"$work/c.times"
    if [ "$code" != 200 ] || [ "$(grep -o '"source":' "$work/c.body" | wc -l)" -ne 6 ] ||
      ! grep -Eq '\{"source":"coupon"[^}]*"degraded":true' "$work/c.body"; then
      bad=$((bad + 1))
      problem "c: request $i answered $code in $ms ms without six entries and a degraded coupon: $(head -c 300 "$work/c.body")"
    fi
  done
  local rss
  rss=$(status_kb "$gw_pid" VmHWM)
  # The gateway closes the hung coupon connection at the deadline; the mock counts it as cancelled.
  local cancelled=0
  for i in $(seq 1 40); do
    cancelled=$(mock_stats | grep -o '"cancelled":[0-9]*' | sed -n 1p | cut -d: -f2) || cancelled=0
    [ "${cancelled:-0}" -ge "$n" ] && break
    sleep 0.05
  done
  stop_servers c
  sort -n "$work/c.times" >"$work/c.sorted"
  local min median p90 max
  min=$(head -n 1 "$work/c.sorted")
  median=$(sed -n "$(((n + 1) / 2))p" "$work/c.sorted")
  p90=$(sed -n "$(((n * 9 + 9) / 10))p" "$work/c.sorted")
  max=$(tail -n 1 "$work/c.sorted")
  awk -v n="$n" '{printf "%.3f %s\n", 100 * (NR - 1) / n, $1}' "$work/c.sorted" >"$work/c.dat"
  # CPU time is not shown: a few requests' worth is below the 10 ms resolution of /proc/PID/stat.
  add_row c 1 - - 0 "$median" "$p90" - - "$bad" - "$rss" - -
  notes+=("- c: $n sequential requests with coupon hanging, deadline 800 ms: min/median/max $min/$median/$max ms; $((n - bad))/$n were 200 with coupon degraded; hung coupon calls the mock saw cancelled: $cancelled/$n")
  check_target "c: slowest answer with a hung downstream, ms" "$max" "<=" 805
  plot c "c: coupon hangs, deadline 800 ms, $n sequential requests; time to answer"
}

# d: as many aggregations in flight as the open-file limit allows (each holds 7 gateway sockets, 6 mock
# sockets); memory per in-flight aggregation from VmRSS idle vs loaded.
# The probe samples every 0.5 s from 3 s until 3 s before the end and keeps the moment with the most
# requests in flight (the ramp to n takes a few seconds on a small machine).
d_probe() {
  local end=$((SECONDS + d_secs - 3)) active
  d_active=-1
  sleep 3
  while :; do
    active=$(metric http_server_active_requests) || active=0
    active=${active:-0}
    if [ "${active%.*}" -ge "$d_active" ]; then
      d_active=${active%.*}
      d_rss_loaded=$(status_kb "$gw_pid" VmRSS)
      d_coroutines=$(metric gateway_coroutines_active)
    fi
    [ $SECONDS -lt $end ] || break
    sleep 0.5
  done
}
scenario_d() {
  local limit n
  d_secs=15
  limit=$(ulimit -n)
  # wrk, the gateway and the mock each have this limit; 500 descriptors of headroom for the rest.
  n=$(((limit - 500) / 7))
  [ $(((limit - 500) / 6)) -ge "$n" ] || n=$(((limit - 500) / 6))
  [ $quick -eq 0 ] || { n=100; d_secs=7; }
  start_mock d --delay 2s
  write_http_config "$work/d.yaml" 5s "$n"
  start_gateway d "$work/d.yaml"
  say "d: warm-up, 20 connections, 3 s"
  run_wrk d.warm 20 3 /api/offer/aggregate
  sleep 1
  local rss_idle
  rss_idle=$(status_kb "$gw_pid" VmRSS)
  # No warm-up at n connections: its abandoned requests would only add noise.
  measure d "$n" "$d_secs" "$(limit_of "$n" 2000)" \
    "d: $n aggregations in flight, downstreams 2 s; latency by percentile" 0 d_probe
  # The gateway's own view of its answers: how many it timed at more than the 5 s deadline.
  local late
  late=$(curl -fsS --max-time 5 "http://127.0.0.1:$admin_port/metrics" | awk '
    /^http_server_request_duration_seconds_bucket\{http_route="\/api\/offer\/aggregate"/ && !/http_response_status_code="499"/ {
      if ($1 ~ /le="5"/) within += $2; else if ($1 ~ /le="\+Inf"/) total += $2 }
    END {printf "%d of %d", total - within, total}')
  stop_servers d
  [ "$d_active" -gt 0 ] || die "d: no request in flight while wrk ran"
  local per
  per=$(calc %.0f "($d_rss_loaded - $rss_idle) * 1024 / $d_active")
  notes+=("- d: open-file limit $limit -> $n connections; at the sample with the most in flight: http_server_active_requests $d_active, gateway_coroutines_active $d_coroutines ($(calc %.2f "$d_coroutines / $d_active") per aggregation: one per connection; HTTP calls need none, a SQL call one), gateway VmRSS $d_rss_loaded kB vs $rss_idle kB idle: $per bytes per in-flight aggregation; answers since its start (warm-up included) that the gateway timed at over its 5 s deadline: $late")
  check_target "d: memory per in-flight aggregation, bytes" "$per" "<=" 25000
}

# e: the database branch. PostgreSQL (loadtest/db-queue.sh: permits 24 over a pool of 32, a query sleeping
# 20 ms) when a throwaway cluster starts; else SQLite with the shipped downstream settings.
scenario_e() {
  local conns=1000 secs=10
  [ $quick -eq 0 ] || { conns=50; secs=3; }
  if [ "${BENCH_DB:-}" != sqlite ] && ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    say "e: PostgreSQL, $conns connections, $secs s (loadtest/db-queue.sh)"
    if CHECK_LATENCY_FILE=$work/e.dat loadtest/db-queue.sh "$conns" 0.02 "$secs" 24 32 2s >"$work/e.out" 2>&1; then
      scenario_e_report "$conns" "$secs"
      return
    fi
    grep -q "^capacity limit" "$work/e.out" && die "e: db-queue.sh failed: $(tail -n 20 "$work/e.out")"
    notes+=("- e: the PostgreSQL cluster did not start ($(tail -n 1 "$work/e.out")); SQLite instead")
  elif [ $quick -eq 1 ] && [ "${BENCH_DB:-}" != sqlite ]; then
    notes+=("- e: skipped (PostgreSQL is not installed)")
    return
  fi
  scenario_e_sqlite "$conns" "$secs"
}

scenario_e_report() {
  local conns=$1 secs=$2 out=$work/e.out
  local rps limit requests answers bad errors max_q
  rps=$(awk '/^Requests\/sec:/ {printf "%.1f", $2}' "$out")
  limit=$(awk '/^capacity limit:/ {print $3}' "$out")
  requests=$(field "$out" requests)
  answers=$(field "$out" answers)
  bad=$(field "$out" bad)
  errors=$(($(field "$out" connect) + $(field "$out" read) + $(field "$out" write) + $(field "$out" timeout) + bad))
  max_q=$(sed -n 's/^max concurrent queries seen by the server: //p' "$out")
  add_row e "$conns" "$rps" "$limit" "$(calc %.1f "$rps * $(field "$out" good) / ($answers > 0 ? $answers : 1)")" \
    "$(calc %.1f "$(field "$out" p50)")" "$(calc %.1f "$(field "$out" p90)")" "$(calc %.1f "$(field "$out" p99)")" \
    "$(calc %.1f "$(field "$out" p999)")" "$errors" \
    "$(sed -n 's/^gateway CPU per request: \([0-9]*\) us/\1/p' "$out")" \
    "$(sed -n 's/^gateway peak RSS: \([0-9]*\) kB/\1/p' "$out")" - -
  notes+=("- e: PostgreSQL, one call per request (a query sleeping 20 ms), permits 24 over a pool of 32, deadline 2 s: $requests requests, $(field "$out" degraded) degraded, $bad bad; most queries running at once as pg_stat_activity saw them: $max_q (bound: 24)")
  [ "$errors" -eq 0 ] || problem "e: $errors errors ($bad bad answers)"
  [ "${max_q:-0}" -le 24 ] || problem "e: $max_q queries ran at once, more than the 24 permits"
  plot e "e: PostgreSQL, $conns connections, permits 24 / pool 32, query 20 ms; latency by percentile"
}

e_probe() {
  local min=24 free end=$((SECONDS + e_secs))
  while [ $SECONDS -lt $end ]; do
    free=$(metric gateway_db_semaphore_permits_available) || free=24
    free=${free:-24}
    [ "${free%.*}" -ge "$min" ] || min=${free%.*}
    sleep 0.02
  done
  echo "$min" >"$work/e.min_free"
}
scenario_e_sqlite() {
  local conns=$1
  e_secs=$2
  scripts/seed-db.sh data/offers.db >&2
  {
    printf 'server:\n  listen: 127.0.0.1:0\nadmin:\n  listen: 127.0.0.1:0\nlog:\n  access: false\n'
    printf 'shutdown:\n  drain_delay: 0s\ndownstreams:\n'
    sed -n '/^  inventory:/,/^  [a-z-]*:$/p' config/gateway.yaml | sed '$d'
    cat <<'YAML'
routes:
  - path: /api/db
    deadline: 800ms
    params:
      sku: {required: true}
    calls:
      - name: inventory
        downstream: inventory
        fallback: {priceCent: -1, stock: 0}
YAML
  } >"$work/e.yaml"
  mock_pid=""
  start_gateway e "$work/e.yaml"
  measure e "$conns" "$e_secs" - "e: SQLite, $conns connections, permits 24 / pool 32; latency by percentile" \
    "" e_probe /api/db 1
  stop_servers e
  notes+=("- e: SQLite (shipped downstream settings), one call per request: most permits in use at once, from /metrics every 20 ms: $((24 - $(cat "$work/e.min_free"))) (bound: 24)")
}

# proxy: pass-through routes. GET of a 1 KiB and of a 1 MiB body through a proxy route (/files/ forwarded
# as /blob/ to the mock, which serves /blob/1k and /blob/1m from --body files of exactly that size, at
# once), at 100 and 1000 connections; after each gateway run the same load against nginx as a plain
# reverse proxy to the mock, when nginx is installed. wrk checks the answers with check-bytes.lua.
# Each run has a fresh mock and server, so that each peak RSS is that run's.
proxy_sizes=(1k:1024 1m:1048576)
proxy_max_rss_mb=64  # the gateway streams through fixed buffers: 1 MiB bodies at 1000 connections

# write_proxy_config FILE MAX_CLIENT_CONNECTIONS: one http downstream (the mock) behind /files/.
write_proxy_config() {
  local file=$1 clients=$2
  {
    gateway_config_prelude "$clients"
    cat <<YAML
downstreams:
  files:
    url: http://127.0.0.1:$mock_port
    connect_timeout: 2s
    max_connections: $(((clients + 64) * $(nproc)))
routes:
  - path_prefix: /files/
    proxy:
      downstream: files
      rewrite: /blob/
      timeout: 30s
      idle_timeout: 60s
YAML
  } >"$file"
}

nginx_program() { command -v nginx 2>/dev/null || { [ ! -x /usr/sbin/nginx ] || echo /usr/sbin/nginx; }; }
nginx_bin=""  # set by scenario_proxy: nginx_program's answer, empty when nginx is not installed

# write_nginx_config DIR PORT CONNS: nginx as a plain reverse proxy to the mock, as the gateway runs: one
# worker per core, a keep-alive pool to the mock, no access log, in the foreground, every path in DIR.
# Buffering stays on (nginx's usual mode) within 16 KiB + 4 x 16 KiB per exchange in memory and never on
# disk (proxy_max_temp_file_size 0: a full buffer pauses the read from the mock), fixed buffers as the
# gateway's; keepalive_requests high on both sides so that no connection is closed during a run.
write_nginx_config() {
  local dir=$1 port=$2 conns=$3 temp='' module
  # Temporary paths of the modules built in (their default paths are outside DIR, under /var/lib/nginx).
  for module in fastcgi uwsgi scgi; do
    "$nginx_bin" -V 2>&1 | grep -q -- "--without-http_${module}_module" ||
      temp+="  ${module}_temp_path $dir/temp/$module;"$'\n'
  done
  cat >"$dir/nginx.conf" <<NGINX
worker_processes $(nproc);
worker_rlimit_nofile $(ulimit -n);
daemon off;
master_process on;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events {
  worker_connections $((2 * conns + 256));
}
http {
  access_log off;
  keepalive_requests 1000000;
  client_body_temp_path $dir/temp/body;
  proxy_temp_path $dir/temp/proxy;
$temp  upstream mock {
    server 127.0.0.1:$mock_port;
    keepalive $conns;
    keepalive_requests 1000000;
  }
  server {
    listen 127.0.0.1:$port backlog=4096;
    location /files/ {
      proxy_pass http://mock/blob/;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering on;
      proxy_buffer_size 16k;
      proxy_buffers 4 16k;
      proxy_busy_buffers_size 32k;
      proxy_max_temp_file_size 0;
    }
  }
}
NGINX
}

# start_nginx NAME CONNS: nginx in the gateway's place, on a free port below the ephemeral range (nginx
# cannot report a port the kernel picked); sets gw_pid (the master), gw_procs (master and workers),
# gw_port, and no admin_port.
start_nginx() {
  local name=$1 conns=$2 dir=$work/$1.nginx try i workers
  mkdir -p "$dir/temp"
  for try in 1 2 3 4 5; do
    gw_port=$((20000 + RANDOM % 12000))
    write_nginx_config "$dir" "$gw_port" "$conns"
    "$nginx_bin" -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf" \
      >"$work/$name.nginx.out" 2>"$work/$name.nginx.err" &
    gw_pid=$!
    pids+=("$gw_pid")
    for i in $(seq 1 200); do
      curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$gw_port/files/1k" 2>/dev/null && break
      kill -0 "$gw_pid" 2>/dev/null || break
      sleep 0.05
    done
    if kill -0 "$gw_pid" 2>/dev/null; then
      curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$gw_port/files/1k" ||
        die "nginx did not answer within 10 s; its error log ends with: $(tail -n 5 "$dir/error.log" 2>/dev/null)"
      break
    fi
    stop_process "$gw_pid"
    grep -q "Address already in use" "$dir/error.log" "$work/$name.nginx.err" 2>/dev/null ||
      die "nginx exited at start; its error log ends with: $(tail -n 5 "$dir/error.log" "$work/$name.nginx.err" 2>/dev/null)"
    [ "$try" -lt 5 ] || die "nginx found no free port in 5 tries"
  done
  for i in $(seq 1 100); do  # its workers (the master forks them before they accept)
    workers=$(pgrep -P "$gw_pid" | wc -l)
    [ "$workers" -lt "$(nproc)" ] || break
    sleep 0.05
  done
  mapfile -t gw_procs < <(echo "$gw_pid"; pgrep -P "$gw_pid")
  admin_port=""
}

# proxy_run NAME SERVER CONNS SECS SIZE BYTES: one measured run against the gateway or nginx; sets
# proxy_ran (whether it did: the gateway may refuse proxy routes).
proxy_run() {
  local name=$1 server=$2 conns=$3 secs=$4 size=$5 bytes=$6
  local wrk_script=loadtest/lua/check-bytes.lua check_bytes=$bytes
  proxy_ran=0
  start_mock "$name" --body "blob/1k=@$work/proxy-1k.json" --body "blob/1m=@$work/proxy-1m.json"
  if [ "$server" = gateway ]; then
    write_proxy_config "$work/$name.yaml" "$conns"
    if ! "$bin/gateway" --check "$work/$name.yaml" >"$work/$name.check" 2>&1; then
      # A binary without proxy routes refuses the key; another refusal is this script's fault.
      if grep -q "unknown key 'proxy'" "$work/$name.check"; then
        proxy_gateway="gateway: proxy routes not supported by this binary (\`gateway --check\`: \"route: unknown key 'proxy'\"); no gateway rows"
      else
        proxy_gateway="gateway: it refused the proxy config: $(sed 's/^[^ ]*: //' "$work/$name.check" | head -n 3 | tr '\n' ' ')"
        problem "proxy: $proxy_gateway"
      fi
      stop_servers "$name"
      return
    fi
    start_gateway "$name" "$work/$name.yaml"
  else
    start_nginx "$name" "$conns"
  fi
  measure "$name" "$conns" "$secs" - "$name: GET of $size through $server, $conns connections; latency by percentile" \
    "" "" "/files/$size"
  stop_servers "$name"
  proxy_ran=1
}

scenario_proxy() {
  local conns_list=(100 1000) secs_1k=20 secs_1m=10 spec size bytes conns secs gw_cpu ng_cpu pair
  [ $quick -eq 0 ] || { conns_list=(20 100); secs_1k=2; secs_1m=2; }
  nginx_bin=$(nginx_program) || true
  proxy_gateway=""
  for spec in "${proxy_sizes[@]}"; do  # {"pad":"xxx..."}: JSON, as --body wants, of exactly that size
    size=${spec%%:*} bytes=${spec#*:}
    { printf '{"pad":"'; head -c $((bytes - 10)) /dev/zero | tr '\0' x; printf '"}'; } >"$work/proxy-$size.json"
  done
  for spec in "${proxy_sizes[@]}"; do
    size=${spec%%:*} bytes=${spec#*:} secs=$secs_1k
    [ "$size" = 1k ] || secs=$secs_1m
    for conns in "${conns_list[@]}"; do
      gw_cpu='' ng_cpu='' pair="proxy $size at $conns connections:"
      if [ -z "$proxy_gateway" ]; then
        proxy_run "proxy-$size-c$conns" gateway "$conns" "$secs" "$size" "$bytes"
        if [ "$proxy_ran" = 1 ]; then
          gw_cpu=$last_gw_cpu
          pair+=" gateway $last_rps req/s, $last_gw_cpu µs/req, peak RSS $(calc %.1f "$last_rss / 1024") MB, $(field "$work/proxy-$size-c$conns.wrk" per_answer) bytes read per answer;"
          [ "$size" != 1m ] || [ "$conns" != 1000 ] ||
            check_target "proxy: gateway peak RSS, 1 MiB bodies at 1000 connections, MB" \
              "$(calc %.1f "$last_rss / 1024")" "<=" "$proxy_max_rss_mb"
        fi
      fi
      if [ -n "$nginx_bin" ]; then
        proxy_run "proxy-$size-c$conns-nginx" nginx "$conns" "$secs" "$size" "$bytes"
        ng_cpu=$last_gw_cpu
        pair+=" nginx $last_rps req/s, $last_gw_cpu µs/req, peak RSS (master and workers) $(calc %.1f "$last_rss / 1024") MB, $(field "$work/proxy-$size-c$conns-nginx.wrk" per_answer) bytes read per answer;"
      fi
      [ -z "$gw_cpu" ] || [ -z "$ng_cpu" ] || [ "$ng_cpu" -eq 0 ] ||
        pair+=" gateway CPU per request $(calc %.2f "$gw_cpu / $ng_cpu") times nginx's;"
      [ -z "$gw_cpu$ng_cpu" ] || notes+=("- ${pair%;}")
    done
  done
  [ -z "$proxy_gateway" ] || notes+=("- proxy: $proxy_gateway")
  [ -n "$nginx_bin" ] || notes+=("- proxy: nginx is not installed: no nginx rows (Debian: \`apt-get install nginx-light\`)")
}

# soak: mixed traffic for a bounded time while the gateway's RSS is sampled; after a warm-up the RSS must
# stay flat. Loads, all at once: wrk on the normal route (every downstream 150 ms), wrk on a route whose
# coupon call hangs (every answer at the 800 ms deadline, coupon degraded), and clients that give up
# mid-request at a steady rate (soak_aborts). Growth that lasts past the warm-up is memory kept per
# request or per connection: a slope of the RSS samples (least squares) per minute and per 1000 aborted
# requests, judged against soak_max_kb_per_min and soak_max_kb_per_1000_aborts.
soak_max_kb_per_min=256
soak_max_kb_per_1000_aborts=100

# soak_aborts INDEX PERIOD END: until END (epoch seconds), once per PERIOD seconds: connects, sends a
# request (to the normal and the hung route in turn), gives up after 0.1 s, before any answer can come
# (150 ms and 800 ms), and closes. Writes how many it sent to $work/soak.aborts.INDEX.
soak_aborts() {
  local index=$1 period=$2 end=$3 sent=0 fd path pause
  pause=$(calc %.3f "($period > 0.1 ? $period - 0.1 : 0)")
  while [ "$EPOCHSECONDS" -lt "$end" ]; do
    path=/api/offer/aggregate
    [ $((sent % 2)) -eq 0 ] || path=/api/offer/hung
    if exec {fd}<>"/dev/tcp/127.0.0.1/$gw_port"; then
      printf 'GET %s?sku=A%d HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n' "$path" $((sent % 10000 + 1)) >&"$fd" || true
      read -r -t 0.1 -u "$fd" || true
      exec {fd}>&-
      sent=$((sent + 1))
    fi 2>/dev/null
    sleep "$pause"
  done
  echo "$sent" >"$work/soak.aborts.$index"
}

# soak_sample: appends "seconds VmRSS_kB aborts_seen open_fds" to $work/soak.samples (aborts_seen: the
# gateway's gateway_client_disconnects_total, requests whose client left before the answer).
soak_sample() {
  local t rss seen fds
  t=$(calc %.2f "$EPOCHREALTIME - $soak_t0")
  rss=$(status_kb "$gw_pid" VmRSS)
  seen=$(metric gateway_client_disconnects_total) || seen=0
  fds=$(find "/proc/$gw_pid/fd" -mindepth 1 -maxdepth 1 | wc -l)
  echo "$t $rss ${seen:-0} $fds" >>"$work/soak.samples"
}

# fit X Y FROM FILE: least-squares slope and intercept of column Y against column X over the lines whose
# first column is at least FROM: "slope intercept n" ("nan nan n" with fewer than three points).
fit() {
  awk -v x="$1" -v y="$2" -v from="$3" '$1 >= from {n++; sx += $x; sy += $y; sxx += $x * $x; sxy += $x * $y}
    END {d = n * sxx - sx * sx
         if (n < 3 || d == 0) {print "nan nan", n + 0; exit}
         b = (n * sxy - sx * sy) / d; printf "%.6f %.3f %d\n", b, (sy - b * sx) / n, n}' "$4"
}

# The gauges that must be back at zero once the load has stopped: requests, coroutines, client connections.
soak_busy() {
  curl -fsS --max-time 5 "http://127.0.0.1:$admin_port/metrics" | awk '
    $1 == "http_server_active_requests" || $1 == "gateway_coroutines_active" || $1 == "gateway_open_connections" {
      if ($2 != 0) busy = busy sep $1 "=" $2; sep = ", " }
    END {print busy}'
}

scenario_soak() {
  local secs=${SOAK_SECONDS:-120} rate=${SOAK_ABORT_RATE:-10} every=${SOAK_SAMPLE:-5} normal=50 hung=200
  if [ $quick -eq 1 ]; then
    secs=${SOAK_SECONDS:-8} every=${SOAK_SAMPLE:-1} normal=10 hung=20
  fi
  local warm=${SOAK_WARMUP:-$((secs / 4))}
  [ "$warm" -lt "$secs" ] || die "soak: SOAK_WARMUP ($warm) must be shorter than SOAK_SECONDS ($secs)"
  start_mock soak --delay 150ms --path coupon-hung=hang
  write_http_config "$work/soak.yaml" 800ms $((normal + hung + 100))
  {
    # The same six calls behind a second route, its coupon call on a path the mock never answers.
    sed -n '/^  - path: \/api\/offer\/aggregate$/,$p' "$work/soak.yaml" |
      sed -e 's|^  - path: /api/offer/aggregate$|  - path: /api/offer/hung|' -e 's|path: /coupon?|path: /coupon-hung?|'
  } >"$work/soak.hung.yaml"
  cat "$work/soak.hung.yaml" >>"$work/soak.yaml"
  start_gateway soak "$work/soak.yaml"
  local fds0 g0 g1
  fds0=$(find "/proc/$gw_pid/fd" -mindepth 1 -maxdepth 1 | wc -l)
  g0=$(cpu_ticks "$gw_pid")

  # int(rate / 4) + 1 abort loops side by side, each once every loops / rate seconds: at least 0.25 s, more
  # than the 0.1 s each holds its request.
  local loops period i
  loops=$(calc %d "$rate * 0.25 + 1")
  period=$(calc %.3f "$loops / $rate")
  say "soak: $secs s (first $warm s a warm-up): wrk $normal connections on the normal route, $hung on the hung one, $rate aborted requests/s ($loops loops), RSS every $every s"
  soak_t0=$EPOCHREALTIME
  local end=$((EPOCHSECONDS + secs)) wrk_normal wrk_hung
  start_wrk soak "$normal" "$secs" /api/offer/aggregate
  wrk_normal=$wrk_pid
  start_wrk soak.hung "$hung" "$secs" /api/offer/hung
  wrk_hung=$wrk_pid
  local abort_pids=()
  for i in $(seq 1 "$loops"); do
    soak_aborts "$i" "$period" "$end" &
    abort_pids+=($!)
    pids+=($!)
  done
  # The last sample comes before wrk stops: its connections, closed mid-request, count as disconnects.
  : >"$work/soak.samples"
  while awk "BEGIN {exit !($EPOCHREALTIME - $soak_t0 < $secs - 0.5)}"; do
    soak_sample
    sleep "$every"
  done
  for i in "${abort_pids[@]}"; do
    wait "$i" || true
    forget "$i"
  done
  wrk_pid=$wrk_normal
  finish_wrk soak
  wrk_pid=$wrk_hung
  finish_wrk soak.hung
  g1=$(cpu_ticks "$gw_pid")

  # Idle again: no request, coroutine or client connection left (bounded wait).
  local busy
  for i in $(seq 1 100); do
    busy=$(soak_busy) || busy="no /metrics answer"
    [ -n "$busy" ] || break
    sleep 0.05
  done
  local fds1 rss_end hwm
  fds1=$(find "/proc/$gw_pid/fd" -mindepth 1 -maxdepth 1 | wc -l)
  rss_end=$(status_kb "$gw_pid" VmRSS)
  hwm=$(status_kb "$gw_pid" VmHWM)
  stop_servers soak
  [ -z "$busy" ] || problem "soak: once the load stopped the gateway still had $busy"

  local sent=0 f
  for f in "$work"/soak.aborts.*; do [ ! -s "$f" ] || sent=$((sent + $(cat "$f"))); done
  local samples=$work/soak.samples by_time by_abort
  by_time=$(fit 1 2 "$warm" "$samples")
  by_abort=$(fit 3 2 "$warm" "$samples")
  local kb_min kb_1000 n_fit
  kb_min=$(calc %.1f "${by_time%% *} * 60")
  kb_1000=$(calc %.1f "${by_abort%% *} * 1000")
  n_fit=${by_time##* }
  local after seen
  after=$(awk -v from="$warm" '$1 >= from {if (n++ == 0) {f = $2; a = $3; lo = $2; hi = $2; flo = $4; fhi = $4}
      if ($2 < lo) lo = $2; if ($2 > hi) hi = $2; if ($4 < flo) flo = $4; if ($4 > fhi) fhi = $4; l = $2; la = $3}
    END {printf "%d %d %d %d %d %d-%d", f, l, lo, hi, la - a, flo, fhi}' "$samples")
  local rss_first rss_last rss_lo rss_hi aborts_measured fd_range
  read -r rss_first rss_last rss_lo rss_hi aborts_measured fd_range <<<"$after"
  seen=$(tail -n 1 "$samples" | cut -d' ' -f3)

  local out=$work/soak.wrk out_hung=$work/soak.hung.wrk requests hung_requests secs_run errors bad
  requests=$(field "$out" requests)
  hung_requests=$(field "$out_hung" requests)
  [ "$requests" -gt 0 ] && [ "$hung_requests" -gt 0 ] || die "soak: no request completed; wrk said: $(tail -n 5 "$out")"
  secs_run=$(calc %.3f "$(field "$out" duration_us) / 1000000")
  bad=$(($(field "$out" bad) + $(field "$out_hung" bad)))
  errors=$(($(field "$out" connect) + $(field "$out" read) + $(field "$out" write) + $(field "$out" timeout) +
    $(field "$out_hung" connect) + $(field "$out_hung" read) + $(field "$out_hung" write) +
    $(field "$out_hung" timeout) + bad))
  add_row soak "$normal+$hung" "$(calc %.1f "($requests + $hung_requests) / $secs_run")" \
    "$(calc %.1f "$normal * 1000 / 150 + $hung * 1000 / 800")" \
    "$(calc %.1f "$(field "$out" good) / $secs_run")" "$(calc %.1f "$(field "$out" p50)")" \
    "$(calc %.1f "$(field "$out" p90)")" "$(calc %.1f "$(field "$out" p99)")" "$(calc %.1f "$(field "$out" p999)")" \
    "$errors" "$(calc %.0f "($g1 - $g0) * 1000000 / $hz / ($requests + $hung_requests + $seen)")" "$hwm" - -
  local verdict="flat"
  if [ $quick -eq 1 ]; then
    verdict="not judged in a quick run"
  elif [ "$kb_min" = nan ] || awk "BEGIN {exit !($kb_min > $soak_max_kb_per_min || $kb_1000 > $soak_max_kb_per_1000_aborts)}"; then
    verdict="GROWING"
  fi
  notes+=("- soak: $secs s, the first $warm s a warm-up; latencies in the row are the normal route's. Normal route $(field "$out" answers) answers ($(field "$out" degraded) degraded), hung route $(field "$out_hung" answers) answers ($(field "$out_hung" degraded) degraded, expected: all), $bad bad; aborted requests sent $sent, seen by the gateway $seen ($aborts_measured after the warm-up). VmRSS after the warm-up, $n_fit samples every $every s: $rss_first -> $rss_last kB (min $rss_lo, max $rss_hi), ${kb_min} KB/min, ${kb_1000} KB per 1000 aborted requests (flat: <= $soak_max_kb_per_min and <= $soak_max_kb_per_1000_aborts): **$verdict**; once idle: VmRSS $rss_end kB, open fds $fds1 (at start $fds0, $fd_range after the warm-up), gauges back to zero: $([ -z "$busy" ] && echo yes || echo "no ($busy)")")
  [ "$errors" -eq 0 ] || problem "soak: $errors errors ($bad bad answers)"
  check_target "soak: RSS growth after the warm-up, KB/min" "$kb_min" "<=" "$soak_max_kb_per_min"
  check_target "soak: RSS growth per 1000 aborted requests, KB" "$kb_1000" "<=" "$soak_max_kb_per_1000_aborts"
  gnuplot -e "data='$samples'; out='$results/soak.png'; warm=$warm; slope=${by_time%% *}; base=$(echo "$by_time" | cut -d' ' -f2); name='soak: gateway VmRSS, $rate aborts/s; ${kb_min} KB/min after the warm-up'" \
    loadtest/soak.gp 2>"$work/soak.gnuplot" || die "gnuplot failed for soak: $(cat "$work/soak.gnuplot")"
}

# ------------------------------------------------------------------------------------------------- main

scripts/setup.sh build test bench >&2 || die "installing packages failed"
if [ $build -eq 1 ]; then
  say "building release (scripts/build.sh release)"
  scripts/build.sh release >"$work/build.log" 2>&1 || die "build failed: $(tail -n 30 "$work/build.log")"
fi
[ -x "$bin/gateway" ] && [ -x "$bin/mock-downstream" ] || die "no release binaries in $bin"

ulimit -n "$(ulimit -Hn)" 2>/dev/null || ulimit -n 1048576 2>/dev/null || true
mkdir -p "$results"
started=$(date -u '+%Y-%m-%d %H:%M UTC')
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for s in "${scenarios[@]}"; do "scenario_${s//-/_}"; done

machine="$(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | sed -n 1p), Linux $(uname -r), $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)"
{
  echo "# Benchmark results"
  echo
  echo "- run: \`loadtest/bench.sh$([ $quick -eq 0 ] || echo " --quick") ${scenarios[*]}\`, $started"
  echo "- machine: $machine; load average before the run: $load_before"
  echo "- gateway: $("$bin/gateway" --version 2>&1 | sed -n 1p), source $(git describe --always --dirty 2>/dev/null || echo unknown); wrk threads $wrk_threads, mock threads $mock_threads; open-file limit $(ulimit -n)"
  echo
  echo "| scenario | conns | req/s (of limit) | good req/s | P50 ms | P90 ms | P99 ms | P99.9 ms | errors | gateway CPU µs/req | gateway peak RSS MB | mock CPU µs/req (/call) |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  printf '%s\n' "${rows[@]}"
  echo
  printf '%s\n' "${notes[@]}"
  if [ ${#checks[@]} -gt 0 ]; then
    echo
    echo "Targets:"
    echo
    printf '%s\n' "${checks[@]}"
  fi
  if [ ${#problems[@]} -gt 0 ]; then
    echo
    echo "Problems:"
    echo
    printf -- '- %s\n' "${problems[@]}"
  fi
} >"$results/latest.md"
cat "$results/latest.md"

if [ $quick -eq 1 ] && [ ${#problems[@]} -gt 0 ]; then
  echo "bench.sh: --quick failed: ${#problems[@]} problem(s), see above" >&2
  exit 1
fi
