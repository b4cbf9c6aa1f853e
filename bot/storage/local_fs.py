"""The freezer's and the promoter's primitives on this machine's filesystem, for
:class:`bot.storage.local.LocalStorage` (the public moves go through its ``_link`` and
``_rename``, where tests inject crashes)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from bot.storage.primitives import Entry
from bot.storage.promotion import Move, Touched

if TYPE_CHECKING:
    from bot.storage.local import LocalStorage


class LocalFs:
    """The promoter's and the freezer's primitives on this machine's filesystem."""

    def __init__(self, storage: LocalStorage) -> None:
        self.storage = storage

    def uid(self) -> int:
        return os.getuid()

    def lstat(self, path: str) -> Entry | None:
        try:
            st = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        return Entry(st.st_mode, st.st_uid)

    def listdir(self, path: str) -> dict[str, Entry] | None:
        try:
            with os.scandir(path) as entries:
                found = {}
                for e in entries:
                    st = e.stat(follow_symlinks=False)
                    found[e.name] = Entry(st.st_mode, st.st_uid)
                return found
        except (FileNotFoundError, NotADirectoryError):
            return None

    def rename(self, source: str, target: str) -> None:
        os.rename(source, target)

    def link(self, source: str, target: str) -> None:
        os.link(source, target, follow_symlinks=False)

    def remove(self, path: str) -> None:
        os.unlink(path)

    def rmdir(self, path: str) -> bool:
        try:
            os.rmdir(path)
        except OSError:
            return False
        return True

    def mkdir(self, path: str, mode: int) -> None:
        os.mkdir(path, mode)
        os.chmod(path, mode)  # not narrowed by the umask: the area must be exactly 0700

    def rename_public(self, source: str, target: str) -> None:
        self.storage._rename(Path(source), Path(target))

    def link_public(self, source: str, target: str) -> None:
        self.storage._link(Path(source), Path(target))

    def move_batch(self, moves: Sequence[Move], touched: Touched) -> bool:
        return False  # a link here costs microseconds: file by file is the batch

    def finish(self, touched: Touched) -> None:
        for folder in {os.path.dirname(p) for p in [*touched.trees, *touched.files]}:
            fsync_dir(Path(folder))

    def hash(self, paths: Sequence[str]) -> dict[str, str]:
        if len(paths) < 2:
            return {p: _sha256_nofollow(p) for p in paths}
        # hashlib releases the GIL on large buffers: a few threads use every core.
        with ThreadPoolExecutor(max_workers=min(4, len(paths))) as pool:
            return dict(zip(paths, pool.map(_sha256_nofollow, paths), strict=True))


def _sha256_nofollow(path: str) -> str:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def fsync_dir(folder: Path) -> None:
    """Flush a folder's entries to disk (a rename or a link is durable only then)."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
