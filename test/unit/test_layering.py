"""The runtime's layers import downwards only; the test servers stay outside its import graph.

    clock, log  <  kube, api  <  cache, workqueue, events  <  controller  <  manager  <  scaling

A package may import packages of a lower layer, never one of its own layer or above, so a
change that makes (say) the cache reach into the controller, or the API types into the
scaling pipeline, fails here instead of growing a cycle. ``envtest`` and ``testkit`` are test
servers and fakes: they may use the runtime, but no runtime package may import them (the
manager image would then carry an API server emulator into production).

Read from the source, so an import inside a function or under ``TYPE_CHECKING`` counts as much
as one at the top of a module. ``api/v1alpha1`` has its own module order
(``test/unit/api/test_layering.py``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import llmscaler_runtime

ROOT = Path(llmscaler_runtime.__file__).parent
PACKAGE = "llmscaler_runtime"

#: Layer of each top-level package or module of the runtime; imports must point lower.
LAYERS: dict[str, int] = {
    "clock": 0,
    "log": 0,
    "kube": 1,
    "api": 1,
    "cache": 2,
    "workqueue": 2,
    "events": 2,
    "controller": 3,
    "manager": 4,
    "scaling": 5,
}
#: Outside the runtime's import graph: may import the runtime, never imported by it.
OUTSIDE = frozenset({"envtest", "testkit"})


def _top(path: Path) -> str:
    """The top-level package (or module) of the runtime a file belongs to."""
    first = path.relative_to(ROOT).parts[0]
    return first.removesuffix(".py")


def imported_packages(source: str, package: tuple[str, ...] = ()) -> Iterator[tuple[int, str]]:
    """(line, top-level runtime package) for every import of the runtime, absolute or relative.

    ``package`` is the importing file's package below the runtime (``("cache",)`` for
    ``cache/reflector.py``), against which relative imports resolve.
    """
    for node in ast.walk(ast.parse(source)):
        paths: list[list[str]] = []
        if isinstance(node, ast.Import):
            paths = [alias.name.split(".") for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == PACKAGE:  # `from llmscaler_runtime import kube`
                paths = [[PACKAGE, alias.name] for alias in node.names]
            else:
                paths = [node.module.split(".")]
        elif isinstance(node, ast.ImportFrom):  # relative: resolve against the file's package
            up = node.level - 1
            base = [PACKAGE, *package[: len(package) - up]] if up <= len(package) else []
            if not base:
                continue  # above the runtime: not ours to judge
            if node.module:
                paths = [[*base, *node.module.split(".")]]
            else:
                paths = [[*base, alias.name] for alias in node.names]
        for parts in paths:
            if parts[0] == PACKAGE and len(parts) > 1:
                yield node.lineno, parts[1]


def violations(
    importer: str, source: str, *, where: str = "<source>", package: tuple[str, ...] | None = None
) -> list[str]:
    """What is wrong with ``importer``'s imports (empty when it respects the layers).

    ``package`` is the file's package below the runtime (default: ``(importer,)``).
    """
    found: list[str] = []
    for line, imported in imported_packages(source, (importer,) if package is None else package):
        if imported == importer:
            continue
        if imported in OUTSIDE and importer not in OUTSIDE:
            found.append(f"{where}:{line}: {importer} imports {imported}, a test server")
        elif importer in LAYERS and imported in LAYERS and LAYERS[imported] >= LAYERS[importer]:
            found.append(
                f"{where}:{line}: {importer} (layer {LAYERS[importer]}) imports "
                f"{imported} (layer {LAYERS[imported]})"
            )
    return found


def _runtime_files() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.py") if p.relative_to(ROOT).parts[0] != "__init__.py")


def test_every_runtime_package_has_a_layer() -> None:
    packages = {_top(p) for p in _runtime_files()}
    unplaced = sorted(packages - LAYERS.keys() - OUTSIDE)
    assert not unplaced, f"add these to LAYERS (or OUTSIDE) in {__file__}: {unplaced}"


def test_the_runtime_imports_downwards_only() -> None:
    found: list[str] = []
    for path in _runtime_files():
        rel = path.relative_to(ROOT.parent)
        package = path.relative_to(ROOT).parent.parts
        found += violations(
            _top(path), path.read_text(encoding="utf-8"), where=str(rel), package=package
        )
    assert not found, "layering violated:\n" + "\n".join(found)


def test_the_package_root_imports_no_test_server() -> None:
    source = (ROOT / "__init__.py").read_text(encoding="utf-8")
    assert not [p for _, p in imported_packages(source) if p in OUTSIDE]


@pytest.mark.parametrize(
    ("importer", "source", "expected"),
    [
        ("cache", "from llmscaler_runtime.controller import Builder", "cache (layer 2) imports"),
        ("api", "def f():\n    import llmscaler_runtime.scaling.types", "api (layer 1) imports"),
        ("kube", "from llmscaler_runtime import api", "kube (layer 1) imports api"),
        ("manager", "from llmscaler_runtime.testkit import FakeClock", "a test server"),
        ("scaling", "if TYPE_CHECKING:\n    from llmscaler_runtime.envtest import x", "test"),
        ("cache", "from ..controller import Builder", "cache (layer 2) imports controller"),
        ("cache", "from .. import testkit", "a test server"),
    ],
)
def test_the_check_catches_an_upward_import(importer: str, source: str, expected: str) -> None:
    (problem,) = violations(importer, source)
    assert expected in problem


def test_the_check_allows_downward_and_outside_imports() -> None:
    assert violations("scaling", "from llmscaler_runtime.manager import Manager") == []
    assert violations("envtest", "from llmscaler_runtime.kube import Client") == []
    assert violations("testkit", "from llmscaler_runtime.clock import Clock") == []
    assert violations("cache", "from ..clock import Clock\nfrom .store import Store") == []
