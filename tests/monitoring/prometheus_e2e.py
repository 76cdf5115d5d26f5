#!/usr/bin/python3
"""Every dashboard panel and every alert rule of deploy/monitoring, queried in a real Prometheus that scrapes
the real gateway.

  prometheus_e2e.py --source DIR --gateway BIN --mock BIN

mock-downstream and the gateway start on 127.0.0.1:0 with a route whose calls are an SQLite query and an
HTTP downstream that answer, and one that hangs: its calls time out, the answers degrade and its circuit
breaker opens. Threads send requests while Prometheus (its own port, data directory and configuration,
scraping the admin listener every second and loading gateway-alerts.yaml) collects a few scrapes. Then,
through /api/v1/query:

- every target expression of every dashboard panel, with the dashboard's variables substituted, returns data;
  every `label_values(EXPR, LABEL)` variable query returns series of EXPR that carry LABEL;
- every alert rule is loaded and evaluates without error, and its expression returns data; an expression that
  is legitimately empty on this traffic (a threshold not crossed) must return data once its comparisons are
  stripped (see `data_parts`);
- the alerts this traffic should raise (the hung call's degraded ratio, its open circuit) are pending or
  firing.

Python 3 standard library only. Every wait is bounded; every process started is stopped on exit.
"""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

# Process: a child with stdout read for its "listening on" lines (bounded), stderr in a file, stopped by stop().
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conformance"))
from gateway_processes import Process  # noqa: E402

READY_TIMEOUT = 30.0   # seconds for Prometheus to answer /-/ready
SCRAPES = 5            # scrapes of the gateway to wait for before querying
WAIT_TIMEOUT = 60.0    # seconds for the scrapes, the open circuit and the rule evaluations
STOP_TIMEOUT = 10.0    # seconds for the load threads to finish their request
LOAD_THREADS = 8

# Dashboard variables: every selector uses them with =~, so ".*" selects everything.
RATE_INTERVAL = "30s"
INTERVAL_VARIABLES = ("$__rate_interval", "${__rate_interval}", "$__interval", "${__interval}", "$__range",
                      "${__range}")

# Alerts that the hung downstream must raise on this traffic: their full expression must return data.
EXPECTED_ALERTS = {"GatewayDegradedRatioHigh", "GatewayCircuitOpen"}


class Failure(Exception):
    pass


def fail(message):
    raise Failure(message)


# ---------------------------------------------------------------------------------------------- processes

