"""The pip package pricer-client as a new user gets it: a fresh virtual
environment, `pip install client/python` from this checkout, and the example
run outside the source tree (python -I: nothing of the checkout on sys.path)
against a real pricerd; its statistics CSV and SC .npy must equal the CLI's
to the bit. Twice: with Debian's python3-grpcio, python3-protobuf and
python3-numpy (a venv with --system-site-packages, installed with --no-index:
nothing is downloaded), and with the newest grpcio, protobuf, numpy and
pandas from PyPI (the package's `pandas` extra)."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
from pricerd_fixture import Server  # noqa: E402  (the same fixture)
sys.path.insert(0, os.path.join(HERE, ".."))
from binaries import parse_binaries  # noqa: E402  (tests/binaries.py)

ARGS = None
EXAMPLE = os.path.join(ROOT, "client", "python", "examples", "price_seed.py")
SCENARIOS, PATHS, FULL_COLUMNS = "3000", "2000", "200"
STATS = "mean,stddev,var:0.99,es:0.99"

# Run inside a venv: where the package and its dependencies come from.
PROBE = """
import importlib.metadata as m, importlib.util as u, os, grpc, google.protobuf, numpy
import pricer_client, pricer_client.aio
package = os.path.dirname(pricer_client.__file__)
print("file", pricer_client.__file__)
print("version", pricer_client.__version__, m.version("pricer-client"))
print("typed", os.path.exists(os.path.join(package, "py.typed")),
      os.path.exists(os.path.join(package, "_proto", "pricer_pb2.pyi")))
print("pricer_module", u.find_spec("pricer") is not None)
print("deps", grpc.__version__, google.protobuf.__version__, numpy.__version__)
"""

# Run in the PyPI venv, which has pandas: one row per column, the same values
# (the statistics' errors included, each after its statistic; with a target,
# each column's paths and target_met last); a book given as a DataFrame is
# the book of its rows as dicts; a labelled market's labels name issuers;
# contributions in long form.
PANDAS = """
import sys, numpy as np, pandas
from pricer_client import Client
with Client(sys.argv[1]) as client:
    r = client.price(issuers=20, paths=500, seed=4, scenarios=300, column_begin=100,
                     statistics=["mean", "var:0.99"], errors=True)
    t = client.price(issuers=20, paths=500, seed=4, scenarios=300, column_begin=100,
                     statistics=["var:0.99"], target="var:0.99=5%", max_paths=2000)
frame = r.to_pandas()
assert list(frame.columns) == ["v0", "mean", "mean_se", "var_0.99", "var_0.99_lo",
                               "var_0.99_hi"], list(frame.columns)
assert frame.index.name == "column" and list(frame.index) == list(range(100, 300))
for name in frame.columns:
    assert np.array_equal(frame[name].to_numpy(), r.statistics[name]), name
targeted = t.to_pandas()
assert list(targeted.columns) == ["v0", "var_0.99", "var_0.99_lo", "var_0.99_hi", "paths",
                                  "target_met"], list(targeted.columns)
assert (targeted["paths"].dtype, targeted["target_met"].dtype) == (np.int64, bool)
assert np.array_equal(targeted["paths"].to_numpy(), t.column_paths)
assert np.array_equal(targeted["target_met"].to_numpy(), t.target_met)
# A book as a DataFrame (NaN cells, another column, any index): as its dicts.
book = [dict(issuer=0, type="stock"), dict(issuer=1, type="Call", strike=6, expiry=1.5)]
frame_book = pandas.DataFrame(book, index=[4, 2]).assign(desk="rates")
with Client(sys.argv[1]) as client:
    b = [client.price(issuers=2, paths=300, seed=4, scenarios=np.eye(2), instruments=books,
                      full=True, statistics=None).full for books in (book, frame_book)]
assert b[0].tobytes() == b[1].tobytes()
# A labelled market (spot a Series indexed by label): its labels name issuers.
spot = pandas.Series([7.0, 9.0], index=["ACME", "Initech"])
labelled = [dict(issuer="Initech", type="put", strike=8, expiry=1),
            dict(issuer="ACME", type="stock")]
by_index = [dict(issuer=1, type="put", strike=8, expiry=1), dict(issuer=0, type="stock")]
with Client(sys.argv[1]) as client:
    b = [client.price(spot=spot, volatility=[0.2, 0.3], paths=300, seed=4, scenarios=np.eye(2),
                      instruments=books, full=True, statistics=None).full
         for books in (labelled, by_index)]
    try:
        client.price(spot=spot, volatility=[0.2, 0.3], paths=300, scenarios=np.eye(1),
                     instruments=[dict(issuer="Globex", type="stock")])
        raise AssertionError("an unknown label was accepted")
    except ValueError as error:
        assert "instruments[0].issuer is 'Globex'" in str(error), error
