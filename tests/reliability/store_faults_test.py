"""Faults of a real pricerd's scenario directory (--scenario-dir,
docs/reliability.md): the server SIGKILLed while uploads are in flight and
restarted on the same directory, with a torn temporary file in it, and a
stored set's file damaged on disk. A set is checked by pricing a job by its
id and comparing it bit for bit with the same job sent with the matrix
inline.

    PYTHONPATH=client/python python3 \\
        tests/reliability/store_faults_test.py --pricerd build-move/server/pricerd \\
        --pricer build-move/client/pricer"""

import os
import signal
import subprocess
import sys
import threading
import time

import grpc
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import soak_clients as soak  # noqa: E402  (puts tests/service on sys.path)
import pricerd_process  # noqa: E402
from binaries import scaled  # noqa: E402  (tests/binaries.py, on sys.path through pricerd_process)
from pricer_client import Client, PricerError  # noqa: E402

ISSUERS, COLUMNS = 64, 16_384  # 4 MiB sets
HEADER_BYTES = 24  # the file's magic, rows and columns (server/store/scenario_store.cc)


def scenario_matrix(seed, columns=COLUMNS):
    return np.random.default_rng(seed).uniform(0, 1, size=(ISSUERS, columns)).astype(np.float32)


def job(**scenarios):
    return dict(paths=64, seed=11, spot=[5.0 + i / ISSUERS for i in range(ISSUERS)],
                volatility=[0.1 + 0.5 * i / ISSUERS for i in range(ISSUERS)],
                full=True, statistics=["mean"], **scenarios)


def price_by_id(server, set_id):
    """The fingerprint of the job priced by `set_id`, or the PricerError."""
    with Client(server.target) as client:
        try:
            return soak.fingerprint(client.price(scenario_set=set_id, timeout=scaled(60), **job()))
        except PricerError as error:
            return error


def price_inline(server, matrix):
    with Client(server.target) as client:
        return soak.fingerprint(client.price(scenarios=matrix, timeout=scaled(60), **job()))


class StoreFaultsTestCase(pricerd_process.OperationsTestCase):
    def store_server(self, directory, *flags):
        return self.start_server("--scenario-dir", directory, *flags)

    def assertPricesLikeInline(self, server, set_id, matrix):
        by_id = price_by_id(server, set_id)
        self.assertNotIsInstance(by_id, PricerError, "set %s" % set_id)
        self.assertEqual(soak.first_difference(by_id, price_inline(server, matrix)), None,
                         "set %s prices unlike its matrix" % set_id)

    def upload_with_cli(self, server, matrix):
        """`pricer upload` of `matrix`: (its id, whether it was already stored)."""
        path = os.path.join(self.directory(), "set.npy")
        np.save(path, matrix)
        done = subprocess.run([pricerd_process.ARGS.pricer, "upload", "--target", server.target,
                               path], capture_output=True, text=True, timeout=scaled(60))
        self.assertEqual(done.returncode, 0, done.stderr)
        return done.stdout.strip(), "already stored" in done.stderr


class Uploader(threading.Thread):
    """Uploads sets of its own seeds one after another with the Python
    client until a call fails: the (id, matrix) of each that returned, and
    of the one in flight when it stopped."""

    def __init__(self, target, first_seed):
        super().__init__(daemon=True)
        self.target, self.seed = target, first_seed
        self.completed, self.in_flight, self.error = [], None, None
        self.start()

    def run(self):
        with Client(self.target) as client:
            while True:
                matrix = scenario_matrix(self.seed)
                self.in_flight = (Client.scenario_set_id(matrix), matrix)
                try:
                    set_id = client.upload(matrix)
                except PricerError as error:
                    self.error = error
                    return
                self.completed.append((set_id, matrix))
                self.in_flight = None
                self.seed += 1


