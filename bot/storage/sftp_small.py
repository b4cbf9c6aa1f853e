"""Small files over SFTP, for :class:`bot.storage.sftp_fs.SftpFs`: the freeze's records, the
storage lock's file, the install index set aside, a staged signature bundle. Read whole,
never through a symlink, never from anything but a regular file and never past a limit;
written under a temporary name and renamed over the last one; created only where nothing is.
"""

from __future__ import annotations

import stat
from collections.abc import Callable

import paramiko

from bot.errors import StorageError
from bot.storage.ssh import Connection, SshLink

Lstat = Callable[[Connection, str], paramiko.SFTPAttributes | None]


def read(link: SshLink, conn: Connection, lstat: Lstat, path: str, limit: int) -> bytes | None:
    """A small file on the server, whole, or None when absent (never through a symlink);
    StorageError when it is not a regular file or larger than ``limit`` bytes. ``lstat``:
    the storage's round trip (see :class:`bot.storage.sftp_fs.RoundTrips`)."""
    attr = lstat(conn, path)
    if attr is None:
        return None
    if not stat.S_ISREG(attr.st_mode or 0):
        raise StorageError(f"{path} on {link.where} is not a regular file.")
    link.requests["read"] += 1
    with conn.sftp.open(path, "rb") as f:
        # A FIFO swapped in since the lstat would have blocked the open on the server
        # until the read deadline; anything but a regular file is never read.
        if not stat.S_ISREG(f.stat().st_mode or 0):
            raise StorageError(f"{path} on {link.where} is not a regular file.")
        data: bytes = f.read(limit + 1)
    if len(data) > limit:
        raise StorageError(f"{path} on {link.where} is larger than {limit:,} bytes.")
    return data


def write(link: SshLink, conn: Connection, path: str, data: bytes) -> None:
    """``data`` at ``path``, whole or not at all: written as ``path.new``, then renamed over
    ``path`` (``posix-rename``)."""
    temp = f"{path}.new"
    link.requests["write"] += 1
    with conn.sftp.open(temp, "wb") as f:
        f.write(data)
    conn.sftp.posix_rename(temp, path)


def create(link: SshLink, conn: Connection, path: str, data: bytes) -> bool:
    """``data`` in a new file at ``path``; False when something is there already."""
    link.requests["write"] += 1
    try:
        with conn.sftp.open(path, "wx") as f:  # SFTP's O_CREAT | O_EXCL
            f.write(data)
    except FileNotFoundError:
        raise
    except OSError:
        if not conn.alive:
            raise
        return False  # it exists (SFTP v3 says only "failure")
    return True
