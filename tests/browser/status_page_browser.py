#!/usr/bin/env python3
"""The admin status page in a real browser: headless Chromium, driven through ChromeDriver's W3C WebDriver
HTTP API (urllib only, no client library).

It starts mock-downstream (coupon hangs) and the gateway (a circuit breaker that opens after three
failures, a SQLite downstream), sends degraded requests with known request ids, opens http://ADMIN/ and
waits for the page's script to have fetched /status.json and drawn it. Then it checks the rendered DOM:
  - the coupon downstream's row is marked down (data-status, class "bad") with its breaker `open`, shown
    as that text; a healthy downstream's row is `closed` and ok;
  - the route's row shows every request degraded;
  - the recent degraded requests list the newest request id first, the coupon call refused by the open
    breaker, and the first ones timed out;
  - the SQL semaphore, process and configuration version are filled in;
and saves a screenshot (--screenshot). Then it changes server.threads in the file, which a reload cannot
apply, and waits for the page to show "restart pending: server.threads" (hidden before). Chromium or
ChromeDriver missing is a failure, not a skip.

usage: status_page_browser.py --gateway BIN --mock BIN --screenshot PNG
"""
import argparse
import base64
import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
REQUESTS = 12  # degraded requests sent: 3 time out (the breaker opens), the rest refused by it


def die(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


class process:
    """A child whose stdout is read until a `listening on HOST:PORT` line."""

    def __init__(self, args, log, read_stdout=True):
        self.log = open(log, "w+")
        self.child = subprocess.Popen(args, stdout=subprocess.PIPE if read_stdout else self.log, stderr=self.log,
                                      text=True)

    def ports(self, pattern, count, timeout=10):
        found = []
        deadline = time.monotonic() + timeout
        while len(found) < count:
            if time.monotonic() > deadline or self.child.poll() is not None:
                self.log.seek(0)
                die("%s: no listening line (%s)\n%s" % (self.child.args[0], pattern, self.log.read()))
            line = self.child.stdout.readline()
            m = re.search(pattern, line)
            if m:
                found.append(int(m.group(1)))
        return found

    def stop(self):
        if self.child.poll() is None:
            self.child.terminate()
            try:
                self.child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.child.kill()
                self.child.wait()


# Straight to 127.0.0.1, whatever proxy the environment names.
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def http(method, url, body=None, headers=None, timeout=10):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with opener.open(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


class webdriver:
    """The few W3C WebDriver commands the test needs."""

    def __init__(self, port):
        self.base = "http://127.0.0.1:%d" % port
        status, body = http("POST", self.base + "/session", {
            "capabilities": {"alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {"binary": CHROMIUM, "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--window-size=1400,1250", "--hide-scrollbars", "--lang=en-GB"]},
            }}})
        if status != 200:
            die("no WebDriver session: %d %s" % (status, body[:2000]))
        self.session = self.base + "/session/" + json.loads(body)["value"]["sessionId"]

    def command(self, method, path, body=None):
        status, raw = http(method, self.session + path, body)
        value = json.loads(raw)["value"] if raw else None
        if status != 200:
            raise RuntimeError("%s %s: %d %s" % (method, path, status, value))
        return value

    def go(self, url):
        self.command("POST", "/url", {"url": url})

    def run(self, script):
        return self.command("POST", "/execute/sync", {"script": script, "args": []})

    def screenshot(self, path):
        png = base64.b64decode(self.command("GET", "/screenshot"))
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "wb") as f:
            f.write(png)

    def close(self):
        try:
            http("DELETE", self.session)
        except OSError:
            pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def config(mock_port, database):
    return """\
server:
  listen: 127.0.0.1:0
  threads: 2
log:
  access: false
admin:
  listen: 127.0.0.1:0
shutdown:
  drain_delay: 0s
downstreams:
  inventory:
    url: http://127.0.0.1:{port}
  pricing:
    url: http://127.0.0.1:{port}
  coupon:
    url: http://127.0.0.1:{port}
    circuit_breaker: {{consecutive_failures: 3, cooldown: 60s, half_open_calls: 1}}
  offers:
    kind: sql
    driver: sqlite
    database: {database}
    read_only: true
    pool_size: 4
    permits: 4
    query: SELECT title FROM offers WHERE sku = :sku
routes:
  - path: /api/offer/aggregate
    deadline: 300ms
    params:
      sku: {{required: true}}
    response: object
    calls:
      - name: inventory
        downstream: inventory
        path: /inventory?sku={{sku}}
        fallback: {{stock: 0}}
      - name: pricing
        downstream: pricing
        path: /pricing?sku={{sku}}
        fallback: {{priceCent: -1}}
      - name: coupon
        downstream: coupon
        path: /coupon?sku={{sku}}
        fallback: {{coupon: null}}
      - name: offer
        downstream: offers
        fallback: {{title: ""}}
""".format(port=mock_port, database=database)


