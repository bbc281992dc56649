"""Server-side apply: field sets (fieldsV1), per-manager ownership, conflicts and merging.

A field set is a ``set`` of paths; each path is a tuple of fieldsV1 keys (``f:spec``,
``k:{"name":"app"}``, ``v:"finalizer"``). Leaves, atomic lists and list items are members.
Conflicts are reported only when another manager owns a field the applier sets to a
*different* value (same value means shared ownership), as structured-merge-diff does.

An Update (create, put, patch) owns what it changed, as structured-merge-diff's comparison of the
old and the new object finds it: the changed leaves plus every map, list or list item that did
not exist before (those carry the ``.`` marker). For a built-in kind "before" includes the
zero-valued structs and fields the typed object always has (``spec``, ``spec.template`` ...;
see ``ZERO_OBJECTS``), so creating a Deployment marks ``spec.template.metadata.labels`` but not
``spec``; a custom resource starts from nothing.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from .errors import StatusError
from .registry import ListKind, ResourceType, list_kind

Path = tuple[str, ...]
FieldSet = set[Path]

_META_TRACKED = ("labels", "annotations", "finalizers", "ownerReferences")

#: Built-in maps that are atomic (``+structType=atomic`` LabelSelectors, ``+mapType=atomic``
#: selector maps): owned as one leaf, never key by key.
BUILTIN_ATOMIC_MAPS = frozenset(
    {
        "selector",
        "nodeSelector",
        "labelSelector",
        "namespaceSelector",
        "podSelector",
        # ObjectReference is +structType=atomic (Events' involvedObject, regarding, related).
        "involvedObject",
        "regarding",
        "related",
    }
)


def _template() -> dict[str, Any]:
    return {"metadata": {}, "spec": {"containers": None}}


#: The typed zero object of a built-in kind as kube-apiserver serializes it: non-pointer
#: structs and fields without ``omitempty`` are there, as empty structs, nulls, zeros and empty
#: strings. A create is compared against it, so what it already has is never "added".
ZERO_OBJECTS: dict[tuple[str, str], Callable[[], dict[str, Any]]] = {
    ("", "pods"): lambda: {"spec": {"containers": None}, "status": {}},
    ("", "namespaces"): lambda: {"spec": {}, "status": {}},
    ("", "services"): lambda: {"spec": {}, "status": {"loadBalancer": {}}},
    ("", "events"): lambda: {
        "involvedObject": {},
        "source": {},
        "firstTimestamp": None,
        "lastTimestamp": None,
        "eventTime": None,
        "reportingComponent": "",
        "reportingInstance": "",
    },
    ("events.k8s.io", "events"): lambda: {
        "eventTime": None,
        "regarding": {},
        "deprecatedSource": {},
        "deprecatedFirstTimestamp": None,
        "deprecatedLastTimestamp": None,
    },
    ("apps", "deployments"): lambda: {
        "spec": {"selector": None, "strategy": {}, "template": _template()},
        "status": {},
    },
    ("apps", "replicasets"): lambda: {
        "spec": {"selector": None, "template": _template()},
        "status": {"replicas": 0},
    },
    ("apps", "statefulsets"): lambda: {
        "spec": {"selector": None, "template": _template(), "updateStrategy": {}},
        "status": {"replicas": 0, "availableReplicas": 0},
    },
    ("coordination.k8s.io", "leases"): lambda: {"spec": {}},
    ("apiextensions.k8s.io", "customresourcedefinitions"): lambda: {
        "spec": {"names": {}, "versions": None},
        "status": {"acceptedNames": {}, "storedVersions": None},
    },
    ("rbac.authorization.k8s.io", "roles"): lambda: {"rules": None},
    ("rbac.authorization.k8s.io", "clusterroles"): lambda: {"rules": None},
    ("rbac.authorization.k8s.io", "rolebindings"): lambda: {"roleRef": {}},
    ("rbac.authorization.k8s.io", "clusterrolebindings"): lambda: {"roleRef": {}},
}


def _zero(rt: ResourceType | None) -> dict[str, Any]:
    if rt is None or rt.schemas:
        return {}
    make = ZERO_OBJECTS.get(rt.key)
    return make() if make is not None else {}


def _atomic_map(rt: ResourceType | None, names: tuple[str, ...]) -> bool:
    return bool(names) and (rt is None or not rt.schemas) and names[-1] in BUILTIN_ATOMIC_MAPS


def _list_kind(rt: ResourceType | None, names: tuple[str, ...]) -> ListKind:
    """List semantics for SSA: as strategic merge, except that built-in ports are keyed by
    port and protocol (``+listMapKey``), where strategic merge uses the port alone."""
    lk = list_kind(rt, names)
    if lk.type == "map" and names and names[-1] == "ports" and (rt is None or not rt.schemas):
        return ListKind("map", (*lk.keys, "protocol"))
    return lk


#: Key fields with a schema default: an item that omits them is keyed by the default.
_KEY_DEFAULTS = {"protocol": "TCP"}


def now_iso() -> str:
    # envtest's own on purpose (not kube.rfc3339): the server must not import the runtime it tests.
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _key_json(item: dict[str, Any], keys: Iterable[str]) -> str:
    out = {}
    for k in keys:
        if k in item:
            out[k] = item[k]
        elif k in _KEY_DEFAULTS:
            out[k] = _KEY_DEFAULTS[k]
    return json.dumps(out, separators=(",", ":"))


def fields_of(
    rt: ResourceType | None, obj: dict[str, Any], scope: str, nodes: FieldSet | None = None
) -> FieldSet:
    """The field set an object expresses; ``scope`` is main, status, scale or all.

    ``nodes``, when given, collects the interior nodes (maps and lists that have members
    below them), which an Update owns when it creates them.
    """
    out: FieldSet = set()
    has_status = rt is not None and rt.has_status
    for top, value in obj.items():
        if top in ("apiVersion", "kind"):
            continue
        if top == "metadata":
            # A built-in status endpoint may change labels and annotations (custom resources'
            # may not), so those are tracked there too.
            custom = rt is not None and bool(rt.schemas)
            if (scope == "status" and custom) or not isinstance(value, dict):
                continue
            for mk in _META_TRACKED:
                if mk in value and value[mk] is not None:
                    _walk(rt, value[mk], ("metadata", mk), ("f:metadata", f"f:{mk}"), out, nodes)
            continue
        if top == "status":
            if scope == "main" and has_status:
                continue
        elif scope == "status":
            continue
        if scope == "scale" and top != "spec":
            continue
        _walk(rt, value, (top,), (f"f:{top}",), out, nodes)
    if scope == "scale":
        out = {p for p in out if p[:2] == ("f:spec", "f:replicas")}
        if nodes is not None:
            nodes.clear()
    return out


def _walk(
    rt: ResourceType | None,
    node: Any,
    names: tuple[str, ...],
    path: Path,
    out: FieldSet,
    nodes: FieldSet | None = None,
) -> None:
    if isinstance(node, dict):
        if not node or _atomic_map(rt, names):
            out.add(path)
            return
        if nodes is not None:
            nodes.add(path)
        for k, v in node.items():
            _walk(rt, v, (*names, k), (*path, f"f:{k}"), out, nodes)
        return
    if isinstance(node, list):
        lk = _list_kind(rt, names)
        if lk.type == "map" and lk.keys:
            if nodes is not None and node:
                nodes.add(path)
            for item in node:
                if isinstance(item, dict):
                    ip = (*path, "k:" + _key_json(item, lk.keys))
                    out.add(ip)
                    for k, v in item.items():
                        _walk(rt, v, (*names, k), (*ip, f"f:{k}"), out, nodes)
            return
        if lk.type == "set":
            if nodes is not None and node:
                nodes.add(path)
            for item in node:
                out.add((*path, "v:" + json.dumps(item, separators=(",", ":"))))
            return
    out.add(path)


def _step(node: Any, elem: str) -> tuple[bool, Any]:
    tag, _, rest = elem.partition(":")
    if tag == "f":
        if isinstance(node, dict) and rest in node:
            return True, node[rest]
        return False, None
    if tag == "k" and isinstance(node, list):
        want = json.loads(rest)
        for item in node:
            if isinstance(item, dict) and _keyed(item, want):
                return True, item
        return False, None
    if tag == "v" and isinstance(node, list):
        want = json.loads(rest)
        return (want in node), want
    return False, None


def _keyed(item: dict[str, Any], want: dict[str, Any]) -> bool:
    """Whether a list item has the key values ``want`` (defaulted key fields included)."""
    return all(item.get(k, _KEY_DEFAULTS.get(k)) == v for k, v in want.items())


def get_path(obj: Any, path: Path) -> tuple[bool, Any]:
    node = obj
    for elem in path:
        ok, node = _step(node, elem)
        if not ok:
            return False, None
    return True, node


def remove_path(obj: Any, path: Path) -> None:
    ok, parent = get_path(obj, path[:-1])
    if not ok:
        return
    tag, _, rest = path[-1].partition(":")
    if tag == "f" and isinstance(parent, dict):
        parent.pop(rest, None)
    elif tag == "k" and isinstance(parent, list):
        want = json.loads(rest)
        parent[:] = [i for i in parent if not (isinstance(i, dict) and _keyed(i, want))]
    elif tag == "v" and isinstance(parent, list):
        want = json.loads(rest)
        parent[:] = [i for i in parent if i != want]


def to_fields_v1(fs: FieldSet) -> dict[str, Any]:
    """Encode a field set as the nested ``fieldsV1`` map (``.`` marks a member with children)."""
    root: dict[str, Any] = {}
    for path in sorted(fs):
        node = root
        for elem in path:
            node = node.setdefault(elem, {})
    for path in fs:
        ok, node = True, root
        for elem in path:
            node = node[elem]
        if ok and node and "." not in node:
            node["."] = {}
    return root


def from_fields_v1(tree: Any, prefix: Path = ()) -> FieldSet:
    out: FieldSet = set()
    if not isinstance(tree, dict):
        return out
    if prefix and (not tree or "." in tree):
        out.add(prefix)
    for k, v in tree.items():
        if k == ".":
            continue
        out |= from_fields_v1(v, (*prefix, k))
    return out


def render_path(path: Path) -> str:
    """``.spec.template.spec.containers[name="app"].image`` as conflicts are worded."""
    text = ""
    for elem in path:
        tag, _, rest = elem.partition(":")
        if tag == "f":
            text += "." + rest
        elif tag == "k":
            keys = json.loads(rest)
            text += "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in keys.items()) + "]"
        else:
            text += f"[={rest}]"
    return text


class Entry:
    """One managedFields entry decoded into a field set."""

    __slots__ = ("api_version", "fields", "manager", "operation", "subresource", "time")

    def __init__(
        self,
        manager: str,
        operation: str,
        api_version: str,
        subresource: str,
        fields: FieldSet,
        time: str,
    ) -> None:
        self.manager = manager
        self.operation = operation
        self.api_version = api_version
        self.subresource = subresource
        self.fields = fields
        self.time = time

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> Entry:
        return cls(
            str(raw.get("manager", "")),
            str(raw.get("operation", "Update")),
            str(raw.get("apiVersion", "")),
            str(raw.get("subresource", "")),
            from_fields_v1(raw.get("fieldsV1") or {}),
            str(raw.get("time") or now_iso()),
        )

    def dump(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
            "time": self.time,
            "fieldsType": "FieldsV1",
            "fieldsV1": to_fields_v1(self.fields),
        }
        if self.subresource:
            out["subresource"] = self.subresource
        return out

    def same(self, manager: str, operation: str, subresource: str) -> bool:
        return (self.manager, self.operation, self.subresource) == (manager, operation, subresource)


def _entries(obj: dict[str, Any] | None) -> list[Entry]:
    if not obj:
        return []
    return [
        Entry.parse(e)
        for e in (obj.get("metadata", {}).get("managedFields") or [])
        if isinstance(e, dict)
    ]


def _store(obj: dict[str, Any], entries: list[Entry]) -> None:
    kept = [e.dump() for e in entries if e.fields]
    meta = obj.setdefault("metadata", {})
    if kept:
        meta["managedFields"] = kept
    else:
        meta.pop("managedFields", None)


def _scope(rt: ResourceType | None, subresource: str) -> str:
    if subresource in ("status", "scale"):
        return subresource
    return "main" if rt is not None and rt.has_status else "all"


def track_update(
    rt: ResourceType | None,
    old: dict[str, Any] | None,
    new: dict[str, Any],
    manager: str,
    subresource: str,
    api_version: str,
) -> None:
    """Record an Update-operation write by ``manager`` in ``new``'s managedFields (in place)."""
    scope = _scope(rt, subresource)
    entries = _entries(old)
    new_nodes: FieldSet = set()
    new_set = fields_of(rt, new, scope, new_nodes)
    # A create compares against the typed zero object, an update against the stored one.
    before = old if old is not None else _zero(rt)
    changed = {p for p in new_nodes if not get_path(before, p)[0]}
    for p in new_set:
        ok_old, v_old = get_path(before, p)
        if not ok_old:
            changed.add(p)
        elif not p[-1].startswith(("k:", "v:")) and v_old != get_path(new, p)[1]:
            changed.add(p)  # a changed leaf (list items are members, never "changed")
    removed: FieldSet = set()
    if old is not None:
        old_nodes: FieldSet = set()
        old_set = fields_of(rt, old, scope, old_nodes)
        removed = {p for p in old_set | old_nodes if not get_path(new, p)[0]} - changed
    if not changed and not removed:
        _store(new, entries)
        return
    mine = next((e for e in entries if e.same(manager, "Update", subresource)), None)
    for e in entries:
        if e is not mine:
            e.fields -= changed
            e.fields -= removed
    if mine is None:
        mine = Entry(manager, "Update", api_version, subresource, set(), now_iso())
        entries.append(mine)
    mine.fields = (mine.fields | changed) - removed
    mine.time = now_iso()
    mine.api_version = api_version
    _store(new, entries)


