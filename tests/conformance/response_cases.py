"""The downstream answers response_conformance.py compares: hand-written cases for every framing rule, then
seeded random combinations. Tags name the differences from h11 a case may show (the tables in
response_conformance.py say which are allowed and why)."""

import random

SEED = 20240611
GENERATED = 1500
BODY_LIMIT = 1024 * 1024

OK_CL2 = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"


class Case:
    """`wire`: the bytes a downstream sends; `eof`: the connection ends after them. `h11_wire`: what h11 is
    given instead, an equivalent form of the same length (H11_GIVEN_EQUIVALENT in response_conformance.py)."""

    def __init__(self, name, wire, eof, tags=(), h11_wire=None):
        self.name, self.wire, self.eof, self.tags = name, wire, eof, frozenset(tags)
        self.h11_wire = wire if h11_wire is None else h11_wire
        assert len(self.h11_wire) == len(wire)


def head(status_line, fields=(), eol=b"\r\n"):
    return status_line + eol + b"".join(f + eol for f in fields) + eol


def chunked(body, sizes=None, ext=b"", upper=False, zeros=0, trailers=b""):
    """`body` in chunks of `sizes` (the rest in one more), each size line with `ext`, then the last
    chunk and the trailer section `trailers` (field lines each with its CRLF)."""
    out, at = b"", 0
    for n in list(sizes or []) + [len(body)]:
        piece = body[at:at + n]
        at += len(piece)
        if not piece:
            continue
        size = b"0" * zeros + b"%x" % len(piece)
        out += (size.upper() if upper else size) + ext + b"\r\n" + piece + b"\r\n"
    return out + b"0" * (zeros + 1) + ext + b"\r\n" + trailers + b"\r\n"


