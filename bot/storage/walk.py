"""Walking a staged tree as untrusted data, for every backend: iteratively (no recursion,
whatever the depth), one listing per folder, symbolic links and special files reported and
never entered, and a depth and an entry budget whose excess is reported, never fatal.

A backend gives one function, ``listdir(folder, limit)``: at most ``limit`` entries of one
folder as ``lstat`` sees them (:class:`Dirent`). Everything else is here.
"""

from __future__ import annotations

import stat
from collections.abc import Callable
from dataclasses import dataclass

from bot.domain.files import StagedFile
from bot.storage.listing import empty_folder, join, odd_name, problem, unreadable_folder

MAX_DEPTH = 32  # folders below a release's folder (CPython's deepest is 2: docs/, amd64/)
MAX_ENTRIES = 100_000  # files and folders listed below one release's folder


@dataclass(frozen=True)
class Dirent:
    """One entry of a folder listing, as ``lstat`` sees it (a link is never followed)."""

    name: str
    mode: int
    size: int
    mtime: float
    links: int = 1  # hard links to a regular file (1 where the backend cannot tell)
    allocated: int | None = None  # bytes stored on disk (None where the backend cannot tell)


@dataclass(frozen=True)
class Walked:
    """What a walk found, path → entry, and whether it stopped at the entry budget."""

    entries: dict[str, StagedFile]
    limit: int  # the entry budget the walk had
    cut: bool = False  # it stopped there


Listdir = Callable[[str, int], list[Dirent]]


def walk(
    listdir: Listdir,
    root: str,
    prefix: str,
    *,
    unreadable: tuple[type[OSError], ...],
    reason: Callable[[OSError], str],
) -> Walked:
    """Every entry below ``root`` (its own listing's errors are raised), keyed by path
    under ``prefix``. A sub-folder whose listing raises one of ``unreadable`` is reported
    with ``reason(err)``, an empty one and an odd name are reported; a folder more than
    :data:`MAX_DEPTH` folders below ``root`` is not entered, its top folder reported; at
    :data:`MAX_ENTRIES` entries the walk stops (``cut``), keeping the entries it listed
    (a folder's first ones when its own listing is past the budget)."""
    max_depth, limit = MAX_DEPTH, MAX_ENTRIES  # the module's budgets, read at each walk
    found: dict[str, StagedFile] = {}
    left = limit
    pending = [(root, prefix, 0)]  # folders still to list: (where, key prefix, depth)
    while pending:
        folder, path, depth = pending.pop()
        try:
            entries = listdir(folder, left + 1)
        except FileNotFoundError:
            if depth == 0:
                raise
            continue  # removed since its parent was listed
        except unreadable as err:
            if depth == 0:
                raise
            found[path + "/"] = unreadable_folder(path + "/", reason(err))
            continue
        if not entries and depth > 0:
            found[path + "/"] = empty_folder(path + "/")
        cut = len(entries) > left
        if cut:  # what was listed is still judged; the rest is "not listed"
            entries, pending = entries[:left], []
        left -= len(entries)
        for entry in entries:
            inner = join(path, entry.name)
            if (odd := odd_name(inner)) is not None:
                found[odd.path] = odd
            elif stat.S_ISDIR(entry.mode):
                if depth + 1 > max_depth:
                    top = _top(inner, prefix)
                    found[top + "/"] = problem(
                        top + "/",
                        f"more than {max_depth} folders deep: nothing below that depth was "
                        "listed; remove the deep folders",
                    )
                else:
                    pending.append((f"{folder}/{entry.name}", inner, depth + 1))
            else:
                regular = stat.S_ISREG(entry.mode)
                found[inner] = StagedFile(
                    inner,
                    entry.size,
                    entry.mtime,
                    regular,
                    links=entry.links if regular else 1,
                    allocated=entry.allocated if regular else None,
                )
        if cut:
            return Walked(dict(sorted(found.items())), limit, cut=True)
    return Walked(dict(sorted(found.items())), limit)


def _top(path: str, prefix: str) -> str:
    """The first folder of ``path`` below ``prefix``."""
    below = path[len(prefix) + 1 :] if prefix else path
    return join(prefix, below.split("/")[0])
