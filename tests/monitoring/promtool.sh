#!/usr/bin/env bash
# Runs promtool with the given arguments; fails, naming the package, when it is not installed.
set -euo pipefail
command -v promtool >/dev/null || {
  echo "promtool not found: install the Debian package prometheus (scripts/setup.sh test)" >&2
  exit 1
}
exec promtool "$@"
