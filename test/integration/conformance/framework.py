"""The conformance harness: one handle per server, the check registry, answers and results.

A check is a plain function ``check(server, namespace) -> answer``: it drives one server through
kubectl and the official Python client and returns a JSON-able answer from which everything that
differs between two correct servers (uids, resourceVersions, timestamps, generated names) has been
stripped. The test runs every check on the embedded server and on the real kube-apiserver, each
in a namespace of the same name, and compares the two answers.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import kubernetes.client
from kubernetes.dynamic import DynamicClient

T = TypeVar("T")

HERE = Path(__file__).parent
ROOT = HERE.parents[2]
CRD_DIR = ROOT / "config" / "crd" / "bases"
SAMPLES = ROOT / "config" / "samples"
GROUP = "autoscaling.modelsphere.dev"
LLMS_API = f"{GROUP}/v1alpha1"

Check = Callable[["Server", str], Any]
#: Every check, by name, in the order of definition (the order of the report).
CHECKS: dict[str, Check] = {}
#: The area of each check (the first column of RESULTS.md groups by it).
AREAS: dict[str, str] = {}
#: The order of the areas in RESULTS.md (the order of issue 11's list).
AREA_ORDER = (
    "server-side apply",
    "status and scale",
    "generation",
    "CRD defaulting",
    "CRD pruning",
    "schema and CEL",
    "printer columns",
    "kubectl explain",
    "watch",
    "list paging",
    "Events",
    "Leases",
    "garbage collection",
    "Deployment and ReplicaSet",
    "API basics",
)


def check(area: str) -> Callable[[Check], Check]:
    """Register ``fn`` as the check named after the function (``check_`` prefix dropped)."""

    def register(fn: Check) -> Check:
        name = fn.__name__.removeprefix("check_")
        if name in CHECKS:
            raise ValueError(f"two conformance checks are named {name!r}")
        CHECKS[name] = fn
        AREAS[name] = area
        return fn

    return register


def wait_for(fn: Callable[[], T | None], *, timeout: float, what: str, interval: float = 0.1) -> T:
    """Poll ``fn`` until it returns something truthy; at the deadline fail naming ``what``."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        value = fn()
        if value:
            return value
        last = value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")
        time.sleep(interval)


@dataclass
class Answer:
    """One HTTP exchange: the status code, the decoded body and the response headers."""

    code: int
    body: Any
    headers: dict[str, str]

    @property
    def warnings(self) -> list[str]:
        raw = self.headers.get("Warning", "")
        return re.findall(r'299 - "((?:[^"\\]|\\.)*)"', raw)

    def invalid(self) -> dict[str, Any]:
        """``status()`` for a 422 whose causes kube-apiserver lists in map order (schema
        errors): causes sorted, and the aggregated message rebuilt in that order."""
        out = self.status()
        causes = out.get("causes")
        if not causes:
            return out
        texts = [f"{c.get('field')}: {c.get('message')}" for c in causes]
        message = str(out.get("message") or "")
        unique = list(dict.fromkeys(texts))
        listed = unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"
        if message.endswith(": " + listed):
            prefix = message[: -len(listed)]
            ordered = sorted(set(texts))
            out["message"] = prefix + (
                ordered[0] if len(ordered) == 1 else "[" + ", ".join(ordered) + "]"
            )
        out["causes"] = sorted(causes, key=lambda c: (str(c.get("field")), str(c.get("message"))))
        return out

    def status(self) -> dict[str, Any]:
        """A ``Status`` failure reduced to what a client acts on: code, reason, message, causes."""
        body = self.body if isinstance(self.body, dict) else {"text": self.body}
        out: dict[str, Any] = {
            "code": self.code,
            "kind": body.get("kind"),
            "reason": body.get("reason"),
            "message": body.get("message"),
        }
        details = body.get("details") or {}
        if details.get("causes"):
            out["causes"] = details["causes"]
        return out


@dataclass
class Proc:
    """One kubectl run."""

    rc: int
    out: str
    err: str


