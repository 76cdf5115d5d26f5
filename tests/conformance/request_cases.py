"""The request streams request_conformance.py sends: hand-written cases for every framing rule, then
seeded random pipelines. Tags name the differences from h11 a case may show (the tables in
request_conformance.py say which are allowed and why)."""

import random

SEED = 20240612
GENERATED = 240

OFFER = b"/api/offer/aggregate?sku=A1"
SENTINEL = b"GET /__end HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n"


class Case:
    """`wire`: the bytes sent on one connection. `refusal_statuses`: when the gateway refuses a request of
    it, the statuses it may answer with (None: any 4xx/5xx)."""

    def __init__(self, name, wire, tags=(), refusal_statuses=None):
        self.name, self.wire, self.tags = name, wire, frozenset(tags)
        self.refusal_statuses = refusal_statuses


def request(method=b"GET", target=OFFER, version=b"HTTP/1.1", fields=(), body=b"", eol=b"\r\n", host=b"Host: gw"):
    return (method + b" " + target + b" " + version + eol + (host + eol if host else b"")
            + b"".join(f + eol for f in fields) + eol + body)


def chunked(body, ext=b"", trailers=b""):
    out = b"".join(b"%x%s\r\n%s\r\n" % (len(body[i:i + 3]), ext, body[i:i + 3]) for i in range(0, len(body), 3))
    return out + b"0" + ext + b"\r\n" + trailers + b"\r\n"


