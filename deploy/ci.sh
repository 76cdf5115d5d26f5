#!/usr/bin/env bash
# Proves the image and the manifests offline, with podman (no Docker daemon, no registry):
#   1. base image: debootstrap --variant=minbase bookworm from the machine's apt mirror, imported and tagged
#      as the Dockerfile's base images (cached as a tarball in GATEWAY_CI_CACHE between runs);
#   2. podman build --pull=never of the Dockerfile: the plain image (gateway:0.1.0, no demo data in it) and
#      the demo target (gateway:0.1.0-demo);
#   3. the demo image in a pod next to the mock downstreams: /startupz, /readyz, /livez and an aggregate request
#      through the published ports, non-root and a read-only root file system, then SIGTERM: /readyz turns
#      503 during the drain and the gateway exits 0;
#   4. deploy/validate-manifests.sh (yamllint, kubectl kustomize, kubernetes-models, TypeScript);
#   5. podman kube play of the rendered base (ConfigMap + Deployment, one replica): the probes answer;
#   6. podman kube play of examples/own-config on the plain image (its ConfigMap, its Secret as the
#      environment, its Deployment) with a mock downstream beside it: the probes answer, the example's
#      route answers through the mock with the Secret's API key, SIGTERM drains and exits 0.
# Needs root (rootful podman). Usage: deploy/ci.sh    Environment: GATEWAY_CI_CACHE (default
# /var/cache/gateway-ci), GATEWAY_CI_STORAGE_DRIVER (overlay; vfs where overlay is unavailable),
# GATEWAY_CI_PORT / GATEWAY_CI_ADMIN_PORT (host ports of step 3: 18080, 19901).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
started=$SECONDS
step() { echo "=== deploy: $* (at $((SECONDS - started)) s)"; }
fail() {
  echo "deploy/ci.sh: $*" >&2
  exit 1
}

image=gateway:0.1.0-demo  # the demo target; steps 3 and 5
plain_image=gateway:0.1.0  # the default target; step 6
base_images=(docker.io/library/debian:bookworm docker.io/library/debian:bookworm-slim)
cache=${GATEWAY_CI_CACHE:-/var/cache/gateway-ci}
port=${GATEWAY_CI_PORT:-18080}
admin_port=${GATEWAY_CI_ADMIN_PORT:-19901}
pod=gateway-ci
work=$(mktemp -d)
mkdir -p "$cache"

# ---- Packages and podman's configuration (in files of this run, not the machine's /etc/containers)
scripts/setup.sh deploy
for tool in kubectl node npm; do
  command -v "$tool" >/dev/null || fail "$tool is required (kubectl renders the kustomizations, node validates them)"
done
[ "$(id -u)" -eq 0 ] || fail "run as root (rootful podman)"

# ulimits above nofile=20000 / nproc=32768 fail on this kind of machine; cgroupfs and a file event log
# because no systemd runs here.
export CONTAINERS_CONF="$work/containers.conf" CONTAINERS_STORAGE_CONF="$work/storage.conf"
cat >"$CONTAINERS_CONF" <<'EOF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
[network]
network_backend = "netavark"
EOF
# Podman's usual storage, so that image layers stay between runs where the machine keeps /var/lib.
cat >"$CONTAINERS_STORAGE_CONF" <<EOF
[storage]
driver = "${GATEWAY_CI_STORAGE_DRIVER:-overlay}"
runroot = "/run/containers/storage"
graphroot = "/var/lib/containers/storage"
EOF

