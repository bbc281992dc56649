"""The modules of ``api/v1alpha1`` depend one way: ``_meta`` <- ``codec`` <- ``types`` <- ``crd``.

Read from the source rather than from ``sys.modules``, so an import tucked inside a function
(a cycle that merely waits until call time) counts as much as one at the top of the module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import llmscaler_runtime.api.v1alpha1 as package

PACKAGE = package.__name__
DIR = Path(package.__file__).parent
#: Each module may import only modules before it.
ORDER = ("_meta", "codec", "types", "crd")


def _package_imports(module: str) -> set[str]:
    """The sibling modules ``module`` imports anywhere in its body."""
    return _imports_in((DIR / f"{module}.py").read_text())


def _imports_in(source: str) -> set[str]:
    tree = ast.parse(source)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                base = node.module
            elif node.level == 0 and node.module and node.module.startswith(f"{PACKAGE}."):
                base = node.module.removeprefix(f"{PACKAGE}.")
            elif node.level == 0 and node.module == PACKAGE:
                base = None
            else:
                continue
            if base is None:  # `from . import codec`
                found.update(alias.name for alias in node.names)
            else:
                found.add(base.split(".")[0])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(f"{PACKAGE}."):
                    found.add(alias.name.removeprefix(f"{PACKAGE}.").split(".")[0])
    return found


def test_every_module_is_in_the_order() -> None:
    modules = {p.stem for p in DIR.glob("*.py")} - {"__init__"}
    assert modules == set(ORDER), "place a new module in ORDER"


@pytest.mark.parametrize("module", ORDER)
def test_imports_only_point_down(module: str) -> None:
    below = set(ORDER[: ORDER.index(module)])
    assert _package_imports(module) <= below, f"{module} imports a module at or above it"


def test_meta_imports_nothing_from_the_package() -> None:
    assert _package_imports("_meta") == set()


def test_the_check_sees_imports_inside_functions_in_every_spelling() -> None:
    """A deferred import (the shape the old types -> codec cycle had) is still an edge."""
    source = (
        "import attrs\n"
        "def f():\n"
        "    from .codec import decode\n"
        "    from . import crd\n"
        f"    import {PACKAGE}.types\n"
        f"    from {PACKAGE}._meta import schema\n"
    )
    assert _imports_in(source) == {"codec", "crd", "types", "_meta"}
