#!/usr/bin/python3
"""Differential conformance of the gateway's request path against h11 (python3-h11).

Usage: request_conformance.py PATH/TO/gateway PATH/TO/mock-downstream

Starts mock-downstream and the gateway on port 0 (loopback, config in a temporary directory), sends
generated raw request streams (hand-written cases, then seeded random pipelines), one connection each,
and feeds the same bytes to h11 as the server to learn how many requests they hold and where h11 refuses
one. The gateway's answers are read by h11 as the client, which also checks that they are valid HTTP
(an answer to HEAD carries no body). The gateway must answer every request h11 accepts and nothing more;
a request h11 refuses gets a 4xx/5xx and a close, or just a close, never a 2xx, and the bytes after it are
never answered. A connection the gateway refuses earlier than h11 must carry a tag listed in
ALLOWED_REFUSALS; answering a request h11 refuses, or more requests than h11 sees, fails.
"""

import concurrent.futures
import re
import socket
import sys
import time

import h11

sys.dont_write_bytecode = True  # the modules below live in the source tree: no __pycache__ there
from conformance_report import report  # noqa: E402
from gateway_processes import Gateway, MockDownstream  # noqa: E402
from request_cases import GENERATED, SENTINEL, generated, hand_written  # noqa: E402

# The gateway refusing a request h11 accepts (answering one of the statuses listed, then closing) is
# allowed for these tags.
ALLOWED_REFUSALS = {
    "body": ("a request with content (a Content-Length above 0, or chunked, which announces content even "
             "when its only chunk is the last): no route takes a body, so the gateway answers from the head "
             "alone (404, 405 or 413) and closes without reading the body (RFC 9112 9.6)", {404, 405, 413}),
    "te+cl": ("a request with both Transfer-Encoding and Content-Length: RFC 9112 6.3 lets a server reject it "
              "(a smuggling attempt); h11 frames it as chunked", {400}),
    "cl-list": ("Content-Length given as a list ('5, 5'): RFC 9110 8.6 lets a recipient reject it", {400}),
    "cl-repeated": ("Content-Length repeated, even with equal values: RFC 9110 8.6 lets a recipient reject it; "
                    "a front door does, since the servers behind it may frame by either field", {400}),
    "lookalike": ("a field name that is Content-Length, Transfer-Encoding, Host or Connection once case, '_', "
                  "'-' and other delimiters are ignored: a lenient server behind or beside the gateway could "
                  "read it as that field (h11 takes it as any other token)", {400}),
    "host-value": ("a Host value that is not one host and port (a list, userinfo): RFC 9112 3.2 says 400 for "
                   "an invalid Host value; h11 does not look at it", {400}),
    "credentials": ("Authorization repeated: not a list field (RFC 9110 11.6.2), so joined it would be one "
                    "credential nobody sent", {400}),
    "target": ("a request-target the gateway will not guess at (a fragment, a backslash, an encoded '/', a "
               "dot segment with parameters or encoded twice, a scheme other than http/https): RFC 9112 3.2 "
               "and RFC 3986; h11 checks only its characters", {400}),
    "bare-lf": ("a line ended by LF alone: RFC 9112 2.2 makes recognising it optional (MAY); Beast requires "
                "CRLF", {400}),
    "obs-fold": ("obs-fold in a request: RFC 9112 5.2 lets a server reject it with 400 (h11 unfolds it)",
                 {400}),
    "ctl": ("a control character (other than HTAB) in a field value: invalid by RFC 9110 5.5 (h11 lets "
            "through everything but NUL and whitespace)", {400}),
    "chunk-ext-ctl": ("a control character in a chunk extension: invalid by RFC 9112 7.1.1 (h11 skips "
                      "extensions unread)", {400}),
    "version": ("a version other than HTTP/1.0 and HTTP/1.1 (Beast's parser takes only these): answered 400 "
                "and closed; RFC 9110 2.5 would have HTTP/1.2 processed as 1.1 (a SHOULD) and HTTP/2.0 "
                "answered 505", {400, 505}),
}

# Differences in how many requests a connection carries, allowed for these tags.
ALLOWED_MORE_REQUESTS = {
    "http10-keep-alive": "an HTTP/1.0 request with 'Connection: keep-alive': the gateway keeps the connection "
                         "(RFC 9112 9.3); h11 never does for HTTP/1.0, so the rest is read by a fresh h11 "
                         "connection as the gateway reads it",
}

WORKERS = 8
ANSWER_TIMEOUT = 15.0  # seconds for one connection's answers: far beyond the gateway's own timeouts


