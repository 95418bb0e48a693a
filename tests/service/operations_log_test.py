"""The logs: an access entry per call, as text lines and as JSON lines, and
every line of a JSON log one JSON object."""

import json
import re
import time

import grpc

import pricerd_process
from binaries import scaled  # tests/binaries.py, on sys.path through pricerd_process
from pricer_calls import OK, CallReader, long_request, price, price_request
from pricerd_process import OperationsTestCase, bearer, write_tokens


class LogTest(OperationsTestCase):
    ISSUERS, PATHS, COLUMNS = 4, 1000, 300

    def start_logging_server(self, *flags):
        tokens_file, tokens = write_tokens(self.directory())
        return self.start_server("--auth-tokens-file", tokens_file, *flags), bearer(tokens["alice"])

    def workload(self, server, metadata):
        """A Price call of alice's that ends OK and one she cancels."""
        stub = self.stub(server)
        done = price(stub, price_request(self.ISSUERS, self.PATHS, self.COLUMNS),
                     metadata=metadata)
        self.assertCall(done, OK)
        cancelled = CallReader(stub.Price(long_request(), metadata=metadata, timeout=scaled(120)),
                               on_chunk=lambda c: None)
        cancelled.wait_accepted(self)
        cancelled.call.cancel()
        cancelled.finish(30)
        self.assertCall(cancelled, grpc.StatusCode.CANCELLED)
        return done, cancelled

    def wait_for_access(self, server, parse, job, timeout=15):
        """The access entry of job `job`, parsed, once pricerd wrote it."""
        deadline = time.time() + scaled(timeout)
        while True:
            for line in server.output().splitlines():
                entry = parse(line)
                if entry is not None and entry.get("job") == job:
                    return entry
            if time.time() > deadline:
                self.fail("no access entry for job %s:\n%s" % (job, server.output()[-4000:]))
            time.sleep(0.1)

    def check_entries(self, done, cancelled, ok_entry, cancelled_entry):
        for key in ("method", "client", "job", "code", "columns", "flops", "seconds", "bytes"):
            self.assertIn(key, ok_entry)
        for key in ("method", "client", "code", "peer"):
            self.assertIn(key, cancelled_entry)
        self.assertEqual(ok_entry["method"], "Price")
        self.assertEqual(ok_entry["client"], "alice")
        self.assertEqual(ok_entry["code"], "OK")
        self.assertEqual(int(ok_entry["columns"]), self.COLUMNS)
        flops = done.finished()[0].flops
        self.assertAlmostEqual(float(ok_entry["flops"]), flops, delta=1e-6 * flops)
        self.assertEqual(flops, 2 * self.PATHS * self.ISSUERS * self.COLUMNS)
        seconds = float(ok_entry["seconds"])
        self.assertGreater(seconds, 0)
        # Within the call as the client saw it (seconds, not milliseconds);
        # the server's clock may start a few ms before the reader's.
        self.assertLess(seconds, done.ended_at - done.started_at + scaled(0.1))
        # Either the payload bytes of `finished` or all that was streamed.
        self.assertIn(int(ok_entry["bytes"]), (done.finished()[0].bytes, done.streamed_bytes))
        self.assertEqual(cancelled_entry["method"], "Price")
        self.assertEqual(cancelled_entry["client"], "alice")
        self.assertEqual(cancelled_entry["code"], "CANCELLED")
        self.assertIn("127.0.0.1", cancelled_entry["peer"])

    def test_text_access_lines(self):
        server, alice = self.start_logging_server()
        done, cancelled = self.workload(server, alice)

        def parse(line):
            if "access" not in line or "method=" not in line:
                return None
            return {k: v.strip('"') for k, v in re.findall(r'(\w+)=("[^"]*"|\S+)', line)}

        ok_entry = self.wait_for_access(server, parse, done.accepted.job_id)
        cancelled_entry = self.wait_for_access(server, parse, cancelled.accepted.job_id)
        self.check_entries(done, cancelled, ok_entry, cancelled_entry)

    def test_json_lines(self):
        server, alice = self.start_logging_server("--log-format", "json")
        done, cancelled = self.workload(server, alice)

        def parse(line):
            try:
                entry = json.loads(line)
            except ValueError:
                return None  # the check of every line below reports it
            return entry if isinstance(entry, dict) and entry.get("logger") == "access" else None

        ok_entry = self.wait_for_access(server, parse, done.accepted.job_id)
        cancelled_entry = self.wait_for_access(server, parse, cancelled.accepted.job_id)
        self.check_entries(done, cancelled, ok_entry, cancelled_entry)
        # Every line, through start, calls, drain and exit, is one JSON object.
        server.stop()
        lines = [line for line in server.output().splitlines() if line.strip()]
        self.assertGreater(len(lines), 3)
        for line in lines:
            entry = json.loads(line)
            self.assertIsInstance(entry, dict, line)
            for key in ("time", "level", "message"):
                self.assertIn(key, entry, line)


if __name__ == "__main__":
    pricerd_process.main()
