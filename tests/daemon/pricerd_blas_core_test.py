"""pricerd runs OpenBLAS's kernels of the processor's widest vectors: where the
library does not know the processor (Debian 12's 0.3.21 runs an Intel
Emerald Rapids on its Prescott kernels) pricerd executes itself again with
OPENBLAS_CORETYPE set, keeping its process id and flags; a user's
OPENBLAS_CORETYPE is kept. Checked against this machine's /proc/cpuinfo and
against OpenBLAS's own report (OPENBLAS_VERBOSE=2) of a real pricerd."""

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from binaries import parse_binaries, scaled  # noqa: E402  (tests/binaries.py)

ARGS = None
# OpenBLAS's cores by the widest vectors their kernels use (its dynamic.c).
AVX512_CORES = {"SkylakeX", "Cooperlake", "SapphireRapids"}
AVX2_CORES = AVX512_CORES | {"Haswell", "Zen", "Excavator"}


def cpu_flags():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


class Pricerd:
    """pricerd on a free loopback port, two cpu devices, `env` for its
    environment; its output (OpenBLAS's verbose lines included) in a file."""

    def __init__(self, env):
        self.log = tempfile.NamedTemporaryFile("w+", suffix=".log")
        self.proc = subprocess.Popen(
            [ARGS.pricerd, "--listen", "127.0.0.1:0", "--metrics-listen", "", "--devices",
             "cpu:2"], stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + scaled(30)
        while time.time() < deadline and not re.search(r"\(port \d+\)", self.output()):
            if self.proc.poll() is not None:
                raise AssertionError("pricerd exited: " + self.output())
            time.sleep(0.05)
        self.port = int(re.search(r"\(port (\d+)\)", self.output()).group(1))

    def output(self):
        with open(self.log.name) as f:
            return f.read()

    def devices(self):
        done = subprocess.run([ARGS.pricer, "devices", "--json", "--target",
                               "127.0.0.1:%d" % self.port], capture_output=True, text=True,
                              timeout=scaled(60))
        if done.returncode != 0:
            raise AssertionError(done.stderr)
        return json.loads(done.stdout)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=scaled(30))
        self.log.close()


class BlasCoreTest(unittest.TestCase):
    def start(self, **extra):
        env = {k: v for k, v in os.environ.items()
               if k != "OPENBLAS_CORETYPE" and not k.startswith("PRICER_")}
        env.update(extra, OPENBLAS_VERBOSE="2")
        server = Pricerd(env)
        self.addCleanup(server.stop)
        return server

    def test_the_processors_widest_kernels_run(self):
        server = self.start()
        reply = server.devices()
        output = server.output()
        # OpenBLAS prints "Core: X" each time it loads: once, or twice where
        # pricerd executed itself again; the last is what runs.
        loaded = re.findall(r"Core: (\S+)", output)
        self.assertIn(len(loaded), (1, 2), output)
        self.assertEqual([d["name"] for d in reply["devices"]], ["cpu0", "cpu1"])
        for d in reply["devices"]:
            self.assertRegex(d["kernels"], r"^OpenBLAS \d+\.\d+\.\d+, %s kernels" % loaded[-1])
            self.assertIn("device %s (cpu, %s)" % (d["name"], d["kernels"]), output)
        # The process clients and supervisors know is the one serving, by its
        # name too (ps, pgrep).
        self.assertIn(":%d:" % server.proc.pid, reply["serverId"])
        with open("/proc/%d/comm" % server.proc.pid) as f:
            self.assertEqual(f.read().strip(), "pricerd")
        flags = cpu_flags()
        if {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"} <= flags:
            self.assertIn(loaded[-1], AVX512_CORES, output)
        elif {"avx2", "fma"} <= flags:
            self.assertIn(loaded[-1], AVX2_CORES, output)
        if len(loaded) == 2:
            self.assertIn("(the library's own choice here: %s)" % loaded[0],
                          reply["devices"][0]["kernels"])
        else:
            self.assertNotIn("own choice", reply["devices"][0]["kernels"])

    def test_a_users_coretype_is_kept(self):
        server = self.start(OPENBLAS_CORETYPE="Haswell")
        kernels = server.devices()["devices"][0]["kernels"]
        self.assertRegex(kernels, r"^OpenBLAS \d+\.\d+\.\d+, Haswell kernels$")
        self.assertEqual(re.findall(r"Core: (\S+)", server.output()), ["Haswell"])


if __name__ == "__main__":
    ARGS, rest = parse_binaries()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
