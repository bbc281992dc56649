"""Unit tests of the embedded API server's pure parts: selectors, patches, field sets, schemas,
and the in-process Storage API the simulator and garbage collector use."""

from __future__ import annotations

import threading
import time

import pytest

from llmscaler_runtime.envtest import managed, patch, schema
from llmscaler_runtime.envtest.errors import StatusError
from llmscaler_runtime.envtest.registry import Registry
from llmscaler_runtime.envtest.selectors import parse_field_selector, parse_label_selector
from llmscaler_runtime.envtest.storage import Storage

DEPLOY = Registry().by_kind("apps/v1", "Deployment")


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ("a=b", {"a": "b"}, True),
        ("a==b", {"a": "c"}, False),
        ("a!=b", {}, True),
        ("a in (x, y)", {"a": "y"}, True),
        ("a notin (x)", {}, True),
        ("a", {"a": ""}, True),
        ("!a", {"a": "1"}, False),
        ("a=1,b in (2)", {"a": "1", "b": "2"}, True),
    ],
)
def test_label_selector_grammar(selector: str, labels: dict[str, str], expected: bool) -> None:
    """Label selectors: equality and set-based requirements are ANDed."""
    assert parse_label_selector(selector)(labels) is expected


def test_label_selector_rejects_garbage() -> None:
    """An unparsable selector is a 400 BadRequest."""
    with pytest.raises(StatusError) as info:
        parse_label_selector("a in x")
    assert info.value.code == 400


def test_field_selector_unknown_field() -> None:
    """Unsupported field selector labels are a 400 naming the field."""
    with pytest.raises(StatusError) as info:
        parse_field_selector("spec.foo=1", frozenset({"metadata.name"}))
    assert info.value.message == "field label not supported: spec.foo"


def test_merge_patch_rfc7386() -> None:
    """JSON merge patch: objects merge, null deletes, lists replace."""
    assert patch.merge_patch(
        {"a": {"b": 1, "c": 2}, "l": [1, 2]}, {"a": {"b": None, "d": 3}, "l": [3]}
    ) == {"a": {"c": 2, "d": 3}, "l": [3]}


def test_strategic_merge_patch_lists_by_key() -> None:
    """SMP: containers merge by name, $patch: delete removes, env merges by name, finalizers union,
    $setElementOrder reorders, other lists replace."""
    live = {
        "metadata": {"finalizers": ["a"]},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {"name": "x", "image": "1", "env": [{"name": "A", "value": "1"}]},
                        {"name": "y", "image": "1"},
                    ],
                    "tolerations": [{"key": "k"}],
                }
            }
        },
    }
    p = {
        "metadata": {"finalizers": ["b"]},
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "y"}, {"name": "x"}],
                    "containers": [
                        {"name": "x", "env": [{"name": "B", "value": "2"}]},
                        {"name": "z", "$patch": "delete"},
                        {"name": "y", "$patch": "delete"},
                    ],
                    "tolerations": [{"key": "j"}],
                }
            }
        },
    }
    out = patch.strategic_merge_patch(DEPLOY, live, p)
    spec = out["spec"]["template"]["spec"]
    assert [c["name"] for c in spec["containers"]] == ["x"]
    assert spec["containers"][0]["env"] == [
        {"name": "A", "value": "1"},
        {"name": "B", "value": "2"},
    ]
    assert spec["containers"][0]["image"] == "1"
    assert spec["tolerations"] == [{"key": "j"}]
    assert out["metadata"]["finalizers"] == ["a", "b"]


def test_json_patch_failure_is_invalid() -> None:
    """A JSON patch whose test op fails is rejected (422), not applied partially."""
    with pytest.raises(StatusError) as info:
        patch.json_patch({"a": 1}, [{"op": "test", "path": "/a", "value": 2}])
    assert info.value.code == 422


