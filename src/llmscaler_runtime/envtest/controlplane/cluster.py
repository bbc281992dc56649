"""``ControlPlane``: the real etcd and kube-apiserver (and, opt-in, the workload tier) on 127.0.0.1.

What controller-runtime's envtest does, for Python: generated PKI, etcd with a temporary data
directory, kube-apiserver with client-certificate authentication and the RBAC authorizer, the
project's CRDs installed and Established, a kubeconfig for the admin. The workload tier adds
kube-controller-manager (Deployments, ReplicaSets, garbage collection, namespaces, ...),
kube-scheduler and kwok with fake nodes, so pods are scheduled, become Ready after a delay a test
chooses, and are removed by the real ReplicaSet controller in its real order.

Deliberate differences from a production cluster, each because no kubelet runs:

* the ``ServiceAccount`` admission plugin is off (as in controller-runtime's envtest), so pods
  are admitted before the ``default`` ServiceAccount of a fresh namespace exists and get no
  token volume; the TokenRequest API works as usual;
* pods never run anything: kwok moves their status through Pending -> Running/Ready and deletes
  them after a short delay once they are terminating.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import yaml

from .assets import CORE, WORKLOADS, Assets, find_binaries
from .process import Component, ComponentExited
from .stages import kwok_config

if TYPE_CHECKING:
    from llmscaler_runtime.kube import Client

    # Imported when a control plane starts: it needs the optional 'cryptography' package, and
    # importing this package (for MissingBinaries, say) must work without it.
    from .pki import ClientCert, Pki

__all__ = ["ControlPlane", "ControlPlaneError"]

#: Annotation and label that mark the fake nodes kwok manages (kwok's own convention).
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
SERVICE_CIDR = "10.0.0.0/24"
SERVICE_IP = "10.0.0.1"
POD_CIDR = "10.244.0.0/16"


#: Metadata of every request once it is answered: who (user, userAgent), what (verb,
#: objectRef) and the response code. No bodies: cheap enough to keep on for every test.
_AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted, Panic]
rules:
- level: Metadata
"""