play_file="$work/play.yaml"
own_file="$work/own-config.yaml"
cleanup() {
  podman pod rm -f "$pod" >/dev/null 2>&1 || true
  [ -f "$play_file" ] && podman kube down "$play_file" >/dev/null 2>&1 || true
  [ -f "$own_file" ] && podman kube down "$own_file" >/dev/null 2>&1 || true
  for secret in "$work"/own-secrets/*; do [ -e "$secret" ] && podman secret rm "$(basename "$secret")" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT
podman pod rm -f "$pod" >/dev/null 2>&1 || true  # left over by an interrupted run

# ---- 1. Base image
if ! podman image exists "${base_images[0]}"; then
  rootfs_tar="$cache/debian-bookworm-minbase.tar"
  if [ ! -s "$rootfs_tar" ]; then
    mirror=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
    [ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $3 ~ /^bookworm/ { print $2; exit }' /etc/apt/sources.list 2>/dev/null || true)
    mirror=${mirror:-http://deb.debian.org/debian}
    step "debootstrap --variant=minbase bookworm from $mirror"
    rootfs="$work/rootfs"
    debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 ||
      { tail -20 "$work/debootstrap.log"; fail "debootstrap failed"; }
    # The machine's Debian sources (with updates and security, as in the public image), no package caches.
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
      rm -f "$rootfs/etc/apt/sources.list"
      cp /etc/apt/sources.list.d/debian.sources "$rootfs/etc/apt/sources.list.d/"
    fi
    rm -rf "$rootfs"/var/cache/apt/* "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" --numeric-owner -cf "$rootfs_tar.tmp" . && mv "$rootfs_tar.tmp" "$rootfs_tar"
    rm -rf "$rootfs"
  fi
  step "importing the base image as ${base_images[*]}"
  podman import --change 'CMD ["/bin/bash"]' "$rootfs_tar" "${base_images[0]}" >/dev/null
  for name in "${base_images[@]:1}"; do podman tag "${base_images[0]}" "$name"; done
fi

# ---- 2. Image build. Host network: the build's apt reaches the mirror the way this machine does.
# The release build's ccache (scripts/test.sh filled it from the same sources) is lent to the image build.
build_args=()
ccache_dir=$(ccache -k cache_dir 2>/dev/null || true)
if [ -n "$ccache_dir" ] && [ -d "$ccache_dir" ]; then
  build_args=(-v "$ccache_dir:/host-ccache" --build-arg CCACHE_DIR=/host-ccache)
fi
step "podman build $plain_image and $image"
build_started=$SECONDS
podman build --pull=never --network host "${build_args[@]}" -t "$plain_image" -f Dockerfile . >"$work/build.log" 2>&1 ||
  { tail -40 "$work/build.log"; fail "podman build failed"; }
podman build --pull=never --network host "${build_args[@]}" --target demo -t "$image" -f Dockerfile . \
  >"$work/build-demo.log" 2>&1 || { tail -40 "$work/build-demo.log"; fail "podman build --target demo failed"; }
for built in "$plain_image" "$image"; do
  echo "built $built, $(podman image inspect --format '{{.Size}}' "$built" | awk '{ printf "%.1f MB", $1 / 1e6 }')"
  [ "$(podman image inspect --format '{{.Config.User}}' "$built")" = "10001:10001" ] || fail "$built does not run as 10001"
done
echo "both in $((SECONDS - build_started)) s"
podman run --rm --entrypoint /bin/sh "$plain_image" -c \
  'test ! -e /etc/gateway/gateway.yaml && test ! -e /var/lib/gateway/data && /usr/local/bin/gateway --version' \
  >/dev/null || fail "$plain_image carries the demo configuration or data"
echo "$plain_image: no demo configuration, no demo data"

# ---- 3. The image next to the mock downstreams (the mock binary of the release build, in a container of
# the same image: the default config's downstreams are 127.0.0.1:9001 inside the pod).
mock_bin="$root/build/release/bin/mock-downstream"
[ -x "$mock_bin" ] || { step "building the mock downstream"; scripts/build.sh release >/dev/null; }

# curl_status URL: the HTTP status, 000 when nothing answered.
curl_status() { curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$1" || true; }
# wait_for URL STATUS SECONDS
wait_for() {
  local deadline=$((SECONDS + $3)) got
  while :; do
    got=$(curl_status "$1")
    [ "$got" = "$2" ] && return 0
    [ $SECONDS -lt $deadline ] || { echo "$1 answered $got, expected $2" >&2; return 1; }
    sleep 0.2
  done
}
check_probes() {  # base URL of the admin port
  wait_for "$1/startupz" 200 30 && wait_for "$1/readyz" 200 30 && wait_for "$1/livez" 200 5
}

step "running the image in pod $pod next to the mock downstreams"
podman pod create --name "$pod" -p "127.0.0.1:$port:8080" -p "127.0.0.1:$admin_port:9901" >/dev/null
podman run -d --pod "$pod" --name "$pod-mock" --read-only -v "$mock_bin:/usr/local/bin/mock-downstream:ro" \
  --entrypoint /usr/local/bin/mock-downstream "$image" --listen 127.0.0.1:9001 --delay 20ms >/dev/null
podman run -d --pod "$pod" --name "$pod-gateway" --read-only --cap-drop all \
  --security-opt no-new-privileges "$image" >/dev/null
show_logs() { podman logs "$pod-gateway" 2>&1 | tail -30 >&2 || true; }
check_probes "http://127.0.0.1:$admin_port" || { show_logs; fail "probes of the running image"; }
echo "probes: /startupz /readyz /livez answer 200"

body=$(curl -sS --max-time 5 -D "$work/headers" "http://127.0.0.1:$port/api/offer/aggregate?sku=A1") ||
  { show_logs; fail "aggregate request failed"; }
grep -q '^HTTP/1.1 200' "$work/headers" || { cat "$work/headers" >&2; fail "aggregate status is not 200"; }
if grep -qi '^x-degraded' "$work/headers"; then cat "$work/headers" >&2; echo "$body" >&2; fail "degraded answer"; fi
entries=$(grep -o '"degraded":false' <<<"$body" | wc -l)
[ "$entries" -eq 6 ] || { echo "$body" >&2; fail "expected 6 entries that are not degraded, found $entries"; }
grep -q '"source":"inventory"' <<<"$body" && ! grep -q '"priceCent":-1' <<<"$body" ||
  { echo "$body" >&2; fail "inventory did not come from the baked-in SQLite file"; }
echo "aggregate: 200, six entries, none degraded"
[ "$(podman top "$pod-gateway" huser | tail -1 | tr -d ' ')" = "10001" ] || fail "the gateway does not run as 10001"

term_sent=$(date +%s.%N)
podman kill --signal TERM "$pod-gateway" >/dev/null
wait_for "http://127.0.0.1:$admin_port/readyz" 503 3 || { show_logs; fail "/readyz did not turn 503 after SIGTERM"; }
# Polled with inspect: podman wait notices an exit up to 20 s late on a machine without systemd.
for _ in $(seq 600); do
  [ "$(podman inspect --format '{{.State.Status}}' "$pod-gateway")" = "running" ] || break
  sleep 0.1
done
status=$(podman inspect --format '{{.State.Status}} {{.State.ExitCode}}' "$pod-gateway")
case "$status" in
  "stopped 0" | "exited 0") ;;
  *) show_logs; fail "after SIGTERM the gateway is: $status (expected: exited 0)" ;;
esac
finished=$(podman inspect --format '{{.State.FinishedAt}}' "$pod-gateway" | sed 's/ UTC$//')
took=$(awk -v a="$term_sent" -v b="$(date -d "$finished" +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
awk -v t="$took" 'BEGIN { exit !(t < 15) }' || { show_logs; fail "the gateway took $took s to exit after SIGTERM"; }
echo "SIGTERM: /readyz 503 while draining, exit 0 after $took s (drain_delay 5 s)"
podman pod rm -f "$pod" >/dev/null

# ---- 4. Manifests
step "validating the manifests"
RENDER_DIR="$work/render" deploy/validate-manifests.sh

# ---- 5. podman kube play of the rendered base. It runs the Deployment (one replica) with its ConfigMap
# mounted; the Service, HorizontalPodAutoscaler, PodDisruptionBudget and NetworkPolicy need a cluster and
# are left out.
step "podman kube play of the rendered base"
(cd deploy/validate && node --input-type=module - "$work/render/rendered-base.yaml") >"$play_file" <<'EOF'
import { readFileSync } from "node:fs";
import { parseAllDocuments, stringify } from "yaml";
const keep = parseAllDocuments(readFileSync(process.argv[2], "utf8"))
  .map((d) => d.toJS())
  .filter((o) => o.kind === "ConfigMap" || o.kind === "Deployment");
process.stdout.write(keep.map((o) => stringify(o)).join("---\n"));
EOF
[ "$(grep -c '^kind: ' "$play_file")" -eq 2 ] || { cat "$play_file" >&2; fail "expected a ConfigMap and a Deployment"; }
podman kube play "$play_file" >"$work/play.log" 2>&1 || { cat "$work/play.log" >&2; fail "podman kube play failed"; }
play_pod=$(podman pod ps --filter label=app.kubernetes.io/name=gateway --format '{{.Name}}' | head -1)
[ -n "$play_pod" ] || play_pod=$(podman pod ps --format '{{.Name}}' | grep '^gateway' | head -1)
[ -n "$play_pod" ] || { podman pod ps >&2; fail "no pod from kube play"; }
container=$(podman ps --filter "pod=$play_pod" --format '{{.Names}}' | grep -v -- '-infra$' | head -1)
ip=$(podman inspect --format '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$container")
[ -n "$ip" ] || ip=$(podman pod inspect --format '{{.InfraContainerID}}' "$play_pod" | xargs podman inspect \
  --format '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}')
[ -n "$ip" ] || fail "no IP address for pod $play_pod"
check_probes "http://$ip:9901" || { podman logs "$container" 2>&1 | tail -30 >&2; fail "probes of the kube play pod"; }
[ "$(podman inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$container")" = "true" ] ||
  fail "the kube play container's root file system is not read-only"
echo "kube play: pod $play_pod ($ip) answers /startupz /readyz /livez with the ConfigMap mounted"
# kube play turned the liveness probe into a healthcheck timer, which needs systemd; its removal complains.
podman kube down "$play_file" >/dev/null 2>"$work/down.log" || { cat "$work/down.log" >&2; fail "podman kube down"; }

# ---- 6. podman kube play of examples/own-config on the plain image. The rendered example is played as a
# user's cluster would run it, with what a cluster has and a pod alone lacks: its Secret (podman 4.3 wants
# a podman secret of the same name holding {"KEY": "<base64>"}), the Services it names (hostAliases to
# the pod itself) and the downstream behind them (the mock, a second container serving /catalog and /stock
# on port 80, the Services' port). The image is the local plain one instead of the example's registry. The
# optional Secret volume gateway-tls is left out: podman 4.3 does not honour `optional` and fails the pod.
step "podman kube play of examples/own-config on $plain_image"
(cd deploy/validate && node --input-type=module - "$work/render/rendered-examples-own-config.yaml" "$own_file" \
  "$plain_image" "$mock_bin" "$work/own-secrets") <<'EOF'
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { parseAllDocuments, stringify } from "yaml";
const [input, output, image, mock, secretsDir] = process.argv.slice(2);
mkdirSync(secretsDir, { recursive: true });
const kept = [];
for (const o of parseAllDocuments(readFileSync(input, "utf8")).map((d) => d.toJS())) {
  if (o.kind === "Secret") writeFileSync(`${secretsDir}/${o.metadata.name}`, JSON.stringify(o.data ?? {}));
  if (o.kind === "ConfigMap") kept.push(o);
  if (o.kind !== "Deployment") continue;
  const pod = o.spec.template.spec;
  pod.containers[0].image = image;
  pod.volumes = pod.volumes.filter((v) => !v.secret?.optional);
  const volumes = new Set(pod.volumes.map((v) => v.name));
  pod.containers[0].volumeMounts = pod.containers[0].volumeMounts.filter((m) => volumes.has(m.name));
  pod.hostAliases = [{ ip: "127.0.0.1", hostnames: ["catalog", "stock"] }];
  pod.restartPolicy = "Never";  // so that the SIGTERM's exit stays to be seen (a cluster restarts it)
  pod.containers.push({
    name: "mock",
    image,
    command: ["/usr/local/bin/mock-downstream", "--listen", "0.0.0.0:80", "--delay", "10ms",
              "--record-headers", "X-Api-Key"],
    securityContext: { runAsUser: 0, runAsNonRoot: false },
    volumeMounts: [{ name: "mock-bin", mountPath: "/usr/local/bin/mock-downstream", readOnly: true }],
  });
  pod.volumes.push({ name: "mock-bin", hostPath: { path: mock, type: "File" } });
  kept.push(o);
}
writeFileSync(output, kept.map((o) => stringify(o)).join("---\n"));
EOF
[ "$(grep -c '^kind: ' "$own_file")" -eq 2 ] || { cat "$own_file" >&2; fail "expected a ConfigMap and a Deployment"; }
for secret in "$work"/own-secrets/*; do
  podman secret rm "$(basename "$secret")" >/dev/null 2>&1 || true
  podman secret create "$(basename "$secret")" "$secret" >/dev/null
done
podman kube play "$own_file" >"$work/own-play.log" 2>&1 || { cat "$work/own-play.log" >&2; fail "podman kube play failed"; }
own_pod=$(podman pod ps --format '{{.Name}}' | grep '^gateway' | head -1)
[ -n "$own_pod" ] || { podman pod ps >&2; fail "no pod from kube play of examples/own-config"; }
own_gateway=$(podman ps --filter "pod=$own_pod" --format '{{.Names}}' | grep -- '-gateway$' | head -1)
own_ip=$(podman pod inspect --format '{{.InfraContainerID}}' "$own_pod" | xargs podman inspect \
  --format '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}')
[ -n "$own_gateway" ] && [ -n "$own_ip" ] || { podman ps -a >&2; fail "no gateway container or address in $own_pod"; }
own_logs() { podman logs "$own_gateway" 2>&1 | tail -30 >&2 || true; }
check_probes "http://$own_ip:9901" || { own_logs; fail "probes of the own-config pod"; }
body=$(curl -sS --max-time 5 -D "$work/own-headers" "http://$own_ip:8080/api/product/A1") ||
  { own_logs; fail "the own-config route did not answer"; }
grep -q '^HTTP/1.1 200' "$work/own-headers" && ! grep -qi '^x-degraded' "$work/own-headers" ||
  { cat "$work/own-headers" >&2; echo "$body" >&2; own_logs; fail "the own-config route's answer is not a whole 200"; }
grep -q '"product":{' <<<"$body" && grep -q '"stock":{' <<<"$body" ||
  { echo "$body" >&2; fail "the own-config answer lacks product or stock"; }
curl -sS --max-time 2 "http://$own_ip:80/__stats" | grep -q '"x-api-key":"replace-me"' ||
  fail "the catalog call did not carry the API key from the Secret gateway-env"
echo "own-config: probes answer; /api/product/A1 200 through the mock, the API key from the Secret"
podman kill --signal TERM "$own_gateway" >/dev/null
wait_for "http://$own_ip:9901/readyz" 503 3 || { own_logs; fail "own-config: /readyz did not turn 503 after SIGTERM"; }
for _ in $(seq 300); do
  [ "$(podman inspect --format '{{.State.Status}}' "$own_gateway")" = "running" ] || break
  sleep 0.1
done
status=$(podman inspect --format '{{.State.Status}} {{.State.ExitCode}}' "$own_gateway")
case "$status" in
  "stopped 0" | "exited 0") echo "own-config: SIGTERM, /readyz 503 while draining, exit 0" ;;
  *) own_logs; fail "after SIGTERM the own-config gateway is: $status (expected: exited 0)" ;;
esac
podman kube down "$own_file" >/dev/null 2>"$work/own-down.log" || { cat "$work/own-down.log" >&2; fail "podman kube down"; }
for secret in "$work"/own-secrets/*; do podman secret rm "$(basename "$secret")" >/dev/null 2>&1 || true; done

step "done in $((SECONDS - started)) s"
