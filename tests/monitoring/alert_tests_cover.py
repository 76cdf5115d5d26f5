#!/usr/bin/python3
"""Every alert of the rule file has, in the promtool unit tests, a case where it fires and one where it stays
quiet.

  alert_tests_cover.py RULES.yaml TESTS.yaml

A case is an alert_rule_test entry naming the alert: it fires when exp_alerts is not empty, stays quiet when
it is empty. promtool test rules checks that the cases hold; this checks that they exist. Needs python3-yaml.
"""

import sys

import yaml


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().split("\n\n")[1])
    with open(sys.argv[1]) as f:
        alerts = [r["alert"] for g in yaml.safe_load(f)["groups"] for r in g["rules"] if "alert" in r]
    with open(sys.argv[2]) as f:
        tests = yaml.safe_load(f)["tests"]
    fires, quiet = set(), set()
    for test in tests:
        for case in test.get("alert_rule_test", []):
            (fires if case.get("exp_alerts") else quiet).add(case["alertname"])
    problems = ["%s has no test where it fires" % a for a in alerts if a not in fires]
    problems += ["%s has no test where it stays quiet" % a for a in alerts if a not in quiet]
    problems += ["tests name %s, which is not an alert of the rule file" % a for a in (fires | quiet) - set(alerts)]
    if not alerts:
        problems.append("no alert in %s" % sys.argv[1])
    if problems:
        sys.exit("FAIL:\n  " + "\n  ".join(problems))
    print("%d alerts, each with a firing and a quiet test" % len(alerts))


if __name__ == "__main__":
    main()
