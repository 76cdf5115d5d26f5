#!/usr/bin/env bash
# Installs the Debian 12 packages of the named groups (only those missing). Idempotent.
#   scripts/setup.sh [GROUP...]     default: build test
#   build   compiler, CMake, Ninja, ccache and the libraries (what the Dockerfile's build stage needs)
#   test    the test suite: Catch2, PostgreSQL and redis-server (throwaway servers), sqlite3, curl, python3-h11
#           (conformance),#           python3-jsonschema and python3-yaml (the configuration schema), openssl, Node.js and npm (the
#           OTLP receiver of tests/tracing), prometheus (promtool and the server, tests/monitoring), chromium
#           and chromium-driver (the status page's browser test)
#   bench   loadtest/bench.sh: wrk, gnuplot, curl, sqlite3, redis-server (scenario ratelimit-redis);
#           loadtest/instructions.sh: valgrind
#   fuzz    tests/fuzz: clang-16 with libFuzzer and its sanitizer runtimes
#   deploy  deploy/ci.sh: podman and its runtime pieces, debootstrap, yamllint, curl
# Through sudo when not root.
set -euo pipefail

declare -A groups=(
  [build]="g++ cmake ninja-build ccache pkg-config
    libboost1.81-dev libboost-context1.81-dev libboost-url1.81-dev
    nlohmann-json3-dev libspdlog-dev libyaml-cpp-dev
    libssl-dev zlib1g-dev libpq-dev libsqlite3-dev libre2-dev libhiredis-dev sqlite3"
  [test]="catch2 postgresql redis-server sqlite3 curl python3-h11 python3-jsonschema python3-yaml openssl nodejs npm prometheus
    chromium chromium-driver"
  [fuzz]="clang-16 libfuzzer-16-dev libclang-rt-16-dev python3"
  [bench]="wrk gnuplot-nox curl sqlite3 redis-server valgrind"
  [deploy]="podman buildah runc containernetworking-plugins netavark aardvark-dns conmon uidmap catatonit
    debootstrap yamllint curl"
)

selected=("$@")
[ ${#selected[@]} -gt 0 ] || selected=(build test)
packages=()
for group in "${selected[@]}"; do
  [ -n "${groups[$group]:-}" ] || { echo "setup.sh: unknown group '$group' (build test fuzz bench deploy)" >&2; exit 2; }
  # shellcheck disable=SC2206  # the list is split on whitespace on purpose
  packages+=(${groups[$group]})
done

# Packages that count as present when their command is: NodeSource's nodejs bundles npm and conflicts with
# Debian's npm package, so an npm on PATH is not installed again.
declare -A commands=([nodejs]=node [npm]=npm)

missing=()
for p in "${packages[@]}"; do
  [[ " ${missing[*]-} " == *" $p "* ]] && continue
  [[ -n "${commands[$p]:-}" ]] && command -v "${commands[$p]}" >/dev/null && continue
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup.sh: missing ${missing[*]}, not root and no sudo" >&2; exit 1; }
  sudo="sudo"
fi
echo "installing: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get -o DPkg::Lock::Timeout=600 update -qq
$sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >&2

# The prometheus package starts and enables its own server (port 9090) where services may start; the tests
# run their own on free ports, so it is stopped and disabled.
if [[ " ${missing[*]} " == *" prometheus "* ]]; then
  if [ -d /run/systemd/system ]; then
    $sudo systemctl disable --now prometheus.service >&2 || true
  else
    $sudo service prometheus stop >&2 || true
    $sudo update-rc.d prometheus disable >&2 || true
  fi
fi
