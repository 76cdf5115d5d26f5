#!/usr/bin/env bash
# Validates the Kubernetes manifests offline, without a cluster:
#   1. yamllint on deploy/ (deploy/.yamllint);
#   2. kubectl kustomize for every kustomization under deploy/ into RENDER_DIR/rendered-NAME.yaml
#      (NAME: "base", or the overlay's path below overlays/ with "/" as "-", e.g. "postgres");
#   3. deploy/validate/validate.mjs on every rendered file: OpenAPI schema (kubernetes-models) and
#      TypeScript excess property checks (tsc); runs npm ci in deploy/validate when node_modules is
#      missing or was installed from another package.json/package-lock.json;
#   4. secrets: no Secret is rendered, the base references none, the postgres overlay takes DB_PASSWORD
#      from the Secret gateway-db (key "password"); examples/own-config renders one Secret, gateway-env
#      (from its gateway.env), and passes it whole as environment.
# RENDER_DIR (optional) keeps the rendered files there (deploy/ci.sh uses rendered-base.yaml); by default
# they go to a temporary directory removed on exit. Requires yamllint, kubectl, node and npm.
set -euo pipefail

deploy_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
validate_dir="$deploy_dir/validate"
started=$SECONDS

if [[ -n "${RENDER_DIR:-}" ]]; then
  mkdir -p "$RENDER_DIR"
  render_dir=$(cd "$RENDER_DIR" && pwd)
else
  render_dir=$(mktemp -d)
  trap 'rm -rf "$render_dir"' EXIT
fi

for tool in yamllint kubectl node npm; do
  command -v "$tool" >/dev/null || { echo "validate-manifests: $tool not found" >&2; exit 2; }
done

# 1. Lint.
yamllint -c "$deploy_dir/.yamllint" --strict "$deploy_dir"
echo "yamllint: ok"

# 2. Render.
rendered=()
while IFS= read -r kustomization; do
  dir=$(dirname "$kustomization")
  rel=${dir#"$deploy_dir"/}
  name=${rel#overlays/}
  name=${name//\//-}
  out="$render_dir/rendered-$name.yaml"
  [[ " ${rendered[*]-} " != *" $out "* ]] || { echo "render: two kustomizations named $name" >&2; exit 1; }
  kubectl kustomize "$dir" >"$out"
  rendered+=("$out")
  echo "render: deploy/$rel -> $out ($(grep -c '^kind: ' "$out") objects)"
done < <(find "$deploy_dir" \( -name node_modules -o -name components \) -prune -o -name kustomization.yaml -print | sort)
[[ -f "$render_dir/rendered-base.yaml" && -f "$render_dir/rendered-postgres.yaml" ]] || {
  echo "render: deploy/base or deploy/overlays/postgres missing" >&2
  exit 1
}

# 3. Schema and type validation. The stamp records the package files node_modules was installed from.
stamp="$validate_dir/node_modules/.install-stamp"
wanted=$(cd "$validate_dir" && sha256sum package.json package-lock.json)
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$wanted" ]]; then
  echo "npm ci: deploy/validate"
  (cd "$validate_dir" && npm ci --no-audit --no-fund --loglevel=error)
  echo "$wanted" >"$stamp"
fi
node "$validate_dir/validate.mjs" "${rendered[@]}"

# 4. Secret references: one line per container env entry taken from a Secret.
secret_refs() {
  (cd "$validate_dir" && node --input-type=module - "$1") <<'EOF'
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";
for (const doc of parseAllDocuments(readFileSync(process.argv[2], "utf8"))) {
  const obj = doc.toJS();
  if (obj?.kind === "Secret") console.log(`Secret/${obj.metadata?.name} rendered`);
  for (const c of obj?.spec?.template?.spec?.containers ?? []) {
    for (const e of c.env ?? []) {
      const ref = e.valueFrom?.secretKeyRef;
      if (ref) console.log(`${obj.kind}/${obj.metadata.name} ${c.name} ${e.name}=${ref.name}/${ref.key}`);
    }
    for (const e of c.envFrom ?? []) {
      if (e.secretRef) console.log(`${obj.kind}/${obj.metadata.name} ${c.name} envFrom=${e.secretRef.name}`);
    }
  }
}
EOF
}
status=0
for out in "${rendered[@]}"; do
  # A generated Secret's name ends in a hash of its content.
  refs=$(secret_refs "$out" | sed -E 's/(gateway-env)-[a-z0-9]+/\1-HASH/g')
  case "$(basename "$out")" in
    rendered-postgres.yaml) expected="Deployment/gateway gateway DB_PASSWORD=gateway-db/password" ;;
    rendered-edge.yaml)
      expected=$'Deployment/gateway gateway REDIS_PASSWORD=gateway-redis/password\nDeployment/gateway-redis redis REDIS_PASSWORD=gateway-redis/password' ;;
    rendered-examples-own-config.yaml)
      expected=$'Secret/gateway-env-HASH rendered\nDeployment/gateway gateway envFrom=gateway-env-HASH' ;;
    *) expected="" ;;
  esac
  if [[ "$refs" != "$expected" ]]; then
    echo "secrets: $out: expected [${expected:-none}], found [${refs:-none}]" >&2
    status=1
  else
    echo "secrets: $(basename "$out"): ${refs:-none}"
  fi
done
[[ $status -eq 0 ]] || exit 1

echo "validate-manifests: ${#rendered[@]} kustomizations valid in $((SECONDS - started)) s"
