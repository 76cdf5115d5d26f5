"""The report both conformance tests print: every failing case with its bytes, the allowed differences
that were used, and the summary line. Verdicts are (case, verdict, text) with verdict 'agree', 'refused'
(a refusal listed with its reason) or 'fail'; an 'agree' whose text starts with 'noted: ' agreed with the
help of a listed difference (printed with the refusals). A case has .name and .wire (the bytes sent)."""

import collections

WIRE_SHOWN = 600  # bytes of a failing case printed
FAILURES_SHOWN = 100  # failing cases printed in full; only the names of the others


def shown(data):
    text = repr(bytes(data[:WIRE_SHOWN]))
    return text + (" ... (%d bytes)" % len(data) if len(data) > WIRE_SHOWN else "")


def report(verdicts, title):
    """Prints the report; returns the exit status (1 when a case failed)."""
    failed = [(case, text) for case, verdict, text in verdicts if verdict == "fail"]
    refused = collections.Counter(text for _, verdict, text in verdicts if verdict == "refused")
    noted = collections.Counter(text[len("noted: "):] for _, verdict, text in verdicts
                                if verdict == "agree" and text.startswith("noted: "))
    agree = sum(1 for _, verdict, _ in verdicts if verdict == "agree")
    for case, text in failed[:FAILURES_SHOWN]:
        print("FAIL %s: %s\n     bytes: %s" % (case.name, text, shown(case.wire)))
    if len(failed) > FAILURES_SHOWN:
        print("FAIL also: " + " ".join(case.name for case, _ in failed[FAILURES_SHOWN:]))
    for heading, counts in (("refusals allowed", refused), ("agreements with a listed difference", noted)):
        if counts:
            print("\n%s:" % heading)
            for text, count in sorted(counts.items()):
                print("  %4d x %s" % (count, text))
    print("\n%s: %d cases, %d agree, %d refused-with-reason, %d failed"
          % (title, len(verdicts), agree, sum(refused.values()), len(failed)))
    return 1 if failed else 0
