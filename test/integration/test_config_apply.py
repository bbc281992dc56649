"""`kubectl apply` of config/ against the embedded API server: the install applies (and
re-applies) cleanly, the samples are accepted with the CRD's defaults filled in, and the
CRD's CEL rules reject what the parser rejects."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from llmscaler_runtime.api.v1alpha1 import API_VERSION, KIND, LLMScaler, ScaleDownBehavior

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "config"
SAMPLES_NS = "llmscaler-samples"
KUBECTL = shutil.which("kubectl")


@pytest.fixture(scope="module")
def env() -> Iterator[Any]:
    if KUBECTL is None:
        pytest.skip("kubectl is not on PATH")
    from llmscaler_runtime.envtest import Environment

    # No CRDs preloaded: installing the CRD is part of what is under test.
    with Environment() as environment:
        yield environment


def kubectl(env: Any, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    assert KUBECTL is not None
    return subprocess.run(
        [KUBECTL, "--kubeconfig", env.kubeconfig_path, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def kubectl_ok(env: Any, *args: str) -> str:
    proc = kubectl(env, *args)
    assert proc.returncode == 0, f"kubectl {' '.join(args)} failed:\n{proc.stderr}"
    return proc.stdout


def ensure_namespace(env: Any, name: str) -> None:
    # `kubectl apply` rather than `kubectl create namespace`: the latter sends protobuf,
    # which the embedded server does not speak.
    manifest = yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    proc = kubectl(env, "apply", "-f", "-", stdin=manifest)
    assert proc.returncode == 0, proc.stderr


def _built(directory: str) -> list[dict[str, Any]]:
    assert KUBECTL is not None
    out = subprocess.run(
        [KUBECTL, "kustomize", str(CONFIG / directory)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def test_default_install_applies_and_reapplies(env: Any) -> None:
    kubectl_ok(env, "apply", "-k", str(CONFIG / "default"))
    client = env.client()
    for doc in _built("default"):
        md = doc["metadata"]
        got = client.get(doc["apiVersion"], doc["kind"], md["name"], md.get("namespace"))
        assert got["metadata"]["name"] == md["name"]
    second = kubectl_ok(env, "apply", "-k", str(CONFIG / "default"))
    lines = [line for line in second.splitlines() if line.strip()]
    assert lines and all(line.endswith("unchanged") for line in lines), second


def test_samples_are_accepted_and_defaulted(env: Any) -> None:
    kubectl_ok(env, "apply", "-k", str(CONFIG / "crd"))
    ensure_namespace(env, SAMPLES_NS)
    kubectl_ok(env, "apply", "-n", SAMPLES_NS, "-k", str(CONFIG / "samples"))
    client = env.client()
    prom = client.get(API_VERSION, KIND, "llmscaler-sample", SAMPLES_NS)
    scaler = LLMScaler.from_dict(prom)
    assert scaler.namespace == SAMPLES_NS and scaler.uid and scaler.generation >= 1
    # Filled in by the CRD's defaults, not written in the sample:
    assert prom["spec"]["metricProvider"] == "Prometheus"
    custom = client.get(API_VERSION, KIND, "llmscaler-custom-provider-sample", SAMPLES_NS)
    assert custom["spec"]["syncPeriodSeconds"] == 15
    assert custom["spec"]["retryPeriodSeconds"] == 10
    assert custom["spec"]["scaleDown"]["behavior"] == ScaleDownBehavior.CACHE_AWARE.value
    assert LLMScaler.from_dict(custom).spec.custom_provider is not None


def _bad(name: str, **spec: Any) -> str:
    base: dict[str, Any] = {
        "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "vllm"},
        "serverAddress": "http://prometheus:9090",
        "minReplicas": 1,
        "maxReplicas": 3,
        "metrics": [{"name": "kv", "query": "avg(x)", "target": "0.8"}],
    }
    base.update(spec)
    obj = {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": name}, "spec": base}
    return yaml.safe_dump(obj)


@pytest.mark.parametrize(
    ("name", "spec", "message"),
    [
        ("min-above-max", {"minReplicas": 4}, "minReplicas must be less than or equal"),
        (
            "percent-target",
            {"metrics": [{"query": "q", "target": "80%"}]},
            "a % suffix is not accepted",
        ),
        ("no-metrics", {"metrics": []}, "metrics must list at least one metric"),
        ("custom-no-provider", {"metricProvider": "Custom"}, "customProvider is required"),
    ],
)
def test_cel_rules_reject_bad_scalers(
    env: Any, name: str, spec: dict[str, Any], message: str
) -> None:
    kubectl_ok(env, "apply", "-k", str(CONFIG / "crd"))
    ensure_namespace(env, SAMPLES_NS)
    proc = kubectl(env, "apply", "-n", SAMPLES_NS, "-f", "-", stdin=_bad(name, **spec))
    assert proc.returncode != 0, f"{name} was accepted"
    assert message in proc.stderr, proc.stderr


def test_kubectl_shows_printer_columns_and_explains_fields(env: Any) -> None:
    kubectl_ok(env, "apply", "-k", str(CONFIG / "crd"))
    ensure_namespace(env, SAMPLES_NS)
    kubectl_ok(env, "apply", "-n", SAMPLES_NS, "-k", str(CONFIG / "samples"))
    table = kubectl_ok(env, "get", "llms", "-n", SAMPLES_NS, "-o", "wide")
    header = table.splitlines()[0].split()
    assert header == [
        "NAME",
        "TARGET",
        "MINREPLICAS",
        "MAXREPLICAS",
        "CURRENTREPLICAS",
        "DESIREDREPLICAS",
        "AGE",
    ]
    row = next(line.split() for line in table.splitlines() if line.startswith("llmscaler-sample"))
    assert row[1:4] == ["vllm-opt-125m", "1", "5"]
    explained = kubectl_ok(env, "explain", "llmscaler.spec.scaleDown.maxStepReplicas")
    assert "0 means no limit" in explained
