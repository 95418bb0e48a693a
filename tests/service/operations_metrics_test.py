"""Prometheus metrics: one workload on one server, then its scrape, checked
for its types and counts, by promtool, and scraped by a real Prometheus."""

import shutil
import subprocess
import time

import grpc
import numpy as np

from pricer_client._proto import pricer_pb2, pricer_pb2_grpc

import pricerd_process
from binaries import scaled  # tests/binaries.py, on sys.path through pricerd_process
from metrics_scrape import Prometheus, Samples, scrape
from pricer_calls import OK, price, price_request
from pricerd_process import OperationsTestCase, Server


class MetricsTest(OperationsTestCase):
    """One workload on one server, then its metrics: scraped directly, checked
    by promtool, and scraped by a real Prometheus."""

    ISSUERS, PATHS, COLUMNS = 6, 100_000, 700  # 256-column shards: 3 per call
    PINNED = 96 << 20  # --pinned-memory: a cpu device stages nothing through it

    @classmethod
    def setUpClass(cls):
        cls.server = Server(flags=("--pinned-memory", "96MiB"))
        try:
            cls._workload()
        except BaseException:
            cls.server.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    @classmethod
    def _workload(cls):
        channel = grpc.insecure_channel(cls.server.target)
        stub = pricer_pb2_grpc.PricerStub(channel)
        cls.calls = [price(stub, price_request(cls.ISSUERS, cls.PATHS, cls.COLUMNS, seed=s))
                     for s in (1, 2, 3)]
        for call in cls.calls:
            if call.code != OK or len(call.finished()) != 1:
                raise AssertionError("workload call: %s %s" % (call.code, call.details))
        refused = price(stub, price_request(cls.ISSUERS, cls.PATHS, cls.COLUMNS, maturity=-1))
        if refused.code != grpc.StatusCode.INVALID_ARGUMENT or refused.replies:
            raise AssertionError("refused call: %s %s" % (refused.code, refused.details))
        matrix = np.arange(cls.ISSUERS * 300, dtype="<f4") / 1000
        stub.UploadScenarios(iter([pricer_pb2.ScenarioChunk(rows=cls.ISSUERS, columns=300,
                                                            values=matrix.tobytes())]),
                             timeout=scaled(30))
        # A call's counters may be updated just after its status reached us,
        # and a job's memory freed just after its end.
        time.sleep(scaled(0.5))
        stub.ListDevices(pricer_pb2.ListDevicesRequest(), timeout=10)
        cls.devices = stub.ListDevices(pricer_pb2.ListDevicesRequest(), timeout=10)
        channel.close()
        cls.flops = 3 * 2 * cls.PATHS * cls.ISSUERS * cls.COLUMNS
        cls.shards = sum(c.accepted.plan.shard_count for c in cls.calls)
        cls.streamed = sum(c.streamed_bytes for c in cls.calls)
        time.sleep(0.3)
        cls.workload_end = time.time()

    def test_workload_is_what_the_test_assumes(self):
        self.assertGreater(self.shards, 3)
        self.assertEqual(sum(c.finished()[0].flops for c in self.calls), self.flops)

    def test_promtool_accepts_the_scrape(self):
        if shutil.which("promtool") is None:
            self.skipTest("promtool is not installed")
        text = scrape(self.server)
        proc = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                              text=True, timeout=60)
        self.assertEqual((proc.returncode, proc.stdout + proc.stderr), (0, ""))

    def test_scrape_types(self):
        samples = Samples(scrape(self.server))
        expected = {"counter": ["pricer_calls_total", "pricer_client_calls_total",
                                "pricer_client_flops_total", "pricer_shards_total",
                                "pricer_flops_total", "pricer_streamed_bytes_total",
                                "pricer_shared_memory_bytes_total",
                                "pricer_device_busy_seconds_total", "pricer_upload_bytes_total"],
                    "gauge": ["pricer_queue_wait_average_seconds", "pricer_jobs",
                              "pricer_device_memory_budget_bytes",
                              "pricer_device_memory_in_use_bytes",
                              "pricer_device_memory_peak_bytes",
                              "pricer_device_memory_headroom_bytes",
                              "pricer_device_memory_idle_bytes", "pricer_pending_chunk_bytes",
                              "pricer_pinned_memory_limit_bytes",
                              "pricer_pinned_memory_in_use_bytes",
                              "pricer_pinned_memory_peak_bytes",
                              "pricer_scenario_store_bytes", "pricer_build_info"],
                    "histogram": ["pricer_job_duration_seconds"]}
        for kind, families in expected.items():
            for family in families:
                self.assertEqual(samples.type_of(family), kind, family)

    def test_scrape_counts_the_workload(self):
        s = Samples(scrape(self.server))
        self.assertEqual(s.total("pricer_calls_total", method="Price", code="OK"), 3)
        self.assertEqual(s.total("pricer_calls_total", method="Price", code="INVALID_ARGUMENT"), 1)
        self.assertEqual(s.total("pricer_calls_total", method="ListDevices", code="OK"), 2)
        self.assertEqual(s.total("pricer_calls_total", method="UploadScenarios", code="OK"), 1)
        self.assertEqual(s.total("pricer_calls_total"), 7)
        # Every call is anonymous (no tokens file).
        for method in ("Price", "ListDevices", "UploadScenarios"):
            self.assertEqual(
                s.total("pricer_client_calls_total", client="anonymous", method=method),
                s.total("pricer_calls_total", method=method), method)
        self.assertEqual(s.total("pricer_client_flops_total", client="anonymous"), self.flops)
        self.assertEqual(s.total("pricer_flops_total", device="cpu0"), self.flops)
        self.assertEqual(s.total("pricer_flops_total"), self.flops)
        self.assertEqual(s.total("pricer_shards_total", device="cpu0", result="done"), self.shards)
        self.assertEqual(s.total("pricer_shards_total", result="failed", default=0), 0)
        self.assertEqual(s.total("pricer_shards_total", result="retried", default=0), 0)
        self.assertEqual(s.total("pricer_streamed_bytes_total"), self.streamed)
        self.assertEqual(s.total("pricer_upload_bytes_total"), 4 * self.ISSUERS * 300)
        self.assertEqual(s.total("pricer_scenario_store_bytes"), 4 * self.ISSUERS * 300)

        # Three jobs through each phase; the refused request never was one.
        for phase in ("queued", "running", "total"):
            self.assertEqual(s.total("pricer_job_duration_seconds_count", phase=phase), 3, phase)
            buckets = sorted((float(l["le"]), v) for l, v in
                             s.series("pricer_job_duration_seconds_bucket", phase=phase))
            self.assertEqual(buckets[-1], (float("inf"), 3), phase)
            counts = [v for _, v in buckets]
            self.assertEqual(counts, sorted(counts), phase)
        client_seconds = sum(c.ended_at - c.started_at for c in self.calls)
        total_seconds = s.total("pricer_job_duration_seconds_sum", phase="total")
        self.assertGreater(total_seconds, 0)
        # The server's clock starts when the call arrives, which may be a few
        # ms before the reader thread notes the time.
        self.assertLess(total_seconds, client_seconds + scaled(0.1))
        self.assertGreaterEqual(s.total("pricer_queue_wait_average_seconds"), 0)
        self.assertEqual(s.total("pricer_jobs", state="queued"), 0)
        self.assertEqual(s.total("pricer_jobs", state="running"), 0)
        self.assertEqual(s.total("pricer_pending_chunk_bytes"), 0)

        # The device series agree with ListDevices taken after the workload.
        device = self.devices.devices[0]
        self.assertEqual(s.total("pricer_device_memory_budget_bytes", device="cpu0"),
                         device.memory_budget_bytes)
        self.assertEqual(s.total("pricer_device_memory_peak_bytes", device="cpu0"),
                         device.peak_bytes)
        self.assertEqual(s.total("pricer_device_memory_in_use_bytes", device="cpu0"),
                         device.bytes_in_use)
        self.assertGreater(device.peak_bytes, 0)
        self.assertEqual(device.shards_done, self.shards)
        self.assertAlmostEqual(s.total("pricer_device_busy_seconds_total", device="cpu0"),
                               device.busy_seconds, delta=1e-6 * device.busy_seconds + 1e-9)
        self.assertGreater(device.busy_seconds, 0)

        (build, value), = s.series("pricer_build_info")
        self.assertEqual(value, 1)
        self.assertEqual(build.get("version"), self.devices.server_version.split()[0])

    def test_scrape_reports_the_blocks_kept_for_the_next_jobs(self):
        """The ST, A and SC blocks the jobs left, outside in_use and within
        the budget, as ListDevices reports them after the workload."""
        s = Samples(scrape(self.server))
        device = self.devices.devices[0]
        self.assertEqual(s.total("pricer_device_memory_idle_bytes", device="cpu0"),
                         device.idle_block_bytes)
        self.assertGreater(device.idle_block_bytes, 0)
        self.assertLessEqual(device.idle_block_bytes, device.memory_budget_bytes)

    def test_scrape_reports_the_pinned_bound_and_no_headroom(self):
        """A cpu device holds nothing outside its budget, and stages nothing
        through the pinned memory, whose bound is the flag's."""
        s = Samples(scrape(self.server))
        self.assertEqual(s.total("pricer_device_memory_headroom_bytes", device="cpu0"), 0)
        self.assertEqual(self.devices.devices[0].headroom_bytes, 0)
        self.assertEqual(self.devices.pinned_memory_bytes, self.PINNED)
        self.assertEqual(s.total("pricer_pinned_memory_limit_bytes"), self.PINNED)
        self.assertEqual(self.devices.pinned_peak_bytes, 0)
        self.assertEqual(s.total("pricer_pinned_memory_peak_bytes"), 0)
        self.assertEqual(s.total("pricer_pinned_memory_in_use_bytes"), 0)

    def test_prometheus_scrapes_the_workload(self):
        if shutil.which("prometheus") is None:
            self.skipTest("prometheus is not installed")
        prometheus = Prometheus(self.server.metrics_port, self.directory())
        self.addCleanup(prometheus.stop)
        prometheus.wait_for_scrape_after(self.workload_end)
        self.assertEqual(prometheus.value('up{job="pricerd"}'), 1)
        expected = {
            'sum(pricer_calls_total{method="Price",code="OK"})': 3,
            'sum(pricer_calls_total{method="Price",code="INVALID_ARGUMENT"})': 1,
            'sum(pricer_calls_total{method="ListDevices",code="OK"})': 2,
            'sum(pricer_calls_total{method="UploadScenarios",code="OK"})': 1,
            'sum(pricer_client_flops_total{client="anonymous"})': self.flops,
            "sum(pricer_flops_total)": self.flops,
            'sum(pricer_shards_total{result="done"})': self.shards,
            'sum(pricer_shards_total{result="failed"}) or vector(0)': 0,
            "sum(pricer_streamed_bytes_total)": self.streamed,
            'sum(pricer_job_duration_seconds_count{phase="total"})': 3,
            'sum(pricer_jobs{state="running"})': 0,
            "pricer_build_info": 1,
        }
        for expression, value in expected.items():
            self.assertEqual(prometheus.value(expression), value, expression)


if __name__ == "__main__":
    pricerd_process.main()
