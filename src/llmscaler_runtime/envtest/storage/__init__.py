"""In-memory object storage with the semantics of kube-apiserver + etcd.

One global resourceVersion counter, a bounded watch history (410 Gone once a resume point falls
out of it), generation/uid/creationTimestamp bookkeeping, status/scale subresources, finalizers,
graceful pod deletion, namespace termination, CRD registration, server-side apply and managed
fields. The HTTP layer (``server``) and the in-process simulator/garbage collector share it.

The parts, each behind the one seam where its rules start and end:

- ``store``: objects, resourceVersions, the watch history; get, paged list, watch registration;
- ``watch``: the open watches and the listener dispatcher every commit fans out to;
- ``admission``: kind checks, pruning, defaulting and validation of one written object;
- ``writes``: create, update and the shared tail of every change (status/spec split, managed
  fields, generation);
- ``patching``: merge/strategic/JSON patches and server-side apply, on top of the pipeline;
- ``scale``: the autoscaling/v1 Scale projection and its writes;
- ``deletion``: finalizers, graceful pod deletion, namespace termination;
- ``crds``: CRD validation and status, and serving (or no longer serving) their resources;
- ``facade``: :class:`Storage`, which wires them together.
"""

from .common import fast_copy
from .facade import Storage
from .watch import Watcher

__all__ = ["Storage", "Watcher", "fast_copy"]