def _merge(rt: ResourceType | None, names: tuple[str, ...], live: Any, applied: Any) -> Any:
    if isinstance(applied, dict) and not _atomic_map(rt, names):
        result = dict(live) if isinstance(live, dict) else {}
        for k, v in applied.items():
            if v is None:
                continue
            result[k] = _merge(rt, (*names, k), result.get(k), v)
        return result
    if isinstance(applied, list) and isinstance(live, list):
        lk = _list_kind(rt, names)
        if lk.type == "map" and lk.keys:
            out = [copy.deepcopy(i) for i in live]
            for item in applied:
                if not isinstance(item, dict):
                    continue
                want = _key_json(item, lk.keys)
                for idx, cur in enumerate(out):
                    if isinstance(cur, dict) and _key_json(cur, lk.keys) == want:
                        out[idx] = _merge(rt, names, cur, item)
                        break
                else:
                    out.append(copy.deepcopy(item))
            return out
        if lk.type == "set":
            out = list(live)
            out.extend(v for v in applied if v not in out)
            return out
    return copy.deepcopy(applied)


def apply(
    rt: ResourceType | None,
    live: dict[str, Any] | None,
    applied: dict[str, Any],
    manager: str,
    subresource: str,
    force: bool,
    api_version: str,
) -> dict[str, Any]:
    """Merge an apply configuration into ``live`` and return the new object with managedFields."""
    scope = _scope(rt, subresource)
    applied_set = fields_of(rt, applied, scope)
    entries = _entries(live)
    base: dict[str, Any] = copy.deepcopy(live) if live is not None else {}
    if live is not None:
        conflicts: dict[int, list[Path]] = {}
        for i, e in enumerate(entries):
            if e.manager == manager:
                continue
            for p in sorted(applied_set & e.fields):
                _ok_a, v_a = get_path(applied, p)
                ok_l, v_l = get_path(live, p)
                if isinstance(v_a, dict) and ok_l:
                    continue
                if not ok_l or v_a != v_l:
                    conflicts.setdefault(i, []).append(p)
        if conflicts and not force:
            raise _conflict_error(entries, conflicts)
        for i, paths in conflicts.items():
            entries[i].fields -= set(paths)
    # Scope the applied object: main writes never touch status, status writes only status.
    scoped = {
        k: v
        for k, v in applied.items()
        if not (scope == "main" and k == "status")
        and not (scope == "status" and k not in ("status", "metadata", "apiVersion", "kind"))
    }
    merged = _merge(rt, (), base, scoped)
    mine = next((e for e in entries if e.same(manager, "Apply", subresource)), None)
    if mine is not None:
        owned_by_others: FieldSet = set()
        for e in entries:
            if e is not mine:
                owned_by_others |= e.fields
        for p in sorted(mine.fields - applied_set, key=len, reverse=True):
            if p not in owned_by_others and not any(
                q[: len(p)] == p for q in owned_by_others | applied_set if len(q) > len(p)
            ):
                remove_path(merged, p)
    else:
        mine = Entry(manager, "Apply", api_version, subresource, set(), now_iso())
        entries.append(mine)
    mine.fields = applied_set
    mine.time = now_iso()
    mine.api_version = api_version
    _store(merged, entries)
    return merged


