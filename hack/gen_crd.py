"""Write (or check) the LLMScaler CRD generated from llmscaler_runtime.api.v1alpha1.

Usage: python hack/gen_crd.py [--check] [--output PATH]

--check exits 1, printing a diff, when the committed file differs from what the types
produce, so CI catches a type change whose CRD was not regenerated.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

from llmscaler_runtime.api.v1alpha1.crd import render_crd_yaml

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUTPUT = ROOT / "config" / "crd" / "bases" / "autoscaling.modelsphere.dev_llmscalers.yaml"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the file is stale")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="CRD file path")
    args = parser.parse_args(argv)
    wanted = render_crd_yaml()
    path: Path = args.output
    if args.check:
        current = path.read_text() if path.exists() else ""
        if current == wanted:
            return 0
        diff = difflib.unified_diff(
            current.splitlines(keepends=True),
            wanted.splitlines(keepends=True),
            fromfile=f"{path} (committed)",
            tofile=f"{path} (generated)",
        )
        sys.stderr.writelines(diff)
        sys.stderr.write(f"{path} is stale: run `make manifests` (python hack/gen_crd.py)\n")
        return 1
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