def h11_requests(wire):
    """h11's reading of `wire` as a server: (requests, (end, at, why), used). `requests`: (method,
    keep_alive) of each request h11 accepts, in order, keep_alive as Beast decides it (and RFC 9112 6.1).
    `end`: 'clean' (every byte read), 'closed' (a request ended the connection; the rest is never read),
    'incomplete' (the last request is cut), or 'refused' (h11 refuses the request at offset `at`). After
    an HTTP/1.0 request with keep-alive, which h11 always closes, a fresh h11 connection reads the rest
    and 'http10-keep-alive' is in `used`."""
    requests, used = [], set()
    conn = h11.Connection(h11.SERVER)
    conn.receive_data(wire)
    start = 0  # offset of the request being read
    current = None
    try:
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                return requests, ("clean" if start == len(wire) else "incomplete", start, ""), used
            if isinstance(event, h11.Request):
                options = [o.strip().lower() for name, value in event.headers if name == b"connection"
                           for o in value.split(b",")]
                http10 = event.http_version == b"1.0"
                keep_alive = b"close" not in options and (not http10 or b"keep-alive" in options)
                # RFC 9112 6.1: an HTTP/1.0 message with Transfer-Encoding closes the connection after it.
                faulty = http10 and any(name == b"transfer-encoding" for name, _ in event.headers)
                current = (event.method.decode(), keep_alive and not faulty)
                why_close = "HTTP/1.0 with Transfer-Encoding: RFC 9112 6.1 closes after it" if faulty else ""
            elif isinstance(event, h11.EndOfMessage):
                requests.append(current)
                conn.send(h11.Response(status_code=200, headers=[("Content-Length", "0")]))
                conn.send(h11.EndOfMessage())
                start = len(wire) - len(conn.trailing_data[0])
                if conn.our_state is not h11.MUST_CLOSE:
                    conn.start_next_cycle()
                elif not current[1]:
                    return requests, ("closed", start, why_close), used
                else:
                    used.add("http10-keep-alive")
                    conn = h11.Connection(h11.SERVER)
                    if start == len(wire):
                        return requests, ("clean", start, ""), used
                    conn.receive_data(wire[start:])
    except h11.ProtocolError as e:
        return requests, ("refused", start, str(e)), used


def exchange(port, wire):
    """Sends `wire` on a new connection and reads until the gateway closes it (or ANSWER_TIMEOUT):
    (bytes received, closed)."""
    data = b""
    with socket.create_connection(("127.0.0.1", port), timeout=ANSWER_TIMEOUT) as s:
        s.sendall(wire)
        deadline = time.monotonic() + ANSWER_TIMEOUT
        while (left := deadline - time.monotonic()) > 0:
            s.settimeout(left)
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                return data, False
            except ConnectionResetError:  # closed with our bytes unread: what it sent came first
                return data, True
            if not chunk:
                return data, True
            data += chunk
    return data, False


def h11_answers(data, closed, methods):
    """h11's reading, as the client, of everything the gateway sent: (answers, problem). `methods`: the
    method of each request in order (GET beyond them). `answers`: (status, closes) per final response;
    `problem`: why the bytes are not valid HTTP answers, or None."""
    conn = h11.Connection(h11.CLIENT)
    conn.receive_data(data)
    if closed:
        conn.receive_data(b"")
    answers = []
    try:
        while conn.trailing_data[0]:
            method = methods[len(answers)] if len(answers) < len(methods) else "GET"
            conn.send(h11.Request(method=method, target="/", headers=[("Host", "gw")]))
            conn.send(h11.EndOfMessage())
            status = None
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA or isinstance(event, h11.ConnectionClosed):
                    return answers, "an answer cut short: %r" % bytes(conn.trailing_data[0][:120])
                if isinstance(event, h11.Response):
                    status = event.status_code
                elif isinstance(event, h11.EndOfMessage):
                    break
            closes = conn.their_state is h11.MUST_CLOSE
            answers.append((status, closes))
            if closes:
                rest = bytes(conn.trailing_data[0][:120])
                if rest and method == "HEAD":
                    return answers, "the %d answer to HEAD carries a body: %r" % (status, rest)
                return answers, "bytes after an answer that closes: %r" % rest if rest else None
            conn.start_next_cycle()
    except h11.ProtocolError as e:
        after_head = answers and len(answers) <= len(methods) and methods[len(answers) - 1] == "HEAD"
        return answers, "not a valid answer after %d: %s%s" % (
            len(answers), e, " (the answer to HEAD before it carries a body)" if after_head else "")
    return answers, None


