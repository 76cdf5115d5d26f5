"""The real binaries for a conformance test: mock-downstream and the gateway on 127.0.0.1:0, each reporting
its port in its "listening on HOST:PORT" line (waited for with a bound, never a sleep). stderr goes to a
file in a temporary directory and is shown when a start fails. Both are context managers: leaving one
sends SIGTERM and waits (SIGKILL after a bound); then `exit_status` and `stderr` tell how it ended."""

import os
import re
import select
import signal
import subprocess
import tempfile
import time

START_TIMEOUT = 30.0  # seconds; an ASan build starts slowly on a busy machine
STOP_TIMEOUT = 15.0


class Process:
    def __init__(self, argv, directory, name):
        self.name = name
        self.stderr_path = os.path.join(directory, name + ".stderr")
        with open(self.stderr_path, "wb") as stderr:
            self.process = subprocess.Popen([os.path.abspath(argv[0])] + argv[1:], stdin=subprocess.DEVNULL,
                                            stdout=subprocess.PIPE, stderr=stderr, cwd=directory)
        self.stdout = b""

    def wait_for_lines(self, patterns):
        """The match of each pattern (bytes regex) on stdout, waiting at most START_TIMEOUT for them all."""
        deadline = time.monotonic() + START_TIMEOUT
        fd = self.process.stdout.fileno()
        while True:
            found = [re.search(p, self.stdout) for p in patterns]
            if all(found):
                return found
            left = deadline - time.monotonic()
            readable = select.select([fd], [], [], max(left, 0))[0] if left > 0 else []
            chunk = os.read(fd, 4096) if readable else b""
            if not chunk:
                self.stop()
                raise RuntimeError("%s did not report %s within %.0f s\nstdout:\n%s\nstderr:\n%s" % (
                    self.name, [p.decode() for p in patterns], START_TIMEOUT,
                    self.stdout.decode(errors="replace"), self.stderr))
            self.stdout += chunk

    def stop(self):
        """Ends the process (if it still runs); sets exit_status and stderr."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process.stdout.close()
        self.exit_status = self.process.returncode
        with open(self.stderr_path, "rb") as f:
            self.stderr = f.read().decode(errors="replace")


class MockDownstream:
    def __init__(self, binary):
        self.binary = binary

    def __enter__(self):
        self.dir = tempfile.TemporaryDirectory(prefix="conformance-mock-")
        try:
            self.process = Process([self.binary, "--listen", "127.0.0.1:0"], self.dir.name, "mock-downstream")
            (match,) = self.process.wait_for_lines([rb"listening on [0-9.]+:([0-9]+)"])
        except BaseException:
            self.dir.cleanup()
            raise
        self.url = "http://127.0.0.1:%d" % int(match.group(1))
        return self

    def __exit__(self, *exc):
        self.process.stop()
        self.dir.cleanup()


def config_yaml(mock_url):
    """One GET route fanning out to two downstreams on the mock; short timeouts so that a connection the
    gateway waits on ends soon."""
    calls = ["channel-price", "coupon"]
    y = ("server:\n  listen: 127.0.0.1:0\n  threads: 2\n"
         "admin:\n  listen: 127.0.0.1:0\n"
         "shutdown:\n  drain_delay: 0s\n"
         "limits:\n  header_timeout: 2s\n  idle_timeout: 4s\n"
         "log:\n  access: false\n"
         "downstreams:\n")
    for name in calls:
        y += "  %s:\n    url: %s\n    connect_timeout: 1s\n" % (name, mock_url)
    y += ("routes:\n  - path: /api/offer/aggregate\n    method: GET\n    deadline: 5s\n"
          "    params:\n      sku: {required: true, pattern: '^[A-Za-z0-9_-]{1,64}$'}\n"
          "    response: array\n    calls:\n")
    for name in calls:
        y += ("      - name: %s\n        downstream: %s\n        path: /%s?sku={sku}\n"
              "        fallback: {priceCent: -1}\n" % (name, name, name))
    return y


class Gateway:
    def __init__(self, binary, mock_url):
        self.binary, self.mock_url = binary, mock_url

    def __enter__(self):
        self.dir = tempfile.TemporaryDirectory(prefix="conformance-gateway-")
        path = os.path.join(self.dir.name, "gateway.yaml")
        with open(path, "w") as f:
            f.write(config_yaml(self.mock_url))
        try:
            self.process = Process([self.binary, "--config", path], self.dir.name, "gateway")
            public, _ = self.process.wait_for_lines([rb"gateway listening on [0-9.]+:([0-9]+)",
                                                     rb"admin listening on [0-9.]+:([0-9]+)"])
        except BaseException:
            self.dir.cleanup()
            raise
        self.port = int(public.group(1))
        return self

    def __exit__(self, *exc):
        self.process.stop()
        self.exit_status, self.stderr = self.process.exit_status, self.process.stderr
        self.dir.cleanup()