def hand_written():
    cases = []

    def add(name, wire, tags=(), eofs=(False, True), h11_wire=None):
        for eof in eofs:
            cases.append(Case(name + ("/eof" if eof else ""), wire, eof, tags, h11_wire))

    ok = b"HTTP/1.1 200 OK"
    body = b'{"a":1}'
    cl = b"Content-Length: 7"
    te = b"Transfer-Encoding: chunked"
    tail = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"  # an unsolicited second answer

    # Content-Length
    add("cl", head(ok, [cl]) + body)
    add("cl-0", head(ok, [b"Content-Length: 0"]))
    add("cl-short-body", head(ok, [cl]) + body[:3])
    add("cl-leading-zeros", head(ok, [b"Content-Length: 007"]) + body)
    add("cl-ows", head(ok, [b"Content-Length:   7  "]) + body)
    add("cl-tab", head(ok, [b"Content-Length:\t7\t"]) + body)
    add("cl-duplicate-equal", head(ok, [cl, cl]) + body)
    add("cl-duplicate-equal-case", head(ok, [cl, b"content-length: 7"]) + body)
    add("cl-conflicting", head(ok, [cl, b"Content-Length: 8"]) + body + b"x")
    add("cl-list-equal", head(ok, [b"Content-Length: 7, 7"]) + body, ["cl-list"])
    add("cl-list-conflicting", head(ok, [b"Content-Length: 7, 8"]) + body + b"x")
    add("cl-plus", head(ok, [b"Content-Length: +7"]) + body)
    add("cl-minus", head(ok, [b"Content-Length: -7"]) + body)
    add("cl-minus-zero", head(ok, [b"Content-Length: -0"]))
    add("cl-inner-space", head(ok, [b"Content-Length: 7 7"]) + body)
    add("cl-hex", head(ok, [b"Content-Length: 0x7"]) + body)
    add("cl-empty", head(ok, [b"Content-Length:"]) + body)
    add("cl-huge", head(ok, [b"Content-Length: 99999999999999999999999"]) + body, ["body-limit"])
    add("cl-over-limit", head(ok, [b"Content-Length: %d" % (BODY_LIMIT + 1)]) + body, ["body-limit"])
    add("cl-pipelined", head(ok, [cl]) + body + tail)
    add("cl-extra-bytes", head(ok, [cl]) + body + b"\r\n")

    # Transfer-Encoding
    add("te-chunked", head(ok, [te]) + chunked(body, [3]))
    add("te-chunked-upper-name", head(ok, [b"TRANSFER-ENCODING: chunked"]) + chunked(body))
    add("te-CHUNKED", head(ok, [b"Transfer-Encoding: CHUNKED"]) + chunked(body))
    add("te-Chunked-ows", head(ok, [b"Transfer-Encoding:  Chunked "]) + chunked(body))
    add("te-gzip", head(ok, [b"Transfer-Encoding: gzip"]) + body)
    add("te-gzip-chunked", head(ok, [b"Transfer-Encoding: gzip, chunked"]) + chunked(body))
    add("te-chunked-gzip", head(ok, [b"Transfer-Encoding: chunked, gzip"]) + chunked(body))
    add("te-chunked-chunked", head(ok, [b"Transfer-Encoding: chunked, chunked"]) + chunked(chunked(body)))
    add("te-two-fields-chunked", head(ok, [te, te]) + chunked(body))
    add("te-two-fields-gzip-chunked", head(ok, [b"Transfer-Encoding: gzip", te]) + chunked(body))
    add("te-two-fields-chunked-gzip", head(ok, [te, b"Transfer-Encoding: gzip"]) + chunked(body))
    add("te-identity", head(ok, [b"Transfer-Encoding: identity"]) + body)
    add("te-identity-chunked", head(ok, [b"Transfer-Encoding: identity, chunked"]) + chunked(body))
    add("te-unknown", head(ok, [b"Transfer-Encoding: x-custom"]) + body)
    add("te-unknown-chunked", head(ok, [b"Transfer-Encoding: x-custom, chunked"]) + chunked(body))
    add("te-chunked-param", head(ok, [b"Transfer-Encoding: chunked;q=1"]) + chunked(body))
    add("te-empty", head(ok, [b"Transfer-Encoding:"]) + body)
    add("te-comma", head(ok, [b"Transfer-Encoding: ,"]) + body)
    add("te-chunked-comma", head(ok, [b"Transfer-Encoding: chunked,"]) + chunked(body), ["te-empty-element"],
        h11_wire=head(ok, [b"Transfer-Encoding: chunked "]) + chunked(body))
    add("te-chunked-and-cl", head(ok, [te, cl]) + chunked(body), ["te+cl"])
    add("te-cl-and-chunked", head(ok, [cl, te]) + chunked(body), ["te+cl"])
    add("te-gzip-and-cl", head(ok, [b"Transfer-Encoding: gzip", cl]) + body)
    add("te-chunked-http10", head(b"HTTP/1.0 200 OK", [te]) + chunked(body))
    # RFC 9112 6.1: an HTTP/1.0 message with Transfer-Encoding has faulty framing: close after it.
    add("te-chunked-http10-keep-alive",
        head(b"HTTP/1.0 200 OK", [te, b"Connection: keep-alive"]) + chunked(body))

    # Chunks: sizes, extensions, trailers, malformed framing
    add("chunk-many", head(ok, [te]) + chunked(body, [1, 1, 1, 1, 1, 1]))
    add("chunk-upper-hex", head(ok, [te]) + chunked(b"x" * 42, upper=True))
    add("chunk-leading-zeros", head(ok, [te]) + chunked(body, zeros=4))
    add("chunk-ext", head(ok, [te]) + chunked(body, ext=b";name=value"))
    add("chunk-ext-quoted", head(ok, [te]) + chunked(body, ext=b';name="a b;c"'))
    add("chunk-ext-bare", head(ok, [te]) + chunked(body, ext=b";name"))
    add("chunk-ext-bws", head(ok, [te]) + chunked(body, ext=b" ;name=value"), ["chunk-ext-bws"],
        h11_wire=head(ok, [te]) + chunked(body, ext=b";name=value", zeros=1))
    add("chunk-size-trailing-space", head(ok, [te]) + chunked(body, ext=b" "))
    add("chunk-size-ctl-ext", head(ok, [te]) + chunked(body, ext=b";a=\x01"), ["ctl"])
    add("chunk-trailers", head(ok, [te]) + chunked(body, trailers=b"X-Sum: 1\r\nX-Other: 2\r\n"))
    add("chunk-trailer-bad-line", head(ok, [te]) + chunked(body, trailers=b"not a field\r\n"))
    add("chunk-trailer-bare-lf-end", head(ok, [te]) + body_chunks_then(body, b"\n") + tail, ["bare-lf"])
    add("chunk-trailer-bare-lf", head(ok, [te]) + body_chunks_then(body, b"X: 1\n\r\n") + tail, ["bare-lf"])
    add("chunk-trailer-obs-fold", head(ok, [te]) + chunked(body, trailers=b"X: 1\r\n 2\r\n"), ["obs-fold"])
    add("chunk-missing-crlf", head(ok, [te]) + b"7\r\n" + body + b"0\r\n\r\n")
    add("chunk-bare-lf-after-data", head(ok, [te]) + b"7\r\n" + body + b"\n0\r\n\r\n", ["bare-lf"])
    add("chunk-size-bare-lf", head(ok, [te]) + b"7\n" + body + b"\r\n0\r\n\r\n", ["bare-lf"])
    add("chunk-size-empty", head(ok, [te]) + b"\r\n" + body + b"\r\n0\r\n\r\n")
    add("chunk-size-negative", head(ok, [te]) + b"-7\r\n" + body + b"\r\n0\r\n\r\n")
    add("chunk-size-0x", head(ok, [te]) + b"0x7\r\n" + body + b"\r\n0\r\n\r\n")
    add("chunk-size-huge", head(ok, [te]) + b"ffffffffffffffffffff\r\n" + body, ["body-limit"])
    add("chunk-size-over-limit", head(ok, [te]) + b"%x\r\n" % (BODY_LIMIT + 1) + body, ["body-limit"])
    add("chunk-longer-than-size", head(ok, [te]) + b"3\r\n" + body + b"\r\n0\r\n\r\n")
    add("chunk-no-last", head(ok, [te]) + b"7\r\n" + body + b"\r\n")
    add("chunk-pipelined", head(ok, [te]) + chunked(body) + tail)

    # Interim responses
    add("interim-100", head(b"HTTP/1.1 100 Continue") + head(ok, [cl]) + body)
    hints = head(b"HTTP/1.1 103 Early Hints", [b"Link: </s.css>; rel=preload"])
    add("interim-103", hints + head(ok, [cl]) + body)
    add("interim-102-no-reason", head(b"HTTP/1.1 102") + head(ok, [cl]) + body)
    add("interim-three", head(b"HTTP/1.1 100 Continue") + head(b"HTTP/1.1 103 Early Hints")
        + head(b"HTTP/1.1 199 Misc") + head(ok, [te]) + chunked(body))
    add("interim-8", head(b"HTTP/1.1 100 Continue") * 8 + head(ok, [cl]) + body)
    add("interim-9", head(b"HTTP/1.1 100 Continue") * 9 + head(ok, [cl]) + body, ["many-interim"])
    switching = head(b"HTTP/1.1 101 Switching Protocols", [b"Upgrade: websocket", b"Connection: upgrade"])
    add("interim-101", switching + b"\x81\x02hi")  # the gateway never asks to switch protocols
    add("interim-101-then-200", head(b"HTTP/1.1 101 Switching Protocols") + head(ok, [cl]) + body)
    add("interim-100-then-101", head(b"HTTP/1.1 100 Continue") + head(b"HTTP/1.1 101 Switching Protocols"))
    add("interim-with-cl", head(b"HTTP/1.1 100 Continue", [b"Content-Length: 5"]) + head(ok, [cl]) + body)
    add("interim-close-then-keep-alive", head(b"HTTP/1.1 103 Early Hints", [b"Connection: close"])
        + head(ok, [cl]) + body)
    add("interim-http10", head(b"HTTP/1.0 100 Continue") + head(ok, [cl]) + body)
    add("interim-then-204", head(b"HTTP/1.1 100 Continue") + head(b"HTTP/1.1 204 No Content"))
    add("interim-then-read-to-close", head(b"HTTP/1.1 100 Continue") + head(ok) + body)
    add("interim-only", head(b"HTTP/1.1 100 Continue"))
    add("interim-cut", head(b"HTTP/1.1 100 Continue") + b"HTTP/1.1 200 O")
    add("interim-te-gzip",
        head(b"HTTP/1.1 103 Early Hints", [b"Transfer-Encoding: gzip"]) + head(ok, [cl]) + body)

    # No body whatever the fields say
    add("204-with-cl", head(b"HTTP/1.1 204 No Content", [cl]) + body)
    add("204-with-chunked", head(b"HTTP/1.1 204 No Content", [te]) + chunked(body))
    add("304-with-cl", head(b"HTTP/1.1 304 Not Modified", [cl]) + body)
    add("304-then-answer", head(b"HTTP/1.1 304 Not Modified") + tail)
    add("205-with-cl", head(b"HTTP/1.1 205 Reset Content", [b"Content-Length: 2"]) + b"{}")

    # Read to the end of the connection
    add("read-to-close", head(ok) + body)
    add("read-to-close-empty", head(ok))
    add("read-to-close-looks-pipelined", head(ok) + body + tail)
    add("read-to-close-http10", head(b"HTTP/1.0 200 OK") + body)
    add("read-to-close-keep-alive", head(ok, [b"Connection: keep-alive"]) + body)

    # Keep-alive
    add("keep-alive-http11", head(ok, [cl, b"Connection: keep-alive"]) + body)
    add("close-http11", head(ok, [cl, b"Connection: close"]) + body)
    add("close-upper", head(ok, [cl, b"Connection: CLOSE"]) + body)
    add("close-in-list", head(ok, [cl, b"Connection: keep-alive, close"]) + body)
    add("close-second-field", head(ok, [cl, b"Connection: keep-alive", b"Connection: close"]) + body)
    add("closed-is-not-close", head(ok, [cl, b"Connection: closed"]) + body)
    add("http10-cl", head(b"HTTP/1.0 200 OK", [cl]) + body)
    add("http10-keep-alive", head(b"HTTP/1.0 200 OK", [cl, b"Connection: keep-alive"]) + body,
        ["http10-keep-alive"])
    add("http10-keep-alive-close", head(b"HTTP/1.0 200 OK", [cl, b"Connection: keep-alive, close"]) + body)

    # Status lines
    add("status-no-reason", head(b"HTTP/1.1 200", [cl]) + body)
    add("status-empty-reason", head(b"HTTP/1.1 200 ", [cl]) + body)
    add("status-obs-text-reason", head(b"HTTP/1.1 200 \x80\xfe\xff", [cl]) + body)
    add("status-tab-reason", head(b"HTTP/1.1 200 O\tK", [cl]) + body)
    add("status-ctl-reason", head(b"HTTP/1.1 200 O\x01K", [cl]) + body, ["ctl"])
    add("status-del-reason", head(b"HTTP/1.1 200 O\x7fK", [cl]) + body, ["ctl"])
    add("status-cr-reason", head(b"HTTP/1.1 200 O\rK", [cl]) + body)
    add("status-nul-reason", head(b"HTTP/1.1 200 O\x00K", [cl]) + body)
    add("status-two-spaces", head(b"HTTP/1.1  200 OK", [cl]) + body)
    add("status-two-digits", head(b"HTTP/1.1 20 OK", [cl]) + body)
    add("status-four-digits", head(b"HTTP/1.1 2000 OK", [cl]) + body)
    add("status-099", head(b"HTTP/1.1 099 Low", [cl]) + body)
    add("status-600", head(b"HTTP/1.1 600 High", [cl]) + body)
    add("status-999", head(b"HTTP/1.1 999 High", [cl]) + body)
    add("status-letters", head(b"HTTP/1.1 2x0 OK", [cl]) + body)
    add("status-lower-http", head(b"http/1.1 200 OK", [cl]) + body)
    add("status-http12", head(b"HTTP/1.2 200 OK", [cl]) + body)
    add("status-http20", head(b"HTTP/2.0 200 OK", [cl]) + body, ["version"])
    add("status-http09-style", b"{}")
    add("status-no-version", head(b"200 OK", [cl]) + body)
    add("status-leading-crlf", b"\r\n" + head(ok, [cl]) + body)
    add("status-leading-space", b" " + head(ok, [cl]) + body)
    add("status-bare-lf", head(ok, [cl], eol=b"\n") + body, ["bare-lf"])
    add("status-line-bare-lf-only", ok + b"\n" + cl + b"\r\n\r\n" + body, ["bare-lf"])
    add("head-ends-lf-crlf", ok + b"\r\n" + cl + b"\n\r\n" + body + tail, ["bare-lf"])
    add("empty", b"")

    # Field syntax
    add("field-obs-fold", head(ok, [b"X-A: 1", b" 2", cl]) + body, ["obs-fold"])
    add("field-obs-fold-tab", head(ok, [b"X-A: 1", b"\t2", cl]) + body, ["obs-fold"])
    add("field-obs-fold-first", head(ok, [b" X-A: 1", cl]) + body)
    add("field-obs-fold-cl", head(ok, [b"Content-Length:", b" 7"]) + body, ["obs-fold"])
    add("field-space-before-colon", head(ok, [b"Content-Length : 7"]) + body)
    add("field-tab-before-colon", head(ok, [b"X-A\t: 1", cl]) + body)
    add("field-no-colon", head(ok, [b"X-A 1", cl]) + body)
    add("field-empty-name", head(ok, [b": 1", cl]) + body)
    add("field-empty-value", head(ok, [b"X-A:", cl]) + body)
    add("field-obs-text-value", head(ok, [b"X-A: \x80\xff", cl]) + body)
    add("field-ctl-value", head(ok, [b"X-A: a\x01b", cl]) + body, ["ctl"])
    add("field-del-value", head(ok, [b"X-A: a\x7fb", cl]) + body, ["ctl"])
    add("field-nul-value", head(ok, [b"X-A: a\x00b", cl]) + body)
    add("field-cr-value", head(ok, [b"X-A: a\rb", cl]) + body)
    add("field-bare-lf", head(ok, [b"X-A: 1\nX-B: 2", cl]) + body, ["bare-lf"])
    add("field-bad-name-char", head(ok, [b"X(A): 1", cl]) + body)
    add("field-long", head(ok, [b"X-A: " + b"v" * 8000, cl]) + body)
    add("head-over-16k", head(ok, [b"X-A: " + b"v" * 17000, cl]) + body, ["header-limit"])
    return cases


