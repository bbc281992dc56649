"""Where the test suite's Kubernetes comes from: embedded, the real control plane, k3s, a cluster.

Backends:

* ``embedded``: the project's own API server and workload simulator (in-process, pure Python);
* ``controlplane``: the real etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
  kwok, built from Go modules (:mod:`llmscaler_runtime.envtest.controlplane`);
* ``k3s``: k3s in Docker via ``testcontainers``;
* ``kubeconfig``: an existing cluster from ``LLMSCALER_TEST_KUBECONFIG``.

:func:`choose_backends` decides which ones a test session runs on (see its docstring); the
integration tests run once per chosen backend. Every backend hands out the same surface
(:class:`ClusterHandle`): a kubeconfig path, the server URL and a client factory, so the
fixtures and the tests do not care which one runs. Only the embedded backend exposes ``server``
(fault injection, storage access); only the control plane exposes ``controlplane`` (restarting
kube-apiserver, ServiceAccount tokens, the matching kubectl).
"""

from __future__ import annotations

import importlib.util
import os
import socket
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import yaml

if TYPE_CHECKING:
    from llmscaler_runtime.kube import Client

ENV_KUBECONFIG = "LLMSCALER_TEST_KUBECONFIG"
ENV_BACKEND = "LLMSCALER_TEST_BACKEND"
#: ``1``: the real control plane must be usable; its absence fails the session instead of
#: skipping its tests (CI sets it where Go is installed, so a broken build cannot pass as skips).
ENV_REQUIRE_CONTROLPLANE = "LLMSCALER_REQUIRE_CONTROLPLANE"
EMBEDDED = "embedded"
CONTROLPLANE = "controlplane"
K3S = "k3s"
KUBECONFIG = "kubeconfig"
BACKENDS = (EMBEDDED, CONTROLPLANE, K3S, KUBECONFIG)


class BackendError(RuntimeError):
    """The requested backend cannot be used (missing kubeconfig, no Docker, ...)."""


@attrs.frozen
class BackendChoice:
    """Which backend a session will use and why (cheap to compute, nothing started yet)."""

    name: str
    reason: str
    kubeconfig: str | None = None
    #: Why this backend cannot start here (one line), or None when it can.
    unavailable: str | None = None

    def describe(self) -> str:
        if self.unavailable:
            return f"{self.name} (unavailable: {self.unavailable})"
        return f"{self.name} ({self.reason})"


def docker_reachable(timeout: float = 0.5) -> bool:
    """Whether a Docker daemon answers ``/_ping`` on ``DOCKER_HOST`` or the default socket."""
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        if host.startswith("unix://"):
            path = host[len("unix://") :]
            if not os.path.exists(path):
                return False
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(timeout)
            sock.connect(path)
        elif host.startswith("tcp://"):
            hostport = host[len("tcp://") :].rstrip("/")
            h, _, p = hostport.rpartition(":")
            sock = socket.create_connection((h or "127.0.0.1", int(p or 2375)), timeout=timeout)
        else:
            return False
        with sock:
            sock.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
            answer = sock.recv(64)
        return answer.startswith(b"HTTP/1.") and b" 200 " in answer
    except (OSError, ValueError):
        return False


def testcontainers_available() -> bool:
    try:
        return importlib.util.find_spec("testcontainers.k3s") is not None
    except ModuleNotFoundError:
        return False


def _controlplane_choice(reason: str, env: dict[str, str]) -> BackendChoice:
    """The control plane, marked unavailable (with the one-line reason) when binaries lack."""
    from llmscaler_runtime.envtest.controlplane.assets import (
        CORE,
        WORKLOADS,
        MissingBinaries,
        find_binaries,
    )

    unavailable: str | None = None
    if importlib.util.find_spec("cryptography") is None:
        unavailable = (
            "real control plane unavailable: the 'cryptography' package is not installed "
            "(pip install 'llmscaler[controlplane]')"
        )
    else:
        try:
            find_binaries(CORE + WORKLOADS, env)
        except MissingBinaries as exc:
            unavailable = str(exc)
    if unavailable and env.get(ENV_REQUIRE_CONTROLPLANE, "").strip() in ("1", "true", "yes"):
        raise BackendError(f"{ENV_REQUIRE_CONTROLPLANE} is set but the {unavailable}")
    return BackendChoice(CONTROLPLANE, reason, unavailable=unavailable)


