"""Hostile staging entries for the tests: a tree deeper than any walk goes, and its removal
(``shutil.rmtree`` recurses once per level, so pytest's own clean-up of its temporary
folders would fail on it; GNU ``rm -rf`` does not)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest


def deep_tree(root: Path, depth: int) -> None:
    """``root/a/a/a/…``, ``depth`` folders deep, with a file at the bottom, made one level
    at a time (no path is too long for the kernel)."""
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("a", dir_fd=fd)
            inner = os.open("a", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.close(os.open("deepest.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)


def deep_tree_for(request: pytest.FixtureRequest, root: Path, depth: int) -> None:
    """:func:`deep_tree`, removed once the test ``request`` is done."""
    request.addfinalizer(
        lambda: subprocess.run(["rm", "-rf", "--", str(root)], check=True, timeout=120)
    )
    deep_tree(root, depth)
