"""Reading a file the operator names (the config, the release cycle): only a regular file, and
only a small one. A FIFO would block the read for ever, ``/dev/zero`` would never end and a
folder is a mistyped path; each is refused before a byte is read."""

from __future__ import annotations

import os
import stat
from pathlib import Path


class UnreadableFile(Exception):
    """``path`` cannot be read as a file; ``why`` says so in a few words ("is a folder")."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(f"{path} {why}")
        self.path = path
        self.why = why


def read_regular_file(path: Path, limit: int) -> bytes:
    """The bytes of ``path`` (a symbolic link is followed to a regular file), at most
    ``limit`` of them. Raises :class:`UnreadableFile` for anything else, before reading it."""
    try:
        kind = _kind(os.stat(path).st_mode)  # follows a link: what would be opened
        if kind:
            raise UnreadableFile(path, kind)
        # O_NONBLOCK: if a FIFO took the file's place since the stat, opening it returns at
        # once instead of waiting for a writer; fstat then refuses it.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        raise UnreadableFile(path, _oserror(err)) from err
    try:
        info = os.fstat(fd)
        if kind := _kind(info.st_mode):
            raise UnreadableFile(path, kind)
        if info.st_size > limit:
            raise UnreadableFile(path, f"is larger than {_size(limit)}")
        chunks, left = [], limit + 1
        while left and (chunk := os.read(fd, min(left, 1 << 16))):
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as err:
        raise UnreadableFile(path, _oserror(err)) from err
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:  # it grew since the fstat
        raise UnreadableFile(path, f"is larger than {_size(limit)}")
    return data


def special_file_kind(path: Path) -> str:
    """What ``path`` is when it is there but not a regular file ("is a folder"), else ""."""
    try:
        return _kind(os.stat(path).st_mode)
    except OSError:
        return ""


def _kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return ""
    if stat.S_ISDIR(mode):
        return "is a folder, not a file"
    if stat.S_ISFIFO(mode):
        return "is a FIFO (named pipe), not a file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device, not a file"
    if stat.S_ISSOCK(mode):
        return "is a socket, not a file"
    return "is not a regular file"


def _oserror(err: OSError) -> str:
    reason = err.strerror or type(err).__name__
    return f"cannot be read ({reason})"


def _size(limit: int) -> str:
    return f"{limit // (1 << 20)} MiB" if limit >= 1 << 20 else f"{limit} bytes"