def hand_written():
    cases = []

    def add(name, wire, tags=(), refusal_statuses=None):
        cases.append(Case(name, wire, tags, refusal_statuses))

    def post(fields, body):
        return request(b"POST", fields=fields, body=body)

    get = request()
    body = b'{"q":1}'
    cl = b"Content-Length: 7"
    te = b"Transfer-Encoding: chunked"
    smuggled = request(target=b"/api/offer/aggregate?sku=SMUGGLED")
    add("get", get)
    add("get-close", request(fields=[b"Connection: close"]))
    add("head", request(b"HEAD"))
    add("head-unknown-path", request(b"HEAD", b"/nope"))
    add("pipelined-3", get + request(b"HEAD") + request(target=b"/nope"))
    add("pipelined-after-close", request(fields=[b"Connection: close"]) + get)
    # Content-Length
    add("post-cl", post([cl], body) + get, ["body"])
    add("get-with-cl-body", request(fields=[cl], body=body) + get, ["body"])
    add("cl-body-is-a-request", post([b"Content-Length: %d" % len(smuggled)], smuggled) + get, ["body"])
    add("cl-zero", post([b"Content-Length: 0"], b"") + get)
    add("cl-leading-zeros", post([b"Content-Length: 007"], body) + get, ["body"])
    add("cl-duplicate-equal", post([cl, cl], body) + get, ["cl-repeated", "body"])
    add("cl-list-equal", post([b"Content-Length: 7, 7"], body) + get, ["cl-list", "body"])
    add("cl-conflicting", post([cl, b"Content-Length: 8"], body + b"x") + get)
    add("cl-plus", post([b"Content-Length: +7"], body) + get)
    add("cl-negative", post([b"Content-Length: -1"], body) + get)
    add("cl-inner-space", post([b"Content-Length: 7 7"], body) + get)
    add("cl-body-cut", post([b"Content-Length: 70"], body))
    # Chunked
    add("chunked", post([te], chunked(body)) + get, ["body"])
    add("chunked-empty", request(fields=[te], body=chunked(b"")) + get, ["body"])
    add("chunked-smuggle", post([te], chunked(smuggled)) + get, ["body"])
    add("chunked-ext", post([te], chunked(body, ext=b";a=b")) + get, ["body"])
    add("chunked-ext-ctl", post([te], chunked(body, ext=b";a=\x01")) + get, ["chunk-ext-ctl", "body"])
    add("chunked-trailers", post([te], chunked(body, trailers=b"X-T: 1\r\n")) + get, ["body"])
    add("chunked-upper", post([b"Transfer-Encoding: CHUNKED"], chunked(body)) + get, ["body"])
    add("chunked-bad-size", post([te], b"zz\r\n" + body + b"\r\n0\r\n\r\n") + get)
    add("chunked-missing-crlf", post([te], b"7\r\n" + body + b"0\r\n\r\n") + get)
    add("chunked-and-cl", post([te, b"Content-Length: 5"], chunked(body)) + get, ["te+cl"])
    add("cl-and-chunked", post([b"Content-Length: 5", te], chunked(body)) + get, ["te+cl"])
    # RFC 9112 6.1: Transfer-Encoding in an HTTP/1.0 message: framing faulty, close after it.
    http10_chunked = [te, b"Connection: keep-alive"]
    add("http10-chunked-keep-alive",
        request(version=b"HTTP/1.0", fields=http10_chunked, body=chunked(b"")) + get)
    add("http10-chunked-body-keep-alive",
        request(b"POST", version=b"HTTP/1.0", fields=http10_chunked, body=chunked(body)) + get, ["body"])
    # Transfer codings the gateway cannot frame (RFC 9112 6.3): the final coding not chunked, 400; a coding
    # it does not implement before chunked, 501 (or 400). Either way a close, and the body never runs.
    for name, coding, encode, statuses in [
            ("te-gzip", b"gzip", False, {400}),
            ("te-chunked-gzip", b"chunked, gzip", False, {400}),
            ("te-gzip-chunked", b"gzip, chunked", True, {501, 400}),
            ("te-unknown", b"x-custom", False, {400, 501}),
            ("te-unknown-chunked", b"x-custom, chunked", True, {501, 400}),
            ("te-identity", b"identity", False, {400, 501}),
            ("te-chunked-chunked", b"chunked, chunked", True, {400}),
            ("te-empty", b"", False, {400})]:
        fields = [b"Transfer-Encoding: " + coding]
        add(name, post(fields, chunked(smuggled) if encode else smuggled), [], statuses)
    add("te-gzip-get", request(fields=[b"Transfer-Encoding: gzip"], body=smuggled), [], {400})
    add("te-gzip-head", request(b"HEAD", fields=[b"Transfer-Encoding: gzip"], body=smuggled), [], {400})
    # A refusal of a HEAD request whose request line was read is an answer to HEAD too: no body.
    add("head-te-and-cl", request(b"HEAD", fields=[te, b"Content-Length: 5"], body=chunked(b"")) + get,
        ["te+cl"])
    add("head-ctl-in-value", request(b"HEAD", fields=[b"X-A: a\x01b"]) + get, ["ctl"])
    add("te-two-fields", post([b"Transfer-Encoding: gzip", te], chunked(smuggled)), [], {501, 400})
    add("te-chunked-then-gzip-field", post([te, b"Transfer-Encoding: gzip"], chunked(smuggled)), [], {400})
    # Field syntax
    add("obs-fold", request(fields=[b"X-A: 1", b" 2"]) + get, ["obs-fold"])
    add("obs-fold-cl", post([b"Content-Length:", b" 7"], body) + get, ["obs-fold", "body"])
    add("space-before-colon", post([b"Content-Length : 7"], body) + get)
    add("ctl-in-value", request(fields=[b"X-A: a\x01b"]) + get, ["ctl"])
    add("nul-in-value", request(fields=[b"X-A: a\x00b"]) + get)
    add("bare-lf", request(eol=b"\n") + get, ["bare-lf"])
    add("bare-lf-one-field", get.replace(b"Host: gw\r\n", b"Host: gw\n", 1) + get, ["bare-lf"])
    add("leading-crlf", b"\r\n" + get + get)  # RFC 9112 2.2: SHOULD be ignored; h11 and Beast refuse it
    # Request lines, targets, versions, keep-alive
    add("absolute-form", request(target=b"http://gw" + OFFER) + get)
    add("asterisk-form", request(b"OPTIONS", b"*") + get)
    add("lower-case-method", request(b"get") + get)
    add("two-spaces", get.replace(b"GET ", b"GET  ", 1) + get)
    add("no-version", b"GET " + OFFER + b"\r\nHost: gw\r\n\r\n" + get)
    add("target-with-space", request(target=b"/api/offer/aggregate?sku=A 1") + get)
    add("http10", request(version=b"HTTP/1.0"))
    add("http10-then-more", request(version=b"HTTP/1.0") + get)
    add("http10-keep-alive", request(version=b"HTTP/1.0", fields=[b"Connection: keep-alive"]) + get)
    add("http11-keep-alive-close", request(fields=[b"Connection: keep-alive, close"]) + get)
    add("http12", request(version=b"HTTP/1.2") + get, ["version"])
    add("http2-version", request(version=b"HTTP/2.0") + get, ["version"])
    add("expect-100", post([cl, b"Expect: 100-continue"], body) + get, ["body"])
    add("expect-100-get", request(fields=[b"Expect: 100-continue"]) + get)
    add("head-cut", get[:-2])
    # The edge's refusals: names a lenient server could read as framing, Host, credentials, targets.
    for name, field in [("te-underscore", b"Transfer_Encoding: chunked"), ("cl-underscore", b"Content_Length: 7"),
                        ("cl-double-hyphen", b"Content--Length: 7"), ("cl-dot", b"Content.Length: 7"),
                        ("te-trailing-hyphen", b"Transfer-Encoding-: chunked"), ("host-lookalike", b"Host_: evil")]:
        add(name, request(fields=[field]) + get, ["lookalike"])
    add("host-missing", request(host=None) + get)
    add("host-repeated", request(fields=[b"Host: evil.example"]) + get)
    add("host-list", request(host=b"Host: gw, evil.example") + get, ["host-value"])
    add("host-userinfo", request(host=b"Host: user@gw") + get, ["host-value"])
    add("authorization-repeated", request(fields=[b"Authorization: Bearer a", b"Authorization: Bearer b"]) + get,
        ["credentials"])
    add("target-fragment", request(target=OFFER + b"#x") + get, ["target"])
    add("target-backslash", request(target=b"/api\\offer/aggregate?sku=A1") + get, ["target"])
    add("target-encoded-slash", request(target=b"/api%2Foffer/aggregate?sku=A1") + get, ["target"])
    add("target-dot-params", request(target=b"/api/..;/offer/aggregate?sku=A1") + get, ["target"])
    add("target-double-encoded-dots", request(target=b"/api/%252e%252e/offer/aggregate?sku=A1") + get, ["target"])
    add("target-other-scheme", request(target=b"ftp://gw" + OFFER) + get, ["target"])
    add("target-dot-segments", request(target=b"/api/x/../offer/./aggregate?sku=A1") + get)
    add("target-encoded-dots", request(target=b"/api/x/%2e%2e/offer/%2E/aggregate?sku=A1") + get)
    add("target-encoded-unreserved", request(target=b"/api/%6Fffer/aggregate?sku=A1") + get)
    add("absolute-form-other-host", request(target=b"http://other.example" + OFFER) + get)
    return cases