def write_torn_temporary(directory, matrix, pid):
    """A temporary file as the store names them (`<id>.set.tmp.<pid>.<n>`)
    holding the header and half the values of `matrix`: a write that a
    crash cut short."""
    set_id = Client.scenario_set_id(matrix)
    path = os.path.join(directory, "%s.set.tmp.%d.7" % (set_id, pid))
    values = np.asfortranarray(matrix, dtype="<f4").tobytes(order="F")
    with open(path, "wb") as f:
        f.write(b"PRSET001" + np.array(matrix.shape, dtype="<i8").tobytes())
        f.write(values[:len(values) // 2])
    return set_id, path


class KilledDuringUploadsTest(StoreFaultsTestCase):
    """SIGKILL while four clients upload 4 MiB sets: on the same directory
    the restarted server has every set whose upload returned, whole; a set
    in flight at the kill is either whole or unknown; a torn temporary file
    is ignored and removed."""

    UPLOADERS, COMPLETED_BEFORE_KILL = 4, 12

    def kill_during_uploads(self, server):
        """The uploaders, once at least COMPLETED_BEFORE_KILL uploads have
        returned and the server was SIGKILLed with others in flight."""
        uploaders = [Uploader(server.target, 1000 * (k + 1)) for k in range(self.UPLOADERS)]
        deadline = time.monotonic() + scaled(60)
        while (sum(len(u.completed) for u in uploaders) < self.COMPLETED_BEFORE_KILL
               and time.monotonic() < deadline):
            time.sleep(0.01)
        server.signal(signal.SIGKILL)
        server.proc.wait(scaled(10))
        for uploader in uploaders:
            uploader.join(scaled(30))
            self.assertFalse(uploader.is_alive(), "an upload did not end after the kill")
            self.assertIsNotNone(uploader.error)
        return uploaders

    def test_completed_uploads_survive_a_sigkill_and_a_torn_file_is_ignored(self):
        directory = self.directory()
        killed = self.store_server(directory)
        uploaders = self.kill_during_uploads(killed)
        completed = [done for u in uploaders for done in u.completed]
        in_flight = [u.in_flight for u in uploaders if u.in_flight is not None]
        self.assertGreaterEqual(len(completed), self.COMPLETED_BEFORE_KILL)
        left = sorted(name for name in os.listdir(directory) if ".tmp." in name)
        torn_id, torn_path = write_torn_temporary(directory, scenario_matrix(1), killed.proc.pid)
        server = self.store_server(directory)
        for set_id, matrix in completed:
            self.assertPricesLikeInline(server, set_id, matrix)
        whole = 0
        for set_id, matrix in in_flight:
            by_id = price_by_id(server, set_id)
            if isinstance(by_id, PricerError):
                self.assertEqual(by_id.code, grpc.StatusCode.NOT_FOUND, by_id.message)
            else:
                self.assertPricesLikeInline(server, set_id, matrix)
                whole += 1
        unknown = price_by_id(server, torn_id)
        self.assertIsInstance(unknown, PricerError)
        self.assertEqual(unknown.code, grpc.StatusCode.NOT_FOUND, unknown.message)
        print("%d uploads returned before the kill, all whole after the restart; of %d in "
              "flight, %d whole and %d unknown; temporary files the kill left: %d" % (
                  len(completed), len(in_flight), whole, len(in_flight) - whole, len(left)),
              flush=True)
        # The restarted server removed every temporary file of the killed one.
        self.assertFalse(os.path.exists(torn_path))
        self.assertEqual([name for name in os.listdir(directory) if ".tmp." in name], [])
        # The set of the torn file uploads and prices as any other.
        self.assertEqual(self.upload_with_cli(server, scenario_matrix(1)), (torn_id, False))
        self.assertPricesLikeInline(server, torn_id, scenario_matrix(1))


def flip_byte(path, offset):
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0x10]))


def truncate(path):
    os.truncate(path, os.path.getsize(path) - 4096)


class DamagedSetFileTest(StoreFaultsTestCase):
    """A stored set's file damaged on disk: pricing by its id is DATA_LOSS
    naming the set, other sets still price, and uploading the same matrix
    again repairs it."""

    def assertDataLoss(self, server, set_id):
        damaged = price_by_id(server, set_id)
        self.assertIsInstance(damaged, PricerError, "a damaged set priced")
        self.assertEqual(damaged.code, grpc.StatusCode.DATA_LOSS, damaged.message)
        self.assertIn(set_id, damaged.message)
        print("damaged set: %s %s" % (damaged.code.name, damaged.message), flush=True)

    def assertRepairedByUpload(self, server, set_id, matrix):
        self.assertEqual(self.upload_with_cli(server, matrix), (set_id, False))
        self.assertPricesLikeInline(server, set_id, matrix)

    def test_a_flipped_value_byte_found_after_a_restart(self):
        directory = self.directory()
        matrix, other = scenario_matrix(21), scenario_matrix(22)
        server = self.store_server(directory)
        with Client(server.target) as client:
            set_id, other_id = client.upload(matrix), client.upload(other)
        server.stop()
        path = os.path.join(directory, set_id + ".set")
        flip_byte(path, HEADER_BYTES + os.path.getsize(path) // 3)
        server = self.store_server(directory)
        self.assertDataLoss(server, set_id)
        self.assertPricesLikeInline(server, other_id, other)
        self.assertRepairedByUpload(server, set_id, matrix)
        server.stop()  # and the repaired file is what a restarted server reads
        self.assertPricesLikeInline(self.store_server(directory), set_id, matrix)

    def test_damaged_files_of_a_set_evicted_from_memory(self):
        # The store's memory holds one set: the other is read from its file.
        directory = self.directory()
        matrix, other = scenario_matrix(31), scenario_matrix(32)
        server = self.store_server(directory, "--scenario-store-bytes", str(matrix.nbytes))
        with Client(server.target) as client:
            set_id, other_id = client.upload(matrix), client.upload(other)
        path = os.path.join(directory, set_id + ".set")
        for damage in (lambda: flip_byte(path, 16), lambda: truncate(path),
                       lambda: flip_byte(path, os.path.getsize(path) - 1)):
            self.assertPricesLikeInline(server, other_id, other)  # evicts `matrix`
            damage()
            self.assertDataLoss(server, set_id)
            self.assertRepairedByUpload(server, set_id, matrix)


if __name__ == "__main__":
    pricerd_process.main()
