"""Pinning a publish to its confirmation, written once over the storage primitives: the
freeze (the bot's own copy of every confirmed file), the discard (``/abort``) and the tidy
(the staged originals removed once the release is public).

At confirmation the bot copies each planned file from staging into its work folder
(``WORK/frozen/TAG/tree/TARGET``, the public layout; the files that replace live ones into
``WORK/aside/TAG/``). Each copy is owned by the bot's account, mode 0444, made durable and
hashed; it lands under its name only when its bytes are the confirmed ones. Only these
copies are ever promoted: no uploader's inode, folder or open handle reaches public, and
whatever happens in staging after the confirmation changes nothing of the publish.

The staged originals stay in staging until the release is public, so ``/abort`` only drops
the bot's copies. Then each original is removed if it is still the file the bot copied (same
inode, size and ctime, which no uploader can set back), from the folder the bot copied it
from: the freeze records each staged folder's identity (device and inode, reached without
following a link), and the tidy enters each folder the same way, checks it against the
record and removes relative to the folder it holds (``local_tidy``, ``remote_tidy``). What
it cannot remove (changed, a folder replaced, no permission) is left where it is, and named.
"""

from __future__ import annotations

import contextlib
import json
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field

from bot.domain.plan import PlanFile, PublishPlan
from bot.errors import StorageError
from bot.ports import Left
from bot.storage.primitives import (
    FILE_MODE,
    FOLDER_MODE,
    CopyJob,
    Entry,
    FileSystem,
    Places,
    Stamp,
)
from bot.storage.workarea import check_area, check_work

MAX_SOURCES = 4 << 20  # the record of a release's originals: a few kB per hundred files


@dataclass
class Record:
    """What the bot keeps about its copies of one release, in its own area
    (``WORK/frozen/TAG/sources.json``): each staged original's :class:`Stamp` as the copy
    found it, the SHA-256 each copy was made with, and the inode of each copy where the
    backend reports inodes. ``folders``: the identity (``DEVICE:INODE``) of each staged
    folder the originals were copied from, by path below the release's folder (``""``: the
    release's folder itself); None in a record made before the bot kept them."""

    sources: dict[str, Stamp | None] = field(default_factory=dict)
    copies: dict[str, int] = field(default_factory=dict)
    sha256: dict[str, str] = field(default_factory=dict)
    folders: dict[str, str] | None = None

    def to_bytes(self) -> bytes:
        data: dict[str, object] = {
            "sources": {p: s.to_json() if s else None for p, s in sorted(self.sources.items())},
            "copies": dict(sorted(self.copies.items())),
            "sha256": dict(sorted(self.sha256.items())),
        }
        if self.folders is not None:
            data["folders"] = dict(sorted(self.folders.items()))
        return json.dumps(data).encode() + b"\n"

    @classmethod
    def from_bytes(cls, raw: bytes | None) -> Record:
        if raw is None:
            return cls()
        try:
            data = json.loads(raw)
            sources = {str(p): Stamp.from_json(s) for p, s in data["sources"].items()}
            copies = {str(p): int(i) for p, i in data["copies"].items()}
            sha256 = {str(p): str(h) for p, h in data["sha256"].items()}
            kept = data.get("folders")
            folders = None if kept is None else {str(p): str(i) for p, i in kept.items()}
        except (ValueError, KeyError, TypeError, AttributeError):
            return cls()  # unreadable: every copy is made again, every original hashed
        return cls(sources, copies, sha256, folders)

    def made(self, f: PlanFile) -> bool:
        """Whether the copy of ``f`` in place was made for these bytes."""
        return self.sha256.get(f.path) == f.sha256


def read_record(fs: FileSystem, places: Places, tag: object) -> Record:
    return Record.from_bytes(fs.read_small(places.sources(tag), MAX_SOURCES))


def intact(entry: Entry | None, f: PlanFile, uid: int) -> bool:
    """Whether ``entry`` can be the bot's copy of ``f``: a regular file of the bot's,
    read-only, of the planned size. Nobody but the bot (and root) can write such a file in
    the bot's area, and the bot put it there only once its bytes hashed to the plan."""
    return (
        entry is not None
        and entry.is_file
        and entry.uid == uid
        and entry.permissions == FILE_MODE
        and entry.size == f.size
    )


