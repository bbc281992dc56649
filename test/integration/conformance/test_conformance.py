"""Conformance: every check runs on the embedded server and on kube-apiserver, answers compared.

A check that answers differently fails, unless its difference is listed in ``DOCUMENTED`` with
the reason (and in the fidelity notes of ``llmscaler_runtime.envtest``). A listed check must
still differ: once the emulator is fixed the entry has to go, so the table never goes stale.
"""

from __future__ import annotations

import difflib
import json
import re
import secrets
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

import llmscaler_runtime.envtest

from . import checks_api, checks_controllers, checks_ssa, checks_watch
from .framework import AREAS, CHECKS, Report, Result, Server

pytestmark = pytest.mark.integration

assert checks_api and checks_controllers and checks_ssa and checks_watch  # they register checks

#: Check -> why the embedded server answers differently (and why that is not fixed).
DOCUMENTED: dict[str, str] = {
    "explain_deployment_replicas": (
        "built-in kinds are described by an abridged OpenAPI schema (the fields controllers "
        "and tests use, shorter descriptions), not kube-apiserver's generated one"
    ),
    "list_paging_bad_continue_token": (
        "continue tokens are opaque and encoded differently, so a malformed one is refused "
        "(400) with another message"
    ),
    "list_selector_errors": (
        "label selectors are parsed by a small regular-expression parser: a syntax error is "
        "a 400 as on kube-apiserver, worded differently"
    ),
    "event_v1_seen_as_core": (
        "events.k8s.io/v1 and core/v1 Events are stored separately, not as one resource "
        "under two API versions (llmscaler writes core/v1 Events)"
    ),
}


def _namespace(name: str) -> str:
    return f"cf-{name.replace('_', '-')}"[:56].rstrip("-") + "-" + secrets.token_hex(2)


def _create_namespace(server: Server, name: str) -> None:
    server.ok(
        "POST",
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
    )


def _dump(answer: Any) -> str:
    return json.dumps(answer, indent=1, sort_keys=True, default=str)


@pytest.mark.parametrize("name", list(CHECKS))
def test_check(name: str, servers: tuple[Server, Server], report: Report) -> None:
    ns = _namespace(name)
    for server in servers:
        _create_namespace(server, ns)
    check = CHECKS[name]
    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(check, server, ns) for server in servers]
        answers = [f.result() for f in futures]
    mine, theirs = (_dump(a) for a in answers)
    identical = mine == theirs
    documented = DOCUMENTED.get(name)
    passed = identical != bool(documented)
    report.add(Result(name, AREAS[name], identical, documented, passed))
    if documented:
        assert not identical, (
            f"{name} now answers like kube-apiserver: remove it from DOCUMENTED (and from the "
            "fidelity notes of llmscaler_runtime.envtest)"
        )
        return
    diff = "".join(
        difflib.unified_diff(
            mine.splitlines(True), theirs.splitlines(True), "embedded", "kube-apiserver", n=3
        )
    )
    assert identical, f"{name}: the embedded server answers differently\n{diff}"


def test_documented_differences_are_listed_in_the_envtest_docs() -> None:
    """Each documented difference names a real check and appears, with its reason, in the
    fidelity notes of the embedded server's docstring."""
    doc = re.sub(r"\s+", " ", llmscaler_runtime.envtest.__doc__ or "")
    for name, reason in DOCUMENTED.items():
        assert name in CHECKS, f"DOCUMENTED lists {name!r}, which is no check"
        assert f"``{name}``" in doc, f"{name} is not in llmscaler_runtime.envtest's fidelity notes"
        assert reason in doc, f"the reason for {name} differs from the envtest docs"
