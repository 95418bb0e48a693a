"""The Prometheus metrics of a pricerd, for the operations tests
(operations_*_test.py): a scrape of its /metrics parsed into samples and
types, and a real Prometheus on loopback scraping it."""

import json
import os
import re
import socket
import subprocess
import time
import urllib.parse
import urllib.request

from binaries import scaled  # tests/binaries.py, on sys.path through pricerd_process

# The line pricerd logs when its metrics listen, with the port.
METRICS_LINE = r"metrics on http://[^:]+:(\d+)/metrics"
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def scrape(server):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % server.metrics_port,
                                timeout=10) as response:
        return response.read().decode()


class Samples:
    """A Prometheus text exposition: its samples and its # TYPE lines."""

    def __init__(self, text):
        self.text = text
        self.samples = []
        self.types = {}
        for line in text.splitlines():
            if line.startswith("# TYPE "):
                _, _, name, kind = line.split(None, 3)
                self.types[name] = kind.strip()
            elif line and not line.startswith("#"):
                m = _SAMPLE.match(line)
                if not m:
                    raise AssertionError("not a sample line: %r" % line)
                labels = dict(_LABEL.findall(m.group(2) or ""))
                self.samples.append((m.group(1), labels, float(m.group(3))))

    def series(self, name, **labels):
        return [(l, v) for n, l, v in self.samples
                if n == name and all(l.get(k) == str(x) for k, x in labels.items())]

    def total(self, name, default=None, **labels):
        """The sum over the series of `name` with these labels; with no such
        series, `default`, or an AssertionError when that is None."""
        found = self.series(name, **labels)
        if not found:
            if default is None:
                raise AssertionError("no series %s%s in the scrape:\n%s" % (
                    name, labels, "\n".join(l for l in self.text.splitlines() if name in l)))
            return default
        return sum(v for _, v in found)

    def type_of(self, family):
        return self.types.get(family, self.types.get(family.removesuffix("_total")))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Prometheus:
    """A real Prometheus on loopback scraping one pricerd every second."""

    def __init__(self, metrics_port, directory):
        self.port = free_port()
        config = os.path.join(directory, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: pricerd\n    static_configs:\n"
                    "      - targets: ['127.0.0.1:%d']\n" % metrics_port)
        self.log = open(os.path.join(directory, "prometheus.log"), "w+")
        self.proc = subprocess.Popen(
            ["prometheus", "--config.file=" + config,
             "--storage.tsdb.path=" + os.path.join(directory, "tsdb"),
             "--web.listen-address=127.0.0.1:%d" % self.port],
            stdout=self.log, stderr=subprocess.STDOUT)
        ready = "http://127.0.0.1:%d/-/ready" % self.port
        deadline = time.time() + scaled(60)
        while True:
            try:
                with urllib.request.urlopen(ready, timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            if self.proc.poll() is not None or time.time() > deadline:
                self.stop()
                raise RuntimeError("prometheus did not become ready:\n" + self._output())
            time.sleep(0.2)

    def _output(self):
        self.log.seek(0)
        return self.log.read()[-4000:]

    def query(self, expression):
        url = "http://127.0.0.1:%d/api/v1/query?%s" % (
            self.port, urllib.parse.urlencode({"query": expression}))
        with urllib.request.urlopen(url, timeout=10) as response:
            body = json.load(response)
        if body.get("status") != "success":
            raise AssertionError("query %s: %s" % (expression, body))
        return body["data"]["result"]

    def value(self, expression):
        """The single value of an instant vector query."""
        result = self.query(expression)
        if len(result) != 1:
            raise AssertionError("query %s gave %d series: %s" % (expression, len(result), result))
        return float(result[0]["value"][1])

    def wait_for_scrape_after(self, moment, timeout=30):
        """Until Prometheus holds a sample of pricerd scraped after `moment`
        (fails after `timeout`, scaled)."""
        timeout = scaled(timeout)
        deadline = time.time() + timeout
        while time.time() < deadline:
            result = self.query("timestamp(pricer_build_info)")
            if result and float(result[0]["value"][1]) > moment:
                return
            time.sleep(0.25)
        raise AssertionError("no scrape after the workload within %.0f s:\n%s" % (
            timeout, self._output()))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=scaled(20))
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
