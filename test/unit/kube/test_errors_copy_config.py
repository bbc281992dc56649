from __future__ import annotations

import copy
import os
from pathlib import Path

import pytest

from llmscaler_runtime.kube import (
    GVK,
    AlreadyExists,
    ApiError,
    ConfigError,
    Gone,
    TooManyRequests,
    deep_copy,
    error_from_response,
    in_cluster_namespace,
    load_config,
)
from llmscaler_runtime.kube import config as config_mod


def test_error_mapping_prefers_reason_over_code() -> None:
    e = error_from_response(409, b'{"kind":"Status","reason":"AlreadyExists","message":"x"}', None)
    assert isinstance(e, AlreadyExists)
    e = error_from_response(
        0, {"kind": "Status", "code": 410, "reason": "Expired", "message": "old"}
    )
    assert isinstance(e, Gone) and e.status == 410 and e.message == "old"
    e = error_from_response(418, "teapot", None)
    assert type(e) is ApiError and e.message == "teapot"


def test_retry_after_from_header_or_details() -> None:
    e = error_from_response(
        429,
        {"kind": "Status", "reason": "TooManyRequests", "message": "slow"},
        {"retry-after": "3"},
    )
    assert isinstance(e, TooManyRequests) and e.retry_after == 3.0
    e = error_from_response(
        429,
        {
            "kind": "Status",
            "reason": "TooManyRequests",
            "message": "m",
            "details": {"retryAfterSeconds": 2},
        },
        {},
    )
    assert isinstance(e, TooManyRequests) and e.retry_after == 2.0
    e = error_from_response(429, None, {"Retry-After": "garbage"})
    assert isinstance(e, TooManyRequests) and e.retry_after is None


def test_deep_copy_shares_no_containers() -> None:
    obj = {"a": [1, {"b": "c"}], "d": {"e": None, "f": 1.5, "g": True}, "t": (1, 2)}
    cp = deep_copy(obj)
    assert cp == obj
    cp["a"][1]["b"] = "changed"
    cp["d"]["e"] = 1
    assert obj["a"][1]["b"] == "c" and obj["d"]["e"] is None
    assert cp["t"] == (1, 2)


def test_deep_copy_is_faster_than_copy_deepcopy() -> None:
    import timeit

    obj = {
        "metadata": {"name": "x", "labels": {str(i): str(i) for i in range(20)}},
        "spec": {
            "containers": [
                {"name": str(i), "env": [{"name": "a", "value": "b"}]} for i in range(10)
            ]
        },
    }
    ours = min(timeit.repeat(lambda: deep_copy(obj), number=200, repeat=3))
    theirs = min(timeit.repeat(lambda: copy.deepcopy(obj), number=200, repeat=3))
    assert ours < theirs


def test_gvk() -> None:
    assert GVK.from_api_version("apps/v1", "Deployment") == GVK("apps", "v1", "Deployment")
    assert GVK("", "v1", "Pod").api_version == "v1"
    for bad in ("", "a/b/c", "/v1", "apps/"):
        with pytest.raises(ValueError):
            GVK.from_api_version(bad, "X")


KUBECONFIG = """
apiVersion: v1
kind: Config
current-context: {ctx}
contexts:
- name: one
  context: {{cluster: c1, user: u}}
- name: two
  context: {{cluster: c2, user: u}}
clusters:
- name: c1
  cluster: {{server: "http://127.0.0.1:1111"}}
- name: c2
  cluster: {{server: "http://127.0.0.1:2222"}}
users:
- name: u
  user: {{token: abc}}
"""


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setattr(config_mod, "DEFAULT_KUBECONFIG", str(tmp_path / "home-config"))
    monkeypatch.setattr(config_mod, "SERVICE_TOKEN_FILENAME", str(tmp_path / "token"))
    monkeypatch.setattr(config_mod, "SERVICE_CERT_FILENAME", str(tmp_path / "ca.crt"))
    return tmp_path


def test_config_precedence(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    explicit = clean_env / "explicit"
    explicit.write_text(KUBECONFIG.format(ctx="one"))
    env = clean_env / "env"
    env.write_text(KUBECONFIG.format(ctx="two"))
    home = clean_env / "home-config"
    home.write_text(KUBECONFIG.format(ctx="one"))
    (clean_env / "token").write_text("sa-token")
    (clean_env / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\nx\n")
    monkeypatch.setenv("KUBECONFIG", str(env))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")

    assert load_config(str(explicit)).host == "http://127.0.0.1:1111"
    assert load_config(str(explicit), context="two").host == "http://127.0.0.1:2222"
    assert load_config().host == "http://127.0.0.1:2222"
    monkeypatch.delenv("KUBECONFIG")
    cfg = load_config()
    assert cfg.host == "https://10.0.0.1:443"
    assert cfg.get_api_key_with_prefix("BearerToken", alias="authorization").endswith("sa-token")
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST")
    cfg = load_config()
    assert cfg.host == "http://127.0.0.1:1111"
    assert "abc" in cfg.get_api_key_with_prefix("BearerToken", alias="authorization")


def test_config_missing_everywhere_is_clear(clean_env: Path) -> None:
    with pytest.raises(ConfigError, match="no Kubernetes configuration found"):
        load_config()
    with pytest.raises(ConfigError, match="cannot load kubeconfig"):
        load_config(os.fspath(clean_env / "nope"))


def test_deep_copy_handles_non_json_types_and_repeated_references() -> None:
    import collections
    import enum

    class Color(enum.IntEnum):
        RED = 1

    shared = {"x": 1}
    obj = {"a": [shared, shared], "o": collections.OrderedDict(k=[1]), "e": Color.RED}
    cp = deep_copy(obj)
    assert cp == obj and type(cp["o"]) is collections.OrderedDict and cp["e"] is Color.RED
    cp["o"]["k"].append(2)
    assert obj["o"]["k"] == [1]
    plain = deep_copy({"a": [shared, shared]})
    assert plain["a"][0] is not plain["a"][1]  # no hidden aliasing inside a copy either
    assert plain["a"][0] is not shared


def test_in_cluster_namespace_reads_the_service_account_mount(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    sa_file = tmp_path / "namespace"
    monkeypatch.setattr(config_mod, "SERVICE_NAMESPACE_FILENAME", str(sa_file))
    assert in_cluster_namespace() is None  # not in a cluster: no file
    sa_file.write_text("")
    assert in_cluster_namespace() is None  # an empty file is no namespace either
    sa_file.write_text("llm-system\n")
    assert in_cluster_namespace() == "llm-system"
    other = tmp_path / "other"
    other.write_text(" team-a ")
    assert in_cluster_namespace(str(other)) == "team-a"
