"""``python -m llmscaler_runtime.envtest serve``: an API server for humans and scripts.

``--backend embedded`` (the default) is the project's own server; ``--backend controlplane`` is
the real etcd + kube-apiserver (and, with ``--simulate-workloads``, kube-controller-manager,
kube-scheduler and kwok) built by ``make controlplane``. Without those binaries it exits 1 with
one line saying how to build them. Prints the kubeconfig path (and an ``export KUBECONFIG=...``
line) once the server answers, then runs until SIGTERM or SIGINT and exits 0. With
``--kubeconfig-out`` the kubeconfig is also written atomically to that path, so a script can poll
for the file to know the server is ready; the file is removed again on shutdown because it would
point at a dead server.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Protocol


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port must be in 0..65535, got {value}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if value < 0 or value != value:
        raise argparse.ArgumentTypeError(f"seconds must be >= 0, got {text}")
    return value


def _existing_path(text: str) -> str:
    if not Path(text).exists():
        raise argparse.ArgumentTypeError(f"no such file or directory: {text!r}")
    return text


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m llmscaler_runtime.envtest",
        description="Embedded Kubernetes API server for tests, demos and development.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve = sub.add_parser("serve", help="run the API server until SIGTERM/SIGINT")
    serve.add_argument(
        "--backend",
        choices=("embedded", "controlplane"),
        default="embedded",
        help="embedded: the project's own server (default); controlplane: the real "
        "kube-apiserver and etcd built from Go modules (make controlplane)",
    )
    serve.add_argument("--port", type=_port, default=0, help="TCP port on 127.0.0.1 (0: random)")
    serve.add_argument("--kubeconfig-out", metavar="PATH", help="also write the kubeconfig here")
    serve.add_argument(
        "--crd",
        action="append",
        default=[],
        type=_existing_path,
        metavar="PATH",
        help="CRD file or directory to install (repeatable)",
    )
    serve.add_argument(
        "--simulate-workloads",
        action="store_true",
        help="run Deployments/ReplicaSets/StatefulSets: create pods and make them Ready "
        "(controlplane: kube-controller-manager, kube-scheduler and kwok with fake nodes)",
    )
    serve.add_argument(
        "--pod-startup-seconds",
        type=_seconds,
        default=2.0,
        metavar="S",
        help="simulated pod cold start before Ready (default 2.0)",
    )
    serve.add_argument(
        "--tls",
        action="store_true",
        help="serve HTTPS with a self-signed cert (the controlplane backend always does)",
    )
    return parser


def _write_atomically(path: str, text: str) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".kubeconfig-", dir=str(target.parent))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class _Server(Protocol):
    """What serve needs of either backend."""

    @property
    def kubeconfig_path(self) -> str: ...

    @property
    def url(self) -> str: ...

    def stop(self) -> None: ...


def _start(args: argparse.Namespace) -> _Server:
    if args.backend == "controlplane":
        from llmscaler_runtime.envtest.controlplane import ControlPlane

        return ControlPlane(
            args.crd,
            workloads=args.simulate_workloads,
            pod_ready_seconds=args.pod_startup_seconds,
            port=args.port,
        ).start()
    from llmscaler_runtime.envtest.environment import Environment

    env = Environment(
        args.crd,
        simulate_workloads=args.simulate_workloads,
        pod_startup_seconds=args.pod_startup_seconds,
        tls=args.tls,
        port=args.port,
    )
    try:
        env.start()
        env.wait_ready()
    except BaseException:
        env.stop()
        raise
    return env


def serve(args: argparse.Namespace) -> int:
    from llmscaler_runtime.envtest.controlplane import ControlPlaneError, MissingBinaries

    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    out_path: str | None = None
    server: _Server | None = None
    try:
        try:
            server = _start(args)
        except (MissingBinaries, ControlPlaneError) as exc:
            print(f"envtest: {exc}", file=sys.stderr)
            return 1
        kubeconfig = server.kubeconfig_path
        if args.kubeconfig_out:
            _write_atomically(args.kubeconfig_out, Path(kubeconfig).read_text(encoding="utf-8"))
            out_path = kubeconfig = os.path.abspath(args.kubeconfig_out)
        workloads = "on" if args.simulate_workloads else "off"
        print(f"envtest API server ({args.backend}) ready at {server.url} (workloads {workloads})")
        print(f"kubeconfig: {kubeconfig}")
        print(f"export KUBECONFIG={kubeconfig}", flush=True)
        while not stop.wait(0.5):
            pass
        print("envtest: shutting down", flush=True)
    finally:
        try:
            if server is not None:
                server.stop()
        finally:
            if out_path is not None:
                Path(out_path).unlink(missing_ok=True)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "serve":
        return serve(args)
    return 2  # argparse rejects unknown commands before this point


if __name__ == "__main__":
    sys.exit(main())
