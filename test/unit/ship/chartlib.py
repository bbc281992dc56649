"""Static checks on Helm chart sources, for machines without the helm binary.

Helm's template language cannot be rendered here, but the mistakes that matter are visible in the
source: a ``.Values`` path that does not exist (renders as nothing), unbalanced blocks, and
``toYaml`` without ``nindent`` (breaks YAML indentation).
"""

from __future__ import annotations

import json
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


_SIMPLE_ACTION = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}")
_PRINTF_ARG = re.compile(r'\(include "[^"]+" \.\)|\.[A-Za-z_][\w.]*')


def render_simple(
    text: str,
    values: Mapping[str, Any],
    *,
    release_name: str,
    namespace: str,
    includes: Mapping[str, str],
) -> str:
    """Renders the small subset of Helm templating that plain object templates use.

    Supported: lines holding only ``if``/``end`` (dropped: the block is taken as enabled),
    ``{{ .Values.x }}``, ``{{ .Values.x | quote }}``, ``{{ .Release.Namespace }}``,
    ``{{ include "name" . }}`` (optionally ``| nindent N``), and ``{{ printf "fmt" args | quote }}``
    with ``%s``/``%q``. Anything else raises, so a test never silently checks a half-rendered file.
    """

    def value_of(expr: str) -> Any:
        expr = expr.strip()
        if expr == ".Release.Namespace":
            return namespace
        if expr == ".Release.Name":
            return release_name
        include = re.fullmatch(r'\(?include "([^"]+)" \.\)?', expr)
        if include:
            return includes[include.group(1)]
        if expr.startswith(".Values."):
            found, value = lookup(values, expr[len(".Values.") :])
            if not found:
                raise KeyError(expr)
            return value
        raise ValueError(f"unsupported expression {expr!r}")

    def printf(body: str) -> str:
        match = re.fullmatch(r'printf "((?:[^"\\]|\\.)*)" (.*)', body)
        if not match:
            raise ValueError(f"unsupported printf {body!r}")
        fmt = match.group(1).replace('\\"', '"')
        args = [value_of(a) for a in _PRINTF_ARG.findall(match.group(2))]
        out, index = "", 0
        for piece in re.split(r"(%[sqv])", fmt):
            if piece in ("%s", "%v"):
                out += str(args[index])
                index += 1
            elif piece == "%q":
                out += json.dumps(str(args[index]))
                index += 1
            else:
                out += piece
        return out

    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if re.fullmatch(r"\{\{-?\s*(if|end|with|else)\b.*?-?\}\}", stripped):
            continue
        lines.append(line)
    rendered = "\n".join(lines) + "\n"

    def replace(match: re.Match[str]) -> str:
        body = match.group(1)
        pipes = [p.strip() for p in body.split(" | ")]
        head, filters = pipes[0], pipes[1:]
        result: Any = printf(head) if head.startswith("printf ") else value_of(head)
        for flt in filters:
            if flt == "quote":
                result = json.dumps(str(result))
            elif flt.startswith("nindent "):
                pad = " " * int(flt.split()[1])
                result = "\n" + "\n".join(pad + ln for ln in str(result).splitlines())
            else:
                raise ValueError(f"unsupported filter {flt!r}")
        return str(result)

    return _SIMPLE_ACTION.sub(replace, rendered)