def freeze(fs: FileSystem, places: Places, plan: PublishPlan, *, fresh: bool) -> list[str]:
    """Copy the plan's files from staging into the bot's area, hashing each copy; returns
    what differs from the plan (``X changed``, ``X is missing``, ``X is not a regular
    file``; empty when exact). A copy already made by an earlier attempt is kept. With
    ``fresh`` (a new confirmation) whatever an earlier publish of the tag left is dropped
    first. Raises ``WorkAreaUntrusted`` when the work folder is not the bot's."""
    check_work(fs, places, create=True)
    tag, uid = plan.tag, fs.uid()
    if fresh:
        discard(fs, places, tag)
    listed = Listings(fs)
    record = read_record(fs, places, tag)
    jobs: list[tuple[PlanFile, CopyJob]] = []
    for f in plan.files:
        copy = places.copy_of(plan, f)
        entry = listed.entry(copy)
        if intact(entry, f, uid) and record.made(f):
            continue
        if entry is not None:  # not a copy the bot finished: made again
            fs.remove(copy)
        jobs.append((f, CopyJob(places.staged(tag, f.path), copy, f.sha256)))
    for folder in dict.fromkeys(posixpath.dirname(job.target) for _, job in jobs):
        stop = places.aside_area if folder.startswith(places.aside_area) else places.frozen_area
        make_folders(fs, folder, stop, FOLDER_MODE)
    results = fs.copy([job for _, job in jobs]) if jobs else []
    problems = []
    for (f, _job), copied in zip(jobs, results, strict=True):
        if copied.problem:
            problems.append(f"{f.path} {copied.problem}")
            continue
        record.sources[f.path] = copied.source
        record.sha256[f.path] = copied.sha256
        record.copies.pop(f.path, None)
        if copied.copy_ino is not None:
            record.copies[f.path] = copied.copy_ino
    if jobs:
        record.folders = folders_copied_from(fs, places, plan, record.folders or {})
        make_folders(fs, places.frozen(tag), places.frozen_area, FOLDER_MODE)
        fs.write_small(places.sources(tag), record.to_bytes())
    return problems


def folders_copied_from(
    fs: FileSystem, places: Places, plan: PublishPlan, known: dict[str, str]
) -> dict[str, str]:
    """The identities of the staged folders of ``plan``'s files as they are now, after the
    copies (a folder not reachable without a link is left out: the tidy leaves its files).
    A swap during the copy cannot lend a public folder's identity: no uploader can move a
    public folder into staging."""
    tag = str(plan.tag)
    wanted = sorted({"", *(a for f in plan.files for a in _parents(f.path))})
    found = fs.folder_ids(places.staging, [posixpath.join(tag, r) if r else tag for r in wanted])
    ids = {r: found.get(posixpath.join(tag, r) if r else tag) for r in wanted}
    return {
        **{r: i for r, i in known.items() if r not in ids},
        **{r: i for r, i in ids.items() if i},
    }


def add_copies(
    fs: FileSystem, places: Places, plan: PublishPlan, made: Sequence[tuple[PlanFile, bytes]]
) -> None:
    """Add files the bot made itself (the signatures of the confirmed files, ``made``: each
    planned file with its bytes) to its copies of ``plan``, as the freeze makes copies: owned
    by the bot, read-only, landing only when their bytes hash to the planned SHA-256. Each is
    written whole under a temporary name of the bot's area first, then copied into place."""
    check_work(fs, places, create=False)
    tag = plan.tag
    record = read_record(fs, places, tag)
    jobs = []
    for i, (f, data) in enumerate(made):
        temp = posixpath.join(places.frozen(tag), f".made-{i}")
        fs.write_small(temp, data)
        jobs.append((f, temp, CopyJob(temp, places.copy_of(plan, f), f.sha256)))
    for folder in dict.fromkeys(posixpath.dirname(job.target) for _, _, job in jobs):
        make_folders(fs, folder, places.frozen_area, FOLDER_MODE)
    for (f, temp, _job), copied in zip(jobs, fs.copy([j for _, _, j in jobs]), strict=True):
        fs.remove(temp)
        if copied.problem:
            raise StorageError(f"The bot's copy of {f.path} {copied.problem}.")
        record.sources[f.path] = None  # no staged original: tidy leaves staging alone
        record.sha256[f.path] = copied.sha256
        record.copies.pop(f.path, None)
        if copied.copy_ino is not None:
            record.copies[f.path] = copied.copy_ino
    fs.write_small(places.sources(tag), record.to_bytes())


def frozen_problems(
    fs: FileSystem, places: Places, plan: PublishPlan, listed: Listings, record: Record
) -> list[tuple[str, str]]:
    """Why the bot's copies of ``plan`` cannot be promoted as they are: (path, ``the bot's
    copy of X is missing`` or ``… changed``). A copy already moved to public (a resumed
    promotion) is not a problem: the check after promotion covers it."""
    uid, problems = fs.uid(), []
    for f in plan.files:
        entry = listed.entry(places.copy_of(plan, f))
        known = record.copies.get(f.path)
        if entry is None:
            if listed.entry(places.target(f)) is None:
                problems.append((f.path, f"the bot's copy of {f.path} is missing"))
        elif (
            not intact(entry, f, uid)
            or not record.made(f)
            or (None not in (known, entry.ino) and known != entry.ino)
        ):
            problems.append((f.path, f"the bot's copy of {f.path} changed"))
    return problems


