#!/usr/bin/env bash
# System calls per request on the six-call route (the route of instructions.sh http6): a fresh mock (1 ms)
# and a one-thread gateway, 200 warm-up requests, then `strace -f -c` attached while N requests are sent
# in turn on one keep-alive connection. Prints the calls per request by system call.
#   loadtest/syscalls.sh BIN_DIR LABEL [N=2000]     (BIN_DIR holds a gateway and a mock-downstream)
set -eu
bin=$1 label=$2 n=${3:-2000}
work=$(mktemp -d)
$bin/mock-downstream --listen 127.0.0.1:0 --threads 1 --delay 1ms > $work/mock.out 2>&1 & mpid=$!
sleep 0.5; mport=$(grep -o '127.0.0.1:[0-9]*' $work/mock.out | head -1 | cut -d: -f2)
{
printf 'server: {listen: 127.0.0.1:0, threads: 1}\nadmin: {listen: 127.0.0.1:0}\nlog: {level: warn, access: false}\ndownstreams:\n'
for c in inventory channel-price coupon review-summary logistics-eta recommendation; do printf '  %s: {url: "http://127.0.0.1:%s", max_connections: 64}\n' $c $mport; done
printf "routes:\n  - path: /api/offer/aggregate\n    deadline: 800ms\n    params: {sku: {required: true}}\n    calls:\n"
for c in inventory channel-price coupon review-summary logistics-eta recommendation; do printf '      - {name: %s, downstream: %s, path: "/%s?sku={sku}", fallback: {priceCent: -1}}\n' $c $c $c; done
} > $work/gw.yaml
$bin/gateway --config $work/gw.yaml > $work/gw.out 2>&1 & gpid=$!
for i in $(seq 50); do grep -q "gateway listening" $work/gw.out 2>/dev/null && break; sleep 0.1; done
gport=$(grep "gateway listening" $work/gw.out | grep -o '127.0.0.1:[0-9]*' | head -1 | cut -d: -f2)
send() { python3 - $gport $1 <<'PY'
import socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
s = socket.create_connection(("127.0.0.1", port)); buf = b""
for i in range(n):
    s.sendall(("GET /api/offer/aggregate?sku=A%d HTTP/1.1\r\nHost: gw\r\n\r\n" % (i % 10000 + 1)).encode())
    while True:
        h = buf.find(b"\r\n\r\n")
        if h >= 0:
            l = 0
            for line in buf[:h].decode().split("\r\n")[1:]:
                k, _, v = line.partition(":")
                if k.lower() == "content-length": l = int(v)
            if len(buf) >= h + 4 + l: buf = buf[h + 4 + l:]; break
        buf += s.recv(65536)
PY
}
send 200
strace -f -c -p $gpid -o $work/st.out & spid=$!
sleep 1
send $n
sleep 0.5
kill -INT $spid; wait $spid 2>/dev/null || true
kill $gpid $mpid; wait 2>/dev/null || true
echo "== $label: per request ($n)"
awk -v n=$n 'NR>2 && $0 !~ /^-/ && NF>=5 { calls=$4; name=$NF; if ($5 ~ /^[0-9]+$/) {errs=$5} else {errs=0}; printf "%8.2f %s%s\n", calls/n, name, (errs>0? " (errors " errs/n ")" : "") }' $work/st.out | sort -rn | head -20
rm -rf $work