def free_port():
    """A loopback port free now, for Prometheus, which does not report the port it bound."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=5.0):
    """(status, body) of a GET; HTTP error statuses are returned, not raised."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def poll(what, predicate, timeout=WAIT_TIMEOUT, interval=0.2):
    """Calls predicate until it returns a true value (returned), failing after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            fail("%s: not within %.0f s" % (what, timeout))
        time.sleep(interval)


# ------------------------------------------------------------------------------------ gateway under test

def write_database(path):
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE offers (sku TEXT PRIMARY KEY, price_cent INTEGER NOT NULL, stock INTEGER NOT NULL)")
    db.executemany("INSERT INTO offers VALUES (?, ?, ?)", [("A%d" % i, 100 + i, i % 50) for i in range(1, 101)])
    db.commit()
    db.close()


def gateway_config(mock_url):
    """inventory (SQLite) and channel-price answer; coupon hangs, so each of its calls times out at the
    200 ms deadline until its breaker (defaults: 20 calls in 10 s, half failed) opens."""
    downstreams = "".join("  %s:\n    url: %s\n    connect_timeout: 1s\n" % (name, mock_url)
                          for name in ("channel-price", "coupon"))
    calls = "".join("      - name: %s\n        downstream: %s\n        path: /%s?sku={sku}\n"
                    "        fallback: {priceCent: -1}\n" % (name, name, name) for name in ("channel-price", "coupon"))
    return ("server:\n  listen: 127.0.0.1:0\n  threads: 2\n  watch_config: false\n"
            "admin:\n  listen: 127.0.0.1:0\n"
            "shutdown:\n  drain_delay: 0s\n  timeout: 2s\n"
            "log:\n  access: false\n"
            "downstreams:\n"
            "  inventory:\n    kind: sql\n    driver: sqlite\n    database: offers.db\n    read_only: true\n"
            "    pool_size: 2\n    permits: 2\n    max_waiting: 100\n"
            "    query: SELECT price_cent AS \"priceCent\", stock FROM offers WHERE sku = :sku\n"
            + downstreams +
            "routes:\n  - path: /api/offer/aggregate\n    method: GET\n    deadline: 200ms\n"
            "    params:\n      sku: {required: true, pattern: '^[A-Za-z0-9_-]{1,64}$'}\n"
            "    response: array\n    calls:\n"
            "      - name: inventory\n        downstream: inventory\n        fallback: {priceCent: -1, stock: 0}\n"
            + calls)


class Load:
    """Threads sending GET requests to the aggregate route until stop()."""

    def __init__(self, port):
        self.port = port
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.statuses = {}
        self.threads = [threading.Thread(target=self.run, args=(n,), daemon=True) for n in range(LOAD_THREADS)]
        for t in self.threads:
            t.start()

    def run(self, n):
        i = 0
        while not self.stopping.is_set():
            i += 1
            try:
                status, _ = http_get("http://127.0.0.1:%d/api/offer/aggregate?sku=A%d" % (self.port, 1 + (n * 7 + i) % 100))
            except OSError as e:
                status = type(e).__name__
            with self.lock:
                self.statuses[status] = self.statuses.get(status, 0) + 1

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join(STOP_TIMEOUT)


# ------------------------------------------------------------------------------------------- Prometheus

class Prometheus:
    def __init__(self, port):
        self.base = "http://127.0.0.1:%d" % port

    def api(self, path, **params):
        url = self.base + path + ("?" + urllib.parse.urlencode(params) if params else "")
        status, body = http_get(url, timeout=10.0)
        try:
            answer = json.loads(body)
        except ValueError:
            fail("%s: HTTP %d, not JSON: %r" % (url, status, body[:200]))
        if status != 200 or answer.get("status") != "success":
            fail("%s: HTTP %d: %s" % (path, status, answer.get("error", body[:200])))
        return answer["data"]

    def query(self, expr):
        """The result (a list of samples) of an instant query; a scalar or string counts as one sample."""
        data = self.api("/api/v1/query", query=expr)
        return data["result"] if data["resultType"] in ("vector", "matrix") else [data["result"]]


def prometheus_config(admin_port, rules_file):
    return ("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
            "rule_files:\n  - %s\n"
            "scrape_configs:\n  - job_name: gateway\n    static_configs:\n"
            "      - targets: ['127.0.0.1:%d']\n" % (json.dumps(rules_file), admin_port))


# ------------------------------------------------------------------------------ splitting an expression

def top_level(expr):
    """(index, character) of each character of expr outside (), [], {} and string literals."""
    depth, quote, escaped = 0, None, False
    for i, c in enumerate(expr):
        if quote:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == quote:
                quote = None
            continue
        if c in "\"'`":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0:
            yield i, c


def split_top(expr, operators):
    """The operands of expr's top-level binary operators among `operators` (one precedence level: keywords
    as whole words, symbols longest first), each operator's bool/on(...)/ignoring(...)/group_x(...)
    modifiers dropped; None when expr has none of them at its top level."""
    masked = [" "] * len(expr)
    for i, c in top_level(expr):
        masked[i] = c
    pattern = "|".join(r"(?<![\w:])%s(?![\w:])" % o if o.isalpha() else re.escape(o)
                       for o in sorted(operators, key=len, reverse=True))
    cuts = [m.span() for m in re.finditer(pattern, "".join(masked))]
    if not cuts:
        return None
    bounds = [0] + [i for cut in cuts for i in cut] + [len(expr)]
    parts = [expr[bounds[i]:bounds[i + 1]] for i in range(0, len(bounds), 2)]
    return [parts[0].strip()] + [MODIFIERS.sub("", p, count=1).strip() for p in parts[1:]]


MODIFIERS = re.compile(r"^\s*(bool\b)?\s*((on|ignoring)\s*\([^)]*\))?\s*((group_left|group_right)\b\s*(\([^)]*\))?)?")

NUMBER = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$")


def data_parts(expr):
    """The sub-expressions of an alert expression that must return data on any traffic, healthy or not.
    An alert is `SERIES <comparison> THRESHOLD`, possibly several joined by `and`, `or` or `unless`, so:
    split at the top-level set operators (lowest precedence) and check each side; within a side, split at
    a top-level comparison: a number on either side is a threshold and is dropped, two vector sides are both
    checked; what has no comparison is checked whole. `a > 0.5` gives [a]; `max(x) == 0 and min(y) > 0` gives
    [max(x), min(y)]; `a / on (k) group_left b > 0.1` gives [a / on (k) group_left b]."""
    expr = expr.strip()
    while expr.startswith("(") and expr.endswith(")") and len(list(top_level(expr))) == 0:
        expr = expr[1:-1].strip()   # one pair of brackets around the whole expression
    for level in (("or",), ("and", "unless"), ("==", "!=", ">=", "<=", ">", "<")):
        parts = split_top(expr, level)
        if parts:
            return [p for part in parts if not NUMBER.match(part) for p in data_parts(part)]
    return [expr]


# ------------------------------------------------------------------------------------------ label names

STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
MATCHER = re.compile(r"([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)")
IDENTIFIER = re.compile(r"[a-zA-Z_:][\w:]*")


def names_in(expr, metric_names):
    """(metrics, labels): the metric names expr selects (identifiers Prometheus knows as metric names) and
    the label names it refers to (in matchers and in by/without/on/ignoring/group_x lists). A label that no
    series of those metrics carries would still match an empty value, so queries alone do not catch it."""
    bare = STRING.sub('""', expr)
    labels = {n.strip() for m in GROUPING.finditer(bare) for n in m.group(1).split(",") if n.strip()}
    for braces in re.findall(r"\{([^}]*)\}", bare):
        labels.update(MATCHER.findall(braces))
    metrics = {t for t in IDENTIFIER.findall(GROUPING.sub(" ", bare)) if t in metric_names}
    return metrics, labels - {"__name__"}


def check_names(prometheus, where, expr, metric_names, problems):
    """Every label expr refers to is carried by some series of the metrics it selects."""
    metrics, labels = names_in(expr, metric_names)
    if not metrics:
        problems.append("%s: selects no metric Prometheus knows: %s" % (where, expr))
        return
    selector = "|".join(sorted(re.escape(m) for m in metrics))
    for label in sorted(labels):
        if not prometheus.query('count({__name__=~"%s",%s!=""})' % (selector, label)):
            problems.append("%s: no series of %s has label %s" % (where, ", ".join(sorted(metrics)), label))


# ------------------------------------------------------------------------------------------------ checks

def dashboard_queries(dashboard):
    """(where, expression) of every panel target, nested rows included, and every variable query."""
    def panels(items):
        for p in items:
            yield p
            yield from panels(p.get("panels", []))
    out = []
    for p in panels(dashboard["panels"]):
        for t in p.get("targets", []):
            out.append(("panel %d %r target %s" % (p["id"], p["title"], t["refId"]), t["expr"],
                        t.get("legendFormat", "")))
    for v in dashboard["templating"]["list"]:
        if v["type"] == "query":
            q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
            out.append(("variable %s" % v["name"], q, ""))
    for a in dashboard.get("annotations", {}).get("list", []):
        if a.get("expr"):
            out.append(("annotation %r" % a["name"], a["expr"], ""))
    return out


def substitute(expr, variables):
    for name in INTERVAL_VARIABLES:
        expr = expr.replace(name, RATE_INTERVAL)
    for name in sorted(variables, key=len, reverse=True):
        expr = expr.replace("${%s}" % name, ".*").replace("$" + name, ".*")
    if "$" in expr:
        fail("unknown variable left in %r" % expr)
    return expr


def check_dashboard(prometheus, dashboard, metric_names, problems):
    """Each expression returns data, refers to existing labels only, and its legend names labels its
    result carries."""
    variables = [v["name"] for v in dashboard["templating"]["list"]]
    queries = dashboard_queries(dashboard)
    for where, raw, legend in queries:
        expr = substitute(raw, variables)
        label_values = re.fullmatch(r"\s*label_values\((.*),\s*(\w+)\s*\)\s*", expr, re.S)
        try:
            if label_values:
                series, label = label_values.groups()
                check_names(prometheus, where, series, metric_names, problems)
                if not any(label in s["metric"] for s in prometheus.query(series)):
                    problems.append("%s: no series of %s carries label %s" % (where, series, label))
                continue
            check_names(prometheus, where, expr, metric_names, problems)
            result = prometheus.query(expr)
            if not result:
                problems.append("%s: no data: %s" % (where, expr))
            for label in re.findall(r"\{\{\s*(\w+)\s*\}\}", legend):
                if not any(label in s["metric"] for s in result):
                    problems.append("%s: legend names %s, which its result does not carry" % (where, label))
        except Failure as e:
            problems.append("%s: %s" % (where, e))
    print("dashboard: %d expressions queried" % len(queries))


def check_alerts(prometheus, metric_names, problems):
    def rules():
        return [r for g in prometheus.api("/api/v1/rules")["groups"] for r in g["rules"] if r["type"] == "alerting"]
    # Every rule evaluated at least once (evaluation_interval 1 s), so health is "ok" or "err", not "unknown".
    loaded = poll("every alert rule evaluated", lambda: (lambda rs: rs if rs and all(
        r["health"] != "unknown" for r in rs) else None)(rules()))
    for rule in loaded:
        name, expr = rule["name"], rule["query"]
        if rule["health"] != "ok":
            problems.append("alert %s: evaluation failed: %s" % (name, rule.get("lastError")))
            continue
        check_names(prometheus, "alert " + name, expr, metric_names, problems)
        if prometheus.query(expr):
            print("alert %s: expression returns data" % name)
            continue
        if name in EXPECTED_ALERTS:
            problems.append("alert %s: should match on this traffic, no data: %s" % (name, expr))
            continue
        parts = data_parts(expr)
        if parts == [expr.strip()]:
            problems.append("alert %s: no data and no comparison to strip: %s" % (name, expr))
            continue
        for part in parts:
            if not prometheus.query(part):
                problems.append("alert %s: no data from %s" % (name, part))
        print("alert %s: quiet; data from %s" % (name, " | ".join(" ".join(p.split()) for p in parts)))
    names = {r["name"] for r in loaded}
    for missing in EXPECTED_ALERTS - names:
        problems.append("alert %s: not in the rule file" % missing)
    return len(loaded)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", required=True)
    parser.add_argument("--gateway", required=True)
    parser.add_argument("--mock", required=True)
    args = parser.parse_args()
    prometheus_bin = shutil.which("prometheus")
    if not prometheus_bin:
        fail("prometheus not found on PATH: install the Debian package prometheus (scripts/setup.sh test)")
    monitoring = os.path.join(os.path.abspath(args.source), "deploy", "monitoring")
    with open(os.path.join(monitoring, "gateway-dashboard.json")) as f:
        dashboard = json.load(f)

    processes, load = [], None
    with tempfile.TemporaryDirectory(prefix="monitoring-e2e-") as work:
        try:
            mock = Process([os.path.abspath(args.mock), "--listen", "127.0.0.1:0", "--threads", "2",
                            "--path", "coupon=hang", "--path", "channel-price=ok:5ms"], work, "mock-downstream")
            processes.append(mock)
            (m,) = mock.wait_for_lines([rb"listening on [0-9.]+:([0-9]+)"])
            write_database(os.path.join(work, "offers.db"))
            with open(os.path.join(work, "gateway.yaml"), "w") as f:
                f.write(gateway_config("http://127.0.0.1:%d" % int(m.group(1))))
            gateway = Process([os.path.abspath(args.gateway), "--config", "gateway.yaml"], work, "gateway")
            processes.append(gateway)
            public, admin = gateway.wait_for_lines([rb"gateway listening on [0-9.]+:([0-9]+)",
                                                    rb"admin listening on [0-9.]+:([0-9]+)"])
            admin_port = int(admin.group(1))
            load = Load(int(public.group(1)))

            with open(os.path.join(work, "prometheus.yml"), "w") as f:
                f.write(prometheus_config(admin_port, os.path.join(monitoring, "gateway-alerts.yaml")))
            port = free_port()
            prometheus_process = Process([prometheus_bin, "--config.file=prometheus.yml",
                                          "--storage.tsdb.path=" + os.path.join(work, "tsdb"),
                                          "--web.listen-address=127.0.0.1:%d" % port], work, "prometheus")
            processes.append(prometheus_process)
            prometheus = Prometheus(port)

            def ready():
                if prometheus_process.process.poll() is not None:
                    with open(prometheus_process.stderr_path) as f:
                        fail("prometheus exited with %s:\n%s" % (prometheus_process.process.returncode, f.read()))
                try:
                    return http_get(prometheus.base + "/-/ready", timeout=1.0)[0] == 200
                except OSError:
                    return False
            poll("prometheus ready", ready, timeout=READY_TIMEOUT)
            poll("%d scrapes of the gateway" % SCRAPES, lambda: prometheus.query(
                'count_over_time(up{job="gateway"}[5m]) >= %d and up{job="gateway"} == 1' % SCRAPES))
            poll("coupon's circuit open", lambda: prometheus.query(
                'max_over_time(gateway_circuit_state{downstream="coupon"}[5m]) == 2'))

            problems = []
            metric_names = set(prometheus.api("/api/v1/label/__name__/values"))
            check_dashboard(prometheus, dashboard, metric_names, problems)
            rules = check_alerts(prometheus, metric_names, problems)
            active = poll("alerts %s pending or firing" % sorted(EXPECTED_ALERTS), lambda: (
                lambda names: names if EXPECTED_ALERTS <= names else None)(
                {a["labels"]["alertname"] for a in prometheus.api("/api/v1/alerts")["alerts"]}))
            print("active alerts: %s" % ", ".join(sorted(active)))
            load.stop()
            print("load: %s" % load.statuses)
            if not load.statuses.get(200):
                problems.append("no request was answered 200: %s" % load.statuses)
            if problems:
                fail("%d problems:\n  %s" % (len(problems), "\n  ".join(problems)))
            print("ok: every dashboard expression and all %d alert rules have data" % rules)
        finally:
            if load:
                load.stop()
            for p in reversed(processes):
                p.stop()


if __name__ == "__main__":
    # ctest ends a test that overruns its timeout with SIGTERM: unwind so that the children are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))
    try:
        main()
    except (Failure, RuntimeError) as e:   # RuntimeError: a process did not start (gateway_processes)
        sys.exit("FAIL: %s" % e)
