# The gateway image. Built on Debian bookworm with the README's packages and CMake preset; runs on
# bookworm-slim with only the runtime libraries, as a non-root user (10001), the gateway as PID 1
# (it handles SIGTERM itself: drain, then exit 0).
# Two images:
#   podman build -t gateway:0.1.0 .                        the default: the binary alone, no configuration
#                                                          and no data; mount yours at /etc/gateway
#   podman build --target demo -t gateway:0.1.0-demo .     plus the demo configuration and its SQLite
#                                                          inventory file (what deploy/base runs)
#   podman run -p 8080:8080 -p 9901:9901 gateway:0.1.0-demo
#   podman run -v "$PWD/my-config:/etc/gateway:ro" -p 8080:8080 -p 9901:9901 gateway:0.1.0
# (docker build works the same.)
# The base images are arguments so that a mirror or a locally made image can stand in for them.
ARG BUILD_IMAGE=docker.io/library/debian:bookworm
ARG RUNTIME_IMAGE=docker.io/library/debian:bookworm-slim

FROM ${BUILD_IMAGE} AS build
ARG DEBIAN_FRONTEND=noninteractive
# Dependency layer: rebuilt only when the package list in scripts/setup.sh changes.
COPY scripts/setup.sh /tmp/setup.sh
RUN /tmp/setup.sh build && rm -rf /var/lib/apt/lists/* /tmp/setup.sh
WORKDIR /src
# The reference data first: it changes less often than the code.
COPY scripts/seed-db.sh scripts/
RUN scripts/seed-db.sh /out/data/offers.db
COPY CMakeLists.txt CMakePresets.json ./
COPY app app
COPY gateway gateway
COPY config config
# ccache survives between builds in a cache mount (podman, docker with BuildKit). CCACHE_DIR may name a
# directory bind-mounted into the build instead (podman build -v HOST_DIR:DIR --build-arg CCACHE_DIR=DIR):
# with paths relative to /src, a host's cache of the same sources hits.
ARG CCACHE_DIR=/root/.ccache
ENV CCACHE_BASEDIR=/src CCACHE_NOHASHDIR=1
# The check runs beside the seeded data/offers.db: it opens the files the config names, as the start does.
RUN --mount=type=cache,target=/root/.ccache \
    cmake --preset release -DBUILD_TESTING=OFF -DGATEWAY_BUILD_LOADTEST=OFF >/dev/null \
 && cmake --build --preset release --target gateway \
 && strip build/release/bin/gateway \
 && cd /out && /src/build/release/bin/gateway --check /src/config/gateway.yaml

FROM ${RUNTIME_IMAGE} AS runtime
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends \
      libboost-context1.81.0 libfmt9 libspdlog1.10 libyaml-cpp0.7 libpq5 libsqlite3-0 libssl3 libre2-9 libhiredis0.14 \
      libboost-url1.81.0 zlib1g \
      ca-certificates \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/apt /var/log/dpkg.log \
 && groupadd --system --gid 10001 gateway \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin gateway \
 && mkdir -p /var/lib/gateway /etc/gateway
COPY --from=build /src/build/release/bin/gateway /usr/local/bin/gateway
WORKDIR /var/lib/gateway
USER 10001:10001
EXPOSE 8080 9901
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/gateway"]
# The configuration is mounted here (a ConfigMap, a volume): `gateway --check --offline FILE` checks one
# before it ships.
CMD ["--config", "/etc/gateway/gateway.yaml"]

# The demo: the default configuration and its SQLite inventory file (opened read-only, so the root file
# system can be), for trying the image and for deploy/base.
FROM runtime AS demo
COPY config/gateway.yaml /etc/gateway/gateway.yaml
COPY --from=build /out/data/offers.db /var/lib/gateway/data/offers.db

# The default target: the binary alone.
FROM runtime
