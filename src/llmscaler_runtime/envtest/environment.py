"""``Environment``: start the embedded API server, load CRDs, write a kubeconfig.

The envtest of controller-runtime, without binaries: ``with Environment(crd_paths=[...]) as env``
gives a real HTTP endpoint that kubectl and the official client use like a cluster.
"""

from __future__ import annotations

import importlib
import os
import shutil
import ssl
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import kubernetes.client
import yaml

from .errors import StatusError
from .gc import GarbageCollector
from .server import ApiServer
from .simulator import WorkloadSimulator
from .storage import Storage

if TYPE_CHECKING:
    from llmscaler_runtime.kube import Client


def _crd_documents(paths: Sequence[str]) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for p in paths:
        path = Path(p)
        files = (
            sorted(path.glob("*.y*ml")) + sorted(path.glob("*.json")) if path.is_dir() else [path]
        )
        if not files:
            raise FileNotFoundError(f"no CRD files in {p}")
        for f in files:
            with f.open() as fh:
                for doc in yaml.safe_load_all(fh):
                    if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                        docs.append(doc)
    return docs


def _self_signed(directory: Path) -> tuple[Path, Path]:
    """Create a self-signed cert for 127.0.0.1/localhost (cryptography, else the openssl CLI)."""
    cert, key = directory / "tls.crt", directory / "tls.key"
    try:
        x509: Any = importlib.import_module("cryptography.x509")
        oid: Any = importlib.import_module("cryptography.x509.oid")
        hashes: Any = importlib.import_module("cryptography.hazmat.primitives.hashes")
        ser: Any = importlib.import_module("cryptography.hazmat.primitives.serialization")
        ec: Any = importlib.import_module("cryptography.hazmat.primitives.asymmetric.ec")
        import datetime as dt
        import ipaddress

        pkey = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(oid.NameOID.COMMON_NAME, "envtest")])
        now = dt.datetime.now(dt.UTC)
        certificate = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(pkey.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=2))
            .add_extension(
                x509.SubjectAlternativeName(
                    [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
                ),
                critical=False,
            )
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(pkey, hashes.SHA256())
        )
        key.write_bytes(
            pkey.private_bytes(ser.Encoding.PEM, ser.PrivateFormat.PKCS8, ser.NoEncryption())
        )
        cert.write_bytes(certificate.public_bytes(ser.Encoding.PEM))
        return cert, key
    except ImportError:
        pass
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError(
            "Environment(tls=True) needs the 'cryptography' package or the 'openssl' command to "
            "create a self-signed certificate; install one or use tls=False"
        )
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "2",
            "-subj",
            "/CN=envtest",
            "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


class Environment:
    """An embedded API server plus (optionally) the workload simulator and garbage collector."""

    def __init__(
        self,
        crd_paths: Sequence[str] = (),
        *,
        simulate_workloads: bool = False,
        pod_startup_seconds: float = 2.0,
        tls: bool = False,
        port: int = 0,
        watch_history: int = 10000,
    ) -> None:
        self.crd_paths = list(crd_paths)
        self.simulate_workloads = simulate_workloads
        self.pod_startup_seconds = pod_startup_seconds
        self.tls = tls
        self.port = port
        self.storage = Storage(watch_history=watch_history)
        self._server: ApiServer | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._components: list[Any] = []
        self._config: kubernetes.client.Configuration | None = None
        self.kubeconfig_path = ""
        self.ca_path: str | None = None

    @property
    def server(self) -> ApiServer:
        if self._server is None:
            raise RuntimeError("Environment is not started")
        return self._server

    @property
    def url(self) -> str:
        return self.server.url

    def start(self) -> kubernetes.client.Configuration:
        """Start serving; returns a client configuration pointing at the server."""
        if self._config is not None:
            return self._config
        self._tmp = tempfile.TemporaryDirectory(prefix="envtest-")
        tmpdir = Path(self._tmp.name)
        ctx: ssl.SSLContext | None = None
        if self.tls:
            cert, key = _self_signed(tmpdir)
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(str(cert), str(key))
            self.ca_path = str(cert)
        self._server = ApiServer(self.storage, port=self.port, ssl_context=ctx)
        self._server.start()
        for crd in _crd_documents(self.crd_paths):
            try:
                self.storage.create(crd)
            except StatusError as err:
                if err.code != 409:
                    self.stop()
                    raise
        self._write_kubeconfig(tmpdir / "kubeconfig")
        cfg = kubernetes.client.Configuration()
        cfg.host = self.url
        if self.ca_path:
            cfg.ssl_ca_cert = self.ca_path
            cfg.verify_ssl = True
        self._config = cfg
        self._start_components()
        return cfg

    def _start_components(self) -> None:
        if self.simulate_workloads:
            sim = WorkloadSimulator(self.storage, pod_startup_seconds=self.pod_startup_seconds)
            sim.start()
            self._components.append(sim)
        gc = GarbageCollector(self.storage)
        gc.start()
        self._components.append(gc)

    def _write_kubeconfig(self, path: Path) -> None:
        cluster: dict[str, Any] = {"server": self.url}
        if self.ca_path:
            cluster["certificate-authority"] = self.ca_path
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "envtest", "cluster": cluster}],
            "users": [{"name": "envtest", "user": {"token": "envtest"}}],
            "contexts": [
                {
                    "name": "envtest",
                    "context": {"cluster": "envtest", "user": "envtest", "namespace": "default"},
                }
            ],
            "current-context": "envtest",
        }
        path.write_text(yaml.safe_dump(doc))
        os.chmod(path, 0o600)
        self.kubeconfig_path = str(path)

    def client(self) -> Client:
        """A ``llmscaler_runtime.kube.Client`` for this server.

        Imported here, not at the top: the server itself does not depend on the runtime it tests.
        """
        from llmscaler_runtime.kube import Client

        return Client(self.start())

    def stop(self) -> None:
        for comp in reversed(self._components):
            try:
                comp.stop()
            except Exception:  # stopping must continue past a failing component
                import logging

                logging.getLogger(__name__).exception("stopping %r failed", comp)
        self._components.clear()
        if self._server is not None:
            self._server.stop()
            self._server = None
        self.storage.close()
        self._config = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def wait_ready(self, timeout: float = 5.0) -> None:
        """Block until /readyz answers (the server thread is up)."""
        import urllib.request

        deadline = time.monotonic() + timeout
        ctx = ssl.create_default_context(cafile=self.ca_path) if self.ca_path else None
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/readyz", timeout=1, context=ctx) as r:
                    if r.status == 200:
                        return
            except OSError:
                if time.monotonic() > deadline:
                    raise
            time.sleep(0.02)

    def __enter__(self) -> Environment:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
