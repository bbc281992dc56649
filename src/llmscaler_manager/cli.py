"""Command-line flags of the manager binary.

The flag names follow the kubebuilder scaffold (``--metrics-bind-address``,
``--health-probe-bind-address``, ``--leader-elect`` ...) so that manifests and muscle memory
written for Go operators carry over unchanged.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

import attrs

DEFAULT_LEADER_ELECTION_ID = "llmscaler.autoscaling.modelsphere.dev"


@attrs.frozen
class Options:
    """Everything ``main`` needs, parsed and validated."""

    kubeconfig: str | None
    metrics_bind_address: str
    health_probe_bind_address: str
    leader_elect: bool
    leader_election_id: str
    leader_election_namespace: str | None
    watch_namespace: str | None
    max_concurrent_reconciles: int
    log_level: str
    log_format: str
    graceful_shutdown_timeout: float
    metrics_ca_bundle: str | None
    metrics_insecure_skip_verify: bool
    metrics_timeout: float
    allowed_server_addresses: tuple[str, ...] = ()
    advisory: bool = False


def _bind_address(value: str) -> str:
    """Accept ``0`` (disabled), ``:PORT`` or ``HOST:PORT``; reject anything else early."""
    if value == "0":
        return value
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(
            f"invalid bind address {value!r}: want ':PORT', 'HOST:PORT' or '0' to disable"
        )
    del host
    return value


def _positive_int(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an integer") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def _positive_float(value: str) -> float:
    try:
        f = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
    if not f > 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, got {value}")
    return f


def _address_list(value: str) -> tuple[str, ...]:
    """A comma list for ``--allowed-server-addresses``, each entry checked at start-up."""
    from llmscaler_runtime.scaling.addresses import parse_address_policy

    try:
        return parse_address_policy(value).entries
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="llmscaler-manager",
        description="Autoscale LLM inference on KV-cache, queue depth or a decision server.",
    )
    p.add_argument(
        "--kubeconfig",
        default=None,
        help="Path to a kubeconfig. Default: $KUBECONFIG, then the in-cluster service account, "
        "then ~/.kube/config.",
    )
    p.add_argument(
        "--metrics-bind-address",
        type=_bind_address,
        default=":8080",
        help="Address the Prometheus /metrics endpoint binds to; '0' disables it. Default :8080.",
    )
    p.add_argument(
        "--health-probe-bind-address",
        type=_bind_address,
        default=":8081",
        help="Address the /healthz and /readyz probes bind to. Default :8081.",
    )
    p.add_argument(
        "--leader-elect",
        action="store_true",
        help="Elect a leader through a coordination.k8s.io Lease so that only one replica writes.",
    )
    p.add_argument(
        "--leader-election-id",
        default=DEFAULT_LEADER_ELECTION_ID,
        help="Name of the Lease used for leader election.",
    )
    p.add_argument(
        "--leader-election-namespace",
        default=None,
        help="Namespace of the Lease. Default: the pod's own namespace when in a cluster, "
        "else 'default'.",
    )
    p.add_argument(
        "--watch-namespace",
        default=None,
        help="Only watch LLMScalers in this namespace. Default: all namespaces.",
    )
    p.add_argument(
        "--max-concurrent-reconciles",
        type=_positive_int,
        default=4,
        help="Worker threads evaluating scalers in parallel. A slow metric source holds at "
        "most this many workers. Default 4.",
    )
    p.add_argument(
        "--log-level",
        choices=["debug", "info", "warning", "error"],
        default="info",
        help="Minimum log level. Default info.",
    )
    p.add_argument(
        "--log-format",
        choices=["json", "console"],
        default="json",
        help="json for log pipelines (default), console for humans.",
    )
    p.add_argument(
        "--graceful-shutdown-timeout",
        type=_positive_float,
        default=30.0,
        help="Seconds in-flight reconciles may take to finish after SIGTERM. Default 30.",
    )
    p.add_argument(
        "--metrics-ca-bundle",
        default=None,
        help="CA bundle (PEM) used to verify HTTPS metric sources and decision servers.",
    )
    p.add_argument(
        "--metrics-insecure-skip-verify",
        action="store_true",
        help="Do not verify TLS certificates of metric sources (testing only).",
    )
    p.add_argument(
        "--metrics-timeout",
        type=_positive_float,
        default=5.0,
        help="Total timeout in seconds of one metric or decision request. Default 5.",
    )
    p.add_argument(
        "--allowed-server-addresses",
        type=_address_list,
        default=None,
        help="Comma list restricting spec.serverAddress: schemes (https), CIDRs or IPs "
        "(10.0.0.0/8), host names (prometheus.monitoring.svc), *.suffix (*.svc.cluster.local), "
        "'*' (any host) and deny entries prefixed with '!' (!169.254.0.0/16). Host names are "
        "resolved and every address checked against the CIDRs. Empty (the default) allows "
        "every address.",
    )
    p.add_argument(
        "--advisory",
        action="store_true",
        help="Make every LLMScaler advisory: metrics, recommendations and pacing run and the "
        "status and Events say what would be written, but nothing is written to any target "
        "or pod. For trialling llmscaler beside an existing HPA or KEDA.",
    )
    return p


def parse_args(argv: Sequence[str] | None = None) -> Options:
    """Parse flags; argparse exits with status 2 and a clear message on a bad flag."""
    parser = build_parser()
    ns = parser.parse_args(argv)
    if ns.metrics_ca_bundle and not os.path.isfile(ns.metrics_ca_bundle):
        parser.error(f"--metrics-ca-bundle: no such file: {ns.metrics_ca_bundle}")
    if ns.kubeconfig and not os.path.isfile(ns.kubeconfig):
        parser.error(f"--kubeconfig: no such file: {ns.kubeconfig}")
    return Options(
        kubeconfig=ns.kubeconfig,
        metrics_bind_address=ns.metrics_bind_address,
        health_probe_bind_address=ns.health_probe_bind_address,
        leader_elect=ns.leader_elect,
        leader_election_id=ns.leader_election_id,
        leader_election_namespace=ns.leader_election_namespace,
        watch_namespace=ns.watch_namespace,
        max_concurrent_reconciles=ns.max_concurrent_reconciles,
        log_level=ns.log_level,
        log_format=ns.log_format,
        graceful_shutdown_timeout=ns.graceful_shutdown_timeout,
        metrics_ca_bundle=ns.metrics_ca_bundle,
        metrics_insecure_skip_verify=ns.metrics_insecure_skip_verify,
        metrics_timeout=ns.metrics_timeout,
        allowed_server_addresses=tuple(ns.allowed_server_addresses or ()),
        advisory=ns.advisory,
    )
