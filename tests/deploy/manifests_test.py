"""deploy/ checked offline: the kustomize overlays render and validate against
the Kubernetes schemas, the compose file against the compose spec, the
Prometheus config with promtool; and the manifests agree with the real
pricerd: every PRICER_* variable they set is one pricerd reads, every metric
the dashboard, the HPA and the adapter rule use is one pricerd exports, the
grace period outlasts the drain."""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEPLOY = os.path.join(ROOT, "deploy")
ARGS = None
KUBERNETES_VERSION = "1.30.0"  # the oldest the manifests target (native gRPC probes: 1.24)


def tool(name):
    """A command of the tools virtual environment (--tools-venv)."""
    return os.path.join(ARGS.tools_venv, "bin", name)


def render(overlay):
    proc = subprocess.run(["kubectl", "kustomize", os.path.join(DEPLOY, "k8s", overlay)],
                          capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise AssertionError("kubectl kustomize %s: %s" % (overlay, proc.stderr))
    return proc.stdout, [d for d in yaml.safe_load_all(proc.stdout) if d]


def by_kind(documents, kind):
    found = [d for d in documents if d["kind"] == kind]
    assert len(found) == 1, (kind, len(found))
    return found[0]


def pricerd_variables():
    """The PRICER_* variables pricerd reads, from its --help."""
    help_text = subprocess.run([ARGS.pricerd, "--help"], capture_output=True, text=True,
                               timeout=30).stdout
    return set(re.findall(r"Env:(PRICER_[A-Z_]+)", help_text))


def exported_metrics():
    """The metric families a real pricerd exports after one priced request."""
    log = tempfile.TemporaryFile("w+")
    proc = subprocess.Popen([ARGS.pricerd, "--listen", "127.0.0.1:0", "--metrics-listen",
                             "127.0.0.1:0", "--devices", "cpu", "--device-memory", "256MiB"],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 30
        port = metrics = None
        while time.time() < deadline and (port is None or metrics is None):
            time.sleep(0.05)
            log.seek(0)
            text = log.read()
            port = port or (re.search(r"\(port (\d+)\)", text) or [None, None])[1]
            metrics = metrics or (re.search(r"metrics on (http://\S+)", text) or [None, None])[1]
        assert port and metrics, "pricerd did not start"
        subprocess.run([ARGS.pricer, "price", "--target", "127.0.0.1:" + port, "--issuers", "3",
                        "--paths", "100", "--scenarios", "10"], check=True, capture_output=True,
                       timeout=60)
        with urllib.request.urlopen(metrics, timeout=10) as response:
            scrape = response.read().decode()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return set(re.findall(r"^# TYPE (\S+) ", scrape, re.M))


def metric_names(expression):
    return set(re.findall(r"\b(pricer_[a-z_]+)", expression))


class KubernetesTest(unittest.TestCase):
    OVERLAYS = ("overlays/cpu", "overlays/gpu", "examples/tls")

    def test_overlays_render_and_validate_against_the_schemas(self):
        for overlay in self.OVERLAYS:
            with self.subTest(overlay=overlay):
                text, documents = render(overlay)
                self.assertEqual(
                    sorted(d["kind"] for d in documents),
                    ["Deployment", "HorizontalPodAutoscaler", "PodDisruptionBudget", "Secret",
                     "Service"])
                with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
                    f.write(text)
                    f.flush()
                    proc = subprocess.run([tool("kubernetes-validate"), "--strict", "-k",
                                           KUBERNETES_VERSION, f.name],
                                          capture_output=True, text=True, timeout=300)
                self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
                self.assertEqual(proc.stdout.count("passed for resource"), 5, proc.stdout)

    def test_the_pod_drains_before_it_is_killed(self):
        for overlay in self.OVERLAYS:
            with self.subTest(overlay=overlay):
                _, documents = render(overlay)
                pod = by_kind(documents, "Deployment")["spec"]["template"]["spec"]
                container = pod["containers"][0]
                env = {e["name"]: e["value"] for e in container["env"]}
                pause = int(container["lifecycle"]["preStop"]["exec"]["command"][1])
                self.assertGreater(pod["terminationGracePeriodSeconds"],
                                   pause + float(env["PRICER_DRAIN_SECONDS"]))
                self.assertGreater(float(env["PRICER_MAX_CONNECTION_AGE_SECONDS"]), 0)
                # Tokens readable by the pod's group only: pricerd refuses o+r.
                volumes = {v["name"]: v for v in pod["volumes"]}
                self.assertEqual(volumes["tokens"]["secret"]["defaultMode"] & 0o007, 0)

    def test_probes_ask_the_health_service(self):
        _, documents = render("overlays/cpu")
        container = by_kind(documents, "Deployment")["spec"]["template"]["spec"]["containers"][0]
        self.assertEqual(container["readinessProbe"]["grpc"],
                         {"port": 50051, "service": "pricer.v1.Pricer"})
        self.assertEqual(container["livenessProbe"]["grpc"]["port"], 50051)
        _, documents = render("examples/tls")
        container = by_kind(documents, "Deployment")["spec"]["template"]["spec"]["containers"][0]
        command = container["readinessProbe"]["exec"]["command"]
        self.assertEqual(command[:2], ["pricer", "health"])
        self.assertIn("--tls-ca", command)

    def test_the_service_is_headless_and_the_gpu_overlay_asks_for_gpus(self):
        _, documents = render("overlays/gpu")
        self.assertEqual(by_kind(documents, "Service")["spec"]["clusterIP"], "None")
        container = by_kind(documents, "Deployment")["spec"]["template"]["spec"]["containers"][0]
        self.assertGreaterEqual(container["resources"]["limits"]["nvidia.com/gpu"], 1)
        env = {e["name"]: e["value"] for e in container["env"]}
        self.assertEqual(env["PRICER_DEVICES"], "cuda")
        self.assertTrue(container["image"].endswith("-cuda"), container["image"])

    def test_every_variable_is_one_pricerd_reads(self):
        known = pricerd_variables()
        self.assertIn("PRICER_DRAIN_SECONDS", known)
        for overlay in self.OVERLAYS:
            _, documents = render(overlay)
            container = by_kind(documents, "Deployment")["spec"]["template"]["spec"][
                "containers"][0]
            for e in container["env"]:
                self.assertIn(e["name"], known, overlay)
        with open(os.path.join(DEPLOY, "compose", "compose.yaml")) as f:
            compose = yaml.safe_load(f)
        for name in ("pricerd", "pricerd-gpu"):
            for variable in compose["services"][name]["environment"]:
                self.assertIn(variable, known, name)


class MonitoringTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.metrics = exported_metrics()

    def test_the_hpa_and_the_adapter_rule_use_an_exported_metric(self):
        _, documents = render("overlays/cpu")
        hpa = by_kind(documents, "HorizontalPodAutoscaler")
        name = hpa["spec"]["metrics"][0]["pods"]["metric"]["name"]
        self.assertIn(name, self.metrics)
        with open(os.path.join(DEPLOY, "k8s", "examples", "prometheus-adapter-rules.yaml")) as f:
            rule = yaml.safe_load(f)["rules"]["custom"][0]
        self.assertEqual(metric_names(rule["seriesQuery"]), {name})
        self.assertEqual(rule["name"]["as"], name)

    def test_every_dashboard_query_uses_exported_metrics(self):
        with open(os.path.join(DEPLOY, "compose", "grafana", "dashboards", "pricer.json")) as f:
            dashboard = json.load(f)
        used = set()
        for panel in dashboard["panels"]:
            for target in panel["targets"]:
                used |= metric_names(target["expr"])
        # Histograms export _bucket, _sum and _count of one family.
        used = {re.sub(r"_(bucket|sum|count)$", "", m) for m in used}
        self.assertGreaterEqual(len(used), 8)
        self.assertEqual(used - self.metrics, set())

    def test_prometheus_config_passes_promtool(self):
        proc = subprocess.run(["promtool", "check", "config",
                               os.path.join(DEPLOY, "compose", "prometheus.yml")],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)

    def test_compose_file_follows_the_compose_spec(self):
        proc = subprocess.run([tool("check-jsonschema"), "--builtin-schema", "vendor.compose-spec",
                               os.path.join(DEPLOY, "compose", "compose.yaml")],
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        with open(os.path.join(DEPLOY, "compose", "compose.yaml")) as f:
            compose = yaml.safe_load(f)
        gpu = compose["services"]["pricerd-gpu"]
        self.assertEqual(gpu["profiles"], ["gpu"])
        self.assertEqual(gpu["deploy"]["resources"]["reservations"]["devices"][0]["driver"],
                         "nvidia")
        self.assertNotIn("profiles", compose["services"]["pricerd"])


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--pricerd", required=True)
    parser.add_argument("--pricer", required=True)
    parser.add_argument("--tools-venv", required=True,
                        help="virtual environment with kubernetes-validate and check-jsonschema")
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
