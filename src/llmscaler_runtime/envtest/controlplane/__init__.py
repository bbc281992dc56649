"""The real Kubernetes control plane for tests: etcd, kube-apiserver and an opt-in workload tier.

Built from Go modules by ``make controlplane`` (``hack/ensure-controlplane.sh``) at the
Kubernetes version pinned in ``hack/controlplane/kubernetes/go.mod``; binaries you already have
are used instead (see :mod:`.assets`). Where the embedded server (:mod:`llmscaler_runtime.envtest`)
is an emulator, this is the thing itself: the tests that run on both prove the emulator right.
"""

from .assets import CORE, WORKLOADS, Assets, MissingBinaries, find_binaries
from .cluster import ControlPlane, ControlPlaneError
from .stages import POD_READY_DELAY_ANNOTATION

__all__ = [
    "CORE",
    "POD_READY_DELAY_ANNOTATION",
    "WORKLOADS",
    "Assets",
    "ControlPlane",
    "ControlPlaneError",
    "MissingBinaries",
    "find_binaries",
]
