"""The fake decision server honours the Custom provider contract and each failure mode."""

from __future__ import annotations

import httpx
import pytest

from llmscaler_runtime.testkit import API_VERSION, DecisionServer, FailureMode
from llmscaler_runtime.testkit.decision_server import HUGE_BODY_BYTES

pytestmark = pytest.mark.integration


def _get(server: DecisionServer, service_id: str = "svc", **kw: object) -> httpx.Response:
    return httpx.get(f"{server.url}/decisions", params={"serviceId": service_id}, timeout=5, **kw)


def test_contract_reply_and_request_recording(decision_server: DecisionServer) -> None:
    decision_server.set_decision("svc", 3, namespace="modelforge")
    decision_server.set_decision("other", 9, namespace="modelforge")
    decision_server.set_decision("svc", 5, namespace="modelforge")  # replaces, not appends
    reply = _get(decision_server, headers={"Authorization": "Bearer t0k"})
    assert reply.status_code == 200
    assert reply.json() == {
        "apiVersion": API_VERSION,
        "decisions": [{"namespace": "modelforge", "serviceId": "svc", "replicas": {"active": 5}}],
    }
    [recorded] = decision_server.requests
    assert recorded.method == "GET" and recorded.path == "/decisions"
    assert recorded.service_id == "svc"
    assert recorded.headers["authorization"] == "Bearer t0k"

    decision_server.filter_by_service_id = False
    assert len(_get(decision_server).json()["decisions"]) == 2
    assert httpx.get(f"{decision_server.url}/elsewhere").status_code == 404


def test_raw_decisions_are_served_verbatim(decision_server: DecisionServer) -> None:
    decision_server.set_decisions([{"serviceId": "svc", "replicas": {}}])
    assert _get(decision_server).json()["decisions"] == [{"serviceId": "svc", "replicas": {}}]


@pytest.mark.parametrize(
    ("mode", "status", "check"),
    [
        (FailureMode.HTTP_500, 500, lambda r: r.json()["error"]),
        (FailureMode.GARBAGE, 200, lambda r: r.content.startswith(b"\x00")),
        (FailureMode.HTML, 200, lambda r: r.headers["content-type"] == "text/html"),
        (FailureMode.HUGE, 200, lambda r: len(r.content) > HUGE_BODY_BYTES),
        (FailureMode.WRONG_API_VERSION, 200, lambda r: r.json()["apiVersion"] != API_VERSION),
    ],
)
def test_failure_modes(
    decision_server: DecisionServer, mode: FailureMode, status: int, check: object
) -> None:
    decision_server.set_decision("svc", 2)
    decision_server.set_mode(mode)
    reply = _get(decision_server)
    assert reply.status_code == status
    assert callable(check) and check(reply)


def test_down_refuses_then_recovers_on_the_same_port(decision_server: DecisionServer) -> None:
    decision_server.set_decision("svc", 4)
    url = decision_server.url
    decision_server.set_mode(FailureMode.DOWN)
    with pytest.raises(httpx.ConnectError):
        _get(decision_server)
    decision_server.set_mode(FailureMode.RESET)
    assert decision_server.url == url
    with pytest.raises(httpx.RemoteProtocolError):
        _get(decision_server)
    decision_server.set_mode(FailureMode.NONE)
    assert _get(decision_server).json()["decisions"][0]["replicas"]["active"] == 4


def test_slow_mode_delays_the_answer(decision_server: DecisionServer) -> None:
    decision_server.set_mode(FailureMode.SLOW)
    decision_server.slow_seconds = 2.0
    with pytest.raises(httpx.ReadTimeout):
        httpx.get(f"{decision_server.url}/decisions", params={"serviceId": "s"}, timeout=0.3)
    assert decision_server.wait_for_requests(1, timeout=1)
