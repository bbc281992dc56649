"""Security of the metric path with the real manager process (issue 12 part 4).

One manager, started with ``--allowed-server-addresses=127.0.0.0/8,!localhost``, and a decision
server that answers only requests carrying the right ``Authorization`` header (anything else
gets a 401 whose body holds a canary). Checked:

* a scaler whose header comes from a Secret in its namespace reaches the server and scales; a
  scaler created before its Secret reports ``FailedGetSecret`` and holds until it exists;
* a wrong token gets the 401, and the 401's body is nowhere in status or Events;
* a scaler pointing at a refused address (``localhost``) reports ``ServerAddressNotAllowed``
  and the server never sees a request for it, while the others keep scaling;
* the token itself is in none of: the manager's log (at debug level), the Events, the status,
  the metrics.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from llmscaler_runtime.scaling.providers.decision import DECISION_API_VERSION
from llmscaler_runtime.testkit._http import LocalHTTPServer, LoopbackService, send
from test.integration.e2e.conftest import LLMSCALER, deployment, scaler
from test.integration.e2e.harness import ManagerProcess, wait_for

pytestmark = [pytest.mark.integration]

TOKEN = "canary-token-93c1f0e2"  # the Secret's value: only the decision server may see it
BODY_CANARY = "body-canary-4d2b77"  # what the server says when refusing: must not be echoed
ALLOWED = "127.0.0.0/8,!localhost"


class AuthDecisionServer(LoopbackService):
    """``/decisions?serviceId=...``: 401 (with a canary body) unless ``Authorization`` is
    ``Bearer TOKEN``; otherwise the decision set for that serviceId. Records every request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.decisions: dict[str, int] = {}
        self.requests: list[tuple[str, str | None, str | None]] = []  # host, serviceId, auth
        self._server = LocalHTTPServer(self._handle, name="auth-decision-server")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def seen(self) -> list[tuple[str, str | None, str | None]]:
        with self._lock:
            return list(self.requests)

    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(request.path)
        service = (parse_qs(parts.query).get("serviceId") or [None])[0]
        auth = request.headers.get("Authorization")
        with self._lock:
            self.requests.append((request.headers.get("Host", ""), service, auth))
            active = self.decisions.get(service or "")
        if auth != f"Bearer {TOKEN}":
            body = f"<html>denied: {BODY_CANARY}</html>".encode()
            send(request, 401, body, "text/html")
            return
        doc = {
            "apiVersion": DECISION_API_VERSION,
            "decisions": [{"serviceId": service, "replicas": {"active": active}}]
            if active is not None
            else [],
        }
        send(request, 200, json.dumps(doc).encode(), "application/json")


@pytest.fixture(scope="module")
def manager(envtest: Any, kubeconfig_path: str) -> Iterator[ManagerProcess]:
    proc = ManagerProcess(kubeconfig_path, "--allowed-server-addresses", ALLOWED).start()
    try:
        proc.wait_ready(timeout=90)
        yield proc
    finally:
        code = proc.stop()
        assert code == 0, f"manager did not exit cleanly on SIGTERM ({code}):\n{proc.logs()}"


@pytest.fixture
def server() -> Iterator[AuthDecisionServer]:
    with AuthDecisionServer() as s:
        yield s


def _secret(name: str, namespace: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }


def _scaler(name: str, ns: str, address: str, service: str, **spec: Any) -> dict[str, Any]:
    return scaler(
        name,
        ns,
        name,
        address,
        metricProvider="Custom",
        customProvider={"serviceId": service},
        minReplicas=1,
        maxReplicas=5,
        serverHeadersFrom=[
            {
                "name": "Authorization",
                "valueFrom": {"secretKeyRef": {"name": "decision-auth", "key": "authorization"}},
            }
        ],
        **spec,
    )


def _condition(kube: Any, ns: str, name: str, ctype: str) -> dict[str, Any] | None:
    obj = kube.get(LLMSCALER, "LLMScaler", name, ns)
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype:
            return dict(c)
    return None


def _reason(kube: Any, ns: str, name: str, ctype: str = "ScalingActive") -> str | None:
    cond = _condition(kube, ns, name, ctype)
    return None if cond is None else str(cond["reason"])


def _replicas(kube: Any, ns: str, name: str) -> int:
    return int(kube.get("apps/v1", "Deployment", name, ns)["spec"]["replicas"])


def _ready(kube: Any, ns: str, name: str, n: int) -> bool:
    return kube.get("apps/v1", "Deployment", name, ns).get("status", {}).get("readyReplicas") == n