class ControlPlaneError(RuntimeError):
    """The control plane could not start (the message says which component and why)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ControlPlane:
    """A real Kubernetes control plane built from Go modules, for tests, demos and development.

    ``with ControlPlane(["config/crd/bases"], workloads=True) as cp:`` gives
    ``cp.kubeconfig_path`` (admin, ``system:masters``), ``cp.url`` and ``cp.client()``.
    ``pod_ready_seconds`` is the default cold start of a pod on the workload tier; a pod (or
    Deployment template) annotated ``pod-ready.stage.kwok.x-k8s.io/delay: "20s"`` overrides it.
    """

    def __init__(
        self,
        crd_paths: Sequence[str] = (),
        *,
        workloads: bool = False,
        pod_ready_seconds: float = 0.5,
        pod_delete_seconds: float = 0.2,
        nodes: int = 2,
        assets: Assets | None = None,
        startup_timeout: float = 120.0,
        port: int = 0,
    ) -> None:
        self.crd_paths = list(crd_paths)
        self.workloads = workloads
        self.pod_ready_seconds = pod_ready_seconds
        self.pod_delete_seconds = pod_delete_seconds
        self.nodes = nodes
        self.startup_timeout = startup_timeout
        self.port = port
        self.assets = assets or find_binaries(CORE + WORKLOADS if workloads else CORE)
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self.directory = Path()
        self.pki: Pki | None = None
        self.components: dict[str, Component] = {}
        self.kubeconfig_path = ""
        self.url = ""
        self.etcd_url = ""

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> ControlPlane:
        """Start every component and wait until the API serves and the CRDs are Established."""
        if self.components:
            return self
        self._tmp = tempfile.TemporaryDirectory(prefix="llmscaler-controlplane-")
        self.directory = Path(self._tmp.name)
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        from .pki import create_pki

        (self.directory / "logs").mkdir()
        self.pki = create_pki(self.directory / "pki", service_ip=SERVICE_IP)
        deadline = time.monotonic() + self.startup_timeout
        self._add_etcd().start()
        self._wait(lambda: self._etcd_healthy(), "etcd /health", deadline, "etcd")
        secure_port = self.port or _free_port()
        self.url = f"https://127.0.0.1:{secure_port}"
        self.kubeconfig_path = str(
            self.write_kubeconfig(self.directory / "admin.kubeconfig", self.pki.admin)
        )
        self._add_apiserver(secure_port).start()
        self.wait_apiserver_ready(deadline=deadline)
        if self.crd_paths:
            from llmscaler_runtime.envtest.backends import install_crds

            with self.client() as client:
                install_crds(client, self.crd_paths, timeout=max(1.0, deadline - time.monotonic()))
        if self.workloads:
            self._start_workloads(deadline)

    def _start_workloads(self, deadline: float) -> None:
        kubeconfig = self.kubeconfig_path
        self._add_controller_manager(kubeconfig).start()
        self._add_scheduler(kubeconfig).start()
        config = self.directory / "kwok.yaml"
        config.write_text(
            kwok_config(
                pod_ready_seconds=self.pod_ready_seconds,
                pod_delete_seconds=self.pod_delete_seconds,
            )
        )
        self._add(
            "kwok",
            [
                str(self.assets["kwok"]),
                f"--kubeconfig={kubeconfig}",
                f"--config={config}",
                "--manage-all-nodes=false",
                f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}=fake",
                "--node-lease-duration-seconds=40",
                f"--cidr={POD_CIDR}",
                "--node-ip=10.243.0.1",
            ],
        ).start()
        with self.client() as client:
            for i in range(self.nodes):
                client.apply(self._node(f"kwok-node-{i}"), field_manager="llmscaler-envtest")
            self._wait(lambda: self._nodes_ready(client), "fake nodes Ready", deadline, "kwok")
            # The controller manager runs once it has created the default ServiceAccount.
            self._wait(
                lambda: self._exists(client, "v1", "ServiceAccount", "default", "default"),
                "kube-controller-manager (default ServiceAccount)",
                deadline,
                "kube-controller-manager",
            )

    def stop(self) -> None:
        """Stop every component (workloads first, etcd last) and remove the temporary files."""
        for name in reversed(list(self.components)):
            with contextlib.suppress(Exception):
                self.components[name].stop()
        self.components.clear()
        if self._tmp is not None:
            if os.environ.get("LLMSCALER_CONTROLPLANE_KEEP"):
                kept = Path(tempfile.mkdtemp(prefix="llmscaler-controlplane-logs-"))
                with contextlib.suppress(OSError):
                    for log in (self.directory / "logs").iterdir():
                        (kept / log.name).write_bytes(log.read_bytes())
                print(f"control plane logs kept in {kept}", file=sys.stderr)
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- components --------------------------------------------------------------------------

    def _add(self, name: str, argv: list[str]) -> Component:
        comp = Component(name, argv, self.directory / "logs" / f"{name}.log")
        self.components[name] = comp
        return comp

    def _add_etcd(self) -> Component:
        client_port, peer_port = _free_port(), _free_port()
        self.etcd_url = f"http://127.0.0.1:{client_port}"
        peer = f"http://127.0.0.1:{peer_port}"
        return self._add(
            "etcd",
            [
                str(self.assets["etcd"]),
                f"--data-dir={self.directory / 'etcd'}",
                f"--listen-client-urls={self.etcd_url}",
                f"--advertise-client-urls={self.etcd_url}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=default={peer}",
                "--unsafe-no-fsync=true",
                "--log-level=warn",
            ],
        )

    def _add_apiserver(self, secure_port: int) -> Component:
        assert self.pki is not None
        pki = self.pki
        policy = self.directory / "audit-policy.yaml"
        policy.write_text(_AUDIT_POLICY)
        return self._add(
            "kube-apiserver",
            [
                str(self.assets["kube-apiserver"]),
                f"--etcd-servers={self.etcd_url}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={secure_port}",
                f"--cert-dir={self.directory / 'apiserver-certs'}",
                f"--tls-cert-file={pki.serving.cert}",
                f"--tls-private-key-file={pki.serving.key}",
                f"--client-ca-file={pki.ca_cert}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={pki.sa_public_key}",
                f"--service-account-signing-key-file={pki.sa_private_key}",
                "--authorization-mode=RBAC",
                "--allow-privileged=true",
                "--disable-admission-plugins=ServiceAccount",
                "--profiling=false",
                f"--audit-policy-file={policy}",
                f"--audit-log-path={self.audit_log_path}",
                "--audit-log-mode=blocking",
                "--v=0",
            ],
        )

    def _client_and_serving_flags(self, kubeconfig: str, cert_dir: str) -> list[str]:
        """What kube-controller-manager and kube-scheduler share: the admin kubeconfig for
        the API and for delegated authn/z of their own HTTPS port (loopback, a free port, a
        self-signed cert), and no leader election (one of each runs)."""
        return [
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={_free_port()}",
            f"--cert-dir={self.directory / cert_dir}",
            "--leader-elect=false",
        ]

    def _add_controller_manager(self, kubeconfig: str) -> Component:
        assert self.pki is not None
        return self._add(
            "kube-controller-manager",
            [
                str(self.assets["kube-controller-manager"]),
                *self._client_and_serving_flags(kubeconfig, "kcm-certs"),
                f"--root-ca-file={self.pki.ca_cert}",
                f"--service-account-private-key-file={self.pki.sa_private_key}",
                f"--cluster-signing-cert-file={self.pki.ca_cert}",
                f"--cluster-signing-key-file={self.pki.ca_key}",
                "--use-service-account-credentials=false",
                "--kube-api-qps=200",
                "--kube-api-burst=400",
                "--v=0",
            ],
        )

    def _add_scheduler(self, kubeconfig: str) -> Component:
        return self._add(
            "kube-scheduler",
            [
                str(self.assets["kube-scheduler"]),
                *self._client_and_serving_flags(kubeconfig, "scheduler-certs"),
                "--v=0",
            ],
        )

    @staticmethod
    def _node(name: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "annotations": {KWOK_NODE_ANNOTATION: "fake"},
                "labels": {"type": "kwok", "kubernetes.io/hostname": name},
            },
        }

    # -- readiness ---------------------------------------------------------------------------

    def _wait(self, ready: Any, what: str, deadline: float, component: str) -> None:
        while True:
            comp = self.components.get(component)
            try:
                if comp is not None:
                    comp.check_running()
            except ComponentExited as exc:
                raise ControlPlaneError(f"{what}: {exc}") from None
            try:
                if ready():
                    return
            except Exception:  # not up yet: connection refused, 503, NotFound, ...
                pass
            if time.monotonic() > deadline:
                tail = comp.logs() if comp is not None else ""
                raise ControlPlaneError(
                    f"timed out after {self.startup_timeout:.0f}s waiting for {what}; "
                    f"last log lines of {component}:\n{tail}"
                )
            time.sleep(0.1)

    def _etcd_healthy(self) -> bool:
        with urllib.request.urlopen(f"{self.etcd_url}/health", timeout=1) as r:
            return bool(json.loads(r.read()).get("health") == "true")

    def ssl_context(self) -> ssl.SSLContext:
        """A client TLS context that trusts the CA and presents the admin certificate."""
        assert self.pki is not None
        ctx = ssl.create_default_context(cafile=str(self.pki.ca_cert))
        ctx.load_cert_chain(str(self.pki.admin.cert), str(self.pki.admin.key))
        return ctx

    def _readyz(self) -> bool:
        ctx = self.ssl_context()
        try:
            with urllib.request.urlopen(f"{self.url}/readyz", timeout=2, context=ctx) as r:
                return bool(r.status == 200)
        except urllib.error.HTTPError:
            return False

    def wait_apiserver_ready(self, *, deadline: float | None = None) -> None:
        """Block until kube-apiserver's ``/readyz`` answers 200 (after a start or restart)."""
        end = deadline if deadline is not None else time.monotonic() + self.startup_timeout
        self._wait(self._readyz, "kube-apiserver /readyz", end, "kube-apiserver")

    @staticmethod
    def _exists(client: Client, api_version: str, kind: str, name: str, ns: str | None) -> bool:
        from llmscaler_runtime.kube import NotFound

        try:
            client.get(api_version, kind, name, ns)
        except NotFound:
            return False
        return True

    def _nodes_ready(self, client: Client) -> bool:
        nodes = client.list("v1", "Node").get("items") or []
        ready = [
            n
            for n in nodes
            if any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in (n.get("status") or {}).get("conditions") or []
            )
        ]
        return len(ready) >= self.nodes

    # -- what tests use ----------------------------------------------------------------------

    @property
    def audit_log_path(self) -> Path:
        """kube-apiserver's audit log: one JSON ``audit.k8s.io/v1`` Event per request."""
        return self.directory / "logs" / "audit.log"

    def audit_events(self) -> list[dict[str, Any]]:
        """Every request the API server has answered so far (stage ``ResponseComplete``).

        The real server's request recorder: tests count what a client did by its
        ``userAgent``, ``verb`` and ``objectRef``, as they do with the embedded server's.
        """
        try:
            lines = self.audit_log_path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        events = []
        for line in lines:
            try:
                events.append(json.loads(line))
            except ValueError:  # the line being written right now
                continue
        return events

    def write_kubeconfig(
        self,
        path: Path,
        cert: ClientCert | None = None,
        *,
        token: str | None = None,
        namespace: str = "default",
    ) -> Path:
        """Write a kubeconfig for this server, authenticating with ``cert`` or ``token``."""
        assert self.pki is not None
        user: dict[str, str] = {}
        if token is not None:
            user["token"] = token
        else:
            chosen = cert or self.pki.admin
            user = {"client-certificate": str(chosen.cert), "client-key": str(chosen.key)}
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "controlplane",
                    "cluster": {"server": self.url, "certificate-authority": str(self.pki.ca_cert)},
                }
            ],
            "users": [{"name": "user", "user": user}],
            "contexts": [
                {
                    "name": "controlplane",
                    "context": {"cluster": "controlplane", "user": "user", "namespace": namespace},
                }
            ],
            "current-context": "controlplane",
        }
        path.write_text(yaml.safe_dump(doc))
        path.chmod(0o600)
        return path

    def service_account_kubeconfig(
        self, namespace: str, name: str, *, expiration_seconds: int = 3600
    ) -> Path:
        """A kubeconfig with a token for ``namespace/name`` from the TokenRequest API.

        The operator then runs with exactly its ServiceAccount's permissions, judged by the
        real RBAC authorizer: what the chart's least-privilege RBAC is tested with.
        """
        with self.client() as client:
            answer = client.request(
                "POST",
                f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
                body={
                    "apiVersion": "authentication.k8s.io/v1",
                    "kind": "TokenRequest",
                    "spec": {"expirationSeconds": expiration_seconds},
                },
            )
        token = str(answer["status"]["token"])
        path = self.directory / f"sa-{namespace}-{name}.kubeconfig"
        return self.write_kubeconfig(path, token=token, namespace=namespace)

    def client(self) -> Client:
        """A ``llmscaler_runtime.kube.Client`` authenticated as the admin."""
        from llmscaler_runtime.kube import Client

        return Client.from_kubeconfig(self.kubeconfig_path)

    def kubectl(
        self, *args: str, input: str | None = None, kubeconfig: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run the matching kubectl against this server (never raises on a non-zero exit)."""
        return subprocess.run(
            [
                str(self.assets["kubectl"]),
                f"--kubeconfig={kubeconfig or self.kubeconfig_path}",
                *args,
            ],
            input=input,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def restart_apiserver(self, *, graceful: bool = True, down_seconds: float = 0.0) -> None:
        """Stop kube-apiserver (SIGTERM, or SIGKILL when not graceful), then start it again."""
        comp = self.components["kube-apiserver"]
        comp.stop() if graceful else comp.kill()
        if down_seconds:
            time.sleep(down_seconds)
        comp.start()
        self.wait_apiserver_ready()

    def restart_etcd(self, *, down_seconds: float = 0.0) -> None:
        """Kill etcd (data directory kept) and start it again on the same ports."""
        comp = self.components["etcd"]
        comp.kill()
        if down_seconds:
            time.sleep(down_seconds)
        comp.start()
        self._wait(
            self._etcd_healthy, "etcd /health", time.monotonic() + self.startup_timeout, "etcd"
        )
        self.wait_apiserver_ready()
