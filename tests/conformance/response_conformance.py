#!/usr/bin/python3
"""Differential conformance of the downstream response parser against h11 (python3-h11).

Usage: response_conformance.py PATH/TO/response_probe

Generates downstream answers (hand-written cases for every framing rule, then seeded random combinations),
parses each with h11 as the client of a GET and with gateway::response_parser (through response_probe,
which also checks that the parser's result does not depend on how the bytes are cut), and compares where
the first message ends, its final status and its body, and whether it is accepted. The parser must
agree with h11 or refuse the message; a refusal of a message h11 accepts must be listed in
ALLOWED_REFUSALS with its reason. Accepting what h11 refuses, or accepting with another framing, status
or body, fails. Keeping a connection alive that h11 would close fails unless listed in
ALLOWED_KEEP_ALIVE.

Answers to HEAD are not generated: downstream calls are always GET (downstream/http_call.cpp) and the parser
has no method to know otherwise; the gateway's own answers to HEAD are checked by request_conformance.py.
"""

import base64
import json
import subprocess
import sys

import h11

sys.dont_write_bytecode = True  # the modules below live in the source tree: no __pycache__ there
from conformance_report import report  # noqa: E402
from response_cases import GENERATED, generated, hand_written  # noqa: E402

# A refusal (error, or waiting for bytes that never make the message valid) of a message h11 accepts is
# allowed when the case carries one of these tags, and only with one of the listed errors ("incomplete":
# the parser is still waiting when the bytes end without end of stream; the call then fails at its
# deadline).
ALLOWED_REFUSALS = {
    "te+cl": (
        "a downstream answer with both Transfer-Encoding and Content-Length is refused: RFC 9112 6.3 allows a "
        "client to treat it as an error and the gateway never guesses framing (h11 frames it as chunked)",
        {"bad_transfer_encoding"}),
    "cl-list": (
        "Content-Length given as a list ('5, 5'): RFC 9110 8.6 lets a recipient reject it; the parser takes "
        "one decimal number per field (equal repeated fields are accepted)",
        {"bad_content_length"}),
    "obs-fold": (
        "obs-fold (a field line continued on the next): RFC 9112 5.2 lets a proxy or gateway discard such a "
        "response (h11 unfolds it); a folded Content-Length or Transfer-Encoding fails on its first line",
        {"bad_obs_fold", "bad_content_length", "bad_transfer_encoding"}),
    "bare-lf": (
        "a line ended by LF alone: RFC 9112 2.2 makes recognising it optional (MAY); the parser requires "
        "CRLF everywhere (h11 accepts LF)",
        {"bad_status", "bad_value", "bad_field", "bad_obs_fold", "bad_chunk", "partial_message",
         "incomplete"}),
    "ctl": (
        "a control character (other than HTAB) in a reason phrase, field value or chunk extension: invalid by "
        "RFC 9110 5.5, RFC 9112 4 and 7.1.1 (h11 lets through everything but NUL and whitespace, and "
        "anything in a chunk extension)",
        {"bad_status", "bad_value", "bad_chunk_extension"}),
    "version": (
        "a major version other than HTTP/1: downstreams are spoken to in HTTP/1.1 and an answer in another "
        "major version cannot be parsed as one (RFC 9110 2.5; h11 accepts any digit.digit)",
        {"bad_status"}),
    "many-interim": (
        "more than 8 interim (1xx) responses before the answer: a downstream must not keep a call busy "
        "with them",
        {"bad_status"}),
    "header-limit": (
        "a head over 16 KiB (response_header_limit in downstream/http_call.cpp)",
        {"header_limit"}),
    "te-empty-element": (
        "a Transfer-Encoding list with an empty element ('chunked,'): the parser takes exactly one 'chunked' "
        "(RFC 9110 5.6.1 would have the empty element ignored)",
        {"bad_transfer_encoding"}),
    "body-limit": (
        "a Content-Length or chunk size beyond the call's max_response_bytes (1 MiB): refused before the "
        "body is read",
        {"body_limit", "bad_content_length", "bad_chunk"}),
}

# Syntax RFC 9112 allows and h11 refuses: h11 is given an equivalent form of the same length instead (the
# case's h11_wire), so that where the message ends, its status and body are still compared.
H11_GIVEN_EQUIVALENT = {
    "te-empty-element": "an empty list element in Transfer-Encoding ('chunked,'), to be ignored by RFC 9110 "
                        "5.6.1; h11 refuses it and reads 'chunked '",
    "chunk-ext-bws": "whitespace before a chunk extension's ';' ('7 ;a=b'): BWS in RFC 9112 7.1.1's chunk-ext, "
                     "which h11's chunk-size pattern lacks; h11 reads '07;a=b'",
}

