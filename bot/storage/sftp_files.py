"""Listing, reading and writing over SFTP, on an :class:`bot.storage.sftp_fs.SftpFs`: the
release folders in staging, every entry below a release or public folder (one
``listdir_attr`` per folder, or a scan's one command for every open release), and small
staged files (signature bundles) read whole or
written under a temporary name and linked into place.
"""

from __future__ import annotations

import contextlib
import functools
import posixpath
import stat
from collections.abc import Callable, Sequence

from bot.domain.files import RELEASE_FOLDER, StagedFile
from bot.errors import StagingUnreachable, StorageError
from bot.storage import remote_list
from bot.storage.listing import (
    crowded_public_folder,
    crowded_release_folder,
    linked_release_folder,
    unreadable_release_folder,
)
from bot.storage.primitives import inside, temp_name
from bot.storage.remote_hash import linked_between
from bot.storage.sftp_fs import SftpFs
from bot.storage.ssh import reason
from bot.storage.walk import Walked, walk


def staged_tags(fs: SftpFs, staging: str) -> list[str]:
    """Names of the release folders in staging (one listing)."""
    try:
        entries = fs.trips.listdir(fs.conn, staging)
    except FileNotFoundError:
        return []
    except PermissionError as err:
        raise StagingUnreachable(
            f"Cannot read staging {staging} on {fs.where}: {reason(err)}."
        ) from err
    # A symlinked release folder is listed too: scans show why it is refused.
    return sorted(
        e.filename for e in entries if stat.S_ISDIR(e.st_mode or 0) or stat.S_ISLNK(e.st_mode or 0)
    )


def list_release(fs: SftpFs, root: str) -> dict[str, StagedFile] | None:
    """Every entry below a release's staging folder, or None if there is no folder.

    One ``listdir_attr`` per folder; the server reports entries as ``lstat`` sees them, so
    symlinks are reported (``regular=False``) and never followed. A tree past the entry
    budget is reported as crowded (bot/storage/walk.py).
    """
    entry = fs.lstat(root)
    if entry is None:
        return None
    if stat.S_ISLNK(entry.mode):
        return {RELEASE_FOLDER: linked_release_folder(fs.conn.sftp.readlink(root) or "?")}
    return _release_listing(lambda: fs.walk(root, ""))


def list_releases(
    fs: SftpFs, staging: str, names: Sequence[str]
) -> dict[str, dict[str, StagedFile] | None]:
    """What :func:`list_release` says of each release folder ``names`` in ``staging``, from
    ONE command on the server (bot/storage/remote_list.py) walked as any listing is; empty
    where the server runs no commands. A release the command could not list whole (past
    the entry budget, changed while it was listed) is walked folder by folder."""
    if not names or not fs.runs_commands:
        return {}
    trees = remote_list.list_trees(fs.ssh, fs.conn, staging, names)
    if trees is None:
        return {}
    found: dict[str, dict[str, StagedFile] | None] = {}
    for name in names:
        tree = trees.get(name)
        if tree is None:
            found[name] = list_release(fs, inside(staging, name))
        elif tree.kind == "absent":
            found[name] = None
        elif tree.kind == "link":
            found[name] = {RELEASE_FOLDER: linked_release_folder(tree.target)}
        elif tree.kind == "unreadable":
            found[name] = {RELEASE_FOLDER: unreadable_release_folder(tree.target)}
        else:
            found[name] = _release_listing(
                functools.partial(
                    walk, tree.listdir, ".", "", unreadable=(PermissionError,), reason=reason
                )
            )
    return found


def _release_listing(walked_by: Callable[[], Walked]) -> dict[str, StagedFile] | None:
    """A release's listing from its walk: None when its folder is gone, one problem entry
    when it cannot be read, the crowded entry added when the walk stopped at the budget."""
    try:
        walked = walked_by()
    except FileNotFoundError:
        return None
    except PermissionError as err:  # this release's problem, not the scan's
        return {RELEASE_FOLDER: unreadable_release_folder(reason(err))}
    found = walked.entries
    if walked.cut:
        found[RELEASE_FOLDER] = crowded_release_folder(walked.limit)
    return found


def list_public(fs: SftpFs, public: str, folders: Sequence[str]) -> dict[str, StagedFile]:
    """Every entry below the given public folders, keyed by path under the public root;
    one ``listdir_attr`` per folder, a missing folder adds nothing."""
    found: dict[str, StagedFile] = {}
    for folder in folders:
        where = inside(public, folder)
        try:
            walked = fs.walk(where, folder)
        except FileNotFoundError:
            continue
        except PermissionError as err:
            raise StagingUnreachable(
                f"Cannot list {public}/{folder} on {fs.where}: {reason(err)}."
            ) from err
        if walked.cut:
            raise StorageError(crowded_public_folder(f"{where} on {fs.where}", walked.limit))
        found.update(walked.entries)
    return found


def read(fs: SftpFs, root: str, path: str, limit: int) -> bytes:
    """A small staged file (a signature bundle) of the release folder ``root``, whole.
    Raises :class:`StorageError` past ``limit`` bytes, or when it is missing or not a
    regular file (never followed)."""
    full = inside(root, path)
    if "/" in path and linked_between(fs.conn, root, full):  # a folder swapped for a link
        raise StorageError(f"Cannot read {full}: not a regular file.")
    data = fs.read_small(full, limit)
    if data is None:
        raise StorageError(f"Cannot read {full}: no such file.")
    return data


def write(fs: SftpFs, full: str, data: bytes, *, replace: bool) -> None:
    """Write a small staged file under a temporary name, then rename it into place (an
    existing file only with ``replace``). Raises :class:`StorageError`."""
    folder, name = posixpath.split(full)
    temp = posixpath.join(folder, temp_name())
    sftp = fs.conn.sftp
    try:
        fs.requests["write"] += 1
        with sftp.open(temp, "wb") as f:
            f.write(data)
        if replace:
            fs.replace(temp, full)
        else:
            fs.trips.hardlink(fs.conn, temp, full)  # refuses an existing target
    except OSError as err:
        if not replace and fs.lstat(full) is not None:
            if _holds(fs, full, data):
                return  # written by an attempt whose answer was lost: done
            raise StorageError(f"{name} already exists in {folder}; not overwritten.") from err
        raise
    finally:
        with contextlib.suppress(OSError):
            sftp.remove(temp)


def _holds(fs: SftpFs, path: str, data: bytes) -> bool:
    """Whether a small file on the server has exactly ``data``."""
    fs.requests["read"] += 1
    with fs.conn.sftp.open(path, "rb") as f:
        return bool(f.read(len(data) + 1) == data)