# What the checks read from the page, taken in one script run (so within one rendering of it).
SNAPSHOT = r"""
const attributes = (e) => e ? Object.fromEntries([...e.attributes].map((a) => [a.name, a.value])) : null;
const row = (css) => {
  const e = document.querySelector(css);
  if (!e) return null;
  return {attrs: attributes(e), text: e.innerText,
          breaker: [...e.querySelectorAll("td.breaker")].map((c) => c.innerText)};
};
const version = document.querySelector("#config-version");
const pending = document.querySelector("#restart-pending");
return {
  updated: attributes(document.querySelector("#updated")),
  coupon: row('#downstreams tr[data-downstream="coupon"]'),
  inventory: row('#downstreams tr[data-downstream="inventory"]'),
  offers: row('#downstreams tr[data-downstream="offers"]'),
  route: row('#routes tr[data-route="/api/offer/aggregate"]'),
  recent: [...document.querySelectorAll("#recent tbody tr[data-request-id]")].map((r) => ({
    id: r.getAttribute("data-request-id"),
    calls: [...r.querySelectorAll("div[data-call]")].map((d) => [d.getAttribute("data-call"),
                                                                 d.getAttribute("data-outcome")]),
  })),
  database: row('#databases tr[data-database="offers"]'),
  coroutines: row('#process tr[data-key="coroutines"]'),
  version: version ? version.innerText : null,
  pending: pending ? {shown: getComputedStyle(pending).display !== "none", text: pending.innerText} : null,
};
"""