def test_fields_v1_roundtrip_and_paths() -> None:
    """Field sets encode to fieldsV1 (f:/k:/v: keys, '.' for members with children) and back."""
    obj = {
        "metadata": {"labels": {"a": "1"}, "finalizers": ["x"]},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}},
    }
    fs = managed.fields_of(DEPLOY, obj, "main")
    tree = managed.to_fields_v1(fs)
    assert tree["f:metadata"]["f:finalizers"] == {'v:"x"': {}}
    item = tree["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"c"}']
    assert item == {".": {}, "f:image": {}, "f:name": {}}
    assert managed.from_fields_v1(tree) == fs
    path = ("f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"c"}', "f:image")
    assert managed.render_path(path) == '.spec.template.spec.containers[name="c"].image'


def test_apply_conflict_message_and_force() -> None:
    """SSA conflicts name the other manager and the field; force transfers ownership."""
    live = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"replicas": 1},
    }
    managed.track_update(DEPLOY, None, live, "kubectl-client-side-apply", "", "apps/v1")
    applied = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"replicas": 3},
    }
    with pytest.raises(StatusError) as info:
        managed.apply(DEPLOY, live, applied, "op", "", False, "apps/v1")
    assert info.value.message == (
        "Apply failed with 1 conflict: conflict with "
        '"kubectl-client-side-apply" using apps/v1: .spec.replicas'
    )
    out = managed.apply(DEPLOY, live, applied, "op", "", True, "apps/v1")
    owners = {e["manager"]: e["fieldsV1"] for e in out["metadata"]["managedFields"]}
    assert out["spec"]["replicas"] == 3 and owners == {"op": {"f:spec": {"f:replicas": {}}}}


def test_schema_defaults_prune_validate() -> None:
    """Structural schema: nested defaults, pruning unless preserve-unknown-fields, sorted errors."""
    s = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["n"],
                "properties": {
                    "n": {"type": "integer", "minimum": 1},
                    "o": {
                        "type": "object",
                        "default": {},
                        "properties": {"d": {"type": "string", "default": "x"}},
                    },
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                },
            }
        },
    }
    obj = {"apiVersion": "v", "kind": "K", "metadata": {}, "spec": {"junk": 1, "free": {"k": 1}}}
    assert schema.prune(s, obj) == ["spec.junk"]
    schema.apply_defaults(s, obj)
    assert obj["spec"]["o"] == {"d": "x"} and obj["spec"]["free"] == {"k": 1}
    assert [str(e) for e in schema.validate(s, obj)] == ["spec.n: Required value"]
    obj["spec"]["n"] = 0
    assert [str(e) for e in schema.validate(s, obj)] == [
        "spec.n: Invalid value: 0: spec.n in body should be greater than or equal to 1"
    ]


def test_cel_runtime_errors_are_worded_as_kube_apiserver_words_them() -> None:
    """A rule that errors rather than returns false reports the schema's type as the value and
    "<error> evaluating rule: <message>", as kube-apiserver v1.36 does; a zone celpy cannot
    load reads as cel-go's "unknown time zone"."""
    zone = {
        "type": "string",
        "x-kubernetes-validations": [
            {
                "rule": "timestamp('2000-01-01T00:00:00Z').getHours(self) >= 0",
                "message": "must be an IANA time zone",
            }
        ],
    }
    bare = {"type": "string", "x-kubernetes-validations": [{"rule": "self.size() == int(self)"}]}
    s = {"type": "object", "properties": {"tz": zone, "bare": bare}}
    assert schema.validate(s, {"tz": "Europe/Paris"}) == []
    assert [str(e) for e in schema.validate(s, {"tz": "Mars/Olympus"})] == [
        'tz: Invalid value: "string": unknown time zone Mars/Olympus evaluating rule: '
        "must be an IANA time zone"
    ]
    assert [str(e) for e in schema.validate(s, {"tz": "../etc/passwd"})] == [
        'tz: Invalid value: "string": unknown time zone ../etc/passwd evaluating rule: '
        "must be an IANA time zone"
    ]
    assert [str(e) for e in schema.validate(s, {"tz": "Europe"})] == [
        'tz: Invalid value: "string": is a directory evaluating rule: must be an IANA time zone'
    ]
    # without a message, the rule itself is quoted
    (error,) = schema.validate(s, {"bare": "x"})
    assert str(error).startswith('bare: Invalid value: "string": ')
    assert str(error).endswith("evaluating rule: self.size() == int(self)")


def test_storage_listeners_in_commit_order() -> None:
    """Listeners get every committed change, in commit order, off the writer's thread."""
    st = Storage()
    seen: list[tuple[str, str, str]] = []
    done = threading.Event()
    writer = threading.get_ident()
    threads: set[int] = set()

    def on_event(etype: str, obj: dict) -> None:
        threads.add(threading.get_ident())
        seen.append((etype, obj["metadata"]["name"], obj["metadata"]["resourceVersion"]))
        if etype == "DELETED":
            done.set()

    st.add_listener(on_event)
    st.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})
    st.patch_merge("v1", "ConfigMap", "default", "a", {"data": {"k": "v"}})
    st.delete("v1", "ConfigMap", "default", "a")
    assert done.wait(5)
    assert [s[0] for s in seen] == ["ADDED", "MODIFIED", "DELETED"]
    assert [int(s[2]) for s in seen] == sorted(int(s[2]) for s in seen)
    assert writer not in threads
    st.close()