assert b[0].tobytes() == b[1].tobytes()
# Contributions and delta in long form: a row per (column, row, item).
with Client(sys.argv[1]) as client:
    c = client.price(issuers=3, paths=400, seed=4, scenarios=5, statistics=["es:0.975"],
                     contributions=["es:0.975"], sensitivities=["delta"])
long = c.contributions_to_pandas()
assert list(long.columns) == ["column", "row", "item", "value"], list(long.columns)
assert len(long) == 2 * 3 * 5 and set(long["item"]) == {"es_0.975", "es_0.975_delta"}
cell = long[(long.column == 4) & (long.row == 2) & (long["item"] == "es_0.975")]
assert cell.value.item() == c.contributions["es_0.975"][2, 4]
print("pandas ok", len(frame), len(targeted))
"""


def cmake_version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        return re.search(r"project\(pricer VERSION ([0-9.]+)", f.read()).group(1)


def run(*command, cwd=None, timeout=600):
    proc = subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=timeout,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(command)} exited {proc.returncode}:\n"
                             f"{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def read_csv(path):
    with open(path) as f:
        header = f.readline().strip()
    return header, np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)


class PipPackageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(ARGS.pricerd)
        cls.dir = tempfile.mkdtemp(prefix="pricer-package-")
        common = ["price", "--target", cls.server.target, "--preset", "seed", "--scenarios",
                  SCENARIOS, "--paths", PATHS]
        run(ARGS.pricer, *common, "--stats", STATS, "--stats-out", cls.path("cli.csv"))
        run(ARGS.pricer, *common, "--column-end", FULL_COLUMNS, "--full-out",
            cls.path("cli.npy"))

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        shutil.rmtree(cls.dir)

    @classmethod
    def path(cls, *names):
        return os.path.join(cls.dir, *names)

    def install(self, name, venv_flags, pip_flags, requirement):
        """A fresh venv with the package installed from the checkout; its python."""
        venv = self.path(name)
        run("/usr/bin/python3", "-m", "venv", *venv_flags, venv)
        python = os.path.join(venv, "bin", "python")
        run(python, "-m", "pip", "install", "--disable-pip-version-check", "--quiet",
            *pip_flags, requirement, cwd=self.dir)
        return python

    def check_example(self, python, name):
        """The example, copied out of the tree, against the CLI's files."""
        work = self.path(name + "-run")
        os.mkdir(work)
        shutil.copy(EXAMPLE, work)
        probe = run(python, "-I", "-c", PROBE, cwd=work)
        print(f"\n{name}:\n{probe}", file=sys.stderr)
        fields = dict(line.split(" ", 1) for line in probe.strip().splitlines())
        self.assertTrue(fields["file"].startswith(self.path(name) + os.sep), fields["file"])
        self.assertEqual(fields["version"], f"{cmake_version()} {cmake_version()}")
        self.assertEqual(fields["typed"], "True True")
        self.assertEqual(fields["pricer_module"], "False")  # no top-level `pricer`
        run(python, "-I", "price_seed.py", "--target", self.server.target, "--scenarios",
            SCENARIOS, "--paths", PATHS, "--stats-out", "py.csv", "--full-out", "py.npy",
            "--full-columns", FULL_COLUMNS, cwd=work)
        header, values = read_csv(os.path.join(work, "py.csv"))
        cli_header, cli_values = read_csv(self.path("cli.csv"))
        self.assertEqual(header, cli_header)
        self.assertEqual(values.shape, (int(SCENARIOS), 6))
        # Shortest round-trip decimals on both sides: equal doubles, equal bits.
        self.assertEqual(values.tobytes(), cli_values.tobytes())
        sc, cli_sc = np.load(os.path.join(work, "py.npy")), np.load(self.path("cli.npy"))
        self.assertEqual((sc.dtype, sc.shape), (np.float32, (int(PATHS), int(FULL_COLUMNS))))
        self.assertEqual(np.asfortranarray(sc).tobytes("F"),
                         np.asfortranarray(cli_sc).tobytes("F"))
        return fields["deps"]

    def test_debian_packages(self):
        python = self.install("debian", ["--system-site-packages"],
                              ["--no-index", "--no-build-isolation"],
                              os.path.join(ROOT, "client", "python"))
        deps = self.check_example(python, "debian")
        import google.protobuf
        import grpc
        self.assertEqual(deps, f"{grpc.__version__} {google.protobuf.__version__} "
                               f"{np.__version__}", "not Debian's python3 packages")

    def test_newest_from_pypi(self):
        python = self.install("pypi", [], [], os.path.join(ROOT, "client", "python") + "[pandas]")
        deps = self.check_example(python, "pypi")
        protobuf_major = int(deps.split()[1].split(".")[0])
        self.assertGreater(protobuf_major, 4, f"not the newest protobuf: {deps}")
        self.assertIn("pandas ok 200 200", run(python, "-I", "-c", PANDAS, self.server.target,
                                           cwd=self.dir))


if __name__ == "__main__":
    ARGS, rest = parse_binaries()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
