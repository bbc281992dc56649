"""An embedded Kubernetes API server for tests, demos and users (envtest without binaries).

``Environment`` starts it on 127.0.0.1 and writes a kubeconfig; kubectl and the official client
talk to it over HTTP(S) as to a cluster. ``test/integration/conformance`` runs one set of checks
against it and against a real kube-apiserver (``envtest.controlplane``) and compares the answers
(results in its ``RESULTS.md``). Fidelity notes (what is deliberately simpler than
kube-apiserver):

* Strategic merge patch: maps, keyed lists of pods/deployments (containers, env, volumes, ports,
  volumeMounts, ...), ``$patch: delete|replace``, ``$setElementOrder``, and
  ``$deleteFromPrimitiveList``; ``$retainKeys`` is ignored. CRDs answer 415, as the real server.
* Server-side apply tracks leaves, list items (``k:``/``v:``), atomic lists and maps
  (selectors, object references) and, for Update operations, the ``.`` markers of maps and lists
  a write creates, against the typed zero object of a built-in kind as kube-apiserver does.
  Apply on ``/scale`` records an Apply entry (subresource ``scale``) that takes spec.replicas
  from every other manager; the no-op scale writes after which kube-apiserver keeps a duplicate
  entry are not reproduced.
* Unknown-field detection for built-in kinds covers the top level, ``metadata`` and workload or
  lease ``spec`` keys; CRDs are checked (and pruned) against their full structural schema.
* CRD validation ratcheting, conversion webhooks, ``x-kubernetes-embedded-resource`` and
  admission are not implemented; all CRD versions share one storage (no conversion).
* Aggregated discovery and ``/openapi/v2`` are not served (kubectl falls back to the legacy
  discovery and uses ``/openapi/v3``); RBAC objects are stored, never enforced.
* Protobuf request bodies are decoded only for what kubectl's typed commands send (create
  deployment/namespace/configmap/secret/serviceaccount, run); responses are always JSON.
* No namespace controller, service-account controller or root-CA publisher: a new namespace
  gets no ``default`` ServiceAccount and no ``kube-root-ca.crt`` ConfigMap.
* Terminating pods are removed by the simulated kubelet after their (shortened) grace period;
  tables of kinds other than workloads, pods, ConfigMaps, Secrets, Leases, namespaces and
  custom resources show Name and Age only.

Differences the conformance checks find and that are documented rather than fixed (each is the
check of that name in ``test/integration/conformance``):

* ``explain_deployment_replicas``: built-in kinds are described by an abridged OpenAPI schema
  (the fields controllers and tests use, shorter descriptions), not kube-apiserver's generated
  one.
* ``list_paging_bad_continue_token``: continue tokens are opaque and encoded differently, so a
  malformed one is refused (400) with another message.
* ``list_selector_errors``: label selectors are parsed by a small regular-expression parser: a
  syntax error is a 400 as on kube-apiserver, worded differently.
* ``event_v1_seen_as_core``: events.k8s.io/v1 and core/v1 Events are stored separately, not as
  one resource under two API versions (llmscaler writes core/v1 Events).
"""

from .environment import Environment
from .errors import StatusError
from .server import ApiServer
from .storage import Storage

__all__ = ["ApiServer", "Environment", "StatusError", "Storage"]
