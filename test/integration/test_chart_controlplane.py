"""The chart for real: the real helm installs dist/chart into the real control plane, and the real
manager then runs out of cluster as the chart's ServiceAccount, so the real RBAC authorizer
judges every call it makes.

Least privilege is proven from both sides:

* everything the operator does is allowed: it becomes ready, takes its Lease, scales a
  Deployment up (server-side apply of ``spec.replicas``) and down (pod-deletion-cost patches
  first), writes the LLMScaler's status and records Events; kube-apiserver's own count of
  refused requests (``authorization_attempts_total`` with a result other than ``allowed``)
  does not move while it runs, and its log has no Forbidden line;
* what is outside its role is refused: ``kubectl auth can-i`` answers no for a list of verbs the
  role must not have (and yes for the ones it needs), and real requests with its token (delete a
  Deployment, list, watch or change Secrets, take a Lease elsewhere) get 403, each one counted
  by that same metric. Secrets are readable by name only (``get``, for ``serverHeadersFrom``).

The control plane is started here, not by the envtest plugin: helm must install the CRD itself
(an existing CRD without helm's ownership labels would make the install fail), and the refusal
count must belong to this test alone. The workload tier runs because the rollout guard only
scales a Deployment whose status the real Deployment controller has written.
"""

from __future__ import annotations

import base64
import json
import re
import socket
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from llmscaler_runtime.envtest.controlplane.assets import MissingBinaries
from llmscaler_runtime.kube import Client, Forbidden, NotFound
from llmscaler_runtime.scaling.victims import VICTIM_COST
from llmscaler_runtime.testkit.decision_server import DecisionServer
from test.integration.e2e.conftest import LLMSCALER, decided_scaler, deployment, scaler
from test.integration.e2e.harness import ManagerProcess, wait_for
from test.unit.ship.helm import Helm, helm_or_skip