def body_chunks_then(body, trailer_section):
    """`body` as one chunk and the last chunk, followed by `trailer_section` as sent (its own line ends)."""
    return b"%x\r\n" % len(body) + body + b"\r\n0\r\n" + trailer_section


# Parts of generated answers: (bytes, tags). Most are valid so that the combinations reach the framing.
STATUS_LINES = [
    (b"HTTP/1.1 200 OK", ()), (b"HTTP/1.1 200", ()), (b"HTTP/1.1 201 Created", ()),
    (b"HTTP/1.1 404 Not Found", ()), (b"HTTP/1.1 500 Internal Server Error", ()),
    (b"HTTP/1.0 200 OK", ()), (b"HTTP/1.1 204 No Content", ()), (b"HTTP/1.1 304 Not Modified", ()),
    (b"HTTP/1.1 299 \x80obs", ()), (b"HTTP/1.1 20 OK", ()), (b"HTTP/3.0 200 OK", ("version",)),
]
INTERIM = [
    ([], ()), ([], ()), ([], ()), ([], ()), ([], ()), ([], ()), ([b"HTTP/1.1 100 Continue"], ()),
    ([b"HTTP/1.1 103 Early Hints", b"Link: </a.js>; rel=preload"], ()),
    ([b"HTTP/1.1 100 Continue", b"HTTP/1.1 102 Processing"], ()),
    ([b"HTTP/1.1 101 Switching Protocols", b"Upgrade: h2c"], ()),
]
OTHER_FIELDS = [
    (b"Content-Type: application/json", ()), (b"Server: mock", ()), (b"X-Empty:", ()),
    (b"X-Tab: a\tb", ()), (b"X-Obs: \xe9t\xe9", ()), (b"Date: Tue, 11 Jun 2024 10:00:00 GMT", ()),
    (b"Connection: keep-alive", ()), (b"Connection: close", ()), (b"Connection: Keep-Alive, Upgrade", ()),
]
MUTATIONS = [  # a change to one field line, rarely applied
    (lambda f: f + b"\r\n  folded", ("obs-fold",)),
    (lambda f: f.replace(b":", b" :", 1), ()),
    (lambda f: f + b"\x01", ("ctl",)),
    (lambda f: f + b"\x00", ()),
    (lambda f: f + b"\n", ("bare-lf",)),
]
BODY_BYTES = [b"{", b"}", b'"a":1', b"\r\n", b"0\r\n\r\n", b"HTTP/1.1 200 OK\r\n", b"x", b"\n", b"5"]
SUFFIXES = [b"", b"", b"", OK_CL2, b"garbage\r\n\r\n", b"\r\n", b"HTTP/1.1 200 O"]


