#!/usr/bin/env bash
# Installs the Debian 12 packages the build, the quick start and the tests need (only those missing):
# the tests start their own throwaway PostgreSQL clusters; the quick start seeds a SQLite file. Idempotent.
set -euo pipefail

packages=(
  g++ cmake ninja-build ccache pkg-config
  libboost1.81-dev libboost-context1.81-dev libboost-url1.81-dev
  nlohmann-json3-dev libspdlog-dev libyaml-cpp-dev catch2
  libssl-dev libpq-dev libsqlite3-dev
  postgresql sqlite3
  curl
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get -o DPkg::Lock::Timeout=600 update -qq
$sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}"
