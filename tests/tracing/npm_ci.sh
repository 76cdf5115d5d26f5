#!/usr/bin/env bash
# Installs the OTLP receiver's pinned npm packages (package-lock.json) into DIR with npm ci, unless
# DIR/node_modules was installed from the same package.json and package-lock.json (a stamp records them),
# as deploy/validate-manifests.sh does for deploy/validate. Fails, saying so, when node or npm is missing:
# the tracing tests never skip for want of them (scripts/setup.sh test installs them).
#   tests/tracing/npm_ci.sh DIR
set -euo pipefail

dir=${1:?usage: npm_ci.sh DIR}
for tool in node npm; do
  command -v "$tool" >/dev/null || {
    echo "npm_ci.sh: $tool not found; the OTLP export tests need Node.js and npm (scripts/setup.sh test)" >&2
    exit 1
  }
done

stamp="$dir/node_modules/.install-stamp"
wanted=$(cd "$dir" && sha256sum package.json package-lock.json)
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$wanted" ]]; then
  echo "npm ci: $dir"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  echo "$wanted" >"$stamp"
fi
# The decoder the tests rely on loads.
(cd "$dir" && node -e 'require("@opentelemetry/otlp-proto-exporter-base/build/src/generated/root.js")')
echo "OTLP receiver ready: node $(node --version), npm $(npm --version)"
