#!/usr/bin/python3
"""Differential conformance of pass-through routes (proxy:) against h11 (python3-h11).

Usage: proxy_conformance.py PATH/TO/gateway

A scripted downstream (a socket server here, speaking through h11 as the server) answers each request with
raw bytes chosen by the case: every framing an answer may have (a length, chunks with extensions and
trailers, the end of the connection, no body for HEAD, 204 and 304, interim answers before the final one,
obs-fold). The same bytes are parsed by h11 as the client would parse them straight from the downstream;
the gateway's answer through the proxy route is parsed by h11 too, and the two must agree on the final
status and the body (and h11 must accept what the gateway wrote). The gateway may refuse an answer (502)
only when the case lists why. The other way round, requests of every framing are sent through the gateway
by h11 as the client, and what the downstream receives must be the same method, the rewritten target and
the same body, as h11 parses it. A pipelined pair of requests must get both answers, in order.
"""

import os
import socket
import sys
import tempfile
import threading

import h11

sys.dont_write_bytecode = True
from gateway_processes import Process  # noqa: E402

# Raw downstream answers, by case name: (bytes, method the client uses, why the gateway may refuse or None).
ANSWERS = {
    "length": (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: 1\r\n\r\nhello", "GET", None),
    "chunks": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n", "GET", None),
    "trailers": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                 b"3\r\nabc\r\n0\r\nX-Trailer: t\r\n\r\n", "GET", None),
    "until-close": (b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end", "GET", None),
    "http10-until-close": (b"HTTP/1.0 200 OK\r\n\r\nold style", "GET", None),
    "no-content": (b"HTTP/1.1 204 No Content\r\n\r\n", "GET", None),
    "not-modified": (b"HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n", "GET", None),
    "head": (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", "HEAD", None),
    "early-hints": (b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"
                    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", "GET", None),
    "unasked-continue": (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", "GET", None),
    "obs-fold": (b"HTTP/1.1 200 OK\r\nX-Folded: a\r\n  b\r\nContent-Length: 1\r\n\r\nz", "GET", None),
    "server-error": (b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\nRetry-After: 1\r\n\r\nbusy", "GET", None),
    "big-length": (b"HTTP/1.1 200 OK\r\nContent-Length: 300000\r\n\r\n" + b"x" * 300000, "GET", None),
    "many-chunks": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
                    b"".join(b"%x\r\n%s\r\n" % (n, b"y" * n) for n in range(1, 400)) + b"0\r\n\r\n", "GET", None),
    "gzip-transfer-coding": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
                             "GET", "a transfer coding other than chunked is not decoded: refused, never relabelled"),
    "length-and-chunked": (b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
                           b"3\r\nabc\r\n0\r\n\r\n", "GET",
                           "both framings (RFC 9112 6.3: a recipient may treat it as an error)"),
}

# Requests sent through the gateway: (method, target after /p/, headers, body pieces; None: no body).
REQUESTS = {
    "get": ("GET", "r1?a=1&b=%20x", [], None),
    "post-length": ("POST", "r2", [("Content-Length", "11")], [b"hello world"]),
    "post-chunked": ("POST", "r3", [("Transfer-Encoding", "chunked")], [b"abc", b"defgh", b"i" * 70000]),
    "put-empty": ("PUT", "r4", [("Content-Length", "0")], [b""]),
    "delete": ("DELETE", "r5/x/y", [], None),
}


def h11_client_read(sock, method, conn=None):
    """Reads one response with h11 as the client of `method`; (informational statuses, status, body) or
    raises h11 errors."""
    conn = conn or h11.Connection(h11.CLIENT)
    if conn.our_state == h11.IDLE:
        conn.send(h11.Request(method=method, target="/", headers=[("Host", "x")]))
        conn.send(h11.EndOfMessage())
    informational, status, body = [], None, b""
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            data = sock.recv(65536) if sock else b""
            conn.receive_data(data)
            continue
        if isinstance(event, h11.InformationalResponse):
            informational.append(event.status_code)
        elif isinstance(event, h11.Response):
            status = event.status_code
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
            return informational, status, body


def direct_parse(raw, method):
    """What h11 makes of the downstream's bytes as the client of `method`."""
    conn = h11.Connection(h11.CLIENT)
    conn.send(h11.Request(method=method, target="/", headers=[("Host", "x")]))
    conn.send(h11.EndOfMessage())
    conn.receive_data(raw)
    conn.receive_data(b"")  # the downstream closes after its answer
    return h11_client_read(None, method, conn)


class Downstream:
    """Answers each request with the raw bytes of the case its target names (/case/NAME), then closes;
    records what it received (parsed by h11 as the server)."""

    def __init__(self):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.received = {}
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self.one, args=(sock,), daemon=True).start()

    def one(self, sock):
        conn = h11.Connection(h11.SERVER)
        request, body = None, b""
        try:
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    data = sock.recv(65536)
                    if not data:
                        return
                    conn.receive_data(data)
                elif isinstance(event, h11.Request):
                    request = event
                elif isinstance(event, h11.Data):
                    body += event.data
                elif isinstance(event, h11.EndOfMessage):
                    break
            target = request.target.decode()
            name = target.split("/")[2].split("?")[0] if target.startswith("/case/") else ""
            self.received[name] = (request.method.decode(), target, body,
                                   {k.decode().lower(): v.decode() for k, v in request.headers})
            raw = ANSWERS[name][0] if name in ANSWERS else b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
            sock.sendall(raw)
        except Exception as e:  # a broken case shows as a failed comparison
            print("downstream: %.300s" % e)
        finally:
            sock.close()

    def close(self):
        self.listener.close()


def main():
    gateway_bin = sys.argv[1]
    downstream = Downstream()
    failures = []
    with tempfile.TemporaryDirectory(prefix="conformance-proxy-") as directory:
        path = os.path.join(directory, "gateway.yaml")
        with open(path, "w") as f:
            f.write("server:\n  listen: 127.0.0.1:0\n  threads: 2\nadmin:\n  listen: 127.0.0.1:0\n"
                    "shutdown:\n  drain_delay: 0s\nlog:\n  access: false\n"
                    "downstreams:\n  scripted:\n    url: http://127.0.0.1:%d\n    connect_timeout: 1s\n"
                    "routes:\n  - path_prefix: /p/\n    proxy: {downstream: scripted, rewrite: /case/, "
                    "timeout: 5s, idle_timeout: 5s}\n" % downstream.port)
        gateway = Process([gateway_bin, "--config", path], directory, "gateway")
        try:
            public, _ = gateway.wait_for_lines([rb"gateway listening on [0-9.]+:([0-9]+)",
                                                rb"admin listening on [0-9.]+:([0-9]+)"])
            port = int(public.group(1))

            for name, (raw, method, refusal) in ANSWERS.items():
                try:
                    expected = direct_parse(raw, method)
                except h11.RemoteProtocolError:
                    expected = None  # h11 refuses it: so must the gateway
                    if refusal is None:
                        refusal = "h11 refuses it"
                sock = socket.create_connection(("127.0.0.1", port), timeout=10)
                try:
                    sock.sendall(b"%s /p/%s HTTP/1.1\r\nHost: x\r\n\r\n" % (method.encode(), name.encode()))
                    got = h11_client_read(sock, method, h11_client_for(method, name))
                except h11.RemoteProtocolError as e:
                    failures.append("%s: h11 refused the gateway's answer: %s" % (name, e))
                    continue
                finally:
                    sock.close()
                if refusal is not None:
                    if got[1] != 502:
                        failures.append("%s: expected a refusal (502: %s), got %s" % (name, refusal, got[1]))
                    continue
                # Interim answers: the gateway passes on those the client did not ask for but 100.
                want_interim = [s for s in expected[0] if s != 100]
                if (got[0], got[1], got[2]) != (want_interim, expected[1], expected[2]):
                    failures.append("%s: through the gateway %r, straight from the downstream %r" % (
                        name, (got[0], got[1], got[2][:80]), (want_interim, expected[1], expected[2][:80])))

            for name, (method, target, headers, pieces) in REQUESTS.items():
                sock = socket.create_connection(("127.0.0.1", port), timeout=10)
                try:
                    conn = h11.Connection(h11.CLIENT)
                    wire = conn.send(h11.Request(method=method, target="/p/%s/%s" % (name, target),
                                                 headers=[("Host", "x")] + headers))
                    for piece in pieces or []:
                        if piece:
                            wire += conn.send(h11.Data(data=piece))
                    wire += conn.send(h11.EndOfMessage())
                    sock.sendall(wire)
                    _, status, _ = h11_client_read(sock, method, conn)
                finally:
                    sock.close()
                received = downstream.received.get(name)
                want = (method, "/case/%s/%s" % (name, target), b"".join(pieces or []))
                if status != 200 or received is None or received[:3] != want:
                    failures.append("request %s: status %s, the downstream received %.200r, expected %.200r" % (
                        name, status, received and received[:3], want))
                elif received[3].get("host") != "127.0.0.1:%d" % downstream.port:
                    failures.append("request %s: Host %r" % (name, received[3].get("host")))

            # Two requests pipelined on one connection: both answered, in order.
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            try:
                sock.sendall(b"GET /p/length HTTP/1.1\r\nHost: x\r\n\r\nGET /p/chunks HTTP/1.1\r\nHost: x\r\n\r\n")
                conn = h11.Connection(h11.CLIENT)
                conn.send(h11.Request(method="GET", target="/", headers=[("Host", "x")]))
                conn.send(h11.EndOfMessage())
                first = h11_client_read(sock, "GET", conn)
                conn.start_next_cycle()
                second = h11_client_read(sock, "GET", conn)
                if (first[2], second[2]) != (b"hello", b"hello world"):
                    failures.append("pipelined: got %r and %r" % (first[2], second[2]))
            finally:
                sock.close()
        finally:
            gateway.stop()
            downstream.close()
    if gateway.exit_status != 0:
        failures.append("the gateway exited %s\n%s" % (gateway.exit_status, gateway.stderr[-2000:]))
    total = len(ANSWERS) + len(REQUESTS) + 1
    for f in failures:
        print("FAIL " + f)
    print("%d of %d proxy conformance cases agree with h11" % (total - len(failures), total))
    return 1 if failures else 0


def h11_client_for(method, name):
    """An h11 client connection that has sent `method` /p/NAME (the bytes themselves go out raw)."""
    conn = h11.Connection(h11.CLIENT)
    conn.send(h11.Request(method=method, target="/p/%s" % name, headers=[("Host", "x")]))
    conn.send(h11.EndOfMessage())
    return conn


if __name__ == "__main__":
    sys.exit(main())
