"""Writing the simulator's files: all of them or none of them.

A report whose JSON is new and whose SVG is from the previous run, or a CSV cut off by a full
disk, is worse than no report, because it looks like one. So every output is rendered to text
first, and only then written: each to a temporary file beside its destination, and only once
all of them are written are they renamed into place. A failure before the renames removes the
temporary files and leaves the destinations as they were.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

__all__ = ["write_atomically"]


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def write_atomically(files: Mapping[Path, str]) -> None:
    """Write each ``path: text`` (see module docstring); raises the first OSError."""
    staged: list[tuple[str, Path]] = []
    mode = 0o666 & ~_umask()  # mkstemp creates 0600; a report is an ordinary file
    try:
        for path, text in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
            staged.append((tmp, path))
            os.fchmod(fd, mode)
            with os.fdopen(fd, "w", newline="") as fh:
                fh.write(text)
        for tmp, path in staged:
            os.replace(tmp, path)
    except BaseException:
        for tmp, _ in staged:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
