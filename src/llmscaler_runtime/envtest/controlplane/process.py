"""One control-plane binary running as a child process, with its log in a file.

Children are started in their own process group and asked (``PR_SET_PDEATHSIG``) to die with
the Python process that started them, so a test run killed with SIGKILL leaves no etcd or
kube-apiserver behind; :meth:`Component.stop` sends SIGTERM, waits, then SIGKILLs the group.
Linux ties that signal to the *thread* that started the child, so start components from a
thread that lives as long as they should (the main thread, as pytest fixtures and the CLI do).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path

__all__ = ["Component", "ComponentExited"]

_PR_SET_PDEATHSIG = 1


class ComponentExited(RuntimeError):
    """A component exited while it was expected to run; the message carries its log's tail."""


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass  # not Linux: the process group and stop() still clean up


class Component:
    """A named child process: ``start`` / ``stop`` / ``restart``, ``logs`` for diagnostics."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log_path: Path,
        *,
        env: dict[str, str] | None = None,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        if self.running():
            return
        self.starts += 1
        with self.log_path.open("ab") as log:
            log.write(f"--- start {self.starts}: {' '.join(self.argv)}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
                start_new_session=True,
                preexec_fn=_die_with_parent,  # only a prctl call: safe between fork and exec
            )

    def check_running(self) -> None:
        """Raise :class:`ComponentExited` with the log tail if the process has exited."""
        if self.proc is not None and self.proc.poll() is not None:
            raise ComponentExited(
                f"{self.name} exited with code {self.proc.returncode}; last log lines:\n"
                f"{self.logs()}"
            )

    def stop(self, *, timeout: float = 15.0, sig: int = signal.SIGTERM) -> int | None:
        """Stop the process (and its group); returns its exit code, None if never started."""
        proc = self.proc
        if proc is None:
            return None
        if proc.poll() is None:
            self._signal_group(proc, sig)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self._signal_group(proc, signal.SIGKILL)
                proc.wait(timeout=10)
        # Anything the binary forked in its group goes too.
        self._signal_group(proc, signal.SIGKILL)
        return proc.returncode

    def kill(self) -> None:
        """SIGKILL, as a crash or an OOM kill would: no graceful shutdown."""
        self.stop(sig=signal.SIGKILL, timeout=10)

    def pause(self) -> None:
        """SIGSTOP: the process stays but answers nothing (a hung component)."""
        if self.proc is not None and self.proc.poll() is None:
            self._signal_group(self.proc, signal.SIGSTOP)

    def resume(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self._signal_group(self.proc, signal.SIGCONT)

    def restart(self, *, graceful: bool = True) -> None:
        if graceful:
            self.stop()
        else:
            self.kill()
        self.start()

    @staticmethod
    def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def logs(self, tail: int = 40) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "<no log>"
        return "\n".join(lines[-tail:])
