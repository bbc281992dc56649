#!/usr/bin/env python3
"""Copies what the Helm chart must share with config/ into dist/chart/templates.

The chart is installed by users who never run kustomize, so the CRD and the RBAC rules it ships
must be exactly the ones the operator is generated and tested with. Rather than trusting people
to remember, this script writes them (``make chart-sync``) and ``--check`` fails CI when the chart
is stale:

* ``config/crd/bases/autoscaling.modelsphere.dev_llmscalers.yaml`` is copied byte for byte into
  ``templates/crd/`` inside ``{{- if .Values.crd.enable }}`` ... ``{{- end }}``, with one
  addition under ``metadata:``: the ``helm.sh/resource-policy: keep`` annotation when
  ``crd.keep`` is set, so ``helm uninstall`` does not delete the CRD and every LLMScaler with it.
* The rules of the manager ClusterRole, its Secret-reader ClusterRole, the leader-election Role
  and the admin/editor/viewer
  ClusterRoles under ``config/rbac/`` become the ``rules:`` of the chart's RBAC templates (their
  metadata uses the chart's names and labels). A role missing from config/ is reported and the
  chart's current template is kept.

Exit codes: 0 in sync / written; 1 ``--check`` found a stale file; 2 a required input (the CRD)
is missing or unreadable.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
CRD_NAME = "autoscaling.modelsphere.dev_llmscalers.yaml"
CRD_CONDITION = "{{- if .Values.crd.enable }}\n"
END = "{{- end }}\n"
_METADATA = "\nmetadata:\n"
KEEP_BLOCK = (
    "  {{- if .Values.crd.keep }}\n"
    "  annotations:\n"
    "    helm.sh/resource-policy: keep\n"
    "  {{- end }}\n"
)


@dataclass(frozen=True)
class RoleSpec:
    """One config/rbac role and the chart template generated from it."""

    kind: str  # ClusterRole | Role
    name_suffix: str  # matched against metadata.name in config/, used in the chart's name
    template: str  # path under templates/
    condition: str  # the template's guard


ROLES = (
    RoleSpec("ClusterRole", "manager-role", "rbac/role.yaml", ".Values.rbac.enable"),
    RoleSpec(
        "Role",
        "leader-election-role",
        "rbac/leader_election_role.yaml",
        "and .Values.rbac.enable .Values.leaderElection.enabled",
    ),
    RoleSpec(
        "ClusterRole",
        "secret-reader-role",
        "rbac/secret_reader_role.yaml",
        "and .Values.rbac.enable .Values.rbac.secretHeaders",
    ),
    RoleSpec(
        "ClusterRole",
        "admin-role",
        "rbac/llmscaler_admin_role.yaml",
        "and .Values.rbac.enable .Values.rbac.userRoles",
    ),
    RoleSpec(
        "ClusterRole",
        "editor-role",
        "rbac/llmscaler_editor_role.yaml",
        "and .Values.rbac.enable .Values.rbac.userRoles",
    ),
    RoleSpec(
        "ClusterRole",
        "viewer-role",
        "rbac/llmscaler_viewer_role.yaml",
        "and .Values.rbac.enable .Values.rbac.userRoles",
    ),
)


class SyncError(Exception):
    """A required input is missing or malformed (exit code 2)."""


def crd_template(crd_text: str) -> str:
    """The chart's CRD template: the config file verbatim inside the crd.enable guard."""
    if "{{" in crd_text:
        # Helm would try to evaluate it, so the rendered CRD would no longer be identical.
        raise SyncError("the CRD contains '{{', which Helm would treat as a template action")
    if not crd_text.endswith("\n"):
        crd_text += "\n"
    head, found, tail = crd_text.partition(_METADATA)
    if not found:
        raise SyncError("the CRD has no top-level 'metadata:' to add the keep annotation to")
    if tail.startswith("  annotations:"):
        raise SyncError("the CRD already has annotations; merge the keep annotation by hand")
    return CRD_CONDITION + head + _METADATA + KEEP_BLOCK + tail + END


