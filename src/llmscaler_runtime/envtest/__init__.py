"""An embedded Kubernetes API server for tests, demos and users (envtest without binaries).

``Environment`` starts it on 127.0.0.1 and writes a kubeconfig; kubectl and the official client
talk to it over HTTP(S) as to a cluster. Fidelity notes (what is deliberately simpler than
kube-apiserver):

* Strategic merge patch: maps, keyed lists of pods/deployments (containers, env, volumes, ports,
  volumeMounts, ...), ``$patch: delete|replace``, ``$setElementOrder``, and
  ``$deleteFromPrimitiveList``; ``$retainKeys`` is ignored. CRDs answer 415, as the real server.
* Server-side apply tracks leaves, list items (``k:``/``v:``) and atomic lists; ``.`` markers
  appear only for list items. Apply on ``/scale`` is treated as a merge patch (Update entry).
* Unknown-field detection for built-in kinds covers the top level, ``metadata`` and workload or
  lease ``spec`` keys; CRDs are checked (and pruned) against their full structural schema.
* CRD validation ratcheting, conversion webhooks, ``x-kubernetes-embedded-resource`` and
  admission are not implemented; all CRD versions share one storage (no conversion).
* ``events.k8s.io/v1`` Events are stored separately from ``core/v1`` Events.
* Aggregated discovery and ``/openapi/v2`` are not served (kubectl falls back to the legacy
  discovery and uses ``/openapi/v3``); RBAC objects are stored, never enforced.
* A list ``continue`` token resumes by key on the current state, not on a snapshot.
* Protobuf request bodies are decoded only for what kubectl's typed commands send (create
  deployment/namespace/configmap/secret/serviceaccount, run); responses are always JSON.
"""

from .environment import Environment
from .errors import StatusError
from .server import ApiServer
from .storage import Storage

__all__ = ["ApiServer", "Environment", "StatusError", "Storage"]