def disown(obj: dict[str, Any], path: Path, *, keep: tuple[str, str, str]) -> None:
    """Take ``path`` from every managedFields entry but ``keep`` (manager, operation,
    subresource), dropping entries left empty (in place)."""
    entries = _entries(obj)
    for e in entries:
        if not e.same(*keep):
            e.fields = {p for p in e.fields if p[: len(path)] != path}
    _store(obj, entries)


def _identifier(e: Entry) -> str:
    """The manager identifier kube-apiserver sorts conflicts by (JSON of the entry without its
    time and fields; an applier's apiVersion is left out, so it never says "using")."""
    ident: dict[str, str] = {"manager": e.manager, "operation": e.operation}
    if e.operation != "Apply":
        ident["apiVersion"] = e.api_version
    if e.subresource:
        ident["subresource"] = e.subresource
    return json.dumps(ident, separators=(",", ":"))


def _conflict_error(entries: list[Entry], conflicts: dict[int, list[Path]]) -> StatusError:
    total = sum(len(v) for v in conflicts.values())
    causes = []
    parts = []
    for i in sorted(conflicts, key=lambda i: _identifier(entries[i])):
        paths = sorted(conflicts[i])
        e = entries[i]
        who = f'"{e.manager}"'
        if e.subresource:
            who += f' with subresource "{e.subresource}"'
        if e.operation != "Apply":
            who += f" using {e.api_version}"
        for p in paths:
            causes.append(
                {
                    "reason": "FieldManagerConflict",
                    "message": f"conflict with {who}",
                    "field": render_path(p),
                }
            )
        if total == 1:
            parts.append(f"conflict with {who}: {render_path(paths[0])}")
        else:
            parts.append(
                f"conflicts with {who}:\n" + "\n".join(f"- {render_path(p)}" for p in paths)
            )
    noun = "conflict" if total == 1 else "conflicts"
    msg = f"Apply failed with {total} {noun}: " + "\n".join(parts)
    return StatusError(409, "Conflict", msg, {"causes": causes})