# Keeping alive a connection h11 would close, allowed for these tags.
ALLOWED_KEEP_ALIVE = {
    "http10-keep-alive": "an HTTP/1.0 answer with 'Connection: keep-alive': RFC 9112 9.3 lets a client "
                         "keep such a connection; h11 never does for HTTP/1.0",
}


def h11_parse(case):
    """h11's view of the first answer to a GET: a dict like the probe's."""
    conn = h11.Connection(h11.CLIENT)
    conn.send(h11.Request(method="GET", target="/x", headers=[("Host", "downstream")]))
    conn.send(h11.EndOfMessage())
    if case.h11_wire:  # (h11 takes no bytes as the end of the connection)
        conn.receive_data(case.h11_wire)
    if case.eof:
        conn.receive_data(b"")
    status, body = 0, b""
    try:
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                return {"result": "incomplete", "status": status}
            if isinstance(event, h11.ConnectionClosed):
                return {"result": "error", "error": "connection closed", "status": status}
            if isinstance(event, h11.Response):
                status = event.status_code
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                return {"result": "done", "status": status, "body": body,
                        "consumed": len(case.h11_wire) - len(conn.trailing_data[0]),
                        "keep_alive": conn.their_state is h11.DONE}
    except h11.ProtocolError as e:
        return {"result": "error", "error": str(e), "status": status}


def run_probe(probe, cases):
    lines = "".join("%d %d %s\n" % (i, c.eof, base64.b64encode(c.wire).decode()) for i, c in enumerate(cases))
    out = subprocess.run([probe], input=lines.encode(), stdout=subprocess.PIPE, check=True, timeout=100).stdout
    results = [json.loads(line) for line in out.decode().splitlines()]
    if len(results) != len(cases):
        sys.exit("response_probe answered %d of %d cases" % (len(results), len(cases)))
    for r in results:
        r["body"] = base64.b64decode(r["body"])
    return results


def judge(case, ours, theirs):
    """(verdict, text): verdict is 'agree', 'refused' (with the reason) or 'fail'."""
    if ours["result"] == "inconsistent":
        return "fail", "the result depends on how the bytes are cut: " + ours["detail"]
    if ours["result"] in ("error", "incomplete"):
        if theirs["result"] == "error" or theirs["result"] == ours["result"] == "incomplete":
            return "agree", "both refuse (ours: %s)" % (ours["error"] or "incomplete")
        error = ours["error"] or "incomplete"
        for tag in sorted(case.tags & ALLOWED_REFUSALS.keys()):
            reason, errors = ALLOWED_REFUSALS[tag]
            if error in errors:
                return "refused", "%s: %s" % (tag, reason)
        return "fail", "refused (%s) an answer h11 %s" % (
            error, "accepts" if theirs["result"] == "done" else "still waits for")
    # The parser accepts.
    hint = " (an interim response taken as the answer)" if 100 <= ours["status"] < 200 else ""
    if theirs["result"] == "error":
        return "fail", "accepted an answer h11 refuses: %s%s" % (theirs["error"], hint)
    if theirs["result"] == "incomplete":
        return "fail", "finished an answer h11 still waits for (framing differs)%s" % hint
    problems = []
    if ours["status"] != theirs["status"]:
        problems.append("status %d, h11 %d%s" % (ours["status"], theirs["status"], hint))
    if ours["consumed"] != theirs["consumed"]:
        problems.append("message ends at byte %d, h11 at %d" % (ours["consumed"], theirs["consumed"]))
    if ours["body"] != theirs["body"]:
        problems.append("body %r, h11 %r" % (ours["body"][:80], theirs["body"][:80]))
    notes = []
    if ours["keep_alive"] and not theirs["keep_alive"] and not case.eof:  # (after the end, moot)
        allowed = sorted(case.tags & ALLOWED_KEEP_ALIVE.keys())
        if not allowed:
            problems.append("keeps alive a connection h11 closes (a pooled connection would be reused)")
        notes += ["%s: %s" % (tag, ALLOWED_KEEP_ALIVE[tag]) for tag in allowed]
    if problems:
        return "fail", "; ".join(problems)
    equivalent = sorted(case.tags & H11_GIVEN_EQUIVALENT.keys())
    notes += ["%s: %s" % (tag, H11_GIVEN_EQUIVALENT[tag]) for tag in equivalent]
    return "agree", "noted: " + "; ".join(notes) if notes else "agree"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    cases = hand_written() + generated(GENERATED)
    results = run_probe(sys.argv[1], cases)
    verdicts = [(case, *judge(case, ours, h11_parse(case))) for case, ours in zip(cases, results)]
    sys.exit(report(verdicts, "downstream responses"))


if __name__ == "__main__":
    main()