def unwrap_crd_template(template_text: str) -> str:
    """Inverse of :func:`crd_template` (used by tests to compare with config/)."""
    if not (template_text.startswith(CRD_CONDITION) and template_text.endswith(END)):
        raise SyncError("CRD template is not wrapped in the crd.enable guard")
    inner = template_text[len(CRD_CONDITION) : -len(END)]
    if _METADATA + KEEP_BLOCK not in inner:
        raise SyncError("CRD template lacks the crd.keep annotation block")
    return inner.replace(_METADATA + KEEP_BLOCK, _METADATA, 1)


def iter_docs(directory: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    for path in sorted(directory.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict):
                yield path, doc


def find_role(rbac_dir: Path, spec: RoleSpec) -> tuple[Path, dict[str, Any]] | None:
    if not rbac_dir.is_dir():
        return None
    for path, doc in iter_docs(rbac_dir):
        name = str(doc.get("metadata", {}).get("name", ""))
        if doc.get("kind") == spec.kind and name.endswith(spec.name_suffix):
            return path, doc
    return None


def role_template(
    spec: RoleSpec, rules: list[dict[str, Any]], source: str, labels: dict[str, str] | None = None
) -> str:
    """A chart RBAC template whose rules are exactly ``rules``.

    Of the config role's labels only the ``aggregate-to-*`` ones are kept: they change who gets
    the rules (the built-in admin/edit/view roles), the others are kustomize bookkeeping.
    """
    namespaced = spec.kind == "Role"
    lines = [
        f"{{{{- if {spec.condition} }}}}",
        f"# Generated by hack/chart_sync.py from {source}; do not edit.",
        "apiVersion: rbac.authorization.k8s.io/v1",
        f"kind: {spec.kind}",
        "metadata:",
        f'  name: {{{{ include "llmscaler.fullname" . }}}}-{spec.name_suffix}',
    ]
    if namespaced:
        lines.append("  namespace: {{ .Release.Namespace }}")
    lines += [
        "  labels:",
        '    {{- include "llmscaler.labels" . | nindent 4 }}',
        *(
            f"    {key}: {json.dumps(str(value))}"
            for key, value in sorted((labels or {}).items())
            if key.startswith("rbac.authorization.k8s.io/aggregate-to-")
        ),
        yaml.safe_dump({"rules": rules}, sort_keys=False, default_flow_style=False).rstrip(),
        "{{- end }}",
    ]
    return "\n".join(lines) + "\n"


def planned_files(root: Path) -> tuple[dict[Path, str], list[str]]:
    """Every chart file this script owns with its wanted content, plus notes for skipped roles."""
    crd_path = root / "config" / "crd" / "bases" / CRD_NAME
    if not crd_path.is_file():
        raise SyncError(
            f"{crd_path.relative_to(root)} does not exist; generate it first with "
            "'make manifests' (hack/gen_crd.py)"
        )
    templates = root / "dist" / "chart" / "templates"
    files = {templates / "crd" / CRD_NAME: crd_template(crd_path.read_text())}
    notes: list[str] = []
    for spec in ROLES:
        found = find_role(root / "config" / "rbac", spec)
        if found is None:
            notes.append(
                f"no {spec.kind} named *{spec.name_suffix} under config/rbac; "
                f"kept templates/{spec.template} as it is"
            )
            continue
        path, doc = found
        rules = doc.get("rules")
        if not isinstance(rules, list) or not rules:
            raise SyncError(f"{path.relative_to(root)}: {spec.kind} has no rules")
        labels = doc.get("metadata", {}).get("labels") or {}
        files[templates / spec.template] = role_template(
            spec, rules, str(path.relative_to(root)), labels
        )
    return files, notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check", action="store_true", help="only report stale files; exit 1 if any"
    )
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    root: Path = args.root
    try:
        files, notes = planned_files(root)
    except (SyncError, OSError, yaml.YAMLError) as exc:
        print(f"chart_sync: {exc}", file=sys.stderr)
        return 2
    for note in notes:
        print(f"chart_sync: note: {note}", file=sys.stderr)
    stale = [path for path, text in files.items() if not path.is_file() or path.read_text() != text]
    if args.check:
        for path in stale:
            print(
                f"chart_sync: {path.relative_to(root)} is out of date; run 'make chart-sync'",
                file=sys.stderr,
            )
        return 1 if stale else 0
    for path in stale:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(files[path])
        print(f"chart_sync: wrote {path.relative_to(root)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
