#!/usr/bin/env bash
# Times scripts/run.sh as a new user meets it: the tree of REV (default HEAD, via git archive) in a fresh
# Debian 12 container with 2 CPUs (the minbase image deploy/ci.sh imports; no packages beyond minbase, no
# ccache), from the start to the first answered GET /api/offer/aggregate?sku=A1. Run on an idle machine,
# as root (rootful podman); CONTAINERS_CONF defaults to ulimits this kind of machine accepts.
#   loadtest/quickstart-time.sh [REV]
set -euo pipefail
rev=${1:-HEAD}
cd "$(dirname "$0")/.."
if [ -z "${CONTAINERS_CONF:-}" ]; then
  conf=$(mktemp)
  trap 'rm -f "$conf"' EXIT
  printf '[containers]\ndefault_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]\n[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n[network]\nnetwork_backend = "netavark"\n' >"$conf"
  export CONTAINERS_CONF=$conf
fi
git archive "$rev" | podman run --rm -i --network host --cpus 2 docker.io/library/debian:bookworm bash -c '
  set -e
  mkdir /w && cd /w && tar -x
  start=$(date +%s)
  (scripts/run.sh > /tmp/run.out 2>&1 &)
  request="GET /api/offer/aggregate?sku=A1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
  until (exec 3<>/dev/tcp/127.0.0.1/8080 && printf "$request" >&3 && head -c 12 <&3 | grep -q 200) 2>/dev/null; do
    sleep 1
    [ $(( $(date +%s) - start )) -lt 1500 ] || { tail -30 /tmp/run.out; echo "no answer after 1500 s"; exit 1; }
  done
  echo "quick start: first aggregate answer after $(( $(date +%s) - start )) s"
'
