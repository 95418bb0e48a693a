"""The peers of bench/run_benchmarks.py --peers: what a user would run instead
of the service on this CPU, besides NumPy. PyTorch (bench/torch_baseline.py
--device cpu) and TensorFlow (bench/tf_baseline.py, the original question's
tf.compat.v1 graph), from PyPI into a virtual environment of their own, made
once and kept (bench-results/peers-venv unless --peers-venv names another)."""
import json
import os
import subprocess
import sys
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
# TensorFlow's C++ notices (oneDNN, CPU features) off: they are not results.
PEER_ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
# The ways they add to the end-to-end table, and their labels.
LABELS = {"torch_cpu": "PyTorch (CPU) st @ a + the same statistics",
          "tensorflow": "TensorFlow (CPU) tf.compat.v1 graph of shards"}
# The ways whose speed-up the service is measured against (NumPy is always run).
ALL = ("numpy",) + tuple(LABELS)
TARGET_KEPT = 0.92  # the service keeps >= 92% of the bare GEMM's speed-up over each peer (issue 28)


def log(message):
    print(message, file=sys.stderr, flush=True)


def reachable(url, seconds=5):
    try:
        urllib.request.urlopen(url, timeout=seconds).close()
        return True
    except OSError:
        return False


def pip(python, *arguments):
    log("  pip install " + " ".join(arguments))
    subprocess.run([python, "-m", "pip", "install", "--quiet", *arguments], check=True)


def ensure_venv(path):
    """The venv's python, the venv made and filled first unless it was
    already (a marker file is written once every install succeeded)."""
    python = os.path.join(path, "bin", "python")
    marker = os.path.join(path, "peers-installed")
    if os.path.exists(marker) and os.path.exists(python):
        return python
    log(f"peers: making {path} (once; PyTorch and TensorFlow are large downloads)")
    subprocess.run(["/usr/bin/python3", "-m", "venv", path], check=True)
    pip(python, "numpy", "tensorflow-cpu")
    # The CPU-only wheel is far the smaller; where its index cannot be
    # reached, PyPI's torch (CUDA build, run here on the CPU) is the one.
    if reachable(TORCH_CPU_INDEX + "/torch/"):
        pip(python, "torch", "--index-url", TORCH_CPU_INDEX)
    else:
        log(f"  {TORCH_CPU_INDEX} cannot be reached: PyPI's torch")
        pip(python, "torch")
    with open(marker, "w") as f:
        f.write("ok\n")
    return python


def versions(python):
    """The peers' versions, as each library reports it, and the venv's NumPy."""
    found = {}
    for name, module in (("torch", "torch"), ("tensorflow", "tensorflow"), ("numpy", "numpy")):
        out = subprocess.run([python, "-c", f"import {module}; print({module}.__version__)"],
                             check=True, capture_output=True, text=True, env=PEER_ENV).stdout
        found[name] = out.strip().splitlines()[-1]
    found["python"] = subprocess.run([python, "-c", "import platform; "
                                      "print(platform.python_version())"],
                                     check=True, capture_output=True, text=True).stdout.strip()
    return found


def run_json(command, env=None):
    """Runs a baseline and returns the JSON of its last line; its stderr in the error."""
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def shape(paths, issuers, scenarios, chunk=10000):
    return ["--paths", str(paths), "--issuers", str(issuers), "--scenarios", str(scenarios),
            "--chunk-columns", str(chunk)]


def ways(python, paths, issuers, scenarios, env):
    """The peers' ways at one size, as the end-to-end loop runs them, under `env`."""
    size = shape(paths, issuers, scenarios)
    peer_env = dict(env, TF_CPP_MIN_LOG_LEVEL="2")
    return {
        "torch_cpu": lambda: run_json([python, os.path.join(ROOT, "bench/torch_baseline.py"),
                                       "--device", "cpu", *size], peer_env),
        "tensorflow": lambda: run_json([python, os.path.join(ROOT, "bench/tf_baseline.py"),
                                        *size], peer_env),
    }


def speedups(row):
    """Per peer in `row`: its seconds over the service's (stats mode) and over
    the bare sgemm's, and the share of the bare speed-up the service keeps
    (their ratio), of the medians and of the minimums."""
    out = {}
    for peer in (p for p in ALL if p in row):
        out[peer] = {}
        for figure in ("median", "min"):
            seconds = {way: row[way][figure + "_seconds"] for way in (peer, "stats", "bare_sgemm")}
            service = seconds[peer] / seconds["stats"]
            bare = seconds[peer] / seconds["bare_sgemm"]
            out[peer][figure] = {"service": service, "bare": bare, "kept": service / bare}
    return out


def speedup_table(rows):
    """The table's lines for the speed-ups over the peers in the end-to-end `rows`."""
    lines = ["", "Speed-up over each peer: peer seconds / service (stats mode) seconds and / "
             "bare sgemm seconds; kept = their ratio (bare s / service s, the same for every peer; "
             "target >= %.2f)" % TARGET_KEPT,
             "%10s  %-12s %8s %10s %8s %7s  | min: %10s %8s %7s" % (
                 "M", "peer", "peer s", "service x", "bare x", "kept", "service x",
                 "bare x", "kept")]
    for row in rows:
        for peer, figures in row["speedups"].items():
            med, low = figures["median"], figures["min"]
            lines.append("%10d  %-12s %8.2f %10.2f %8.2f %7.3f  |      %10.2f %8.2f %7.3f" % (
                row["scenarios"], peer, row[peer]["median_seconds"], med["service"],
                med["bare"], med["kept"], low["service"], low["bare"], low["kept"]))
    return lines


def versions_line(results):
    found = results.get("peers")
    line = "NumPy %s (Debian's python3, the numpy way)" % results["numpy_version"]
    if found:
        line += "; peers in their venv (Python %s): PyTorch %s (CPU, %d threads), " \
                "TensorFlow %s, NumPy %s" % (found["python"], found["torch"],
                                              results["machine"]["cpus"], found["tensorflow"],
                                              found["numpy"])
    return line
