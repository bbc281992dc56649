"""Where the client's connection settings come from.

The order matches what Kubernetes users expect from controllers: an explicit ``--kubeconfig``
wins, then ``$KUBECONFIG`` (which may list several files), then the pod's service account when
running in a cluster, and finally ``~/.kube/config`` for a developer's laptop. The official
``kubernetes`` package does the parsing, auth plugins and token refresh.
"""

from __future__ import annotations

import os

import kubernetes.client
import kubernetes.config
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.incluster_config import InClusterConfigLoader

__all__ = ["ConfigError", "in_cluster_namespace", "load_config"]

SERVICE_HOST_ENV = "KUBERNETES_SERVICE_HOST"
SERVICE_PORT_ENV = "KUBERNETES_SERVICE_PORT"
SERVICE_TOKEN_FILENAME = "/var/run/secrets/kubernetes.io/serviceaccount/token"
SERVICE_CERT_FILENAME = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
#: Where a pod finds its own namespace (mounted with the service account token).
SERVICE_NAMESPACE_FILENAME = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
DEFAULT_KUBECONFIG = "~/.kube/config"


class ConfigError(RuntimeError):
    """No usable cluster configuration was found, or the one found is broken."""


def _in_cluster_available() -> bool:
    return bool(os.environ.get(SERVICE_HOST_ENV)) and os.path.isfile(SERVICE_TOKEN_FILENAME)


def in_cluster_namespace(path: str | None = None) -> str | None:
    """The namespace this pod runs in, or None outside a cluster (file missing or empty).

    Read from the service account mount (``path`` defaults to it), as client-go does. What to do
    without one differs by caller (the Manager refuses to guess a Lease namespace, the binary
    falls back to ``default``), so this only reads and leaves the decision to them.
    """
    try:
        with open(path or SERVICE_NAMESPACE_FILENAME, encoding="utf-8") as f:
            namespace = f.read().strip()
    except OSError:
        return None
    return namespace or None


def _from_kubeconfig(path: str, context: str | None) -> kubernetes.client.Configuration:
    cfg = kubernetes.client.Configuration()
    try:
        kubernetes.config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=path, context=context, client_configuration=cfg, persist_config=False
        )
    except (ConfigException, OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"cannot load kubeconfig {path!r}: {exc}") from exc
    return cfg


def load_config(
    kubeconfig: str | None = None, context: str | None = None
) -> kubernetes.client.Configuration:
    """Resolve a client Configuration: explicit path > $KUBECONFIG > in-cluster > ~/.kube/config.

    Raises ConfigError naming every place that was tried when none works.
    """
    if kubeconfig:
        return _from_kubeconfig(kubeconfig, context)
    env_path = os.environ.get("KUBECONFIG")
    if env_path:
        return _from_kubeconfig(env_path, context)
    if _in_cluster_available():
        cfg = kubernetes.client.Configuration()
        try:
            InClusterConfigLoader(  # type: ignore[no-untyped-call]
                token_filename=SERVICE_TOKEN_FILENAME,
                cert_filename=SERVICE_CERT_FILENAME,
                try_refresh_token=True,
                environ=os.environ,
            ).load_and_set(cfg)
        except ConfigException as exc:
            raise ConfigError(f"in-cluster configuration is broken: {exc}") from exc
        return cfg
    default = os.path.expanduser(DEFAULT_KUBECONFIG)
    if os.path.isfile(default):
        return _from_kubeconfig(default, context)
    raise ConfigError(
        "no Kubernetes configuration found: no kubeconfig argument, $KUBECONFIG unset, "
        f"not in a cluster (${SERVICE_HOST_ENV} / {SERVICE_TOKEN_FILENAME}), no {default}"
    )
