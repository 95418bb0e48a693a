"""pricerd's start: --version, refused log flags, listen errors that exit
non-zero naming the address, and a second server on a busy port that exits
while the first serves on."""

from pricer_client._proto import pricer_pb2

import pricerd_process
from pricer_calls import OK, price, small_request
from pricerd_process import CRASH_CODES, OperationsTestCase, run_pricerd


class StartupTest(OperationsTestCase):
    def test_version(self):
        code, out = run_pricerd("--version")
        self.assertEqual(code, 0, out)
        self.assertRegex(out.strip(), r"^pricerd 0\.1\.0 \((cpu only|cuda)\)$")
        # The same string comes back in ListDevices.
        server = self.start_server()
        devices = self.stub(server).ListDevices(pricer_pb2.ListDevicesRequest(), timeout=10)
        self.assertEqual(out.strip(), "pricerd " + devices.server_version)

    def test_bad_log_level_and_format_refused(self):
        for flags, env, value in ((("--log-level", "loud"), None, "loud"),
                                  ((), {"PRICER_LOG_LEVEL": "chatty"}, "chatty"),
                                  (("--log-format", "yaml"), None, "yaml")):
            with self.subTest(flags=flags, env=env):
                code, out = run_pricerd("--listen", "127.0.0.1:0", "--metrics-listen", "", *flags,
                                        env=env)
                self.assertIsNotNone(code, "pricerd kept running: " + out)
                self.assertGreater(code, 0, out)
                self.assertIn(value, out)

    def test_listen_errors_exit_nonzero_naming_the_address(self):
        for address in ("nonsense", "127.0.0.1:99999", "127.0.0.1:-1", "10.255.255.1:50051"):
            with self.subTest(address=address):
                code, out = run_pricerd("--listen", address, "--metrics-listen", "",
                                        "--devices", "cpu", "--device-memory", "1GiB")
                self.assertIsNotNone(code, "pricerd kept running on %s: %s" % (address, out))
                self.assertGreater(code, 0, out)
                self.assertNotIn(code, CRASH_CODES, out)
                self.assertIn(address, out)

    def test_second_server_on_a_busy_port_exits_and_the_first_serves_on(self):
        first = self.start_server()
        address = "127.0.0.1:%d" % first.port
        code, out = run_pricerd("--listen", address, "--metrics-listen", "", "--devices", "cpu",
                                "--device-memory", "1GiB")
        self.assertIsNotNone(code, "a second pricerd kept running on " + address)
        self.assertGreater(code, 0, out)
        self.assertNotIn(code, CRASH_CODES, out)
        self.assertIn(address, out)
        stub = self.stub(first)
        for _ in range(5):  # with SO_REUSEPORT some would reach the second
            self.assertEqual(stub.ListDevices(pricer_pb2.ListDevicesRequest(),
                                              timeout=10).devices[0].name, "cpu0")
        self.assertCall(price(stub, small_request()), OK)
        self.assertIsNone(first.proc.poll())


if __name__ == "__main__":
    pricerd_process.main()
