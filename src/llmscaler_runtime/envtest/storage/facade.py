"""``Storage``: the one object the HTTP layer, the simulator and the garbage collector hold.

It owns nothing itself: it builds the parts (versioned store and fan-out, CRD registry,
deletion, write pipeline, patcher, scale subresource), passes each the collaborators it needs,
and names their verbs. Composition rather than mixins, so that every part's dependencies are
its constructor's arguments and no part can reach into another's state.

Two API styles meet here. The in-process contract (``get``, ``list``, ``create``, ``update``,
``patch_merge``, ``delete``) names a kind by apiVersion and kind, as the simulator and the
garbage collector do (``simulator.util.StorageLike``); the ``*_rt`` verbs take a resolved
``ResourceType`` plus the HTTP request's options, as the server routes them.
"""

from __future__ import annotations

from ..errors import bad_request
from ..registry import Registry, ResourceType
from .common import DEFAULT_MANAGER, Obj
from .crds import CrdRegistry
from .deletion import Deletion
from .patching import Patcher
from .scale import ScaleSubresource
from .store import VersionedStore
from .writes import WritePipeline

_List = list


class Storage:
    """Thread-safe object store; every method returns private copies of objects."""

    def __init__(self, watch_history: int = 10000) -> None:
        self.registry = Registry()
        store = VersionedStore(watch_history)
        crds = CrdRegistry(store, registry=self.registry)
        deletion = Deletion(store, self.registry, crds)
        writes = WritePipeline(store, self.registry, crds, deletion)
        patcher = Patcher(store, writes)
        scale = ScaleSubresource(store, writes)
        self._store = store
        #: Called after every change of the served CRD resources (discovery caches listen).
        self.crd_listeners = crds.listeners
        # The verbs of the parts, under the names the server and the tests know.
        self.get_rt = store.get_rt
        self.list_rt = store.list_rt
        self.watch_rt = store.watch_rt
        self.bookmark_rv = store.bookmark_rv
        self.stop_watch = store.fanout.stop
        self.drop_watches = store.fanout.drop
        self.add_listener = store.fanout.add_listener
        self.create_rt = writes.create
        self.update_rt = writes.update
        self.patch_rt = patcher.patch
        self.delete_rt = deletion.delete
        self.get_scale = scale.get
        self.update_scale = scale.update
        self.apply_scale = scale.apply
        for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
            self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        store.mark_start()

    @property
    def resource_version(self) -> int:
        return self._store.resource_version

    @property
    def watcher_count(self) -> int:
        return self._store.fanout.count

    def close(self) -> None:
        """Stop the listener dispatcher and end every open watch."""
        self._store.fanout.close()

    # ---- public in-process API (contract) -------------------------------------------------

    def get(self, api_version: str, kind: str, namespace: str | None, name: str) -> Obj:
        rt = self.registry.by_kind(api_version, kind)
        return self.get_rt(rt, namespace, name, api_version.rpartition("/")[2])

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> tuple[_List[Obj], str]:
        rt = self.registry.by_kind(api_version, kind)
        result = self.list_rt(rt, namespace, label_selector=label_selector)
        return result["items"], result["metadata"]["resourceVersion"]

    def create(self, obj: Obj, *, field_manager: str = DEFAULT_MANAGER) -> Obj:
        rt = self._rt_of(obj)
        ns = obj.get("metadata", {}).get("namespace") if rt.namespaced else None
        if rt.namespaced and not ns:
            ns = "default"
        return self.create_rt(rt, ns, obj, manager=field_manager)[0]

    def update(
        self, obj: Obj, *, subresource: str | None = None, field_manager: str = DEFAULT_MANAGER
    ) -> Obj:
        rt = self._rt_of(obj)
        meta = obj.get("metadata", {})
        ns = meta.get("namespace") if rt.namespaced else None
        return self.update_rt(
            rt, ns, meta.get("name", ""), obj, subresource=subresource, manager=field_manager
        )[0]

    def patch_merge(
        self,
        api_version: str,
        kind: str,
        namespace: str | None,
        name: str,
        patch_body: Obj,
        *,
        subresource: str | None = None,
        field_manager: str = DEFAULT_MANAGER,
    ) -> Obj:
        rt = self.registry.by_kind(api_version, kind)
        return self.patch_rt(
            rt, namespace, name, "merge", patch_body, subresource=subresource, manager=field_manager
        )[0]

    def delete(
        self,
        api_version: str,
        kind: str,
        namespace: str | None,
        name: str,
        *,
        grace_period_seconds: int | None = None,
        propagation_policy: str | None = None,
    ) -> Obj | None:
        rt = self.registry.by_kind(api_version, kind)
        return self.delete_rt(
            rt,
            namespace,
            name,
            grace_period_seconds=grace_period_seconds,
            propagation_policy=propagation_policy,
        )

    def _rt_of(self, obj: Obj) -> ResourceType:
        api_version = obj.get("apiVersion")
        kind = obj.get("kind")
        if not api_version or not kind:
            raise bad_request("Object 'Kind' is missing in the object")
        return self.registry.by_kind(str(api_version), str(kind))


__all__ = ["Storage"]