pytestmark = [pytest.mark.integration, pytest.mark.helm, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "dist" / "chart"
CRD_NAME = "llmscalers.autoscaling.modelsphere.dev"
RELEASE, RELEASE_NS = "llmscaler", "llmscaler-system"
APPS_NS, APP = "team-a", "model"
FIELD_MANAGER = "llmscaler-operator"
LEASE_NAME = "llmscaler.autoscaling.modelsphere.dev"
REFUSAL_IN_LOG = re.compile(r"forbidden|unauthorized", re.IGNORECASE)

# (verb, resource, extra kubectl flags): what the operator needs ...
MUST = [
    ("get", "llmscalers.autoscaling.modelsphere.dev", "-A"),
    ("list", "llmscalers.autoscaling.modelsphere.dev", "-A"),
    ("watch", "llmscalers.autoscaling.modelsphere.dev", "-A"),
    ("patch", "llmscalers.autoscaling.modelsphere.dev", f"-n={APPS_NS} --subresource=status"),
    ("update", "llmscalers.autoscaling.modelsphere.dev", f"-n={APPS_NS} --subresource=status"),
    ("list", "deployments.apps", "-A"),
    ("watch", "deployments.apps", "-A"),
    ("patch", "deployments.apps", f"-n={APPS_NS}"),
    ("patch", "statefulsets.apps", f"-n={APPS_NS}"),
    ("list", "pods", f"-n={APPS_NS}"),
    ("patch", "pods", f"-n={APPS_NS}"),
    ("create", "events", f"-n={APPS_NS}"),
    ("patch", "events", f"-n={APPS_NS}"),
    ("create", "events.events.k8s.io", f"-n={APPS_NS}"),
    ("get", "leases.coordination.k8s.io", f"-n={RELEASE_NS}"),
    ("create", "leases.coordination.k8s.io", f"-n={RELEASE_NS}"),
    ("update", "leases.coordination.k8s.io", f"-n={RELEASE_NS}"),
    # serverHeadersFrom: one Secret by name (rbac.secretHeaders, on by default)
    ("get", "secrets", f"-n={APPS_NS}"),
]
# ... and what it must not be able to do.
MUST_NOT = [
    ("*", "*", "-A"),
    ("create", "llmscalers.autoscaling.modelsphere.dev", f"-n={APPS_NS}"),
    ("update", "llmscalers.autoscaling.modelsphere.dev", f"-n={APPS_NS}"),
    ("patch", "llmscalers.autoscaling.modelsphere.dev", f"-n={APPS_NS}"),
    ("delete", "llmscalers.autoscaling.modelsphere.dev", f"-n={APPS_NS}"),
    ("create", "deployments.apps", f"-n={APPS_NS}"),
    ("update", "deployments.apps", f"-n={APPS_NS}"),
    ("delete", "deployments.apps", f"-n={APPS_NS}"),
    ("update", "deployments.apps", f"-n={APPS_NS} --subresource=scale"),
    ("create", "pods", f"-n={APPS_NS}"),
    ("delete", "pods", f"-n={APPS_NS}"),
    ("create", "pods", f"-n={APPS_NS} --subresource=exec"),
    ("create", "pods", f"-n={APPS_NS} --subresource=eviction"),
    ("list", "secrets", "-A"),
    ("list", "secrets", f"-n={APPS_NS}"),
    ("watch", "secrets", "-A"),
    ("watch", "secrets", f"-n={APPS_NS}"),
    ("create", "secrets", f"-n={APPS_NS}"),
    ("update", "secrets", f"-n={APPS_NS}"),
    ("patch", "secrets", f"-n={APPS_NS}"),
    ("delete", "secrets", f"-n={APPS_NS}"),
    ("get", "configmaps", f"-n={APPS_NS}"),
    ("list", "events", f"-n={APPS_NS}"),
    ("delete", "events", f"-n={APPS_NS}"),
    ("get", "leases.coordination.k8s.io", f"-n={APPS_NS}"),
    ("update", "leases.coordination.k8s.io", "-n=kube-system"),
    ("create", "serviceaccounts", f"-n={RELEASE_NS} --subresource=token"),
    ("impersonate", "serviceaccounts", f"-n={RELEASE_NS}"),
    ("create", "rolebindings.rbac.authorization.k8s.io", f"-n={RELEASE_NS}"),
    ("bind", "clusterroles.rbac.authorization.k8s.io", ""),
    ("escalate", "clusterroles.rbac.authorization.k8s.io", ""),
    ("update", "customresourcedefinitions.apiextensions.k8s.io", ""),
    ("list", "nodes", ""),
    ("delete", "namespaces", ""),
]


@pytest.fixture(scope="module")
def helm() -> Iterator[Helm]:
    yield from helm_or_skip()


@pytest.fixture(scope="module")
def cp(helm: Helm) -> Iterator[Any]:
    from llmscaler_runtime.envtest.controlplane import ControlPlane

    try:
        plane = ControlPlane(workloads=True, pod_ready_seconds=0.5, startup_timeout=240)
    except MissingBinaries as exc:
        pytest.skip(str(exc))
    with plane:
        yield plane


@pytest.fixture(scope="module")
def admin(cp: Any) -> Iterator[Client]:
    with cp.client() as client:
        yield client


@pytest.fixture(scope="module")
def release(cp: Any, helm: Helm, admin: Client) -> dict[str, Any]:
    """`helm install` of the chart with its defaults; the rendered objects, by kind and name."""
    out = helm.run(
        "install",
        RELEASE,
        str(CHART),
        f"--namespace={RELEASE_NS}",
        "--create-namespace",
        f"--kubeconfig={cp.kubeconfig_path}",
        "--timeout=5m",
        timeout=360,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    manifest = helm.run(
        "get",
        "manifest",
        RELEASE,
        f"--namespace={RELEASE_NS}",
        f"--kubeconfig={cp.kubeconfig_path}",
    )
    assert manifest.returncode == 0, manifest.stderr
    docs = [d for d in yaml.safe_load_all(manifest.stdout) if d]
    return {"docs": docs, "by_kind": {(d["kind"], d["metadata"]["name"]): d for d in docs}}


def _service_account(release: dict[str, Any]) -> str:
    [account] = [name for kind, name in release["by_kind"] if kind == "ServiceAccount"]
    return str(account)


@pytest.fixture(scope="module")
def sa_kubeconfig(cp: Any, release: dict[str, Any]) -> str:
    """A kubeconfig holding a TokenRequest token of the chart's ServiceAccount."""
    return str(cp.service_account_kubeconfig(RELEASE_NS, _service_account(release)))


@pytest.fixture(scope="module")
def decisions() -> Iterator[DecisionServer]:
    with DecisionServer() as server:
        yield server


def _refused(cp: Any) -> int:
    """Requests kube-apiserver's authorizer refused so far (any result but ``allowed``)."""
    with urllib.request.urlopen(f"{cp.url}/metrics", context=cp.ssl_context(), timeout=10) as r:
        text = r.read().decode()
    total = 0
    for line in text.splitlines():
        match = re.match(r'authorization_attempts_total\{result="([^"]+)"\} (\S+)$', line)
        if match and match.group(1) != "allowed":
            total += int(float(match.group(2)))
    return total


def _established(crd: dict[str, Any]) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


# -- the install ---------------------------------------------------------------------------------
def test_helm_install_deploys_the_release_and_the_server_accepts_every_object(
    cp: Any, helm: Helm, admin: Client, release: dict[str, Any]
) -> None:
    status = helm.run(
        "status",
        RELEASE,
        f"--namespace={RELEASE_NS}",
        f"--kubeconfig={cp.kubeconfig_path}",
        "--output=json",
    )
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["info"]["status"] == "deployed"

    wait_for(
        lambda: _established(
            admin.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", CRD_NAME)
        ),
        timeout=60,
        what=f"CRD {CRD_NAME} Established",
    )
    crd = admin.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", CRD_NAME)
    assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    assert crd["metadata"]["annotations"]["meta.helm.sh/release-name"] == RELEASE

    # Every object of the release is on the server as rendered, owned by the release.
    expected = {
        ("ServiceAccount", f"{RELEASE}"),
        ("ClusterRole", f"{RELEASE}-manager-role"),
        ("ClusterRoleBinding", f"{RELEASE}-manager-rolebinding"),
        ("ClusterRole", f"{RELEASE}-secret-reader-role"),
        ("ClusterRoleBinding", f"{RELEASE}-secret-reader-rolebinding"),
        ("Role", f"{RELEASE}-leader-election-role"),
        ("RoleBinding", f"{RELEASE}-leader-election-rolebinding"),
        ("Deployment", f"{RELEASE}-controller-manager"),
        ("Service", f"{RELEASE}-metrics"),
        ("CustomResourceDefinition", CRD_NAME),
    }
    assert expected <= set(release["by_kind"]), sorted(release["by_kind"])
    for doc in release["docs"]:
        meta = doc["metadata"]
        live = admin.get(doc["apiVersion"], doc["kind"], meta["name"], meta.get("namespace"))
        annotations = live["metadata"].get("annotations") or {}
        assert annotations.get("meta.helm.sh/release-name") == RELEASE, (doc["kind"], meta)
        assert annotations.get("meta.helm.sh/release-namespace") == RELEASE_NS
        if doc["kind"] in ("ClusterRole", "Role"):
            assert live["rules"] == doc["rules"], f"{meta['name']}: rules changed on the server"
        if doc["kind"] in ("ClusterRoleBinding", "RoleBinding"):
            assert live["subjects"] == doc["subjects"] and live["roleRef"] == doc["roleRef"]

    # The real Deployment controller takes the chart's Deployment (kwok plays its pods).
    def manager_deployment_available() -> bool:
        dep = admin.get("apps/v1", "Deployment", f"{RELEASE}-controller-manager", RELEASE_NS)
        return bool(dep.get("status", {}).get("availableReplicas") == dep["spec"]["replicas"])

    wait_for(manager_deployment_available, timeout=120, what="the chart's Deployment available")


# -- what the role allows and refuses ------------------------------------------------------------
def _can_i(cp: Any, kubeconfig: str, verb: str, resource: str, flags: str) -> str:
    result = cp.kubectl("auth", "can-i", verb, resource, *flags.split(), kubeconfig=kubeconfig)
    answer = result.stdout.strip()
    assert answer in ("yes", "no"), result.stdout + result.stderr
    return str(answer)


def test_auth_can_i_matches_least_privilege(cp: Any, sa_kubeconfig: str) -> None:
    """The SelfSubjectAccessReview answers for the chart's ServiceAccount, asked by itself."""
    whoami = cp.kubectl("auth", "whoami", "-o", "json", kubeconfig=sa_kubeconfig)
    assert whoami.returncode == 0, whoami.stderr
    username = json.loads(whoami.stdout)["status"]["userInfo"]["username"]
    assert username == f"system:serviceaccount:{RELEASE_NS}:{RELEASE}"

    missing = [c for c in MUST if _can_i(cp, sa_kubeconfig, *c) != "yes"]
    extra = [c for c in MUST_NOT if _can_i(cp, sa_kubeconfig, *c) != "no"]
    assert not missing, f"the role lacks what the operator needs: {missing}"
    assert not extra, f"the role grants more than the operator needs: {extra}"

    # kubectl resolves a resource through discovery and, for a kind the server does not serve
    # (no LeaderWorkerSet CRD here), asks about the whole string with an empty group: a false
    # "no". A SelfSubjectAccessReview naming the group asks the authorizer directly.
    with Client.from_kubeconfig(sa_kubeconfig) as sa:
        for verb, allowed in (("get", True), ("watch", True), ("patch", True), ("delete", False)):
            review = sa.create(
                {
                    "apiVersion": "authorization.k8s.io/v1",
                    "kind": "SelfSubjectAccessReview",
                    "spec": {
                        "resourceAttributes": {
                            "group": "leaderworkerset.x-k8s.io",
                            "resource": "leaderworkersets",
                            "verb": verb,
                            "namespace": APPS_NS,
                        }
                    },
                }
            )
            assert review["status"]["allowed"] is allowed, (verb, review["status"])


def test_calls_outside_the_role_are_refused_with_403(
    cp: Any, admin: Client, release: dict[str, Any], sa_kubeconfig: str
) -> None:
    """Real requests with the ServiceAccount's token, each counted by kube-apiserver."""
    admin.apply(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "refusals"}},
        field_manager="test",
    )
    admin.create(deployment("victim", "refusals", 1))
    admin.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "not-yours", "namespace": RELEASE_NS},
            "stringData": {"password": "hunter2"},
        }
    )
    before = _refused(cp)
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "grab", "namespace": "refusals"},
        "spec": {"holderIdentity": "me"},
    }
    with Client.from_kubeconfig(sa_kubeconfig) as sa:
        assert sa.get("apps/v1", "Deployment", "victim", "refusals")["spec"]["replicas"] == 1
        # a Secret by name: granted, for serverHeadersFrom (and only ever asked by name)
        assert sa.get("v1", "Secret", "not-yours", RELEASE_NS)["metadata"]["name"] == "not-yours"
        refusals: dict[str, Callable[[], object]] = {
            "delete a Deployment": lambda: sa.delete("apps/v1", "Deployment", "victim", "refusals"),
            "change a Secret": lambda: sa.patch(
                "v1", "Secret", "not-yours", {"stringData": {"password": "x"}}, RELEASE_NS
            ),
            "list Secrets": lambda: sa.list("v1", "Secret", RELEASE_NS),
            "list Secrets everywhere": lambda: sa.list("v1", "Secret"),
            "create a Lease outside its namespace": lambda: sa.create(lease),
            "create a Pod": lambda: sa.create(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": "p", "namespace": "refusals"},
                    "spec": {"containers": [{"name": "c", "image": "busybox"}]},
                }
            ),
        }
        for what, call in refusals.items():
            with pytest.raises(Forbidden) as refused:
                call()
            assert refused.value.status == 403, what
            assert f"system:serviceaccount:{RELEASE_NS}:{RELEASE}" in refused.value.message, what
    out = cp.kubectl("delete", "deployment", "victim", "-n", "refusals", kubeconfig=sa_kubeconfig)
    assert out.returncode != 0 and "Forbidden" in out.stderr, out.stdout + out.stderr
    assert admin.get("apps/v1", "Deployment", "victim", "refusals")  # still there
    assert _refused(cp) - before == len(refusals) + 1, "each refusal is counted once"