def test_storage_returns_private_copies_and_status_update() -> None:
    """Objects handed out are copies; update(subresource='status') changes only status."""
    st = Storage()
    st.create(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d"},
            "spec": {
                "selector": {"matchLabels": {"a": "b"}},
                "template": {
                    "metadata": {"labels": {"a": "b"}},
                    "spec": {"containers": [{"name": "c", "image": "i"}]},
                },
            },
        }
    )
    got = st.get("apps/v1", "Deployment", "default", "d")
    got["spec"]["replicas"] = 50
    got["status"] = {"replicas": 1}
    st.update(got, subresource="status")
    again = st.get("apps/v1", "Deployment", "default", "d")
    assert again["spec"]["replicas"] == 1 and again["status"] == {"replicas": 1}
    with pytest.raises(StatusError) as info:
        st.update(got)  # stale resourceVersion
    assert info.value.code == 409
    items, rv = st.list("apps/v1", "Deployment", "default", label_selector="x=y")
    assert items == [] and int(rv) >= int(again["metadata"]["resourceVersion"])
    st.close()


def test_storage_watch_history_bound() -> None:
    """Resuming a watch from before the bounded history is 410 Expired."""
    st = Storage(watch_history=2)
    rt = st.registry.by_kind("v1", "ConfigMap")
    for i in range(4):
        st.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}"}})
    with pytest.raises(StatusError) as info:
        st.watch_rt(rt, "default", resource_version="1")
    assert info.value.code == 410 and info.value.message.startswith("too old resource version")
    w, initial = st.watch_rt(rt, "default", resource_version=str(st.resource_version - 1))
    assert [e[0] for e in initial] == ["ADDED"]
    st.stop_watch(w)
    started = time.monotonic()
    st.close()
    assert time.monotonic() - started < 1


def test_faults_seeded_rates_counts_and_latency() -> None:
    """Error rates are reproducible from the seed; count-limited rules expire; latency adds up
    per matching rule; bad probabilities are refused."""
    from llmscaler_runtime.envtest.faults import Faults

    def pattern(seed: int) -> list[int | None]:
        f = Faults(seed)
        f.add_error(r"/pods", code=500, probability=0.5)
        return [f.error_for("GET", "/api/v1/pods") for _ in range(40)]

    first = pattern(7)
    assert first == pattern(7) and {500, None} == set(first)
    f = Faults()
    f.add_error(r"/leases/", code=503, count=2, methods={"put"})
    assert f.error_for("GET", "/leases/x") is None
    assert [f.error_for("PUT", "/leases/x") for _ in range(3)] == [503, 503, None]
    f.add_latency(r"/a", 0.1)
    f.add_latency(r"/a/b", 0.2)
    assert f.delay_for("GET", "/a/b") == pytest.approx(0.3)
    with pytest.raises(ValueError):
        f.add_error(".", probability=1.5)
    f.conflict_next_writes(1)
    assert f.take_conflict() and not f.take_conflict()


def _pb_field(num: int, payload: bytes) -> bytes:
    return bytes([num << 3 | 2, len(payload)]) + payload


def test_protobuf_envelope_decoding_and_unknown_fields() -> None:
    """The protobuf envelope decodes known kinds; zero-valued unknown fields are skipped but a
    set unknown field is a 415 rather than silent data loss."""
    from llmscaler_runtime.envtest import protobuf

    meta = _pb_field(1, b"cm") + _pb_field(4, b"")  # name, empty selfLink
    entry = _pb_field(1, b"k") + _pb_field(2, b"v")
    raw = _pb_field(1, meta) + _pb_field(2, entry)
    type_meta = _pb_field(1, b"v1") + _pb_field(2, b"ConfigMap")
    body = protobuf.MAGIC + _pb_field(1, type_meta) + _pb_field(2, raw)
    assert protobuf.decode(body) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm"},
        "data": {"k": "v"},
    }
    bad_raw = raw + bytes([0xF8, 0x06, 1])  # field 111, varint 1
    with pytest.raises(StatusError) as info:
        protobuf.decode(protobuf.MAGIC + _pb_field(1, type_meta) + _pb_field(2, bad_raw))
    assert info.value.code == 415
