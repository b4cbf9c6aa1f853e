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
inode, size and ctime, which no uploader can set back); one changed since is left where it
is, and named.
"""

from __future__ import annotations

import contextlib
import json
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field

from bot.domain.plan import PlanFile, PublishPlan
from bot.errors import StorageError
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
    backend reports inodes."""

    sources: dict[str, Stamp | None] = field(default_factory=dict)
    copies: dict[str, int] = field(default_factory=dict)
    sha256: dict[str, str] = field(default_factory=dict)

    def to_bytes(self) -> bytes:
        data = {
            "sources": {p: s.to_json() if s else None for p, s in sorted(self.sources.items())},
            "copies": dict(sorted(self.copies.items())),
            "sha256": dict(sorted(self.sha256.items())),
        }
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
        except (ValueError, KeyError, TypeError, AttributeError):
            return cls()  # unreadable: every copy is made again, every original hashed
        return cls(sources, copies, sha256)

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
        make_folders(fs, places.frozen(tag), places.frozen_area, FOLDER_MODE)
        fs.write_small(places.sources(tag), record.to_bytes())
    return problems


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
    copied, the folders left empty, and the bot's copies of the release; returns the
    originals left in staging because they changed since the copy."""
    tag = plan.tag
    check_area(fs, places, places.frozen_area)
    record = read_record(fs, places, tag)
    staged = {f.path: places.staged(tag, f.path) for f in plan.files}
    now = fs.stamps(list(staged.values()))
    remove: list[PlanFile] = []
    unsure: list[PlanFile] = []
    left: list[str] = []
    for f in plan.files:
        found, copied = now[staged[f.path]], record.sources.get(f.path)
        if copied is None and f.path in record.sources:
            continue  # made by the bot (a signature): it has no original in staging
        if found is None:
            continue  # gone already (a repeated tidy), or not a regular file any more
        if copied is not None and copied.complete and found == copied:
            remove.append(f)
        elif copied is not None and not copied.complete and found.size == copied.size:
            unsure.append(f)  # no ctime here: only the bytes can tell
        else:
            left.append(f.path)
    if unsure:
        digests = fs.hash([staged[f.path] for f in unsure])
        for f in unsure:
            if digests[staged[f.path]] == f.sha256:
                remove.append(f)
            else:
                left.append(f.path)
    for f in remove:
        with contextlib.suppress(FileNotFoundError):
            fs.remove(staged[f.path])
    prune(fs, places.staged(tag))
    discard(fs, places, tag)
    return sorted(left)


def targets_in_public(fs: FileSystem, places: Places, plan: PublishPlan) -> list[str]:
    """The plan's public targets that exist now (any content)."""
    listed = Listings(fs)
    return [f.target for f in plan.files if listed.entry(places.target(f)) is not None]


def prune(fs: FileSystem, root: str) -> None:
    """Remove folders left empty under ``root`` and ``root`` itself, innermost first (a
    folder someone staged more into stays)."""
    folders = _folders(fs, root)
    if folders is not None:
        folders.append(root)
    for folder in sorted(folders or [], key=lambda d: -d.count("/")):
        fs.rmdir(folder)


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


def _folders(fs: FileSystem, root: str) -> list[str] | None:
    entries = fs.listdir(root)
    if entries is None:
        return None
    found = []
    for name, entry in entries.items():
        if entry.is_dir:
            inner = posixpath.join(root, name)
            found += [inner, *(_folders(fs, inner) or [])]
    return found


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