def generated(count):
    """Pipelines of one to three requests mixing methods, targets, versions, framings and field oddities."""
    rng = random.Random(SEED)
    codings = [b"gzip", b"chunked, gzip", b"gzip, chunked", b"identity", b"x-unknown, chunked",
               b"chunked, chunked"]
    pieces = [b"{}", b"x", b"\r\n", b"0\r\n\r\n", SENTINEL[:20]]
    cases = []
    for i in range(count):
        wire, tags = b"", set()
        for _ in range(rng.randrange(1, 4)):
            method = rng.choice([b"GET", b"GET", b"HEAD", b"POST", b"DELETE"])
            target = rng.choice([OFFER, OFFER, b"/nope", b"/api/offer/aggregate", b"http://gw" + OFFER])
            version = rng.choice([b"HTTP/1.1"] * 4 + [b"HTTP/1.0"])
            fields = []
            if rng.random() < 0.15:
                fields.append(rng.choice([b"Connection: close", b"Connection: keep-alive"]))
            body = b"".join(rng.choice(pieces) for _ in range(rng.randrange(5)))
            kind = rng.randrange(10)
            if (body and kind < 8) or 3 <= kind < 6:  # chunked announces content, even when empty
                tags.add("body")
            if kind < 3:
                fields.append(b"Content-Length: %d" % len(body))
            elif kind < 6:
                fields.append(b"Transfer-Encoding: chunked")
                body = chunked(body, ext=rng.choice([b"", b";e=1"]), trailers=rng.choice([b"", b"X-T: 1\r\n"]))
            elif kind == 6:
                fields += [b"Transfer-Encoding: chunked", b"Content-Length: %d" % len(body)]
                body = chunked(body)
                tags.add("te+cl")
            elif kind == 7:
                fields.append(b"Transfer-Encoding: " + rng.choice(codings))
                body = rng.choice([body, chunked(body)])
            else:
                body = b""
            if rng.random() < 0.1:
                fields.append(b"Expect: 100-continue")
            if rng.random() < 0.05:
                fields.append(b"X-Fold: a\r\n b")
                tags.add("obs-fold")
            rng.shuffle(fields)
            wire += request(method, target, version, fields, body)
        cases.append(Case("gen-%03d" % i, wire, tags))
    return cases