def test_secret_headers_and_allowed_addresses_with_the_real_manager(
    kube: Any, namespace: str, manager: ManagerProcess, server: AuthDecisionServer
) -> None:
    ns = namespace
    for app in ("authed", "wrong-token", "refused"):
        kube.create(deployment(app, ns, 1))
    for app in ("authed", "wrong-token", "refused"):
        wait_for(lambda app=app: _ready(kube, ns, app, 1), timeout=60, what=f"{app} ready")
    server.decisions.update({"svc-authed": 3, "svc-wrong": 4, "svc-refused": 5})

    # 1. created before its Secret: FailedGetSecret, held at 1 replica, nothing sent
    kube.create(_scaler("authed", ns, server.url, "svc-authed"))
    wait_for(
        lambda: _reason(kube, ns, "authed") == "FailedGetSecret",
        timeout=60,
        what="FailedGetSecret before the Secret exists",
        diagnostics=manager.logs,
    )
    assert _replicas(kube, ns, "authed") == 1
    assert not [r for r in server.seen() if r[1] == "svc-authed"]

    # 2. the Secret appears: the header reaches the server and the decision is applied
    kube.create(_secret("decision-auth", ns, authorization=f"Bearer {TOKEN}\n"))
    wait_for(
        lambda: _replicas(kube, ns, "authed") == 3,
        timeout=60,
        what="scale-up to the authorised decision (3)",
        diagnostics=manager.logs,
    )
    assert (f"127.0.0.1:{server.port}", "svc-authed", f"Bearer {TOKEN}") in server.seen()
    wait_for(
        lambda: _reason(kube, ns, "authed", "Ready") == "Scaling",
        timeout=60,
        what="Ready=Scaling",
    )

    # 3. a wrong token: the 401 holds the fleet, its body is not echoed
    kube.create(_secret("wrong-auth", ns, authorization="Bearer nope"))
    wrong = _scaler("wrong-token", ns, server.url, "svc-wrong")
    wrong["spec"]["serverHeadersFrom"][0]["valueFrom"]["secretKeyRef"]["name"] = "wrong-auth"
    kube.create(wrong)
    wait_for(
        lambda: _reason(kube, ns, "wrong-token") == "FailedGetDecision",
        timeout=60,
        what="FailedGetDecision on a 401",
        diagnostics=manager.logs,
    )
    message = _condition(kube, ns, "wrong-token", "ScalingActive")["message"]  # type: ignore[index]
    assert "401" in message and BODY_CANARY not in message, message
    assert _replicas(kube, ns, "wrong-token") == 1

    # 4. a refused address: a condition and an Event, no request at all
    refused_url = server.url.replace("127.0.0.1", "localhost")
    kube.create(_scaler("refused", ns, refused_url, "svc-refused"))
    wait_for(
        lambda: _reason(kube, ns, "refused") == "ServerAddressNotAllowed",
        timeout=60,
        what="ServerAddressNotAllowed",
        diagnostics=manager.logs,
    )
    cond = _condition(kube, ns, "refused", "Ready")
    assert cond is not None and cond["status"] == "False"
    assert "no request was sent" in cond["message"] and refused_url in cond["message"]

    def events() -> list[dict[str, Any]]:
        return list(kube.list("v1", "Event", ns)["items"])

    def reasons(name: str) -> set[str]:
        return {e["reason"] for e in events() if e["involvedObject"].get("name") == name}

    wait_for(lambda: "ServerAddressNotAllowed" in reasons("refused"), timeout=30, what="Event")
    assert "FailedGetSecret" in reasons("authed") and "SuccessfulRescale" in reasons("authed")
    assert "FailedGetDecision" in reasons("wrong-token")
    # the others kept working while one was refused; the refused one sent nothing
    assert _replicas(kube, ns, "authed") == 3 and _replicas(kube, ns, "refused") == 1
    assert not [r for r in server.seen() if r[1] == "svc-refused" or "localhost" in r[0]]

    # 5. the token and the refusal body are nowhere but on the wire
    statuses = [
        kube.get(LLMSCALER, "LLMScaler", n, ns).get("status") for n in ("authed", "wrong-token")
    ]
    for where, text in {
        "status": json.dumps(statuses),
        "Events": json.dumps(events()),
        "manager log": manager.logs(tail=1_000_000),
        "metrics": manager.metrics(),
    }.items():
        assert TOKEN not in text, f"the Secret's value is in the {where}"
        assert BODY_CANARY not in text, f"a reply body is in the {where}"
