"""The tidy's removals on this machine's filesystem, by descriptor: each folder of staging
is opened from the one above it with ``O_DIRECTORY | O_NOFOLLOW`` and checked against the
identity the freeze recorded; each file is looked at with ``fstatat`` and removed with
``unlinkat`` relative to that descriptor. A name swapped for a link at any level (one
``renameat2(RENAME_EXCHANGE)`` of ``staging/TAG/docs`` with a link to a public folder)
cannot redirect a removal: the bot never walks a path again once it holds the folder."""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from bot.storage.primitives import Stamp

_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass
class Tree:
    """The planned files below one folder: by name here, and the folders below."""

    files: dict[str, str] = field(default_factory=dict)  # name -> path relative to the root
    folders: dict[str, Tree] = field(default_factory=dict)

    @classmethod
    def of(cls, paths: Sequence[str]) -> Tree:
        root = cls()
        for path in paths:
            node = root
            *parents, name = path.split("/")
            for part in parents:
                node = node.folders.setdefault(part, cls())
            node.files[name] = path
        return root

    def paths(self) -> list[str]:
        """Every file path at or below this folder."""
        found = list(self.files.values())
        for inner in self.folders.values():
            found += inner.paths()
        return found


def identity(st: os.stat_result) -> str:
    return f"{st.st_dev}:{st.st_ino}"


def folder_ids(root: str, folders: Sequence[str]) -> dict[str, str]:
    """See :meth:`bot.storage.primitives.FileSystem.folder_ids`."""
    found: dict[str, str] = {}
    for folder in folders:
        fd = _open_below(root, folder)
        if fd is not None:
            try:
                found[folder] = identity(os.fstat(fd))
            finally:
                os.close(fd)
    return found


def _open_below(root: str, folder: str) -> int | None:
    """A descriptor of ``root/folder``, each component opened without following a link;
    None when one is not a folder (or is gone)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # the configured root
    for part in folder.split("/") if folder else []:
        try:
            inner = os.open(part, _FOLDER, dir_fd=fd)
        except (FileNotFoundError, NotADirectoryError):
            os.close(fd)
            return None
        except OSError as err:
            os.close(fd)
            if err.errno == errno.ELOOP:
                return None
            raise
        os.close(fd)
        fd = inner
    return fd


def remove_staged(
    root: str, files: Mapping[str, Stamp], folders: Mapping[str, str]
) -> dict[str, str]:
    """See :meth:`bot.storage.primitives.FileSystem.remove_staged`."""
    left: dict[str, str] = {}
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # the configured root
    try:
        _visit(fd, "", Tree.of(list(files)), files, folders, left)
    finally:
        os.close(fd)
    return left


def _visit(
    fd: int,
    here: str,
    tree: Tree,
    files: Mapping[str, Stamp],
    folders: Mapping[str, str],
    left: dict[str, str],
) -> None:
    """Remove ``tree``'s files from the folder held by ``fd`` (``here``, checked already),
    then go down into its folders, then remove those left empty."""
    for name, path in tree.files.items():
        why = _remove_file(fd, name, files[path])
        if why:
            left[path] = why
    for name, inner in tree.folders.items():
        relative = posixpath.join(here, name)
        try:
            below = os.open(name, _FOLDER, dir_fd=fd)
        except FileNotFoundError:
            continue  # gone with everything in it: nothing to remove
        except OSError as err:
            swapped = err.errno in (errno.ELOOP, errno.ENOTDIR)  # a link or a file now
            for path in inner.paths():
                left[path] = f"folder {relative}" if swapped else f"error {err.strerror or err}"
            continue
        try:
            if identity(os.fstat(below)) != folders.get(relative):
                for path in inner.paths():
                    left[path] = f"folder {relative}"
                continue
            _visit(below, relative, inner, files, folders, left)
        finally:
            os.close(below)
        with contextlib.suppress(OSError):  # not empty, gone, or replaced: it stays
            if identity(os.stat(name, dir_fd=fd, follow_symlinks=False)) == folders[relative]:
                os.rmdir(name, dir_fd=fd)


def _remove_file(fd: int, name: str, copied: Stamp) -> str:
    """Unlink ``name`` in the folder held by ``fd`` if it is still the file the bot copied;
    "" when removed or gone, else why it stays."""
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return ""
    except OSError as err:
        return f"error {err.strerror or err}"
    found = Stamp(st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    if not stat.S_ISREG(st.st_mode) or not copied.complete or found != copied:
        return "changed"
    try:
        os.unlink(name, dir_fd=fd)
    except FileNotFoundError:
        return ""
    except OSError as err:
        return f"error {err.strerror or err}"
    return ""
