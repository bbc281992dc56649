"""Runs the real ``prometheus`` binary against local scrape targets, for integration tests and
the demo.

A fake query endpoint cannot prove that the operator's PromQL means what we think it means
(``avg_over_time`` windows, staleness when a pod disappears, ``* 100`` keeping the ``pod`` label);
the real engine can. Each instance gets its own free port, generated config and throwaway TSDB
directory, and ``honor_labels`` keeps the ``namespace``/``app``/``pod`` labels the exporter emits,
which is what a ServiceMonitor with ``podTargetLabels`` produces in a cluster.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import yaml

from llmscaler_runtime.testkit._http import Service

_DURATION = re.compile(r"^[0-9]+(ms|s|m|h)$")
DEFAULT_BINARY_CANDIDATES = ("/usr/bin/prometheus", "/usr/local/bin/prometheus")


class PrometheusError(RuntimeError):
    """The binary is missing, did not start, or a query failed."""


def find_prometheus_binary() -> str | None:
    """``$PROMETHEUS_BINARY``, then ``prometheus`` on PATH, then the usual install locations."""
    explicit = os.environ.get("PROMETHEUS_BINARY")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    found = shutil.which("prometheus")
    if found:
        return found
    for candidate in DEFAULT_BINARY_CANDIDATES:
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def free_port() -> int:
    """A port that was free a moment ago; callers retry if another process wins the race."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _split_target(target: str) -> tuple[str, str, str]:
    """Returns (scheme, host:port, metrics path) for ``host:port`` or a full URL."""
    if "://" not in target:
        if not re.fullmatch(r"[^/\s]+:[0-9]+", target):
            raise ValueError(f"scrape target must be host:port or a URL, got {target!r}")
        return "http", target, "/metrics"
    parts = urlsplit(target)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"scrape target URL must be http(s)://host:port/path, got {target!r}")
    return parts.scheme, parts.netloc, parts.path or "/metrics"


def build_config(
    scrape_targets: Sequence[str],
    scrape_interval: str,
    *,
    job_name: str = "testkit",
    target_labels: Mapping[str, Mapping[str, str]] | None = None,
) -> dict[str, Any]:
    """The Prometheus config: one job per (scheme, path), all targets static, labels honoured.

    ``target_labels`` maps a target (as given) to labels added to all of its series, the way
    Kubernetes service discovery adds ``namespace``/``pod`` to a pod's series in a cluster.
    """
    target_labels = dict(target_labels or {})
    unknown = set(target_labels) - set(scrape_targets)
    if unknown:
        raise ValueError(f"target_labels names targets that are not scraped: {sorted(unknown)}")
    if not _DURATION.match(scrape_interval):
        raise ValueError(f"scrape_interval must look like '1s' or '500ms', got {scrape_interval!r}")
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for target in scrape_targets:
        scheme, hostport, path = _split_target(target)
        static: dict[str, Any] = {"targets": [hostport]}
        if target_labels.get(target):
            static["labels"] = dict(target_labels[target])
        groups.setdefault((scheme, path), []).append(static)
    jobs = []
    for index, ((scheme, path), statics) in enumerate(sorted(groups.items())):
        jobs.append(
            {
                "job_name": job_name if index == 0 else f"{job_name}-{index}",
                "honor_labels": True,
                "scheme": scheme,
                "metrics_path": path,
                "scrape_interval": scrape_interval,
                "scrape_timeout": scrape_interval,
                "static_configs": statics,
            }
        )
    return {
        "global": {"scrape_interval": scrape_interval, "evaluation_interval": scrape_interval},
        "scrape_configs": jobs,
    }


