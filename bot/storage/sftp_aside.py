"""Files that replace live ones (the install index) over SFTP, for
:class:`bot.storage.sftp.SftpStorage`: a release's file set aside in the bot's aside folder,
put back, read, or swapped for the live public file by one ``posix-rename``.
"""

from __future__ import annotations

import posixpath
import stat
from typing import TYPE_CHECKING

from bot.domain.tags import ReleaseTag
from bot.errors import StorageError
from bot.storage.aside import ASIDE_FOLDER, ASIDE_MODE
from bot.storage.primitives import AREA
from bot.storage.promotion import Touched
from bot.storage.sftp_files import read_small
from bot.storage.sftp_fs import SftpFs, inside
from bot.storage.ssh import Connection

if TYPE_CHECKING:
    from bot.storage.sftp import SftpStorage


def read_public(storage: SftpStorage, path: str, limit: int) -> bytes | None:
    """A small file under the public root, whole, or None when absent."""
    full = inside(storage.public, path)
    return storage._ssh.call(f"read {full}", lambda conn: read_small(storage, conn, full, limit))


def set_aside(storage: SftpStorage, tag: ReleaseTag, path: str) -> None:
    """Move a file of the release (frozen by the confirmation, else staged) to the bot's
    aside folder, replacing an older copy there; nothing when it is in neither place."""
    frozen = inside(posixpath.join(storage.staging, AREA, str(tag)), path)
    staged = inside(storage._release(tag), path)
    target = inside(storage._aside(tag), path)

    def op(conn: Connection) -> None:
        source, attr = frozen, storage._lstat(conn, frozen)
        if attr is None:
            source, attr = staged, storage._lstat(conn, staged)
        if attr is None:
            return
        if not stat.S_ISREG(attr.st_mode or 0):
            raise StorageError(f"{path} is not a regular file; it is never published.")
        aside = posixpath.join(storage.staging, ASIDE_FOLDER)
        if storage._lstat(conn, aside) is None:
            storage.requests["mkdir"] += 1
            conn.sftp.mkdir(aside, ASIDE_MODE)
            conn.sftp.chmod(aside, ASIDE_MODE)  # not narrowed by the server's umask
        storage._makedirs(conn, posixpath.dirname(target))
        storage.requests["rename"] += 1
        conn.sftp.posix_rename(source, target)

    storage._ssh.call(f"set {path} of {tag} aside", op)


def put_back(storage: SftpStorage, tag: ReleaseTag, path: str) -> None:
    """Move a file set aside back into the release's staging folder; a file staged
    since under that name is kept (SFTP's rename refuses an existing target)."""
    source, target = inside(storage._aside(tag), path), inside(storage._release(tag), path)

    def op(conn: Connection) -> None:
        if storage._lstat(conn, source) is None or storage._lstat(conn, target) is not None:
            return
        storage._makedirs(conn, posixpath.dirname(target))
        storage.requests["rename"] += 1
        conn.sftp.rename(source, target)
        _remove_if_empty(storage, conn, storage._aside(tag))

    storage._ssh.call(f"put {source} back", op)


def read_aside(storage: SftpStorage, tag: ReleaseTag, path: str, limit: int) -> bytes | None:
    full = inside(storage._aside(tag), path)
    return storage._ssh.call(f"read {full}", lambda conn: read_small(storage, conn, full, limit))


def replace_public(storage: SftpStorage, tag: ReleaseTag, path: str, target: str) -> None:
    """Replace the public ``target`` with the file set aside, by one ``posix-rename``
    (rename(2) on the server: readers see the old file or the new one, whole)."""
    source, live = inside(storage._aside(tag), path), inside(storage.public, target)

    def op(conn: Connection) -> None:
        storage._makedirs(conn, posixpath.dirname(live))
        storage._replace(conn, source, live)
        SftpFs(storage, conn).finish(Touched(files=[live]))
        _remove_if_empty(storage, conn, storage._aside(tag))

    storage._ssh.call(f"replace {live}", op)


def _remove_if_empty(storage: SftpStorage, conn: Connection, folder: str) -> None:
    """Remove a folder of the aside area once its last file left (else leave it)."""
    try:
        storage.requests["rmdir"] += 1
        conn.sftp.rmdir(folder)
    except OSError:
        if not conn.alive:
            raise