def framing(rng, body):
    """Framing fields and the encoded body: (fields, encoded, tags); `encoded` is a pair (ours, h11's)
    where h11 is given an equivalent form."""
    n = len(body)
    kind = rng.randrange(12)
    if kind <= 2:
        return [b"Content-Length: %d" % n], body, ()
    if kind == 3:
        value = rng.choice([b"0%d" % n, b" %d " % n, b"%d, %d" % (n, n), b"+%d" % n])
        return [b"Content-Length: " + value], body, ("cl-list",) if b"," in value else ()
    if kind == 4:
        m = n + rng.choice([-1, 1])
        return [b"Content-Length: %d" % n, b"Content-Length: %d" % rng.choice([n, m])], body, ()
    sizes = [rng.randrange(1, 5) for _ in range(rng.randrange(3))]
    ext = rng.choice([b"", b"", b";a=b", b';q="x"', b" ;bws", b" "])
    trailers = rng.choice([b"", b"", b"X-T: 1\r\n", b"X-T: 1\r\nX-U: 2\r\n"])
    upper, zeros = rng.random() < 0.3, rng.randrange(2)
    encoded = chunked(body, sizes, ext=ext, upper=upper, zeros=zeros, trailers=trailers)
    if ext == b" ;bws":
        twin = chunked(body, sizes, ext=b";bws", upper=upper, zeros=zeros + 1, trailers=trailers)
        return [b"Transfer-Encoding: chunked"], (encoded, twin), ("chunk-ext-bws",)
    if kind <= 7:
        return [b"Transfer-Encoding: " + rng.choice([b"chunked", b"CHUNKED", b"Chunked"])], encoded, ()
    if kind == 8:
        return [b"Transfer-Encoding: chunked", b"Content-Length: %d" % len(encoded)], encoded, ("te+cl",)
    if kind == 9:
        coding = rng.choice([b"gzip", b"gzip, chunked", b"chunked, gzip", b"chunked, chunked", b"identity",
                             b"deflate", b"x-unknown, chunked", b"br"])
        return [b"Transfer-Encoding: " + coding], rng.choice([body, encoded]), ()
    return [], body, ()  # read to the end of the connection