@dataclass
class Server:
    """What a check drives: kubectl, the official client (raw and dynamic) and the kubeconfig."""

    name: str
    kubectl_path: str
    kubeconfig: str
    api: kubernetes.client.ApiClient
    cache_dir: str
    _dyn: DynamicClient | None = field(default=None, repr=False)

    @property
    def dyn(self) -> DynamicClient:
        if self._dyn is None:
            self._dyn = DynamicClient(self.api)
        return self._dyn

    def kubectl(self, *args: str, input: str | None = None, timeout: float = 60) -> Proc:
        proc = subprocess.run(
            [
                self.kubectl_path,
                f"--kubeconfig={self.kubeconfig}",
                f"--cache-dir={self.cache_dir}",
                *args,
            ],
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        return Proc(proc.returncode, proc.stdout, proc.stderr)

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: dict[str, Any] | None = None,
        content_type: str | None = None,
        accept: str = "application/json",
        timeout: float = 30,
    ) -> Answer:
        """One request through the official client's ApiClient; never raises on a status."""
        headers = {"Accept": accept}
        if content_type is not None:
            headers["Content-Type"] = content_type
        elif body is not None:
            headers["Content-Type"] = "application/json"
        method, url, hdrs, data, post = self.api.param_serialize(
            method,
            path,
            query_params=list((query or {}).items()),
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        resp = self.api.call_api(method, url, hdrs, data, post, _request_timeout=timeout)
        raw = resp.read()
        text = raw.decode() if isinstance(raw, bytes) else str(raw or "")
        try:
            decoded: Any = json.loads(text) if text else None
        except ValueError:
            decoded = text
        return Answer(resp.status, decoded, dict(resp.headers))

    def ok(self, method: str, path: str, body: Any = None, **kw: Any) -> Any:
        """``call`` that must succeed; returns the body."""
        ans = self.call(method, path, body, **kw)
        if not 200 <= ans.code < 300:
            raise AssertionError(f"{method} {path} on {self.name}: {ans.code} {ans.body}")
        return ans.body

    @contextlib.contextmanager
    def stream(
        self, path: str, query: dict[str, Any], timeout: float = 30
    ) -> Iterator[Iterator[dict[str, Any]]]:
        """A watch: yields an iterator over its decoded events until the server ends it."""
        method, url, hdrs, _body, _post = self.api.param_serialize(
            "GET",
            path,
            query_params=list(query.items()),
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
        )
        resp = self.api.rest_client.pool_manager.request(
            method, url, headers=hdrs, preload_content=False, timeout=timeout
        )
        try:

            def events() -> Iterator[dict[str, Any]]:
                buf = b""
                for chunk in resp.stream(1024, decode_content=True):
                    buf += chunk
                    while b"\n" in buf:
                        line, buf = buf.split(b"\n", 1)
                        if line.strip():
                            yield json.loads(line)
                if buf.strip():
                    yield json.loads(buf)

            yield events()
        finally:
            resp.release_conn()


# ---- normalizing answers ---------------------------------------------------------------------

#: Metadata that differs between any two servers (or two runs) and carries no behaviour.
VOLATILE_META = ("uid", "resourceVersion", "creationTimestamp", "selfLink")


def strip_meta(obj: Any) -> Any:
    """An object without its volatile metadata and with managedFields' times dropped."""
    if not isinstance(obj, dict):
        return obj
    out = json.loads(json.dumps(obj))
    meta = out.get("metadata")
    if isinstance(meta, dict):
        for k in VOLATILE_META:
            meta.pop(k, None)
        for entry in meta.get("managedFields") or []:
            entry.pop("time", None)
    return out


def managed(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """managedFields as recorded, without times, in a stable order."""
    entries = [
        {k: v for k, v in e.items() if k != "time"}
        for e in (obj.get("metadata") or {}).get("managedFields") or []
    ]
    return sorted(entries, key=lambda e: (e["manager"], e["operation"], e.get("subresource", "")))


def drop_times(value: Any) -> Any:
    """Recursively blank RFC 3339 timestamps (``...T..:..:..Z``) inside an answer."""
    if isinstance(value, dict):
        return {k: drop_times(v) for k, v in value.items()}
    if isinstance(value, list):
        return [drop_times(v) for v in value]
    if isinstance(value, str) and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", value):
        return "<time>"
    return value


def sorted_lines(text: str) -> str:
    """kubectl's ``* field: message`` lines follow the server's (map) order: sort them."""
    head, *rest = text.split("\n* ")
    return "\n* ".join([head, *sorted(rest)]) if rest else text


def mask_numbers(text: str) -> str:
    """Resource versions and counts inside messages differ per server: mask them."""
    return re.sub(r"\d+", "N", text)


def deployment(name: str, replicas: int = 1, **pod_meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}, **pod_meta},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]},
            },
        },
    }