# -- the operator as its ServiceAccount ----------------------------------------------------------
def _manager_args(release: dict[str, Any]) -> list[str]:
    """The chart's manager flags, minus the listen addresses (ManagerProcess picks free ports)
    and the log level (its own debug level helps when this test fails)."""
    dep = release["by_kind"][("Deployment", f"{RELEASE}-controller-manager")]
    [container] = dep["spec"]["template"]["spec"]["containers"]
    skip = ("--health-probe-bind-address", "--metrics-bind-address", "--log-level", "--log-format")
    return [a for a in container["args"] if not a.startswith(skip)]


def _log_events(manager: ManagerProcess) -> list[dict[str, Any]]:
    events = []
    for line in manager.logs(tail=1_000_000).splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    return events


def _condition(obj: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    for c in obj.get("status", {}).get("conditions") or []:
        if c.get("type") == ctype:
            return dict(c)
    return None


def test_manager_as_the_chart_service_account_makes_only_allowed_calls(
    cp: Any,
    admin: Client,
    release: dict[str, Any],
    sa_kubeconfig: str,
    decisions: DecisionServer,
) -> None:
    args = _manager_args(release)
    assert "--leader-elect" in args and f"--leader-election-namespace={RELEASE_NS}" in args
    admin.apply(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": APPS_NS}},
        field_manager="test",
    )
    admin.create(deployment(APP, APPS_NS, 1))

    def dep() -> dict[str, Any]:
        return admin.get("apps/v1", "Deployment", APP, APPS_NS)

    wait_for(
        lambda: dep().get("status", {}).get("readyReplicas") == 1,
        timeout=120,
        what="the target Deployment's pod Ready",
    )
    refused_before = _refused(cp)
    manager = ManagerProcess(sa_kubeconfig, *args, env={"POD_NAMESPACE": RELEASE_NS}).start()
    try:
        manager.wait_ready(timeout=120)

        def holder() -> str:
            lease = admin.get("coordination.k8s.io/v1", "Lease", LEASE_NAME, RELEASE_NS)
            return str(lease["spec"].get("holderIdentity") or "")

        wait_for(
            lambda: holder().startswith(f"{socket.gethostname()}_"),
            timeout=90,
            what="the manager to take its Lease",
            diagnostics=manager.logs,
        )

        # Up: server-side apply of spec.replicas alone, asked with a header from a Secret
        # (a get the real authorizer judges).
        admin.create(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "decision-auth", "namespace": APPS_NS},
                "data": {"token": base64.b64encode(b"Bearer chart-sa").decode()},
            }
        )
        admin.create(
            decided_scaler(
                decisions,
                "model-scaler",
                APPS_NS,
                APP,
                3,
                service_id="svc-model",
                min_replicas=1,
                max_replicas=5,
                scale_down={"stabilizationWindowSeconds": 0},
                serverHeadersFrom=[
                    {
                        "name": "Authorization",
                        "valueFrom": {"secretKeyRef": {"name": "decision-auth", "key": "token"}},
                    }
                ],
            )
        )
        wait_for(
            lambda: dep()["spec"]["replicas"] == 3,
            timeout=90,
            what="scale-up to the decision (3)",
            diagnostics=manager.logs,
        )
        asked = [r for r in decisions.requests if r.service_id == "svc-model"]
        assert asked and {r.headers.get("authorization") for r in asked} == {"Bearer chart-sa"}
        owners = [
            m for m in dep()["metadata"].get("managedFields", []) if m["manager"] == FIELD_MANAGER
        ]
        assert [m["operation"] for m in owners] == ["Apply"], dep()["metadata"]["managedFields"]
        assert set(owners[0]["fieldsV1"]["f:spec"]) == {"f:replicas"}

        def scaler() -> dict[str, Any]:
            return admin.get(LLMSCALER, "LLMScaler", "model-scaler", APPS_NS)

        def settled(replicas: int) -> bool:
            status = scaler().get("status", {})
            return bool(
                status.get("desiredReplicas") == replicas
                and status.get("currentReplicas") == replicas
            )

        wait_for(lambda: settled(3), timeout=90, what="status current=desired=3")
        ready = _condition(scaler(), "Ready")
        assert ready is not None and ready["status"] == "True", scaler()["status"]

        # Down: the pods to remove are marked (PATCH pods) before spec.replicas drops.
        pods_before = {p["metadata"]["name"] for p in admin.list("v1", "Pod", APPS_NS)["items"]}
        decisions.set_decision("svc-model", 2, namespace=APPS_NS)
        wait_for(
            lambda: dep()["spec"]["replicas"] == 2,
            timeout=90,
            what="scale-down to the decision (2)",
            diagnostics=manager.logs,
        )
        wait_for(lambda: settled(2), timeout=90, what="status current=desired=2")
        # The newest pod got the lowest deletion cost (a PATCH the role must allow).
        [selection] = [e for e in _log_events(manager) if e.get("event") == "victim selection"]
        assert selection["source"] == "newest-first" and selection["remove"] == 1, selection
        assert list(selection["changes"].values()) == [VICTIM_COST], selection
        assert set(selection["changes"]) <= pods_before, (selection, pods_before)

        events = admin.list("v1", "Event", APPS_NS)["items"]
        reasons = {e["reason"] for e in events if e["involvedObject"].get("name") == "model-scaler"}
        assert "SuccessfulRescale" in reasons, reasons
    finally:
        code = manager.stop()
    logs = manager.logs(tail=100_000)
    assert code == 0, f"manager did not exit cleanly on SIGTERM ({code}):\n{manager.logs()}"
    refusals = [line for line in logs.splitlines() if REFUSAL_IN_LOG.search(line)]
    assert not refusals, "the manager was refused:\n" + "\n".join(refusals[:20])
    assert _refused(cp) == refused_before, (
        "kube-apiserver refused requests while only the manager ran as a non-admin"
    )
    # It released its Lease on the way out (an update, also allowed).
    lease = admin.get("coordination.k8s.io/v1", "Lease", LEASE_NAME, RELEASE_NS)
    assert not lease["spec"].get("holderIdentity"), lease["spec"]


