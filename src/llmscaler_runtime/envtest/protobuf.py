"""Decode the Kubernetes protobuf envelope for the few kinds kubectl's typed clients send.

``kubectl create deployment|namespace|configmap|secret|serviceaccount`` and ``kubectl run`` post
``application/vnd.kubernetes.protobuf`` bodies. This decoder knows the field numbers of those
kinds (from k8s.io/api generated.proto) and turns them into the JSON form; a field number it
does not know is an error (415), never silently dropped.
"""

from __future__ import annotations

import base64
import struct
from datetime import UTC, datetime
from typing import Any

from .errors import StatusError

MAGIC = b"k8s\x00"

# message name -> field number -> (json name, kind). Kinds: str, int, bool (zero = omitted),
# pint/pbool (pointer fields: zero kept), bytes, time,
# ios (IntOrString), qty (Quantity), map (string->string), mapb (string->bytes),
# mapq (string->Quantity), rstr (repeated string), msg:X, rmsg:X.
F = dict[int, tuple[str, str]]
MESSAGES: dict[str, F] = {
    "Unknown": {
        1: ("typeMeta", "msg:TypeMeta"),
        2: ("raw", "bytes"),
        3: ("contentEncoding", "str"),
        4: ("contentType", "str"),
    },
    "TypeMeta": {1: ("apiVersion", "str"), 2: ("kind", "str")},
    "ObjectMeta": {
        1: ("name", "str"),
        2: ("generateName", "str"),
        3: ("namespace", "str"),
        5: ("uid", "str"),
        6: ("resourceVersion", "str"),
        7: ("generation", "int"),
        8: ("creationTimestamp", "time"),
        11: ("labels", "map"),
        12: ("annotations", "map"),
        13: ("ownerReferences", "rmsg:OwnerReference"),
        14: ("finalizers", "rstr"),
    },
    "OwnerReference": {
        1: ("kind", "str"),
        3: ("name", "str"),
        4: ("uid", "str"),
        5: ("apiVersion", "str"),
        6: ("controller", "pbool"),
        7: ("blockOwnerDeletion", "pbool"),
    },
    "Time": {1: ("seconds", "int"), 2: ("nanos", "int")},
    "Empty": {},
    "Namespace": {
        1: ("metadata", "msg:ObjectMeta"),
        2: ("spec", "msg:NamespaceSpec"),
        3: ("status", "msg:Empty"),
    },
    "NamespaceSpec": {1: ("finalizers", "rstr")},
    "ConfigMap": {
        1: ("metadata", "msg:ObjectMeta"),
        2: ("data", "map"),
        3: ("binaryData", "mapb"),
        4: ("immutable", "pbool"),
    },
    "Secret": {
        1: ("metadata", "msg:ObjectMeta"),
        2: ("data", "mapb"),
        3: ("type", "str"),
        4: ("stringData", "map"),
        5: ("immutable", "pbool"),
    },
    "ServiceAccount": {
        1: ("metadata", "msg:ObjectMeta"),
        4: ("automountServiceAccountToken", "pbool"),
    },
    "Deployment": {
        1: ("metadata", "msg:ObjectMeta"),
        2: ("spec", "msg:DeploymentSpec"),
        3: ("status", "msg:Empty"),
    },
    "DeploymentSpec": {
        1: ("replicas", "pint"),
        2: ("selector", "msg:LabelSelector"),
        3: ("template", "msg:PodTemplateSpec"),
        4: ("strategy", "msg:DeploymentStrategy"),
        5: ("minReadySeconds", "int"),
        6: ("revisionHistoryLimit", "pint"),
        7: ("paused", "bool"),
        9: ("progressDeadlineSeconds", "pint"),
    },
    "DeploymentStrategy": {1: ("type", "str"), 2: ("rollingUpdate", "msg:RollingUpdate")},
    "RollingUpdate": {1: ("maxUnavailable", "ios"), 2: ("maxSurge", "ios")},
    "LabelSelector": {1: ("matchLabels", "map"), 2: ("matchExpressions", "rmsg:LabelReq")},
    "LabelReq": {1: ("key", "str"), 2: ("operator", "str"), 3: ("values", "rstr")},
    "PodTemplateSpec": {1: ("metadata", "msg:ObjectMeta"), 2: ("spec", "msg:PodSpec")},
    "Pod": {
        1: ("metadata", "msg:ObjectMeta"),
        2: ("spec", "msg:PodSpec"),
        3: ("status", "msg:Empty"),
    },
    "PodSpec": {
        2: ("containers", "rmsg:Container"),
        3: ("restartPolicy", "str"),
        4: ("terminationGracePeriodSeconds", "pint"),
        6: ("dnsPolicy", "str"),
        7: ("nodeSelector", "map"),
        8: ("serviceAccountName", "str"),
        10: ("nodeName", "str"),
        14: ("securityContext", "msg:Empty"),
        19: ("schedulerName", "str"),
        20: ("initContainers", "rmsg:Container"),
    },
    "Container": {
        1: ("name", "str"),
        2: ("image", "str"),
        3: ("command", "rstr"),
        4: ("args", "rstr"),
        5: ("workingDir", "str"),
        6: ("ports", "rmsg:ContainerPort"),
        7: ("env", "rmsg:EnvVar"),
        8: ("resources", "msg:Resources"),
        13: ("terminationMessagePath", "str"),
        14: ("imagePullPolicy", "str"),
        16: ("stdin", "bool"),
        17: ("stdinOnce", "bool"),
        18: ("tty", "bool"),
        20: ("terminationMessagePolicy", "str"),
    },
    "ContainerPort": {
        1: ("name", "str"),
        2: ("hostPort", "int"),
        3: ("containerPort", "int"),
        4: ("protocol", "str"),
        5: ("hostIP", "str"),
    },
    "EnvVar": {1: ("name", "str"), 2: ("value", "str")},
    "Resources": {1: ("limits", "mapq"), 2: ("requests", "mapq")},
    "IntOrString": {1: ("type", "int"), 2: ("intVal", "int"), 3: ("strVal", "str")},
    "Quantity": {1: ("string", "str")},
}
KINDS = {"Namespace", "ConfigMap", "Secret", "ServiceAccount", "Deployment", "Pod"}


