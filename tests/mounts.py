"""A small filesystem of its own, mounted by the test (tests and CI run as root): a full disk,
a read-only one, or another filesystem than the test's own folder, for real."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def tmpfs(where: Path, options: str = "size=1m") -> Iterator[Path]:
    """A tmpfs mounted at ``where`` (made if missing) with ``options``; unmounted after."""
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)
