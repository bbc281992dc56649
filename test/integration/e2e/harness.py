"""Helpers for end-to-end tests: run the real manager binary and poll with deadlines."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Self, TypeVar

import httpx

T = TypeVar("T")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(
    fn: Callable[[], T | None],
    *,
    timeout: float,
    interval: float = 0.2,
    what: str = "condition",
    diagnostics: Callable[[], str] | None = None,
) -> T:
    """Poll ``fn`` until it returns something truthy; at the deadline fail naming ``what``."""
    deadline = time.monotonic() + timeout
    last_exc: Exception | None = None
    while True:
        try:
            value = fn()
            if value:
                return value
        except AssertionError as exc:  # assertion-style predicates: keep the last message
            last_exc = exc
        if time.monotonic() >= deadline:
            extra = f"\n{diagnostics()}" if diagnostics else ""
            detail = f" (last: {last_exc})" if last_exc else ""
            raise AssertionError(f"timed out after {timeout}s waiting for {what}{detail}{extra}")
        time.sleep(interval)


class PeriodicSampler:
    """Calls :meth:`sample` every ``interval`` seconds in a thread, from ``with`` entry to exit.

    For tests that must know what the cluster showed *while* something happened (a rollout, a
    fault), not only before and after. A failing sample (a transient API error) is skipped.
    """

    interval = 0.2

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name=type(self).__name__)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.sample()
            except Exception:  # a transient API error: the next sample will do
                continue

    def sample(self) -> None:
        raise NotImplementedError


class ManagerProcess:
    """The real ``llmscaler-manager`` in a subprocess, as a cluster would run it."""

    def __init__(
        self, kubeconfig: str, *extra_args: str, env: dict[str, str] | None = None
    ) -> None:
        self.metrics_port = free_port()
        self.health_port = free_port()
        self.kubeconfig = kubeconfig
        self.extra_args: Sequence[str] = extra_args
        self._log = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed in stop()
            prefix="llmscaler-manager-", suffix=".log", delete=False
        )
        self.log_path = Path(self._log.name)
        self.env = {**os.environ, **(env or {})}
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> ManagerProcess:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "llmscaler_manager",
                "--kubeconfig",
                self.kubeconfig,
                "--metrics-bind-address",
                f"127.0.0.1:{self.metrics_port}",
                "--health-probe-bind-address",
                f"127.0.0.1:{self.health_port}",
                "--log-format",
                "json",
                "--log-level",
                "debug",
                *self.extra_args,
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=self.env,
        )
        return self

    def logs(self, tail: int = 60) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "<no log>"
        return "\n".join(lines[-tail:])

    def wait_ready(self, timeout: float = 30.0) -> None:
        def ready() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"manager exited early with {self.proc.returncode}:\n{self.logs()}"
                )
            try:
                r = httpx.get(f"http://127.0.0.1:{self.health_port}/readyz", timeout=1.0)
            except httpx.HTTPError:
                return False
            return r.status_code == 200

        wait_for(ready, timeout=timeout, what="manager /readyz", diagnostics=self.logs)

    def metrics(self) -> str:
        return httpx.get(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=2.0).text

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 40.0) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._log.close()
        return int(self.proc.returncode)


@contextlib.contextmanager
def running_manager(kubeconfig: str, *args: str) -> Iterator[ManagerProcess]:
    """A started, ready manager for a fixture; stopped at the end, where it must exit 0."""
    proc = ManagerProcess(kubeconfig, *args).start()
    try:
        proc.wait_ready(timeout=60)
        yield proc
    finally:
        code = proc.stop()
        assert code == 0, f"manager did not exit cleanly on SIGTERM ({code}):\n{proc.logs()}"
