#!/usr/bin/env python3
# Robustness smoke: mutated and trickled HTTP requests against a running gateway, bounded in time.
# usage: tests/fuzz/fuzz_http.py PORT SECONDS   (loopback only; the gateway must survive and keep answering)
import random, socket, sys, time
port = int(sys.argv[1]); secs = float(sys.argv[2])
random.seed(7)
base = [b"GET /api/offer/aggregate?sku=A1 HTTP/1.1\r\nHost: x\r\n\r\n",
        b"POST /api/offer/aggregate?sku=A1 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
        b"GET /api/offer/aggregate?sku=A1 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        b"GET /api/offer/aggregate?sku=%41%zz HTTP/1.0\r\n\r\n",
        # the pass-through route (/raw/ -> the mock), when the gateway has one
        b"GET /raw/coupon?sku=A1 HTTP/1.1\r\nHost: x\r\nConnection: X-A\r\nX-A: 1\r\n\r\n",
        b"PUT /raw/__sink HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;e=1\r\nhello\r\n0\r\nT: 1\r\n\r\n",
        b"POST /raw/__sink HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nhello",
        b"GET /raw/__bytes?n=100000&chunked=1 HTTP/1.1\r\nHost: x\r\n\r\nGET /raw/__bytes?n=7 HTTP/1.0\r\n\r\n"]
def mutate(b):
    b = bytearray(b)
    for _ in range(random.randint(1, 8)):
        op = random.random()
        i = random.randrange(len(b)) if b else 0
        if op < 0.3 and b: b[i] = random.randrange(256)
        elif op < 0.5: b[i:i] = bytes(random.randrange(256) for _ in range(random.randint(1, 20)))
        elif op < 0.7 and b: del b[i:i + random.randint(1, 10)]
        elif op < 0.8: b[i:i] = random.choice([b"\r\n", b"\r\n\r\n", b":", b"%", b"{", b"\x00", b"Content-Length: 99999999999\r\n", b"Transfer-Encoding: chunked\r\n", b"X-Request-Timeout-Ms: -1\r\n", b"traceparent: 00-" + b"a"*32 + b"-" + b"b"*16 + b"-01\r\n"])
        else: b = b + b
    return bytes(b[:65536])
n = 0; refused = 0; end = time.time() + secs
while time.time() < end:
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=2)
        payload = mutate(random.choice(base))
        if random.random() < 0.5:
            s.sendall(payload)
        else:
            for i in range(0, len(payload), 7): s.send(payload[i:i+7])
        if random.random() < 0.3: s.close(); n += 1; continue
        try: s.recv(65536)
        except Exception: pass
        s.close(); n += 1
    except OSError:
        refused += 1  # e.g. the gateway closed the connection while we were still sending: expected
print("connections", n, "cut short by the gateway", refused)