def _primary(forced: str, env: dict[str, str]) -> BackendChoice:
    kubeconfig = env.get(ENV_KUBECONFIG, "").strip()
    if forced == KUBECONFIG or (not forced and kubeconfig):
        if not kubeconfig:
            raise BackendError(f"{ENV_BACKEND}=kubeconfig needs {ENV_KUBECONFIG}=<path>")
        if not os.path.isfile(kubeconfig):
            raise BackendError(f"{ENV_KUBECONFIG}={kubeconfig!r}: no such file")
        return BackendChoice(KUBECONFIG, f"real cluster from {ENV_KUBECONFIG}", kubeconfig)
    if forced == EMBEDDED:
        return BackendChoice(EMBEDDED, f"forced by {ENV_BACKEND}")
    if forced == CONTROLPLANE:
        return _controlplane_choice(f"forced by {ENV_BACKEND}", env)
    if forced == K3S or not forced:
        have_tc = testcontainers_available()
        have_docker = have_tc and docker_reachable()
        if have_tc and have_docker:
            return BackendChoice(K3S, "Docker daemon reachable, k3s via testcontainers")
        if forced == K3S:
            missing = "testcontainers is not installed" if not have_tc else "no Docker daemon"
            raise BackendError(f"{ENV_BACKEND}=k3s but {missing}")
    why = "no Docker daemon" if testcontainers_available() else "testcontainers not installed"
    return BackendChoice(EMBEDDED, f"no {ENV_KUBECONFIG}, {why}")


def choose_backends(environ: dict[str, str] | None = None) -> list[BackendChoice]:
    """Every backend a test session runs its cluster tests on, in order.

    * ``LLMSCALER_TEST_BACKEND=a,b`` (one or more of embedded, controlplane, k3s, kubeconfig):
      exactly those;
    * ``LLMSCALER_TEST_KUBECONFIG`` set: that cluster only (it must exist);
    * otherwise: k3s when a Docker daemon answers, else the embedded server; plus the real
      control plane. When its binaries are missing the control-plane tests skip with one line
      saying how to build them, unless ``LLMSCALER_REQUIRE_CONTROLPLANE=1`` (then this raises).

    Raises :class:`BackendError` for a bad forced choice.
    """
    env = dict(os.environ if environ is None else environ)
    forced = [b.strip().lower() for b in env.get(ENV_BACKEND, "").split(",") if b.strip()]
    for name in forced:
        if name not in BACKENDS:
            raise BackendError(f"{ENV_BACKEND}={name!r}: expected one of {', '.join(BACKENDS)}")
    if forced:
        return [_primary(name, env) for name in dict.fromkeys(forced)]
    primary = _primary("", env)
    if primary.name == KUBECONFIG:
        return [primary]
    return [primary, _controlplane_choice("real control plane built from Go modules", env)]


def choose_backend(environ: dict[str, str] | None = None) -> BackendChoice:
    """The first of :func:`choose_backends` (the backend a single-cluster caller should use)."""
    return choose_backends(environ)[0]


class ClusterHandle:
    """A running backend: what the fixtures hand to tests.

    For the embedded backend ``environment`` is the ``Environment`` and attribute access falls
    through to it (``handle.server.faults`` ...), so code written against the Environment keeps
    working.
    """

    def __init__(
        self,
        choice: BackendChoice,
        kubeconfig_path: str,
        url: str,
        *,
        environment: Any = None,
        controlplane: Any = None,
        container: Any = None,
        tmpdir: tempfile.TemporaryDirectory[str] | None = None,
    ) -> None:
        self.choice = choice
        self.backend = choice.name
        self.kubeconfig_path = kubeconfig_path
        self.url = url
        self.environment = environment
        self._controlplane = controlplane
        self._container = container
        self._tmpdir = tmpdir

    @property
    def embedded(self) -> bool:
        return self.backend == EMBEDDED

    @property
    def server(self) -> Any:
        if self.environment is None:
            raise BackendError(
                f"the {self.backend} backend has no embedded server (faults, storage); "
                "mark the test with @pytest.mark.envtest_embedded"
            )
        return self.environment.server

    @property
    def controlplane(self) -> Any:
        """The :class:`~llmscaler_runtime.envtest.controlplane.ControlPlane` (that backend only)."""
        if self._controlplane is None:
            raise BackendError(
                f"the {self.backend} backend is not the real control plane; "
                "mark the test with @pytest.mark.envtest_controlplane"
            )
        return self._controlplane

    def client(self) -> Client:
        from llmscaler_runtime.kube import Client

        return Client.from_kubeconfig(self.kubeconfig_path)

    def stop(self) -> None:
        try:
            if self.environment is not None:
                self.environment.stop()
            if self._controlplane is not None:
                self._controlplane.stop()
            if self._container is not None:
                self._container.stop()
        finally:
            if self._tmpdir is not None:
                self._tmpdir.cleanup()

    def __getattr__(self, name: str) -> Any:
        env = self.__dict__.get("environment")
        if env is None:
            raise AttributeError(name)
        return getattr(env, name)