def discard(fs: FileSystem, places: Places, tag: object) -> None:
    """Drop the bot's copies of ``tag`` (``/abort``, or a fresh confirmation). Nothing when
    the work folder was never made; ``WorkAreaUntrusted`` when it is not the bot's (then
    nothing is touched)."""
    if fs.lstat(places.work) is None:
        return
    check_work(fs, places, create=False)
    fs.remove_tree(places.frozen(tag))
    fs.remove_tree(places.aside(tag))


def tidy(fs: FileSystem, places: Places, plan: PublishPlan) -> list[str]:
    """Once ``plan`` is public: remove each staged original that is still the file the bot
    copied, from the folder it copied it from, never through a link at any level of
    staging; then the folders left empty and the bot's copies of the release. Returns the
    originals left in staging (:class:`bot.ports.Left`: each with why). ``StorageError``
    when staging was left as it is (a record from before the folders' identities, a server
    that runs no commands)."""
    tag = plan.tag
    check_area(fs, places, places.frozen_area)
    record = read_record(fs, places, tag)
    if record.folders is None:
        discard(fs, places, tag)
        raise StorageError(
            f"the bot's record of its copies of {tag} predates the folders' identities, so "
            "staging was left as it is"
        )
    files: dict[str, Stamp] = {}
    for f in plan.files:
        copied = record.sources.get(f.path)
        if copied is None and f.path in record.sources:
            continue  # made by the bot (a signature): it has no original in staging
        # no stamp of the original (an unreadable record): it can only be left
        files[f"{tag}/{f.path}"] = copied or Stamp(None, -1, 0, None)
    folders = {posixpath.join(str(tag), r) if r else str(tag): i for r, i in record.folders.items()}
    try:
        left = fs.remove_staged(places.staging, files, folders)
    except StorageError:
        discard(fs, places, tag)
        raise
    discard(fs, places, tag)
    prefix = f"{tag}/"
    return sorted(
        Left(p.removeprefix(prefix), why.replace(f"folder {prefix}", "folder ", 1))
        for p, why in left.items()
    )


def _parents(path: str) -> list[str]:
    """The folders above ``path`` (relative): ``a``, ``a/b`` for ``a/b/c``."""
    parts = path.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def targets_in_public(fs: FileSystem, places: Places, plan: PublishPlan) -> list[str]:
    """The plan's public targets that exist now (any content)."""
    listed = Listings(fs)
    return [f.target for f in plan.files if listed.entry(places.target(f)) is not None]


def holds_exactly(fs: FileSystem, root: str, expected: set[str]) -> bool:
    """Whether folder ``root`` holds regular files named ``expected`` (paths below ``root``)
    and nothing else: no other file, no link, no empty folder. Only then may one rename
    move the whole folder."""
    found: set[str] = set()

    def walk(folder: str, relative: str) -> bool:
        """Whether ``folder`` holds files and folders of files only: not unreadable, not
        empty, no link, no special file, no empty folder."""
        entries = fs.listdir(folder)
        if not entries:  # unreadable or empty: an unplanned folder
            return False
        for name, entry in entries.items():
            path = f"{relative}/{name}" if relative else name
            if entry.is_dir:
                if not walk(posixpath.join(folder, name), path):
                    return False
            elif entry.is_file:
                found.add(path)
            else:
                return False
        return True

    return walk(root, "") and found == expected


def ancestors(folder: str, stop: str) -> list[str]:
    """``folder`` and its parents below ``stop`` (exclusive)."""
    found = []
    while folder.startswith(stop + "/"):
        found.append(folder)
        folder = posixpath.dirname(folder)
    return found


def make_folders(fs: FileSystem, folder: str, stop: str, mode: int) -> None:
    """``mkdir -p`` below ``stop`` (``"/"``: the whole path, as far as it is missing); each
    folder made gets exactly ``mode``."""
    inner = folder.startswith(stop.rstrip("/") + "/")
    if folder == stop or not inner or fs.lstat(folder) is not None:
        return
    make_folders(fs, posixpath.dirname(folder), stop, mode)
    with contextlib.suppress(FileExistsError):
        fs.mkdir(folder, mode)


class Listings:
    """``lstat`` answers from one listing per folder (one round trip each on SFTP)."""

    def __init__(self, fs: FileSystem) -> None:
        self.fs = fs
        self.folders: dict[str, dict[str, Entry]] = {}

    def entry(self, path: str) -> Entry | None:
        folder, name = posixpath.split(path)
        if folder not in self.folders:
            self.folders[folder] = self.fs.listdir(folder) or {}
        return self.folders[folder].get(name)
