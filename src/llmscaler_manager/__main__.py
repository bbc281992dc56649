"""``llmscaler-manager`` (or ``python -m llmscaler_manager``): flags -> Manager -> run."""

from __future__ import annotations

import os
import socket
import sys
import uuid
from collections.abc import Sequence

import structlog

from llmscaler_manager.cli import Options, parse_args


def _lease_namespace(opts: Options) -> str:
    """The Lease lives next to the manager: its own namespace in a cluster, else 'default'."""
    if opts.leader_election_namespace:
        return opts.leader_election_namespace
    from llmscaler_runtime.kube import in_cluster_namespace  # local, like run()'s imports

    return in_cluster_namespace() or "default"


def run(opts: Options) -> int:
    """Build the manager from options and run it until a signal or a lost lease."""
    # Imports are local so that `--help` and flag errors answer instantly.
    from llmscaler_runtime.kube import Client
    from llmscaler_runtime.log import configure_logging
    from llmscaler_runtime.manager import LeaderElectionConfig, Manager
    from llmscaler_runtime.scaling import HttpOptions, setup
    from llmscaler_runtime.scaling.addresses import AddressPolicy

    configure_logging(opts.log_level, "console" if opts.log_format == "console" else "json")
    log = structlog.get_logger("llmscaler_manager")
    try:
        client = Client.from_kubeconfig(opts.kubeconfig)
    except Exception as exc:  # config errors are user errors: say what is wrong and stop
        log.error("cannot load Kubernetes client configuration", error=str(exc))
        return 1

    identity = f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"
    leader_election = LeaderElectionConfig(
        enabled=opts.leader_elect,
        lease_name=opts.leader_election_id,
        lease_namespace=_lease_namespace(opts),
        identity=identity,
    )
    manager = Manager(
        client,
        namespace=opts.watch_namespace,
        metrics_bind_address=opts.metrics_bind_address,
        health_probe_bind_address=opts.health_probe_bind_address,
        leader_election=leader_election,
        graceful_shutdown_timeout=opts.graceful_shutdown_timeout,
    )
    http_options = HttpOptions(
        ca_bundle=opts.metrics_ca_bundle,
        insecure_skip_verify=opts.metrics_insecure_skip_verify,
        timeout=opts.metrics_timeout,
    )
    setup(
        manager,
        max_concurrent_reconciles=opts.max_concurrent_reconciles,
        http_options=http_options,
        address_policy=AddressPolicy(opts.allowed_server_addresses, clock=manager.clock),
        advisory=opts.advisory,
    )
    log.info(
        "starting manager",
        identity=identity,
        leader_elect=opts.leader_elect,
        watch_namespace=opts.watch_namespace or "<all>",
        max_concurrent_reconciles=opts.max_concurrent_reconciles,
        allowed_server_addresses=",".join(opts.allowed_server_addresses) or "<all>",
        advisory=opts.advisory,
        pid=os.getpid(),
    )
    return manager.run()


def main(argv: Sequence[str] | None = None) -> int:
    return run(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