def _server_url(kubeconfig_path: str) -> str:
    with open(kubeconfig_path, encoding="utf-8") as fh:
        cfg = yaml.safe_load(fh) or {}
    current = cfg.get("current-context")
    contexts = {c["name"]: c["context"] for c in cfg.get("contexts") or []}
    clusters = {c["name"]: c["cluster"] for c in cfg.get("clusters") or []}
    ctx = contexts.get(current) or (next(iter(contexts.values())) if contexts else {})
    cluster = clusters.get(ctx.get("cluster")) or (
        next(iter(clusters.values())) if clusters else {}
    )
    return str(cluster.get("server", ""))


def crd_files(paths: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """Expand CRD paths (files or directories of ``*.yaml``/``*.yml``/``*.json``) in order."""
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            out.extend(sorted(f for f in p.iterdir() if f.suffix in (".yaml", ".yml", ".json")))
        elif p.is_file():
            out.append(p)
        else:
            raise BackendError(f"CRD path {str(p)!r} does not exist")
    return out


def install_crds(
    client: Client, paths: Sequence[str | os.PathLike[str]], timeout: float = 60
) -> None:
    """Server-side apply each CRD and wait until it is Established (real-cluster backends)."""
    names: list[str] = []
    for f in crd_files(paths):
        with open(f, encoding="utf-8") as fh:
            for doc in yaml.safe_load_all(fh):
                if not doc or doc.get("kind") != "CustomResourceDefinition":
                    continue
                client.apply(doc, field_manager="llmscaler-envtest", force=True)
                names.append(doc["metadata"]["name"])
    deadline = time.monotonic() + timeout
    for name in names:
        while True:
            crd = client.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
            conds = (crd.get("status") or {}).get("conditions") or []
            if any(c.get("type") == "Established" and c.get("status") == "True" for c in conds):
                break
            if time.monotonic() > deadline:
                raise BackendError(f"CRD {name} not Established after {timeout:.0f}s")
            time.sleep(0.2)


def start_backend(
    choice: BackendChoice,
    *,
    crd_paths: Sequence[str] = (),
    pod_startup_seconds: float = 0.5,
    simulate_workloads: bool = True,
) -> ClusterHandle:
    """Start (or connect to) the chosen backend and install the CRDs on it."""
    if choice.unavailable:
        raise BackendError(choice.unavailable)
    if choice.name == CONTROLPLANE:
        from llmscaler_runtime.envtest.controlplane import ControlPlane

        cp = ControlPlane(
            [str(p) for p in crd_files(crd_paths)],
            workloads=simulate_workloads,
            pod_ready_seconds=pod_startup_seconds,
        )
        cp.start()
        return ClusterHandle(choice, cp.kubeconfig_path, cp.url, controlplane=cp)
    if choice.name == EMBEDDED:
        from llmscaler_runtime.envtest.environment import Environment

        env = Environment(
            [str(p) for p in crd_files(crd_paths)],
            simulate_workloads=simulate_workloads,
            pod_startup_seconds=pod_startup_seconds,
        )
        env.start()
        return ClusterHandle(choice, env.kubeconfig_path, env.url, environment=env)
    if choice.name == KUBECONFIG:
        assert choice.kubeconfig is not None
        handle = ClusterHandle(choice, choice.kubeconfig, _server_url(choice.kubeconfig))
    elif choice.name == K3S:
        from testcontainers.k3s import K3SContainer

        container = K3SContainer()
        container.start()
        tmp = tempfile.TemporaryDirectory(prefix="llmscaler-k3s-")
        path = os.path.join(tmp.name, "kubeconfig")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(container.config_yaml())
        handle = ClusterHandle(choice, path, _server_url(path), container=container, tmpdir=tmp)
    else:
        raise BackendError(f"unknown backend {choice.name!r}")
    if crd_paths:
        client = handle.client()
        try:
            install_crds(client, crd_paths)
        finally:
            client.close()
    return handle