def generated(count):
    rng = random.Random(SEED)
    cases = []
    for i in range(count):
        tags = set()
        status_line, t = rng.choice(STATUS_LINES)
        tags.update(t)
        interim_lines, t = rng.choice(INTERIM)
        tags.update(t)
        body = b"".join(rng.choice(BODY_BYTES) for _ in range(rng.randrange(8)))
        fields, encoded, t = framing(rng, body)
        tags.update(t)
        for _ in range(rng.randrange(3)):
            field, t = rng.choice(OTHER_FIELDS)
            fields.insert(rng.randrange(len(fields) + 1), field)
            tags.update(t)
        lower = [f.lower() for f in fields]
        if status_line.startswith(b"HTTP/1.0") and any(f.startswith(b"connection: keep-alive") for f in lower) \
                and not any(f.startswith(b"transfer-encoding") for f in lower):
            tags.add("http10-keep-alive")
        if fields and rng.random() < 0.08:
            mutate, t = rng.choice(MUTATIONS)
            at = rng.randrange(len(fields))
            fields[at] = mutate(fields[at])
            tags.update(t)
        ours, theirs = encoded if isinstance(encoded, tuple) else (encoded, encoded)
        start = head(interim_lines[0], interim_lines[1:]) if interim_lines else b""
        start += head(status_line, fields)
        suffix = rng.choice(SUFFIXES)
        eof = rng.random() < 0.4
        cases.append(Case("gen-%04d%s" % (i, "/eof" if eof else ""), start + ours + suffix, eof, tags,
                          start + theirs + suffix))
    return cases
