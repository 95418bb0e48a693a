"""What this machine runs, for bench/run_benchmarks.py: the environments the
end-to-end ways run in (natively, and pinned where the environment pins
OpenBLAS), the kernel OpenBLAS loads in each, and the processor's arithmetic
limit that the table names beside the bare rate."""
import os
import re
import subprocess
import sys

# The variables that pin OpenBLAS's kernel choice and cache sizes.
PIN_VARIABLES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def environments():
    """The environments the end-to-end ways run in: "native" (the pin
    variables unset, in these commands only) and, when the environment sets
    any of them, "pinned" (as it is)."""
    native = {k: v for k, v in os.environ.items() if k not in PIN_VARIABLES}
    pins = {k: os.environ[k] for k in PIN_VARIABLES if k in os.environ}
    return ({"native": native, "pinned": dict(os.environ)} if pins else {"native": native}), pins


def openblas_core(build, env):
    """The kernel OpenBLAS loads under `env` (OPENBLAS_VERBOSE=2's last "Core: X": bare_sgemm
    may run again, as pricerd does), for the service and bare_sgemm and for NumPy."""
    def core(command):
        done = subprocess.run(command, env=dict(env, OPENBLAS_VERBOSE="2"), capture_output=True,
                              text=True)
        found = re.findall(r"Core: (\S+)", done.stdout + done.stderr)
        return found[-1] if found else "unknown"
    return {"openblas": core([os.path.join(build, "bench/bare_sgemm"), "--paths", "64",
                              "--issuers", "64", "--scenarios", "64"]),
            "numpy": core([sys.executable, "-c",
                           "import numpy; a = numpy.ones((64, 64), numpy.float32); a @ a"])}


def arithmetic_limit():
    """Float32 GFLOP/s: cores x 2 FMA units x lanes (16 with AVX-512; 8 with AVX2, and on
    Zen 4, which runs AVX-512 on 256-bit units; 4 on Zen and Zen+, whose FMA units are
    128-bit) x 2 x the nominal clock; and its figures."""
    text = open("/proc/cpuinfo").read()
    flags = re.search(r"^flags\s*:(.*)$", text, re.M).group(1).split()
    family = re.search(r"^cpu family\s*:\s*(\d+)\nmodel\s*:\s*(\d+)", text, re.M)
    amd = "AuthenticAMD" in text
    family, model = (int(family.group(1)), int(family.group(2))) if family else (0, 0)
    zen1 = amd and family == 23 and model < 0x30
    zen4 = amd and family == 25
    lanes = 16 if "avx512f" in flags and not zen4 else 4 if zen1 else \
        8 if "fma" in flags else 4
    mhz = max(float(m) for m in re.findall(r"^cpu MHz\s*:\s*([\d.]+)", text, re.M))
    cores = os.cpu_count()
    return {"gflops": cores * 2 * lanes * 2 * mhz / 1000, "cores": cores, "lanes": lanes,
            "mhz": mhz}