class PrometheusServer(Service):
    """A private Prometheus on ``http://127.0.0.1:<port>`` scraping the given targets.

    Use as a context manager (the test kit's :class:`Service` lifecycle) or call
    :meth:`start` / :meth:`stop`. Targets can be changed while
    running with :meth:`set_targets` (the config is rewritten and reloaded over HTTP).
    """

    def __init__(
        self,
        scrape_targets: Sequence[str],
        scrape_interval: str = "1s",
        binary: str | None = None,
        *,
        target_labels: Mapping[str, Mapping[str, str]] | None = None,
        extra_args: Sequence[str] = (),
        startup_timeout: float = 30.0,
    ) -> None:
        self._targets = list(scrape_targets)
        self._interval = scrape_interval
        self._target_labels = dict(target_labels or {})
        # Validate early, before any process exists.
        build_config(self._targets, scrape_interval, target_labels=self._target_labels)
        self._binary = binary
        self._extra_args = list(extra_args)
        self._startup_timeout = startup_timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._port = 0
        self._http = httpx.Client(timeout=5.0)

    # -- properties -------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        """The base URL to put in ``spec.serverAddress``."""
        return f"http://127.0.0.1:{self._port}"

    @property
    def config_path(self) -> Path:
        if self._dir is None:
            raise PrometheusError("not started")
        return Path(self._dir.name) / "prometheus.yml"

    @property
    def log_path(self) -> Path:
        if self._dir is None:
            raise PrometheusError("not started")
        return Path(self._dir.name) / "prometheus.log"

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except (OSError, PrometheusError):
            return ""

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> None:
        if self._proc is not None:
            return
        if self._http.is_closed:
            self._http = httpx.Client(timeout=5.0)
        binary = self._binary or find_prometheus_binary()
        if binary is None:
            raise PrometheusError(
                "no prometheus binary found (set PROMETHEUS_BINARY, put it on PATH, or "
                "'apt-get install -y --no-install-recommends prometheus')"
            )
        self._dir = tempfile.TemporaryDirectory(prefix="llmscaler-prom-")
        self._write_config()
        last_error = ""
        for _attempt in range(3):  # the free port can be taken between probe and bind
            self._port = free_port()
            self._spawn(binary)
            try:
                self.wait_ready(self._startup_timeout)
                return
            except PrometheusError as exc:
                last_error = str(exc)
                self._kill()
                if "address already in use" not in last_error:
                    break
        self._cleanup_dir()
        raise PrometheusError(last_error)

    def _spawn(self, binary: str) -> None:
        assert self._dir is not None
        storage = Path(self._dir.name) / "data"
        args = [
            binary,
            f"--config.file={self.config_path}",
            f"--storage.tsdb.path={storage}",
            f"--web.listen-address=127.0.0.1:{self._port}",
            "--web.enable-lifecycle",
            "--storage.tsdb.retention.time=1h",
            "--log.level=warn",
            *self._extra_args,
        ]
        with self.log_path.open("ab") as log:
            self._proc = subprocess.Popen(
                args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )

    def _write_config(self) -> None:
        config = build_config(self._targets, self._interval, target_labels=self._target_labels)
        self.config_path.write_text(yaml.safe_dump(config, sort_keys=False))

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)

    def _cleanup_dir(self) -> None:
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None

    def stop(self) -> None:
        """Stops the process, removes its data and closes the HTTP client (restartable)."""
        self._kill()
        self._cleanup_dir()
        self._http.close()

    def close(self) -> None:
        self.stop()

    # -- readiness and queries --------------------------------------------------------------
    def wait_ready(self, timeout: float = 30.0) -> None:
        """Polls ``/-/ready`` until 200, failing fast if the process exits."""
        deadline = time.monotonic() + timeout
        while True:
            if self._proc is None or self._proc.poll() is not None:
                code = None if self._proc is None else self._proc.returncode
                raise PrometheusError(f"prometheus exited (code {code}):\n{self.log_tail()}")
            try:
                if self._http.get(f"{self.url}/-/ready").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() >= deadline:
                raise PrometheusError(f"prometheus not ready after {timeout}s:\n{self.log_tail()}")
            time.sleep(0.1)

    def set_targets(
        self,
        scrape_targets: Sequence[str],
        *,
        target_labels: Mapping[str, Mapping[str, str]] | None = None,
        timeout: float = 10.0,
    ) -> None:
        """Replaces the scrape targets (and their labels) and reloads the running server."""
        build_config(scrape_targets, self._interval, target_labels=target_labels)
        self._targets = list(scrape_targets)
        self._target_labels = dict(target_labels or {})
        if self._proc is None:
            return
        self._write_config()
        response = self._http.post(f"{self.url}/-/reload", timeout=timeout)
        if response.status_code != 200:
            raise PrometheusError(f"reload failed: {response.status_code} {response.text}")

    def wait_for_targets(self, timeout: float = 30.0) -> None:
        """Blocks until every configured target has been scraped successfully once.

        Prometheus hands targets to its scrapers through a discovery loop that is throttled to
        one update per 5 s, so the first scrape of a new (or reloaded) target takes a few
        seconds; tests that need data should wait on this (or on :meth:`wait_for_series`).
        """
        wanted = {_split_target(t)[1] for t in self._targets}
        deadline = time.monotonic() + timeout
        up: set[str] = set()
        while True:
            payload = self._http.get(f"{self.url}/api/v1/targets").json()
            up = {
                t["labels"].get("instance", "")
                for t in payload["data"]["activeTargets"]
                if t.get("health") == "up"
            }
            if wanted <= up:
                return
            if time.monotonic() >= deadline:
                raise PrometheusError(f"targets not up after {timeout}s: {sorted(wanted - up)}")
            time.sleep(0.2)

    def query(self, promql: str) -> dict[str, Any]:
        """Runs an instant query and returns the API's ``data`` object."""
        response = self._http.post(f"{self.url}/api/v1/query", data={"query": promql})
        try:
            payload = response.json()
        except ValueError as exc:
            raise PrometheusError(f"non-JSON reply ({response.status_code}) to {promql!r}") from exc
        if payload.get("status") != "success":
            raise PrometheusError(f"query {promql!r} failed: {payload.get('error', payload)}")
        data: dict[str, Any] = payload["data"]
        return data

    def query_vector(self, promql: str) -> list[tuple[dict[str, str], float]]:
        """An instant query as (labels, value) pairs; scalars come back with empty labels."""
        data = self.query(promql)
        if data["resultType"] == "scalar":
            return [({}, float(data["result"][1]))]
        if data["resultType"] != "vector":
            raise PrometheusError(f"{promql!r} returned a {data['resultType']}, not a vector")
        return [(dict(item["metric"]), float(item["value"][1])) for item in data["result"]]

    def wait_for_series(
        self,
        promql: str,
        *,
        timeout: float = 30.0,
        until: Callable[[list[tuple[dict[str, str], float]]], bool] | None = None,
    ) -> list[tuple[dict[str, str], float]]:
        """Polls a query until it returns something (and ``until`` holds), with a deadline."""
        deadline = time.monotonic() + timeout
        last: list[tuple[dict[str, str], float]] = []
        while True:
            last = self.query_vector(promql)
            if last and (until is None or until(last)):
                return last
            if time.monotonic() >= deadline:
                raise PrometheusError(
                    f"{promql!r} did not produce the expected series within {timeout}s; "
                    f"last result: {last}"
                )
            time.sleep(0.2)