def test_without_the_secret_role_a_scaler_reports_secret_forbidden_and_others_scale(
    cp: Any,
    helm: Helm,
    admin: Client,
    release: dict[str, Any],
    sa_kubeconfig: str,
    decisions: DecisionServer,
) -> None:
    """``helm upgrade --set rbac.secretHeaders=false``: the real authorizer now refuses the
    Secret, the scaler that needs it says so (SecretForbidden) and holds, the other scales."""
    out = helm.run(
        "upgrade",
        RELEASE,
        str(CHART),
        f"--namespace={RELEASE_NS}",
        "--reuse-values",
        "--set=rbac.secretHeaders=false",
        f"--kubeconfig={cp.kubeconfig_path}",
        "--timeout=5m",
        timeout=360,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    with pytest.raises(NotFound):
        admin.get("rbac.authorization.k8s.io/v1", "ClusterRole", f"{RELEASE}-secret-reader-role")
    wait_for(
        lambda: _can_i(cp, sa_kubeconfig, "get", "secrets", f"-n={APPS_NS}") == "no",
        timeout=60,
        what="the authorizer to drop get on secrets",
    )
    ns = "no-secret-role"
    admin.apply(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}, field_manager="test"
    )
    admin.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "decision-auth", "namespace": ns},
            "data": {"token": base64.b64encode(b"Bearer unreadable").decode()},
        }
    )
    for app in ("plain", "secretive"):
        admin.create(deployment(app, ns, 1))
    for app in ("plain", "secretive"):
        wait_for(
            lambda app=app: (
                admin.get("apps/v1", "Deployment", app, ns).get("status", {}).get("readyReplicas")
                == 1
            ),
            timeout=120,
            what=f"{app} ready",
        )
    manager = ManagerProcess(
        sa_kubeconfig, *_manager_args(release), env={"POD_NAMESPACE": RELEASE_NS}
    ).start()
    try:
        manager.wait_ready(timeout=120)
        header = [
            {
                "name": "Authorization",
                "valueFrom": {"secretKeyRef": {"name": "decision-auth", "key": "token"}},
            }
        ]
        admin.create(
            decided_scaler(
                decisions,
                "secretive",
                ns,
                "secretive",
                3,
                service_id="svc-secretive",
                serverHeadersFrom=header,
            )
        )
        admin.create(decided_scaler(decisions, "plain", ns, "plain", 2, service_id="svc-plain"))

        def reason(name: str) -> str | None:
            cond = _condition(admin.get(LLMSCALER, "LLMScaler", name, ns), "ScalingActive")
            return None if cond is None else str(cond["reason"])

        wait_for(
            lambda: reason("secretive") == "SecretForbidden",
            timeout=120,
            what="SecretForbidden",
            diagnostics=manager.logs,
        )
        wait_for(
            lambda: admin.get("apps/v1", "Deployment", "plain", ns)["spec"]["replicas"] == 2,
            timeout=120,
            what="the scaler without Secret headers to scale",
            diagnostics=manager.logs,
        )
        assert admin.get("apps/v1", "Deployment", "secretive", ns)["spec"]["replicas"] == 1
        cond = _condition(admin.get(LLMSCALER, "LLMScaler", "secretive", ns), "Ready")
        assert cond is not None and "rbac.secretHeaders" in cond["message"], cond
        assert not [r for r in decisions.requests if r.service_id == "svc-secretive"]
    finally:
        code = manager.stop()
    assert code == 0, manager.logs()
    assert "Bearer unreadable" not in manager.logs(tail=1_000_000)


# -- the uninstall (last: it removes the release the tests above share) ------------------------
def test_helm_uninstall_keeps_the_crd_and_removes_the_rest(
    cp: Any, helm: Helm, admin: Client, release: dict[str, Any]
) -> None:
    admin.apply(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kept"}},
        field_manager="test",
    )
    metric = {"name": "m", "query": "vector(1)", "target": "1"}
    admin.create(scaler("survivor", "kept", "nothing", "http://127.0.0.1:9", metrics=[metric]))
    out = helm.run(
        "uninstall",
        RELEASE,
        f"--namespace={RELEASE_NS}",
        f"--kubeconfig={cp.kubeconfig_path}",
        timeout=180,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "kept due to the resource policy" in out.stdout + out.stderr, out.stdout + out.stderr
    crd = admin.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", CRD_NAME)
    assert _established(crd)
    assert admin.get(LLMSCALER, "LLMScaler", "survivor", "kept")  # the CRD's objects too
    for (kind, name), doc in release["by_kind"].items():
        if kind == "CustomResourceDefinition":
            continue
        with pytest.raises(NotFound):
            admin.get(doc["apiVersion"], kind, name, doc["metadata"].get("namespace"))
