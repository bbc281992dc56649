"""Static checks on Helm chart sources, which see every branch at once.

Rendering (the real helm, see helm.py) only sees the branches a value set takes, and neither
``helm template`` nor ``helm lint --strict`` reports a ``.Values`` path that does not exist (it
renders as nothing). The source shows it, as well as unbalanced blocks and ``toYaml`` without
``nindent`` (breaks YAML indentation).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

VALUES_REF = re.compile(r"\$?\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)")
ACTION = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}", re.S)
OPENERS = ("if", "with", "range", "define", "block")


def values_refs(text: str) -> Iterator[tuple[int, str]]:
    """(line, dotted path) for every ``.Values.x.y`` in a template."""
    for match in VALUES_REF.finditer(text):
        yield text.count("\n", 0, match.start()) + 1, match.group(1)[1:]


def lookup(values: Mapping[str, Any], dotted: str) -> tuple[bool, Any]:
    node: Any = values
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False, None
        node = node[part]
    return True, node


def block_balance_errors(text: str) -> list[str]:
    """Unbalanced ``if/with/range/define`` ... ``end`` pairs (comments ignored)."""
    depth, errors = 0, []
    for match in ACTION.finditer(text):
        body = match.group(1)
        if body.startswith("/*"):
            continue
        word = body.split(None, 1)[0] if body else ""
        line = text.count("\n", 0, match.start()) + 1
        if word in OPENERS:
            depth += 1
        elif word == "end":
            depth -= 1
            if depth < 0:
                errors.append(f"line {line}: 'end' without an open block")
                depth = 0
    if depth:
        errors.append(f"{depth} block(s) never closed")
    return errors


def toyaml_errors(text: str) -> list[str]:
    """``toYaml`` must be piped into ``nindent`` (``indent`` keeps the first line misplaced)."""
    errors = []
    for match in ACTION.finditer(text):
        body = match.group(1)
        line = text.count("\n", 0, match.start()) + 1
        if "toYaml" in body and not re.search(r"\|\s*nindent\s+\d+", body):
            errors.append(f"line {line}: toYaml without '| nindent N': {{{{ {body} }}}}")
        if re.search(r"\|\s*indent\s", body):
            errors.append(f"line {line}: use nindent, not indent")
    return errors


def template_files(chart: Path) -> list[Path]:
    return sorted(
        p
        for p in (chart / "templates").rglob("*")
        if p.is_file() and p.suffix in (".yaml", ".tpl", ".txt")
    )