def wait_for(what, check, timeout=15):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = check()
            if last and not isinstance(last, Exception):
                return last
        except (RuntimeError, OSError) as e:
            last = e
        time.sleep(0.1)
    die("%s: not seen within %d s (last: %r)" % (what, timeout, last))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gateway", required=True)
    parser.add_argument("--mock", required=True)
    parser.add_argument("--screenshot", required=True)
    args = parser.parse_args()
    for binary, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not os.access(binary, os.X_OK):
            die("%s is missing: install the Debian package %s (scripts/setup.sh test)" % (binary, package))

    failures = []

    def check(ok, message):
        print(("ok:   " if ok else "FAIL: ") + message)
        if not ok:
            failures.append(message)

    with tempfile.TemporaryDirectory() as directory:
        database = os.path.join(directory, "offers.db")
        with sqlite3.connect(database) as db:
            db.execute("CREATE TABLE offers (sku TEXT PRIMARY KEY, title TEXT)")
            db.executemany("INSERT INTO offers VALUES (?, ?)", [("B%d" % i, "offer %d" % i) for i in range(REQUESTS)])
        children = []
        driver = None
        try:
            mock = process([args.mock, "--listen", "127.0.0.1:0", "--delay", "3ms", "--path", "coupon=hang"],
                           os.path.join(directory, "mock.log"))
            children.append(mock)
            mock_port = mock.ports(r"listening on [0-9.]+:([0-9]+)", 1)[0]
            config_path = os.path.join(directory, "gateway.yaml")
            with open(config_path, "w") as f:
                f.write(config(mock_port, database))
            gateway = process([args.gateway, "--config", config_path], os.path.join(directory, "gateway.log"))
            children.append(gateway)
            port = gateway.ports(r"gateway listening on [0-9.]+:([0-9]+)", 1)[0]
            admin = gateway.ports(r"admin listening on [0-9.]+:([0-9]+)", 1)[0]
            admin_url = "http://127.0.0.1:%d" % admin

            for i in range(REQUESTS):
                status, _ = http("GET", "http://127.0.0.1:%d/api/offer/aggregate?sku=B%d" % (port, i),
                                 headers={"X-Request-Id": "browser-%d" % i})
                if status != 200:
                    die("request %d answered %d" % (i, status))
            version = json.loads(http("GET", admin_url + "/config")[1])["version"]

            driver_port = free_port()
            children.append(process([CHROMEDRIVER, "--port=%d" % driver_port], os.path.join(directory, "driver.log"),
                                    read_stdout=False))
            wait_for("chromedriver", lambda: http("GET", "http://127.0.0.1:%d/status" % driver_port)[0] == 200)
            driver = webdriver(driver_port)
            driver.go(admin_url + "/")
            # The page redraws itself every few seconds, which would leave element references taken
            # before a redraw stale: each look is one script that reads the rendered DOM in one go.
            def snapshot():
                shown = driver.run(SNAPSHOT)
                state = shown["updated"] and shown["updated"].get("data-state")
                if state != "ok" or shown["coupon"] is None:
                    return RuntimeError("#updated: %s, coupon row: %s" % (state, shown["coupon"]))
                return shown

            page = wait_for("the page's first update with the coupon row", snapshot)
            coupon = page["coupon"]
            check(coupon["attrs"].get("data-breaker") == "open", "coupon: data-breaker is open")
            check(coupon["attrs"].get("data-status") == "down", "coupon: data-status is down")
            check("bad" in coupon["attrs"].get("class", "").split(), "coupon: the row is marked bad")
            check(coupon["breaker"] == ["open"], "coupon: the breaker cell reads 'open'")
            check("timeout 3" in coupon["text"] and "circuit_open %d" % (REQUESTS - 3) in coupon["text"],
                  "coupon: outcomes timeout 3, circuit_open %d (%s)" % (REQUESTS - 3, coupon["text"]))
            inventory = page["inventory"]
            check(inventory is not None and inventory["attrs"].get("data-breaker") == "closed" and
                  inventory["attrs"].get("data-status") == "ok", "inventory: breaker closed, ok")
            offers = page["offers"]
            check(offers is not None and offers["attrs"].get("data-status") == "ok", "offers (SQLite): ok")

            route = page["route"]
            check(route is not None and route["attrs"].get("data-degraded") == str(REQUESTS),
                  "route: %d degraded requests" % REQUESTS)
            check(route is not None and "100.0 %" in route["text"], "route: degraded share 100.0 %")

            recent = page["recent"]
            ids = [r["id"] for r in recent]
            check(ids == ["browser-%d" % i for i in reversed(range(REQUESTS))],
                  "recent degraded: newest first, every request id (%s)" % ids)
            if recent:
                check(recent[0]["calls"] == [["coupon", "circuit_open"]],
                      "recent degraded: the newest's coupon call refused by the open breaker, and only coupon "
                      "failed (%s)" % recent[0]["calls"])
                check(recent[-1]["calls"] == [["coupon", "timeout"]],
                      "recent degraded: the first request's coupon call timed out (%s)" % recent[-1]["calls"])

            database_row = page["database"]
            check(database_row is not None and database_row["text"].split()[:3] == ["offers", "4", "4"],
                  "SQL semaphore: offers, 4 permits, 4 available")
            coroutines = page["coroutines"]
            check(coroutines is not None and re.search(r"\d", coroutines["text"]) is not None,
                  "process: coroutines shown")
            check(page["version"] == version, "configuration version %s shown (%s)" % (version, page["version"]))

            check(page["pending"] is not None and not page["pending"]["shown"],
                  "no restart pending: the notice is hidden (%s)" % page["pending"])

            driver.screenshot(args.screenshot)
            print("screenshot: " + args.screenshot)

            # A setting only a restart applies: the reload applies the rest, and the page says so.
            with open(config_path) as f:
                text = f.read()
            with open(config_path + ".next", "w") as f:
                f.write(text.replace("  threads: 2\n", "  threads: 3\n", 1))
            os.rename(config_path + ".next", config_path)
            status, body = http("POST", admin_url + "/reload")
            check(status == 200 and json.loads(body)["restart_required"] == ["server.threads"],
                  "reload: server.threads needs a restart (%d %s)" % (status, body[:300]))

            def pending_shown():
                shown = driver.run(SNAPSHOT)["pending"]
                return shown if shown and shown["shown"] else RuntimeError(shown)

            pending = wait_for("the restart pending notice", pending_shown)
            check(pending["text"] == "restart pending: server.threads",
                  "the notice reads 'restart pending: server.threads' (%s)" % pending["text"])
        finally:
            if driver:
                driver.close()
            for child in reversed(children):
                child.stop()

    if failures:
        die("%d check(s) failed" % len(failures))
    print("all checks passed")


if __name__ == "__main__":
    main()
