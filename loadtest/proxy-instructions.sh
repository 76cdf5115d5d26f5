#!/usr/bin/env bash
# Instructions per request of a gateway build on a pass-through route, by callgrind (repeatable whatever
# else the machine does; system calls are not counted): 200 warm-up requests, counters zeroed, then N
# requests on one keep-alive connection, counters dumped.
# usage: loadtest/proxy-instructions.sh DIR LABEL [TARGET=/files/1k] [N=4000]   (DIR holds the binaries)
set -euo pipefail
bin=$(cd "$1" && pwd); label=$2; TARGET=${3:-/files/1k}; N=${4:-4000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
{ printf '{"pad":"'; head -c $((1024 - 10)) /dev/zero | tr '\0' x; printf '"}'; } > "$work/1k.json"
cd "$work"
"$bin/mock-downstream" --listen 127.0.0.1:0 --threads 1 --body "blob/1k=@$work/1k.json" > mock.out 2>&1 &
mpid=$!
for i in $(seq 50); do grep -q listening mock.out 2>/dev/null && break; sleep 0.1; done
mport=$(grep -o '127.0.0.1:[0-9]*' mock.out | head -1 | cut -d: -f2)
sed "s/PORT/$mport/" > gw.yaml <<'YAML'
server: {listen: 127.0.0.1:0, threads: 1}
admin: {listen: 127.0.0.1:0}
log: {level: warn}
downstreams:
  files: {url: "http://127.0.0.1:PORT", max_connections: 256}
routes:
  - path_prefix: /files/
    proxy: {downstream: files, rewrite: /blob/, timeout: 30s, idle_timeout: 60s}
  - path: /agg
    calls:
      - {name: a, downstream: files, path: /a}
YAML
valgrind --tool=callgrind --callgrind-out-file=$work/cg.$label.%p "$bin/gateway" --config gw.yaml > gw.out 2>&1 &
gpid=$!
for i in $(seq 300); do grep -q "gateway listening" gw.out 2>/dev/null && break; sleep 0.1; done
gport=$(grep "gateway listening" gw.out | grep -o '127.0.0.1:[0-9]*' | head -1 | cut -d: -f2)
python3 - "$gport" "$TARGET" 200 <<'PY'
import socket,sys
port,target,n=int(sys.argv[1]),sys.argv[2],int(sys.argv[3])
s=socket.create_connection(("127.0.0.1",port))
req=("GET %s HTTP/1.1\r\nHost: gw\r\nUser-Agent: bench\r\nAccept: */*\r\n\r\n"%target).encode()
buf=b""
for i in range(n):
    s.sendall(req)
    while True:
        h=buf.find(b"\r\n\r\n")
        if h>=0:
            head=buf[:h].decode(); l=0
            for line in head.split("\r\n"):
                if line.lower().startswith("content-length:"): l=int(line.split(":")[1])
            if len(buf)>=h+4+l: buf=buf[h+4+l:]; break
        buf+=s.recv(65536)
PY
callgrind_control -z $gpid > /dev/null 2>&1
python3 - "$gport" "$TARGET" "$N" <<'PY'
import socket,sys
port,target,n=int(sys.argv[1]),sys.argv[2],int(sys.argv[3])
s=socket.create_connection(("127.0.0.1",port))
req=("GET %s HTTP/1.1\r\nHost: gw\r\nUser-Agent: bench\r\nAccept: */*\r\n\r\n"%target).encode()
buf=b""
for i in range(n):
    s.sendall(req)
    while True:
        h=buf.find(b"\r\n\r\n")
        if h>=0:
            head=buf[:h].decode(); l=0
            for line in head.split("\r\n"):
                if line.lower().startswith("content-length:"): l=int(line.split(":")[1])
            if len(buf)>=h+4+l: buf=buf[h+4+l:]; break
        buf+=s.recv(65536)
PY
callgrind_control -d $gpid > /dev/null 2>&1
sleep 1
kill $gpid $mpid; wait $gpid $mpid 2>/dev/null || true
f=$work/cg.$label.$gpid.1  # the dump after the measured requests
ir=$(grep -h "^summary:\|^totals:" $f | head -1 | awk '{print $2}')
echo "$label $TARGET: $(awk -v i=$ir -v n=$N 'BEGIN{printf "%.0f", i/n}') instructions/request"
