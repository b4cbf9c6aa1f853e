"""One test at a time for what the whole machine shares: its accounts and groups, and the files
in their home folders. ``make test`` runs the tests in several worker processes (pytest-xdist);
each creates the uploader's account, adds it to a group or writes its keys under this lock, so two
workers never race ``useradd`` or rewrite each other's ``authorized_keys``."""

from __future__ import annotations

import fcntl
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def machine_lock(name: str) -> Iterator[None]:
    """Held by one process of the machine at a time (an advisory lock on a file in /tmp)."""
    with open(Path(tempfile.gettempdir()) / f"relbot-tests-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