def gateway_view(port, wire, requests, end):
    """(answers, problem, closed) for the bytes `wire`. The request after those h11 accepts (one h11
    refuses, or one the gateway refuses) is HEAD when its request line is a valid HEAD request line;
    otherwise its method is unknown to the gateway too, and its answer is read as one to GET."""
    data, closed = exchange(port, wire)
    methods = [method for method, _ in requests]
    head_line = re.match(rb"HEAD [\x21-\x7e]+ HTTP/[0-9]\.[0-9]\r\n", wire[end[1]:])
    methods.append("HEAD" if head_line else "GET")
    # Answers to bytes h11 never reads as requests fail anyway; reading each as the answer to the request
    # line that looks like its request only makes the report clearer.
    rest = wire[end[1]:]
    rest = rest[rest.find(b"\n") + 1:]
    methods += [m.decode() for m in re.findall(rb"(GET|HEAD|POST|DELETE) [\x21-\x7e]+ HTTP/1\.[01]\r\n", rest)]
    answers, problem = h11_answers(data, closed, methods)
    return answers, problem, closed


def judge(case, h11_view, gateway):
    """(verdict, text) as in conformance_report. Answers beyond what h11 allows fail first; then answers
    that are not valid HTTP; then a connection left open; then refusals of requests h11 accepts."""
    requests, (end, _, why), used = h11_view
    answers, problem, closed = gateway
    n, got = len(requests), len(answers)
    statuses = [s for s, _ in answers]
    seen = "gateway %s, h11 %d request(s) then %s" % (statuses, n, end + (" (%s)" % why if why else ""))
    if problem:
        seen += "; the gateway's bytes after these are not valid HTTP to h11 (%s)" % problem
    if got > n and end == "refused":
        if got > n + 1:
            return "fail", "answered bytes after a request h11 refuses: " + seen
        if statuses[n] < 400:
            return "fail", "answered %d to a request h11 refuses: %s" % (statuses[n], seen)
        if case.refusal_statuses and statuses[n] not in case.refusal_statuses:
            return "fail", "refused with %d, not %s: %s" % (statuses[n], sorted(case.refusal_statuses), seen)
        if not answers[n][1]:
            return "fail", "refused a request without closing the connection: " + seen
    elif got > n and not (end == "incomplete" and got == n + 1 and statuses[n] >= 400 and answers[n][1]):
        return "fail", "answered more requests than h11 sees: " + seen
    if problem:
        return "fail", "invalid HTTP from the gateway: " + seen
    if not closed:
        return "fail", "the gateway neither answered every request nor closed within %.0f s" % ANSWER_TIMEOUT
    if got < n:
        if not answers or statuses[-1] < 400 or not answers[-1][1]:
            return "fail", "stopped answering without refusing (framing differs): " + seen
        allowed = [tag for tag in sorted(case.tags & ALLOWED_REFUSALS.keys())
                   if statuses[-1] in ALLOWED_REFUSALS[tag][1]]
        if not allowed:
            return "fail", "refused (%d) a request h11 accepts: %s" % (statuses[-1], seen)
        return "refused", "%s: %s" % (allowed[0], ALLOWED_REFUSALS[allowed[0]][0])
    notes = ["%s: %s" % (tag, ALLOWED_MORE_REQUESTS[tag]) for tag in sorted(used)]
    return "agree", "noted: " + "; ".join(notes) if notes else "agree"


def run_case(port, case):
    view = h11_requests(case.wire)
    requests, (end, _, _), _ = view
    # A connection h11 leaves open ends with a request that closes it, so that every case ends in a close.
    if end == "clean" and (not requests or requests[-1][1]):
        case.wire += SENTINEL  # (the report shows the bytes sent)
        view = h11_requests(case.wire)
    return judge(case, view, gateway_view(port, case.wire, view[0], view[1]))


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    cases = hand_written() + generated(GENERATED)
    with MockDownstream(sys.argv[2]) as mock, Gateway(sys.argv[1], mock.url) as gateway:
        with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
            results = list(pool.map(lambda case: run_case(gateway.port, case), cases))
    status = report([(case, *result) for case, result in zip(cases, results)], "client requests")
    # SIGTERM drains and exits 0; anything else (a sanitizer report, a crash) fails the test.
    if gateway.exit_status != 0:
        print("FAIL the gateway exited with status %d after SIGTERM; its stderr:\n%s"
              % (gateway.exit_status, gateway.stderr[-20000:]))
        status = 1
    sys.exit(status)


if __name__ == "__main__":
    main()
