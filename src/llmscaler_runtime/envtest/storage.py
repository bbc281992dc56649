"""In-memory object storage with the semantics of kube-apiserver + etcd.

One global resourceVersion counter, a bounded watch history (410 Gone once a resume point falls
out of it), generation/uid/creationTimestamp bookkeeping, status/scale subresources, finalizers,
graceful pod deletion, namespace termination, CRD registration, server-side apply and managed
fields. The HTTP layer (server.py) and the in-process simulator/garbage collector share it.
"""

from __future__ import annotations

import base64
import binascii
import json
import queue
import random
import string
import threading
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from . import defaults, managed, patch, schema
from .errors import (
    FieldError,
    StatusError,
    already_exists,
    bad_request,
    conflict,
    field_manager_required,
    invalid,
    not_found,
)
from .registry import Registry, ResourceType, ScaleSpec
from .selectors import label_selector_from_match, parse_field_selector, parse_label_selector

Obj = dict[str, Any]
Key = tuple[str, str]
Listener = Callable[[str, Obj], None]
_List = list

DEFAULT_MANAGER = "kube-controller-manager"
CRD_KEY = ("apiextensions.k8s.io", "customresourcedefinitions")
NS_KEY = ("", "namespaces")
PODS_KEY = ("", "pods")


def fast_copy(obj: Any) -> Any:
    """Copy JSON-like data (dict/list/scalars) faster than ``copy.deepcopy``."""
    # Not kube.deep_copy, on purpose: the server must not import the runtime it tests.
    if isinstance(obj, dict):
        return {k: fast_copy(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [fast_copy(v) for v in obj]
    return obj


def _now() -> str:
    # envtest's own on purpose (not kube.rfc3339): the server must not import the runtime it tests.
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _has_generation(rt: ResourceType) -> bool:
    """Kinds whose strategy maintains metadata.generation (workloads, pods, CRDs, custom
    resources)."""
    return rt.group == "apps" or rt.key in (CRD_KEY, PODS_KEY) or rt.crd_name is not None


def _bump_generation_on_delete(meta: Obj) -> None:
    """The first deletionTimestamp bumps a maintained generation (``markAsDeleting`` and
    graceful deletion in kube-apiserver): controllers see that something changed."""
    if not meta.get("deletionTimestamp") and int(meta.get("generation") or 0) > 0:
        meta["generation"] = int(meta["generation"]) + 1


def _parse_rv(value: Any, field: str = "resourceVersion") -> int:
    try:
        rv = int(str(value))
        if rv < 0:
            raise ValueError(value)
        return rv
    except ValueError:
        raise bad_request(
            f'invalid {field}: strconv.ParseUint: parsing "{value}": invalid syntax'
        ) from None


class Watcher:
    """A registered watch: filters events of one resource and queues them for one client."""

    def __init__(
        self,
        key: Key,
        namespace: str | None,
        label_pred: Callable[[Mapping[str, str]], bool],
        field_pred: Callable[[Mapping[str, Any]], bool],
    ) -> None:
        self.key = key
        self.namespace = namespace
        self.label_pred = label_pred
        self.field_pred = field_pred
        self.events: queue.SimpleQueue[tuple[str, Obj] | None] = queue.SimpleQueue()
        self.closed = False
        self.last_rv = 0

    def matches(self, obj: Obj | None) -> bool:
        if obj is None:
            return False
        meta = obj.get("metadata", {})
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return False
        return self.label_pred(meta.get("labels") or {}) and self.field_pred(obj)

    def offer(self, etype: str, obj: Obj, old: Obj | None) -> None:
        now_match = self.matches(obj)
        was_match = self.matches(old) if old is not None else now_match
        if etype == "MODIFIED":
            if now_match and not was_match:
                etype = "ADDED"
            elif was_match and not now_match:
                etype = "DELETED"
            elif not now_match:
                return
        elif not now_match:
            return
        self.events.put((etype, obj))

    def close(self) -> None:
        self.closed = True
        self.events.put(None)


class Storage:
    """Thread-safe object store; every method returns private copies of objects."""

    def __init__(self, watch_history: int = 10000) -> None:
        self.registry = Registry()
        self._lock = threading.RLock()
        self._rv = 0
        self._objects: dict[Key, dict[tuple[str, str], Obj]] = {}
        self._history: deque[tuple[int, Key, str, Obj, Obj | None]] = deque(maxlen=watch_history)
        self._floor = 0
        self._watchers: set[Watcher] = set()
        self._listeners: _List[Listener] = []
        self._dispatch: queue.SimpleQueue[tuple[str, Obj] | None] = queue.SimpleQueue()
        self._dispatcher = threading.Thread(
            target=self._dispatch_loop, name="envtest-storage-listeners", daemon=True
        )
        self._dispatcher.start()
        self.crd_listeners: _List[Callable[[], None]] = []
        for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
            self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        # Like kube-apiserver's watch caches, which start from a list when the server (or, for
        # a custom resource, its CRD) comes up: a watch cannot resume from before that point.
        self._start_rv = self._rv
        self._type_floor: dict[Key, int] = {}

    # ---- plumbing -------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        with self._lock:
            return self._rv

    def close(self) -> None:
        """Stop the listener dispatcher and end every open watch."""
        self._dispatch.put(None)
        with self._lock:
            for w in list(self._watchers):
                w.close()
            self._watchers.clear()

    def add_listener(self, cb: Listener) -> None:
        with self._lock:
            self._listeners.append(cb)

    def _dispatch_loop(self) -> None:
        while True:
            item = self._dispatch.get()
            if item is None:
                return
            etype, obj = item
            for cb in list(self._listeners):
                try:
                    cb(etype, fast_copy(obj))
                except Exception:  # a broken listener must not stop event delivery
                    import logging

                    logging.getLogger(__name__).exception("storage listener failed")

    def _bucket(self, rt: ResourceType) -> dict[tuple[str, str], Obj]:
        return self._objects.setdefault(rt.key, {})

    def _commit(self, rt: ResourceType, etype: str, obj: Obj, old: Obj | None) -> Obj:
        """Stamp the next resourceVersion, store, record history and fan out (lock held)."""
        self._rv += 1
        meta = obj.setdefault("metadata", {})
        meta["resourceVersion"] = str(self._rv)
        okey = (meta.get("namespace", "") if rt.namespaced else "", meta["name"])
        if etype == "DELETED":
            self._bucket(rt).pop(okey, None)
        else:
            self._bucket(rt)[okey] = obj
        if len(self._history) == self._history.maxlen and self._history:
            self._floor = self._history[0][0]
        self._history.append((self._rv, rt.key, etype, obj, old))
        for w in self._watchers:
            if w.key == rt.key and not w.closed:
                w.offer(etype, obj, old)
        if self._listeners:
            self._dispatch.put((etype, obj))
        return obj

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

    # ---- reads ----------------------------------------------------------------------------

    def _lookup(self, rt: ResourceType, namespace: str | None, name: str) -> Obj | None:
        return self._bucket(rt).get((namespace or "" if rt.namespaced else "", name))

    def _out(self, rt: ResourceType, obj: Obj, version: str | None) -> Obj:
        out = fast_copy(obj)
        if version and version != rt.preferred_version:
            out["apiVersion"] = rt.api_version(version)
        return out

    def get_rt(
        self, rt: ResourceType, namespace: str | None, name: str, version: str | None = None
    ) -> Obj:
        with self._lock:
            obj = self._lookup(rt, namespace, name)
            if obj is None:
                raise not_found(rt.group, rt.plural, name)
            return self._out(rt, obj, version)

    def list_rt(
        self,
        rt: ResourceType,
        namespace: str | None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        version: str | None = None,
        resource_version: str | None = None,
    ) -> Obj:
        lp = parse_label_selector(label_selector)
        fp = parse_field_selector(field_selector, rt.field_selectors)
        if resource_version not in (None, ""):
            _parse_rv(resource_version)
        start = ""
        snapshot: int | None = None
        if continue_token:
            try:
                token = json.loads(base64.urlsafe_b64decode(continue_token.encode()))
                start = str(token["start"])
                snapshot = int(token["rv"])
            except (ValueError, KeyError, TypeError, binascii.Error):
                raise bad_request(
                    "continue key is not valid: incorrect encoded start resourceVersion "
                    "(version meta.k8s.io/v1)"
                ) from None
        with self._lock:
            rv = self._rv if snapshot is None else snapshot
            items = []
            for (ns, name), obj in sorted(self._bucket_at(rt, rv).items()):
                if namespace is not None and rt.namespaced and ns != namespace:
                    continue
                if start and f"{ns}/{name}" <= start:
                    continue
                meta = obj.get("metadata", {})
                if lp(meta.get("labels") or {}) and fp(obj):
                    items.append((f"{ns}/{name}", obj))
            meta_out: Obj = {"resourceVersion": str(rv)}
            if limit and limit > 0 and len(items) > limit:
                remaining = len(items) - limit
                items = items[:limit]
                tok = {"rv": rv, "start": items[-1][0]}
                meta_out["continue"] = base64.urlsafe_b64encode(json.dumps(tok).encode()).decode()
                meta_out["remainingItemCount"] = remaining
            out_items = [self._out(rt, o, version) for _, o in items]
        return {
            "kind": f"{rt.kind}List",
            "apiVersion": rt.api_version(version),
            "metadata": meta_out,
            "items": out_items,
        }

    def _bucket_at(self, rt: ResourceType, rv: int) -> dict[tuple[str, str], Obj]:
        """The objects of ``rt`` as they were at ``rv`` (lock held): the current ones with the
        later history undone, so every page of a paged list shows one snapshot, as etcd does."""
        current = self._bucket(rt)
        if rv >= self._rv:
            return current
        if len(self._history) == self._history.maxlen and rv < self._history[0][0] - 1:
            raise StatusError(
                410,
                "Expired",
                "The provided continue parameter is too old to display a consistent list "
                "result. You can start a new list without the continue parameter.",
            )
        state = dict(current)
        for erv, key, etype, obj, old in reversed(self._history):
            if erv <= rv:
                break
            if key != rt.key:
                continue
            meta = obj.get("metadata", {})
            okey = (meta.get("namespace", "") if rt.namespaced else "", meta.get("name", ""))
            if etype == "ADDED":
                state.pop(okey, None)
            elif old is not None:
                state[okey] = old
        return state

    def watch_rt(
        self,
        rt: ResourceType,
        namespace: str | None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
    ) -> tuple[Watcher, _List[tuple[str, Obj]]]:
        """Register a watch; returns it plus the initial/replayed events to send first."""
        lp = parse_label_selector(label_selector)
        fp = parse_field_selector(field_selector, rt.field_selectors)
        w = Watcher(rt.key, namespace if rt.namespaced else None, lp, fp)
        initial: _List[tuple[str, Obj]] = []
        with self._lock:
            if resource_version in (None, "", "0"):
                for obj in sorted(
                    self._bucket(rt).values(), key=lambda o: int(o["metadata"]["resourceVersion"])
                ):
                    if w.matches(obj):
                        initial.append(("ADDED", obj))
            else:
                since = _parse_rv(resource_version)
                floor = max(self._floor, self._type_floor.get(rt.key, self._start_rv))
                if since < floor:
                    raise StatusError(
                        410,
                        "Expired",
                        f"too old resource version: {since} ({floor})",
                    )
                for rv, key, etype, obj, old in self._history:
                    if rv <= since or key != rt.key:
                        continue
                    probe = Watcher(rt.key, w.namespace, lp, fp)
                    probe.offer(etype, obj, old)
                    while not probe.events.empty():
                        ev = probe.events.get()
                        if ev is not None:
                            initial.append(ev)
            w.last_rv = self._rv
            self._watchers.add(w)
        return w, initial

    def bookmark_rv(self, w: Watcher) -> str | None:
        """A resourceVersion safe to bookmark: only when everything before it was queued."""
        with self._lock:
            if not w.events.empty():
                return None
            return str(self._rv)

    def stop_watch(self, w: Watcher) -> None:
        with self._lock:
            self._watchers.discard(w)
        w.closed = True

    def drop_watches(self, key: Key | None = None) -> int:
        with self._lock:
            victims = [w for w in self._watchers if key is None or w.key == key]
            for w in victims:
                w.close()
                self._watchers.discard(w)
        return len(victims)

    @property
    def watcher_count(self) -> int:
        with self._lock:
            return len(self._watchers)

    # ---- writes ---------------------------------------------------------------------------

    def _check_kind(self, rt: ResourceType, obj: Any) -> None:
        if not isinstance(obj, dict):
            raise bad_request("the object provided is not a JSON object")
        av = obj.get("apiVersion")
        kind = obj.get("kind")
        if kind is not None and kind != rt.kind:
            raise bad_request(
                f"the API version in the data ({av}) does not match the expected API version "
                f"({rt.api_version()})"
                if av and av != rt.api_version()
                else f'kind "{kind}" does not match the expected kind "{rt.kind}"'
            )
        if av is not None:
            group, _, version = str(av).rpartition("/")
            if group != rt.group or version not in rt.versions:
                raise bad_request(
                    f"the API version in the data ({av}) does not match the expected API "
                    f"version ({rt.api_version()})"
                )
        obj["apiVersion"] = rt.api_version()
        obj["kind"] = rt.kind

    def _prepare(
        self, rt: ResourceType, obj: Obj, old: Obj | None, field_validation: str
    ) -> _List[str]:
        """Defaults, pruning and validation; returns warnings, raises 400/422."""
        warnings: _List[str] = []
        s = rt.schema()
        strict = (
            f'{rt.kind} in version "{rt.preferred_version}" cannot be handled as a {rt.kind}: '
            "strict decoding error: "
        )
        if s is not None:
            pruned = schema.prune(s, obj)
            if pruned:
                unknown = [f'unknown field "{p}"' for p in pruned]
                if field_validation == "Strict":
                    raise bad_request(strict + ", ".join(unknown))
                if field_validation == "Warn":
                    warnings += unknown
            schema.prune_nulls(s, obj)
            schema.apply_defaults(s, obj)
        else:
            undecodable = defaults.decode_errors(rt, obj)
            if undecodable:
                raise bad_request(
                    f'{rt.kind} in version "{rt.preferred_version}" cannot be handled as a '
                    f"{rt.kind}: {undecodable}"
                )
            dropped = defaults.drop_unknown_builtin_fields(rt, obj)
            if dropped:
                unknown = [f'unknown field "{p}"' for p in dropped]
                if field_validation == "Strict":
                    raise bad_request(strict + ", ".join(unknown))
                if field_validation == "Warn":
                    warnings += unknown
            defaults.apply_builtin_defaults(rt, obj, creating=old is None)
        name = obj["metadata"].get("name", "")
        errs: _List[FieldError] = []
        if old is None:
            errs += defaults.validate_name(rt, name)
        if s is not None:
            errs += schema.validate(s, obj, old)
        else:
            errs += defaults.validate_builtin(rt, obj)
            if old is not None:
                errs += defaults.validate_builtin_update(rt, old, obj)
        if rt.key == CRD_KEY:
            errs += self._validate_crd(obj)
        if errs:
            # Events of both APIs are one internal (core) type, so their errors name "Event".
            group = "" if rt.key == ("events.k8s.io", "events") else rt.group
            raise invalid(group, rt.kind, rt.plural, name, errs)
        return warnings

    def create_rt(
        self,
        rt: ResourceType,
        namespace: str | None,
        obj: Obj,
        *,
        manager: str = DEFAULT_MANAGER,
        dry_run: bool = False,
        field_validation: str = "Strict",
        preset_managed: bool = False,
    ) -> tuple[Obj, _List[str]]:
        obj = fast_copy(obj)
        self._check_kind(rt, obj)
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise bad_request("metadata must be an object")
        if rt.namespaced:
            body_ns = meta.get("namespace")
            if body_ns and namespace and body_ns != namespace:
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent "
                    "on the request"
                )
            namespace = namespace or body_ns or "default"
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        if meta.get("resourceVersion"):
            raise bad_request("resourceVersion should not be set on objects to be created")
        if not meta.get("name"):
            if meta.get("generateName"):
                meta["name"] = meta["generateName"] + "".join(
                    random.choices(string.ascii_lowercase + string.digits, k=5)
                )
            else:
                raise invalid(
                    rt.group,
                    rt.kind,
                    rt.plural,
                    "",
                    [
                        FieldError(
                            "FieldValueRequired",
                            "metadata.name",
                            "name or generateName is required",
                            with_value=False,
                        )
                    ],
                )
        for k in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            meta.pop(k, None)
        if rt.has_status and rt.key != NS_KEY and rt.key != CRD_KEY:
            obj.pop("status", None)
        with self._lock:
            if rt.namespaced:
                ns_obj = self._lookup(
                    self.registry.by_kind("v1", "Namespace"), None, namespace or ""
                )
                if ns_obj is None:
                    raise not_found("", "namespaces", namespace or "")
                if ns_obj["metadata"].get("deletionTimestamp"):
                    raise StatusError(
                        403,
                        "Forbidden",
                        f'{rt.plural} "{meta["name"]}" is forbidden: unable to create new content '
                        f"in namespace {namespace} because it is being terminated",
                        {
                            "name": meta["name"],
                            "kind": rt.plural,
                            "causes": [
                                {
                                    "reason": "NamespaceTerminating",
                                    "message": f"namespace {namespace} is being terminated",
                                    "field": "metadata.namespace",
                                }
                            ],
                        },
                    )
            if self._lookup(rt, namespace, meta["name"]) is not None:
                raise already_exists(rt.group, rt.plural, meta["name"])
            warnings = self._prepare(rt, obj, None, field_validation)
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = _now()
            if _has_generation(rt):
                meta["generation"] = 1
            else:
                meta.pop("generation", None)
            if rt.key == CRD_KEY:
                obj["status"] = self._crd_status(obj)
            if not preset_managed:
                managed.track_update(rt, None, obj, manager, "", rt.api_version())
            if dry_run:
                meta["resourceVersion"] = ""
                return fast_copy(obj), warnings
            self._commit(rt, "ADDED", obj, None)
            if rt.key == CRD_KEY:
                self._register_crd(obj)
            return fast_copy(obj), warnings

    def update_rt(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        obj: Obj,
        *,
        subresource: str | None = None,
        manager: str = DEFAULT_MANAGER,
        dry_run: bool = False,
        field_validation: str = "Strict",
        explicit_managed: bool = False,
    ) -> tuple[Obj, _List[str]]:
        obj = fast_copy(obj)
        self._check_kind(rt, obj)
        meta = obj.get("metadata")
        if not isinstance(meta, dict):
            raise bad_request("metadata must be an object")
        if meta.get("name") and meta["name"] != name:
            raise bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL "
                f"({name})"
            )
        if rt.namespaced and meta.get("namespace") and namespace and meta["namespace"] != namespace:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on the "
                "request"
            )
        with self._lock:
            old = self._lookup(rt, namespace, name)
            if old is None:
                raise not_found(rt.group, rt.plural, name)
            rv = meta.get("resourceVersion")
            if rv not in (None, ""):
                _parse_rv(rv, "metadata.resourceVersion")
                if str(rv) != old["metadata"]["resourceVersion"]:
                    raise conflict(rt.group, rt.plural, name)
            return self._write(
                rt,
                old,
                obj,
                subresource=subresource or "",
                manager=manager,
                dry_run=dry_run,
                field_validation=field_validation,
                explicit_managed=explicit_managed,
            )

    def _write(
        self,
        rt: ResourceType,
        old: Obj,
        new: Obj,
        *,
        subresource: str,
        manager: str,
        dry_run: bool,
        field_validation: str,
        explicit_managed: bool = False,
    ) -> tuple[Obj, _List[str]]:
        """Turn a desired object into the stored one (lock held) and commit it."""
        old_meta = old["metadata"]
        if subresource == "status" and (rt.crd_name is not None or rt.key == CRD_KEY):
            # A custom resource's status endpoint writes status only.
            result = fast_copy(old)
            if "status" in new:
                result["status"] = new["status"]
            else:
                result.pop("status", None)
            new_meta = new.get("metadata") or {}
            if "managedFields" in new_meta:
                result["metadata"]["managedFields"] = new_meta["managedFields"]
        elif subresource == "status":
            # Built-in status strategies reset the spec (and a few metadata fields) but keep
            # the rest: the deployment controller writes its revision annotation here.
            result = {k: fast_copy(v) for k, v in old.items() if k not in ("status", "metadata")}
            result["metadata"] = fast_copy(new.get("metadata") or {})
            if "status" in new:
                result["status"] = new["status"]
            kept = {("apps", "deployments"): ("labels",), PODS_KEY: ("ownerReferences",)}
            for field in kept.get(rt.key, ()):
                if field in old_meta:
                    result["metadata"][field] = fast_copy(old_meta[field])
                else:
                    result["metadata"].pop(field, None)
        else:
            result = new
            if rt.has_status and rt.key != NS_KEY:
                if "status" in old:
                    result["status"] = fast_copy(old["status"])
                else:
                    result.pop("status", None)
            elif rt.key == NS_KEY:
                result["status"] = fast_copy(old.get("status", {}))
        meta = result.setdefault("metadata", {})
        for k in (
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "name",
            "namespace",
            "generation",
        ):
            if k in old_meta:
                meta[k] = old_meta[k]
            else:
                meta.pop(k, None)
        if "managedFields" not in meta or (
            not explicit_managed and meta.get("managedFields") == old_meta.get("managedFields")
        ):
            explicit = False
            if "managedFields" in old_meta:
                meta["managedFields"] = old_meta["managedFields"]
        else:
            explicit = True
        if old_meta.get("deletionTimestamp"):
            before = set(old_meta.get("finalizers") or [])
            added = [f for f in meta.get("finalizers") or [] if f not in before]
            if added:
                # Go's %#v of a []string; the metadata update validation runs twice in
                # kube-apiserver, so the cause is listed twice (the message once).
                go_list = "[]string{" + ", ".join(json.dumps(f) for f in added) + "}"
                err = FieldError(
                    "FieldValueForbidden",
                    "metadata.finalizers",
                    "no new finalizers can be added if the object is being deleted, "
                    f"found new finalizers {go_list}",
                    with_value=False,
                )
                raise invalid(rt.group, rt.kind, rt.plural, old_meta["name"], [err, err])
        warnings = self._prepare(rt, result, old, field_validation)
        if rt.key == CRD_KEY:
            result["status"] = self._crd_status(result)
        if self._same(old, result):
            return fast_copy(old), warnings
        if subresource != "status" and _has_generation(rt) and self._spec_changed(rt, old, result):
            meta["generation"] = int(old_meta.get("generation", 1)) + 1
        if not explicit:
            managed.track_update(rt, old, result, manager, subresource, rt.api_version())
        meta["resourceVersion"] = old_meta["resourceVersion"]
        if dry_run:
            return fast_copy(result), warnings
        if (
            meta.get("deletionTimestamp")
            and not meta.get("finalizers")
            and not self._graceful_pod(rt, result)
        ):
            self._commit(rt, "DELETED", result, old)
            self._after_delete(rt, result)
            return fast_copy(result), warnings
        self._commit(rt, "MODIFIED", result, old)
        if rt.key == CRD_KEY:
            self._register_crd(result)
        return fast_copy(result), warnings

    @staticmethod
    def _graceful_pod(rt: ResourceType, obj: Obj) -> bool:
        return rt.key == PODS_KEY and bool(obj["metadata"].get("deletionGracePeriodSeconds"))

    @staticmethod
    def _strip(obj: Obj) -> Obj:
        out = dict(obj)
        meta = dict(out.get("metadata", {}))
        meta.pop("resourceVersion", None)
        meta.pop("managedFields", None)
        out["metadata"] = meta
        return out

    def _same(self, old: Obj, new: Obj) -> bool:
        if self._strip(old) != self._strip(new):
            return False
        mf_old = old["metadata"].get("managedFields")
        mf_new = new["metadata"].get("managedFields")
        if mf_old == mf_new:
            return True

        def drop_time(mf: Any) -> Any:
            return [{k: v for k, v in e.items() if k != "time"} for e in mf or []]

        return bool(drop_time(mf_old) == drop_time(mf_new))

    @staticmethod
    def _spec_changed(rt: ResourceType, old: Obj, new: Obj) -> bool:
        if rt.key == ("apps", "deployments"):
            # Deployment annotations are copied to ReplicaSets, so they count as desired state.
            a_old = (old.get("metadata") or {}).get("annotations") or {}
            a_new = (new.get("metadata") or {}).get("annotations") or {}
            if a_old != a_new:
                return True
        skip = {"metadata", "status"} if rt.has_status else {"metadata"}
        a = {k: v for k, v in old.items() if k not in skip}
        b = {k: v for k, v in new.items() if k not in skip}
        return a != b

    # ---- patch ----------------------------------------------------------------------------

    def patch_rt(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        patch_type: str,
        body: Any,
        *,
        subresource: str | None = None,
        manager: str = DEFAULT_MANAGER,
        force: bool = False,
        dry_run: bool = False,
        field_validation: str = "Strict",
    ) -> tuple[Obj, _List[str]]:
        """PATCH as merge / strategic / json / apply (server-side apply)."""
        sub = subresource or ""
        if patch_type == "apply":
            return self._apply(
                rt, namespace, name, body, sub, manager, force, dry_run, field_validation
            )
        with self._lock:
            old = self._lookup(rt, namespace, name)
            if old is None:
                raise not_found(rt.group, rt.plural, name)
            current = fast_copy(old)
            if patch_type == "merge":
                if not isinstance(body, dict):
                    raise bad_request("merge patch must be a JSON object")
                new = patch.merge_patch(current, body)
            elif patch_type == "strategic":
                if rt.schemas:
                    raise StatusError(
                        415,
                        "UnsupportedMediaType",
                        "the body of the request was in an unknown format - accepted media "
                        "types include: application/json-patch+json, "
                        "application/merge-patch+json, application/apply-patch+yaml",
                    )
                new = patch.strategic_merge_patch(rt, current, body)
            elif patch_type == "json":
                new = patch.json_patch(current, body)
            else:
                raise StatusError(
                    415, "UnsupportedMediaType", f"unsupported patch type {patch_type}"
                )
            meta = new.get("metadata")
            if not isinstance(meta, dict):
                raise bad_request("metadata must be an object")
            rv = meta.get("resourceVersion")
            if rv not in (None, "") and str(rv) != old["metadata"]["resourceVersion"]:
                _parse_rv(rv, "metadata.resourceVersion")
                raise conflict(rt.group, rt.plural, name)
            self._check_kind(rt, new)
            explicit = meta.get("managedFields") != old["metadata"].get("managedFields")
            return self._write(
                rt,
                old,
                new,
                subresource=sub,
                manager=manager,
                dry_run=dry_run,
                field_validation=field_validation,
                explicit_managed=explicit,
            )

    def _apply(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        body: Any,
        sub: str,
        manager: str,
        force: bool,
        dry_run: bool,
        field_validation: str,
    ) -> tuple[Obj, _List[str]]:
        if not isinstance(body, dict):
            raise bad_request("apply patch must be an object")
        if not manager:
            raise field_manager_required()
        applied = fast_copy(body)
        group, _, version = str(applied.get("apiVersion") or "").rpartition("/")
        if applied.get("kind") != rt.kind or group != rt.group or version not in rt.versions:
            # The GroupVersionKind as apimachinery prints it ("apps/v1, Kind=Deployment").
            raise bad_request(
                f"invalid object type: {group}/{version}, Kind={applied.get('kind') or ''}"
            )
        self._check_kind(rt, applied)
        ameta = applied.setdefault("metadata", {})
        if ameta.get("name") and ameta["name"] != name:
            raise bad_request(
                f"the name of the object ({ameta['name']}) does not match the name on the URL "
                f"({name})"
            )
        for k in ("managedFields", "resourceVersion", "uid", "creationTimestamp", "generation"):
            if k == "resourceVersion" and ameta.get(k):
                continue
            ameta.pop(k, None)
        with self._lock:
            old = self._lookup(rt, namespace, name)
            if ameta.get("resourceVersion") and (
                old is None or str(ameta["resourceVersion"]) != old["metadata"]["resourceVersion"]
            ):
                raise conflict(rt.group, rt.plural, name)
            ameta.pop("resourceVersion", None)
            if old is None:
                if sub:
                    raise not_found(rt.group, rt.plural, name)
                ameta["name"] = name
                created = managed.apply(rt, None, applied, manager, "", force, rt.api_version())
                created["metadata"]["name"] = name
                if namespace:
                    created["metadata"]["namespace"] = namespace
                return self.create_rt(
                    rt,
                    namespace,
                    created,
                    manager=manager,
                    dry_run=dry_run,
                    field_validation=field_validation,
                    preset_managed=True,
                )
            merged = managed.apply(rt, old, applied, manager, sub, force, rt.api_version())
            merged["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
            return self._write(
                rt,
                old,
                merged,
                subresource=sub,
                manager=manager,
                dry_run=dry_run,
                field_validation=field_validation,
                explicit_managed=True,
            )

    # ---- scale subresource ----------------------------------------------------------------

    @staticmethod
    def _path_get(obj: Obj, path: str) -> Any:
        cur: Any = obj
        for part in path.strip(".").split("."):
            if not isinstance(cur, dict):
                return None
            cur = cur.get(part)
        return cur

    def _scale_of(self, rt: ResourceType, obj: Obj) -> Obj:
        spec = rt.scale or ScaleSpec()
        meta = obj["metadata"]
        selector: Any
        if rt.schemas:
            selector = (
                self._path_get(obj, spec.label_selector_path) if spec.label_selector_path else None
            )
        else:
            selector = label_selector_from_match((obj.get("spec") or {}).get("selector"))
        status: Obj = {"replicas": self._path_get(obj, spec.status_replicas_path) or 0}
        if selector:
            status["selector"] = selector
        smeta: Obj = {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        }
        replicas = self._path_get(obj, spec.spec_replicas_path) or 0
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": smeta,
            # autoscaling/v1 ScaleSpec.replicas is omitempty: zero is not sent.
            "spec": {"replicas": replicas} if replicas else {},
            "status": status,
        }

    def get_scale(self, rt: ResourceType, namespace: str | None, name: str) -> Obj:
        with self._lock:
            obj = self._lookup(rt, namespace, name)
            if obj is None:
                raise not_found(rt.group, rt.plural, name)
            return self._scale_of(rt, obj)

    def update_scale(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        scale: Any,
        *,
        manager: str = DEFAULT_MANAGER,
        dry_run: bool = False,
    ) -> Obj:
        if not isinstance(scale, dict):
            raise bad_request("the object provided is not a JSON object")
        replicas = (scale.get("spec") or {}).get("replicas")
        if replicas is None:
            replicas = 0  # omitted (omitempty) means zero, as kubectl scale --replicas=0 sends it
        with self._lock:
            old = self._lookup(rt, namespace, name)
            if old is None:
                raise not_found(rt.group, rt.plural, name)
            rv = (scale.get("metadata") or {}).get("resourceVersion")
            if rv not in (None, "") and str(rv) != old["metadata"]["resourceVersion"]:
                _parse_rv(rv, "metadata.resourceVersion")
                raise conflict(rt.group, rt.plural, name)
            if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
                raise invalid(
                    "autoscaling",
                    "Scale",
                    "scale",
                    name,
                    [
                        FieldError(
                            "FieldValueInvalid",
                            "spec.replicas",
                            "must be greater than or equal to 0",
                            replicas,
                        )
                    ],
                )
            new = fast_copy(old)
            path = (rt.scale or ScaleSpec()).spec_replicas_path.strip(".").split(".")
            cur = new
            for part in path[:-1]:
                cur = cur.setdefault(part, {})
            cur[path[-1]] = replicas
            obj, _ = self._write(
                rt,
                old,
                new,
                subresource="scale",
                manager=manager,
                dry_run=dry_run,
                field_validation="Ignore",
            )
            return self._scale_of(rt, obj)

    def apply_scale(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        applied: Any,
        *,
        manager: str,
        force: bool = False,
        dry_run: bool = False,
    ) -> Obj:
        """Server-side apply of an autoscaling/v1 Scale: an Apply entry with subresource scale
        owning spec.replicas, which every other manager loses (kube-apiserver's ScaleHandler)."""
        if not manager:
            raise field_manager_required()
        if not isinstance(applied, dict):
            raise bad_request("apply patch must be an object")
        if applied.get("apiVersion") != "autoscaling/v1" or applied.get("kind") != "Scale":
            group, _, version = str(applied.get("apiVersion") or "").rpartition("/")
            raise bad_request(
                f"invalid object type: {group}/{version}, Kind={applied.get('kind') or ''}"
            )
        replicas = (applied.get("spec") or {}).get("replicas", 0)
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise invalid(
                "autoscaling",
                "Scale",
                "scale",
                name,
                [
                    FieldError(
                        "FieldValueInvalid",
                        "spec.replicas",
                        "must be greater than or equal to 0",
                        replicas,
                    )
                ],
            )
        with self._lock:
            old = self._lookup(rt, namespace, name)
            if old is None:
                raise not_found(rt.group, rt.plural, name)
            parent: Obj = {
                "apiVersion": rt.api_version(),
                "kind": rt.kind,
                "metadata": {"name": name},
            }
            path = (rt.scale or ScaleSpec()).spec_replicas_path.strip(".").split(".")
            cur = parent
            for part in path[:-1]:
                cur = cur.setdefault(part, {})
            cur[path[-1]] = replicas
            merged = managed.apply(rt, old, parent, manager, "scale", force, rt.api_version())
            managed.disown(merged, ("f:spec", "f:replicas"), keep=(manager, "Apply", "scale"))
            merged["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
            obj, _ = self._write(
                rt,
                old,
                merged,
                subresource="scale",
                manager=manager,
                dry_run=dry_run,
                field_validation="Ignore",
                explicit_managed=True,
            )
            return self._scale_of(rt, obj)

    # ---- delete ---------------------------------------------------------------------------

    def delete_rt(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        *,
        grace_period_seconds: int | None = None,
        propagation_policy: str | None = None,
        preconditions: Mapping[str, Any] | None = None,
        dry_run: bool = False,
    ) -> Obj | None:
        with self._lock:
            old = self._lookup(rt, namespace, name)
            if old is None:
                raise not_found(rt.group, rt.plural, name)
            meta = old["metadata"]
            if preconditions:
                if preconditions.get("uid") and preconditions["uid"] != meta.get("uid"):
                    raise StatusError(
                        409,
                        "Conflict",
                        f"Operation cannot be fulfilled on {rt.plural}"
                        f'{"." + rt.group if rt.group else ""} "{name}": Precondition failed: '
                        f"UID in precondition: {preconditions['uid']}, UID in object meta: "
                        f"{meta.get('uid')}",
                    )
                prv = preconditions.get("resourceVersion")
                if prv and str(prv) != meta.get("resourceVersion"):
                    raise conflict(rt.group, rt.plural, name)
            if dry_run:
                return fast_copy(old)
            new = fast_copy(old)
            nmeta = new["metadata"]
            gc_finalizer = {"Foreground": "foregroundDeletion", "Orphan": "orphan"}.get(
                propagation_policy or ""
            )
            if gc_finalizer and rt.key != NS_KEY:
                # The garbage collector deletes (Foreground) or releases (Orphan) the
                # dependents, then drops this finalizer, and the object goes.
                fins = list(nmeta.get("finalizers") or [])
                if gc_finalizer not in fins:
                    fins.append(gc_finalizer)
                nmeta["finalizers"] = fins
                _bump_generation_on_delete(nmeta)
                nmeta.setdefault("deletionTimestamp", _now())
                nmeta.setdefault("deletionGracePeriodSeconds", 0)
                if new == old:
                    return fast_copy(old)
                return fast_copy(self._commit(rt, "MODIFIED", new, old))
            if rt.key == NS_KEY:
                if name in ("default", "kube-system", "kube-public"):
                    raise StatusError(
                        403,
                        "Forbidden",
                        f'namespaces "{name}" is forbidden: this namespace may not be deleted',
                        {"name": name, "kind": "namespaces"},
                    )
                return self._delete_namespace(rt, old, new)
            if rt.key == PODS_KEY and (old.get("spec") or {}).get("nodeName"):
                grace = grace_period_seconds
                if grace is None:
                    grace = (old.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
                if grace and grace > 0:
                    current = nmeta.get("deletionGracePeriodSeconds")
                    if current is not None and current <= grace:
                        return fast_copy(old)
                    _bump_generation_on_delete(nmeta)
                    nmeta["deletionGracePeriodSeconds"] = grace
                    nmeta["deletionTimestamp"] = (
                        datetime.now(UTC) + timedelta(seconds=grace)
                    ).strftime("%Y-%m-%dT%H:%M:%SZ")
                    nmeta["resourceVersion"] = meta["resourceVersion"]
                    return fast_copy(self._commit(rt, "MODIFIED", new, old))
            if nmeta.get("finalizers"):
                if nmeta.get("deletionTimestamp"):
                    if rt.key == PODS_KEY and nmeta.get("deletionGracePeriodSeconds"):
                        nmeta["deletionGracePeriodSeconds"] = 0
                        return fast_copy(self._commit(rt, "MODIFIED", new, old))
                    return fast_copy(old)
                _bump_generation_on_delete(nmeta)
                nmeta["deletionTimestamp"] = _now()
                nmeta["deletionGracePeriodSeconds"] = 0
                return fast_copy(self._commit(rt, "MODIFIED", new, old))
            self._commit(rt, "DELETED", new, old)
            self._after_delete(rt, new)
            return fast_copy(new)

    def _delete_namespace(self, rt: ResourceType, old: Obj, new: Obj) -> Obj:
        name = new["metadata"]["name"]
        if not new["metadata"].get("deletionTimestamp"):
            new["metadata"]["deletionTimestamp"] = _now()
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            new.setdefault("status", {})["phase"] = "Terminating"
            self._commit(rt, "MODIFIED", new, old)
            for other in self.registry.all():
                if not other.namespaced:
                    continue
                for (ns, oname), _obj in list(self._bucket(other).items()):
                    if ns == name:
                        try:
                            self.delete_rt(other, ns, oname)
                        except StatusError:
                            continue
        self._maybe_finish_namespace(name)
        ns_obj = self._lookup(rt, None, name)
        return fast_copy(ns_obj if ns_obj is not None else new)

    def _maybe_finish_namespace(self, name: str) -> None:
        ns_rt = self.registry.by_kind("v1", "Namespace")
        ns_obj = self._lookup(ns_rt, None, name)
        if ns_obj is None or not ns_obj["metadata"].get("deletionTimestamp"):
            return
        for other in self.registry.all():
            if other.namespaced and any(ns == name for ns, _ in self._bucket(other)):
                return
        final = fast_copy(ns_obj)
        self._commit(ns_rt, "DELETED", final, ns_obj)

    def _after_delete(self, rt: ResourceType, obj: Obj) -> None:
        if rt.namespaced:
            self._maybe_finish_namespace(obj["metadata"].get("namespace", ""))
        if rt.key == CRD_KEY:
            self._unregister_crd(obj)

    # ---- CustomResourceDefinitions ----------------------------------------------------------

    def _validate_crd(self, crd: Obj) -> _List[FieldError]:
        errs: _List[FieldError] = []
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        group = spec.get("group")
        if not group:
            errs.append(FieldError("FieldValueRequired", "spec.group", with_value=False))
        if not names.get("plural"):
            errs.append(FieldError("FieldValueRequired", "spec.names.plural", with_value=False))
        if not names.get("kind"):
            errs.append(FieldError("FieldValueRequired", "spec.names.kind", with_value=False))
        if spec.get("scope") not in ("Namespaced", "Cluster"):
            errs.append(
                FieldError(
                    "FieldValueNotSupported",
                    "spec.scope",
                    'supported values: "Cluster", "Namespaced"',
                    spec.get("scope"),
                )
            )
        name = crd.get("metadata", {}).get("name", "")
        if group and names.get("plural") and name != f"{names['plural']}.{group}":
            errs.append(
                FieldError(
                    "FieldValueInvalid",
                    "metadata.name",
                    'must be spec.names.plural+"."+spec.group',
                    name,
                )
            )
        versions = spec.get("versions") or []
        if not versions:
            errs.append(
                FieldError(
                    "FieldValueRequired",
                    "spec.versions",
                    "must have exactly one version marked as storage version",
                    with_value=False,
                )
            )
        elif sum(1 for v in versions if v.get("storage")) != 1:
            errs.append(
                FieldError(
                    "FieldValueInvalid",
                    "spec.versions",
                    "must have exactly one version marked as storage version",
                    versions,
                )
            )
        for i, v in enumerate(versions):
            s = (v.get("schema") or {}).get("openAPIV3Schema")
            for bad in schema.check_rules_compile(s):
                errs.append(
                    FieldError(
                        "FieldValueInvalid",
                        f"spec.versions[{i}].schema.openAPIV3Schema",
                        bad,
                        "object",
                    )
                )
        for rt in self.registry.all():
            if rt.crd_name is None and rt.group == group and rt.plural == names.get("plural"):
                errs.append(
                    FieldError(
                        "FieldValueInvalid",
                        "spec.names.plural",
                        "conflicts with a built-in resource",
                        names.get("plural"),
                    )
                )
        return errs

    @staticmethod
    def _crd_status(crd: Obj) -> Obj:
        names = (crd.get("spec") or {}).get("names") or {}
        accepted = dict(names)
        accepted.setdefault("singular", str(names.get("kind", "")).lower())
        accepted.setdefault("listKind", f"{names.get('kind', '')}List")
        now = _now()
        prev = {c.get("type"): c for c in (crd.get("status") or {}).get("conditions") or []}

        def cond(t: str, reason: str, msg: str) -> Obj:
            old = prev.get(t)
            ts = old.get("lastTransitionTime", now) if old and old.get("status") == "True" else now
            return {
                "type": t,
                "status": "True",
                "reason": reason,
                "message": msg,
                "lastTransitionTime": ts,
            }

        return {
            "acceptedNames": accepted,
            "conditions": [
                cond("NamesAccepted", "NoConflicts", "no conflicts found"),
                cond("Established", "InitialNamesAccepted", "the initial names have been accepted"),
            ],
            "storedVersions": [
                v["name"] for v in (crd.get("spec") or {}).get("versions") or [] if v.get("storage")
            ],
        }

    def _register_crd(self, crd: Obj) -> None:
        spec = crd["spec"]
        names = spec["names"]
        versions = [v for v in spec.get("versions") or [] if v.get("served", True)]
        storage_v = next(
            (v["name"] for v in spec["versions"] if v.get("storage")),
            versions[0]["name"] if versions else "v1",
        )
        subres = set()
        scale: ScaleSpec | None = None
        schemas: dict[str, Obj] = {}
        cols: dict[str, _List[Obj]] = {}
        for v in versions:
            sr = v.get("subresources") or {}
            if "status" in sr:
                subres.add("status")
            if "scale" in sr:
                subres.add("scale")
                sc = sr["scale"] or {}
                scale = ScaleSpec(
                    sc.get("specReplicasPath", ".spec.replicas"),
                    sc.get("statusReplicasPath", ".status.replicas"),
                    sc.get("labelSelectorPath"),
                )
            s = (v.get("schema") or {}).get("openAPIV3Schema")
            schemas[v["name"]] = (
                s
                if isinstance(s, dict)
                else {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
            )
            cols[v["name"]] = list(v.get("additionalPrinterColumns") or [])
        rt = ResourceType(
            # The verbs (and their order) apiextensions-apiserver publishes for a custom resource.
            verbs=(
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "create",
                "update",
                "watch",
            ),
            group=spec["group"],
            versions=tuple(v["name"] for v in versions),
            kind=names["kind"],
            plural=names["plural"],
            singular=names.get("singular") or names["kind"].lower(),
            namespaced=spec.get("scope") == "Namespaced",
            short_names=tuple(names.get("shortNames") or ()),
            categories=tuple(names.get("categories") or ()),
            subresources=frozenset(subres),
            scale=scale,
            schemas=schemas,
            printer_columns=cols,
            crd_name=crd["metadata"]["name"],
            storage_version=storage_v,
        )
        if self.registry.by_resource(rt.group, rt.preferred_version, rt.plural) is None:
            self._type_floor[rt.key] = self._rv
        self.registry.add(rt)
        for cb in list(self.crd_listeners):
            cb()

    def _unregister_crd(self, crd: Obj) -> None:
        spec = crd.get("spec") or {}
        key = (spec.get("group", ""), (spec.get("names") or {}).get("plural", ""))
        rt = next((r for r in self.registry.all() if r.key == key and r.crd_name), None)
        if rt is None:
            return
        for obj in list(self._bucket(rt).values()):
            self._commit(rt, "DELETED", fast_copy(obj), obj)
        self._objects.pop(key, None)
        self.registry.remove(key)
        self.drop_watches(key)
        for cb in list(self.crd_listeners):
            cb()


__all__ = ["Storage", "Watcher", "fast_copy"]
