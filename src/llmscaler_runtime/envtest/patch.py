"""JSON merge patch (RFC 7386), strategic merge patch and JSON patch (RFC 6902).

Strategic merge patch support: maps merge recursively (``null`` deletes a key); lists with a
merge key (containers/env/volumes/ports/... by name, see ``registry.BUILTIN_MERGE_KEYS``) merge
item by item, ``$patch: delete`` on an item removes it, ``$patch: replace`` on a map or list
replaces it; lists of scalars marked as sets (finalizers) are unioned, and
``$deleteFromPrimitiveList/<field>`` removes scalars. ``$setElementOrder/<field>`` reorders merged
items; ``$retainKeys`` is accepted and ignored (not supported). Every other list is replaced.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch

from .errors import StatusError, bad_request
from .registry import ResourceType, list_kind


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, ``null`` removes, everything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(target: dict[str, Any], ops: Any) -> dict[str, Any]:
    """RFC 6902; failures are the 422/500 a real server returns for a bad JSON patch."""
    if not isinstance(ops, list):
        raise bad_request(
            "json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp"
        )
    try:
        result = jsonpatch.apply_patch(target, ops)
    except (
        jsonpatch.JsonPatchException,
        jsonpatch.JsonPointerException,
        KeyError,
        IndexError,
        TypeError,
    ) as exc:
        # kube-apiserver gives no detail here (a generic 422 with empty details).
        raise StatusError(
            422, "Invalid", "the server rejected our request due to an error in our request", {}
        ) from exc
    if not isinstance(result, dict):
        raise bad_request("json patch result is not an object")
    return result


def strategic_merge_patch(
    rt: ResourceType | None, target: dict[str, Any], patch: Any
) -> dict[str, Any]:
    """Apply a strategic merge patch to ``target`` using the list semantics of ``rt``."""
    if not isinstance(patch, dict):
        raise bad_request("strategic merge patch must be a JSON object")
    out = _smp_map(rt, (), target, patch)
    return out if isinstance(out, dict) else {}


def _smp_map(
    rt: ResourceType | None, path: tuple[str, ...], target: Any, patch: dict[str, Any]
) -> Any:
    directive = patch.get("$patch")
    if directive == "delete":
        return None
    if directive == "replace":
        return {k: v for k, v in patch.items() if k != "$patch"}
    result = dict(target) if isinstance(target, dict) else {}
    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys"):
            continue
        if key.startswith("$setElementOrder/"):
            orders[key.split("/", 1)[1]] = value if isinstance(value, list) else []
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            if isinstance(result.get(field), list) and isinstance(value, list):
                result[field] = [v for v in result[field] if v not in value]
            continue
        if value is None:
            result.pop(key, None)
            continue
        sub = (*path, key)
        if isinstance(value, dict):
            merged = _smp_map(rt, sub, result.get(key), value)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list):
            result[key] = _smp_list(rt, sub, result.get(key), value)
        else:
            result[key] = value
    for field, order in orders.items():
        if isinstance(result.get(field), list):
            result[field] = _reorder(rt, (*path, field), result[field], order)
    return result


def _reorder(
    rt: ResourceType | None, path: tuple[str, ...], items: list[Any], order: list[Any]
) -> list[Any]:
    lk = list_kind(rt, path)
    if lk.type == "map" and lk.keys:
        k = lk.keys[0]

        def ident(x: Any) -> Any:
            return x.get(k) if isinstance(x, dict) else x

        wanted = [ident(o) for o in order]
        rank = {v: i for i, v in enumerate(wanted)}
        return sorted(items, key=lambda x: rank.get(ident(x), len(rank)))
    return items


def _smp_list(
    rt: ResourceType | None, path: tuple[str, ...], target: Any, patch: list[Any]
) -> list[Any]:
    current = list(target) if isinstance(target, list) else []
    if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
        return [p for p in patch if not (isinstance(p, dict) and p.get("$patch") == "replace")]
    lk = list_kind(rt, path)
    if lk.type == "set":
        for v in patch:
            if v not in current:
                current.append(v)
        return current
    if lk.type != "map" or not lk.keys:
        return copy.deepcopy(patch)
    key = lk.keys[0]
    index = {item.get(key): i for i, item in enumerate(current) if isinstance(item, dict)}
    deleted: set[Any] = set()
    for item in patch:
        if not isinstance(item, dict):
            continue
        ident = item.get(key)
        if item.get("$patch") == "delete":
            deleted.add(ident)
            continue
        if ident in index:
            i = index[ident]
            current[i] = _smp_map(rt, path, current[i], item)
        else:
            index[ident] = len(current)
            current.append(_smp_map(rt, path, {}, item))
    return [i for i in current if not (isinstance(i, dict) and i.get(key) in deleted)]