def scaler(name: str, **spec: Any) -> dict[str, Any]:
    """A minimal valid LLMScaler (Prometheus provider, one metric)."""
    body: dict[str, Any] = {
        "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "model"},
        "serverAddress": "http://prometheus:9090",
        "minReplicas": 1,
        "maxReplicas": 4,
        "metrics": [{"query": "avg(kv)", "target": "0.8"}],
    }
    body.update(spec)
    return {"apiVersion": LLMS_API, "kind": "LLMScaler", "metadata": {"name": name}, "spec": body}


def llms_path(ns: str, name: str = "", sub: str = "") -> str:
    path = f"/apis/{LLMS_API}/namespaces/{ns}/llmscalers"
    if name:
        path += f"/{name}"
    if sub:
        path += f"/{sub}"
    return path


def core_path(ns: str, plural: str, name: str = "", sub: str = "") -> str:
    path = f"/api/v1/namespaces/{ns}/{plural}"
    return path + (f"/{name}" if name else "") + (f"/{sub}" if sub else "")


def apps_path(ns: str, plural: str, name: str = "", sub: str = "") -> str:
    path = f"/apis/apps/v1/namespaces/{ns}/{plural}"
    return path + (f"/{name}" if name else "") + (f"/{sub}" if sub else "")


APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"


# ---- results ---------------------------------------------------------------------------------


@dataclass
class Result:
    name: str
    area: str
    identical: bool
    documented: str | None
    passed: bool


@dataclass
class Report:
    """What the run found, check by check; printed as one line and written to RESULTS.md."""

    results: dict[str, Result] = field(default_factory=dict)

    def add(self, result: Result) -> None:
        self.results[result.name] = result

    def summary(self) -> str:
        n = len(self.results)
        same = sum(1 for r in self.results.values() if r.identical)
        documented = sum(1 for r in self.results.values() if not r.identical and r.documented)
        line = f"conformance: {n} checks, {same} identical, {documented} documented differences"
        failed = [r.name for r in self.results.values() if not r.passed]
        if failed:
            line += f", {len(failed)} failing ({', '.join(failed)})"
        return line

    def complete(self) -> bool:
        return set(self.results) == set(CHECKS) and all(r.passed for r in self.results.values())

    def markdown(self) -> str:
        lines = [
            "# Conformance: the embedded API server against kube-apiserver",
            "",
            "Generated by `.venv/bin/python -m pytest test/integration/conformance` (do not edit).",
            "Every check runs once on `llmscaler_runtime.envtest.Environment` and once on the real",
            "control plane (`llmscaler_runtime.envtest.controlplane.ControlPlane`: kube-apiserver,",
            "etcd, kube-controller-manager, kube-scheduler and kwok), driven by the same kubectl",
            "and the official Python client, and the two answers are compared. A difference is",
            "either fixed in the embedded server or listed here with its reason (and in the",
            "fidelity notes of `llmscaler_runtime.envtest`).",
            "",
            f"**{self.summary()}**",
            "",
            "| Area | Check | Result | Reason for the difference |",
            "|---|---|---|---|",
        ]
        order = {area: i for i, area in enumerate(AREA_ORDER)}
        names = sorted(CHECKS, key=lambda n: order.get(AREAS[n], len(order)))
        for name in names:
            r = self.results.get(name)
            if r is None:
                continue
            verdict = "identical" if r.identical else "different"
            lines.append(f"| {r.area} | `{name}` | {verdict} | {r.documented or ''} |")
        return "\n".join(lines) + "\n"
