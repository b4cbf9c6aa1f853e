"""Listing, reading and writing over SFTP for :class:`bot.storage.sftp.SftpStorage`: the
release folders in staging, every entry below a release or public folder (one
``listdir_attr`` per folder), and small staged files (signature bundles) read whole or
written under a temporary name and linked into place.
"""

from __future__ import annotations

import contextlib
import posixpath
import secrets
import stat
from collections.abc import Sequence
from typing import TYPE_CHECKING

from bot.domain.files import StagedFile
from bot.domain.tags import ReleaseTag
from bot.errors import StagingUnreachable, StorageError
from bot.storage.listing import RELEASE_FOLDER, linked_release_folder, unreadable_release_folder
from bot.storage.sftp_fs import SftpFs, inside
from bot.storage.ssh import Connection, reason

if TYPE_CHECKING:
    from bot.storage.sftp import SftpStorage


def staged_tags(storage: SftpStorage) -> list[str]:
    """Names of the release folders in staging (one listing)."""

    def op(conn: Connection) -> list[str]:
        try:
            entries = storage._listdir(conn, storage.staging)
        except FileNotFoundError:
            return []
        except PermissionError as err:
            raise StagingUnreachable(
                f"Cannot read staging {storage.staging} on {storage.where}: {reason(err)}."
            ) from err
        # A symlinked release folder is listed too: scans show why it is refused.
        return sorted(
            e.filename
            for e in entries
            if stat.S_ISDIR(e.st_mode or 0) or stat.S_ISLNK(e.st_mode or 0)
        )

    return storage._ssh.call(f"list {storage.staging}", op)


def list_staging(storage: SftpStorage, tag: ReleaseTag) -> dict[str, StagedFile] | None:
    """Every entry below the release's staging folder, or None if there is no folder.

    One ``listdir_attr`` per folder; the server reports entries as ``lstat`` sees
    them, so symlinks are reported (``regular=False``) and never followed.
    """
    root = storage._release(tag)

    def op(conn: Connection) -> dict[str, StagedFile] | None:
        attr = storage._lstat(conn, root)
        if attr is None:
            return None
        if stat.S_ISLNK(attr.st_mode or 0):
            return {RELEASE_FOLDER: linked_release_folder(conn.sftp.readlink(root) or "?")}
        try:
            found = dict(SftpFs(storage, conn).walk(root, ""))
        except FileNotFoundError:
            return None
        except PermissionError as err:  # this release's problem, not the scan's
            return {RELEASE_FOLDER: unreadable_release_folder(reason(err))}
        storage._hasher.remember(
            root,
            {inside(root, p): (f.size, int(f.mtime)) for p, f in found.items() if f.regular},
        )
        return found

    return storage._ssh.call(f"list {root}", op)


def list_public(storage: SftpStorage, folders: Sequence[str]) -> dict[str, StagedFile]:
    """Every entry below the given public folders, keyed by path under the public root;
    one ``listdir_attr`` per folder, a missing folder adds nothing."""

    def op(conn: Connection) -> dict[str, StagedFile]:
        found: dict[str, StagedFile] = {}
        for folder in folders:
            try:
                found.update(SftpFs(storage, conn).walk(inside(storage.public, folder), folder))
            except FileNotFoundError:
                continue
            except PermissionError as err:
                raise StagingUnreachable(
                    f"Cannot list {storage.public}/{folder} on {storage.where}: {reason(err)}."
                ) from err
        return found

    return storage._ssh.call(f"list {storage.public}", op)


def read(storage: SftpStorage, tag: ReleaseTag, path: str, limit: int) -> bytes:
    """A small staged file (a signature bundle), whole. Raises :class:`StorageError`
    past ``limit`` bytes, or when it is missing or not a regular file (never followed)."""
    full = inside(storage._release(tag), path)

    def op(conn: Connection) -> bytes:
        data = SftpFs(storage, conn).read_small(full, limit)
        if data is None:
            raise StorageError(f"{path} is not a regular file in {storage._release(tag)}.")
        return data

    return storage._ssh.call(f"read {full}", op)


def write(
    storage: SftpStorage, tag: ReleaseTag, path: str, data: bytes, *, replace: bool = False
) -> None:
    """Write a small staged file under a temporary name, then rename it into place (an
    existing file only with ``replace``). Raises :class:`StorageError`."""
    full = inside(storage._release(tag), path)
    folder, name = posixpath.split(full)
    temp = posixpath.join(folder, f".{name}.{secrets.token_hex(4)}.tmp")

    def op(conn: Connection) -> None:
        try:
            storage.requests["write"] += 1
            with conn.sftp.open(temp, "wb") as f:
                f.write(data)
            if replace:
                storage.requests["rename"] += 1
                conn.sftp.posix_rename(temp, full)
            else:
                storage._link(conn, temp, full)  # refuses an existing target
        except OSError as err:
            if not replace and storage._lstat(conn, full) is not None:
                if _holds(storage, conn, full, data):
                    return  # written by an attempt whose answer was lost: done
                raise StorageError(f"{path} already exists in {folder}; not overwritten.") from err
            raise
        finally:
            with contextlib.suppress(OSError):
                conn.sftp.remove(temp)

    storage._ssh.call(f"write {full}", op)


def _holds(storage: SftpStorage, conn: Connection, path: str, data: bytes) -> bool:
    """Whether a small file on the server has exactly ``data``."""
    storage.requests["read"] += 1
    with conn.sftp.open(path, "rb") as f:
        return bool(f.read(len(data) + 1) == data)