def _unsupported(detail: str) -> StatusError:
    return StatusError(
        415,
        "UnsupportedMediaType",
        f"envtest cannot decode this protobuf body ({detail}); send application/json",
    )


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise _unsupported("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _fields(buf: bytes) -> list[tuple[int, int, Any]]:
    out: list[tuple[int, int, Any]] = []
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        num, wt = key >> 3, key & 7
        val: Any
        if wt == 0:
            val, pos = _varint(buf, pos)
        elif wt == 2:
            size, pos = _varint(buf, pos)
            val, pos = buf[pos : pos + size], pos + size
        elif wt == 1:
            val, pos = struct.unpack_from("<q", buf, pos)[0], pos + 8
        elif wt == 5:
            val, pos = struct.unpack_from("<i", buf, pos)[0], pos + 4
        else:
            raise _unsupported(f"wire type {wt}")
        out.append((num, wt, val))
    return out


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def decode_message(name: str, buf: bytes) -> dict[str, Any]:
    spec = MESSAGES[name]
    out: dict[str, Any] = {}
    for num, _wt, val in _fields(buf):
        if num not in spec:
            if val in (0, b"") or (isinstance(val, bytes | bytearray) and not val):
                continue  # gogo-protobuf always writes zero values of non-pointer fields
            raise _unsupported(f"field {num} of {name}")
        key, kind = spec[num]
        if kind in ("str", "int", "bool") and not val and name != "Time":
            continue  # zero value of a non-pointer field: omitted in JSON (omitempty)
        if kind == "str":
            out[key] = bytes(val).decode()
        elif kind in ("int", "pint"):
            out[key] = _signed(int(val))
        elif kind in ("bool", "pbool"):
            out[key] = bool(val)
        elif kind == "bytes":
            out[key] = bytes(val)
        elif kind == "time":
            # metav1.Time as JSON; envtest does not import the runtime (kube.rfc3339) it tests
            t = decode_message("Time", val)
            if not t.get("seconds"):
                continue
            out[key] = datetime.fromtimestamp(t.get("seconds", 0), UTC).strftime(
                "%Y-%m-%dT%H:%M:%SZ"
            )
        elif kind == "ios":
            ios = decode_message("IntOrString", val)
            out[key] = ios.get("strVal", "") if ios.get("type") == 1 else ios.get("intVal", 0)
        elif kind in ("map", "mapb", "mapq"):
            entry = {n: v for n, _w, v in _fields(val)}
            k = bytes(entry.get(1, b"")).decode()
            raw = bytes(entry.get(2, b""))
            if kind == "map":
                value: Any = raw.decode()
            elif kind == "mapb":
                value = base64.b64encode(raw).decode()
            else:
                value = decode_message("Quantity", raw).get("string", "")
            out.setdefault(key, {})[k] = value
        elif kind == "rstr":
            out.setdefault(key, []).append(bytes(val).decode())
        elif kind.startswith("rmsg:"):
            out.setdefault(key, []).append(decode_message(kind[5:], val))
        elif kind.startswith("msg:"):
            out[key] = decode_message(kind[4:], val)
    return out


def decode(body: bytes) -> dict[str, Any]:
    """The JSON form of a ``k8s\\0``-prefixed protobuf object of a supported kind."""
    if not body.startswith(MAGIC):
        raise _unsupported("missing k8s protobuf prefix")
    unknown = decode_message("Unknown", body[len(MAGIC) :])
    tm = unknown.get("typeMeta") or {}
    kind = tm.get("kind", "")
    if kind not in KINDS:
        raise _unsupported(f"kind {kind!r}")
    obj = decode_message(kind, unknown.get("raw", b""))
    return {"apiVersion": tm.get("apiVersion", ""), "kind": kind, **obj}
