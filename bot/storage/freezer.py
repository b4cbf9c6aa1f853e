"""Pinning a publish to its confirmation: the freeze, the checks around promotion, and the
way back (``/abort``), written once over a few storage primitives that each backend provides.

At confirmation the release's planned files move (one rename per folder where possible) from
the staging folder, which uploaders can write, into the bot's own area on the same
filesystem: a folder created ``0700`` by the bot's account that nobody else can write into or
even traverse. What is hashed, compared with the plan and promoted is what lies there.

Uploaders may write to the staging root, so they can rename the area away and put a folder
of their own in its place: the area is checked (a real folder, owned by the bot, mode
``0700``) every time before it is used, and refused otherwise.
"""

from __future__ import annotations

import contextlib
import posixpath
import stat
from collections.abc import Iterable, Sequence

from bot.domain.plan import PlanFile, PublishPlan
from bot.errors import PromotionConflict, StorageError
from bot.storage.primitives import AREA as AREA  # re-exported: imported from here before
from bot.storage.primitives import (
    AREA_MODE,
    FOLDER_MODE,
    Entry,
    Places,
    Primitives,
)


class FrozenMismatch(StorageError):
    """The frozen files are not exactly the confirmed plan; ``problems`` name them."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__(
            f"The frozen files differ from the confirmed plan ({', '.join(problems)}); "
            "nothing more was made public."
        )
        self.problems = tuple(problems)


def check_area(fs: Primitives, places: Places, *, create: bool) -> None:
    """Make sure the bot's area is the bot's: a real folder, owned by the bot, mode 0700.
    Raises :class:`StorageError` naming what is wrong."""
    area = places.area
    entry = fs.lstat(area)
    if entry is None and create:
        fs.mkdir(area, AREA_MODE)
        entry = fs.lstat(area)
    if entry is None:
        raise StorageError(f"The bot's frozen-file folder {area} is missing.")
    problems = []
    if not entry.is_dir:
        problems.append("it is not a real folder")
    if entry.uid != fs.uid():
        problems.append(f"it is owned by uid {entry.uid}, not by the bot (uid {fs.uid()})")
    if stat.S_IMODE(entry.mode) != AREA_MODE:
        problems.append(f"its mode is {stat.S_IMODE(entry.mode):o}, not 700")
    if problems:
        raise StorageError(
            f"The bot's frozen-file folder {area} cannot be trusted ({'; '.join(problems)}); "
            "nothing was moved: someone must have replaced it, so check staging before "
            "removing it."
        )


def area_problem(fs: Primitives, places: Places) -> str | None:
    """For ``relbot check``: why the bot's area cannot be trusted, if it exists."""
    if fs.lstat(places.area) is None:
        return None
    try:
        check_area(fs, places, create=False)
    except StorageError as err:
        return f"storage: {err}"
    return None


def targets_in_public(fs: Primitives, places: Places, plan: PublishPlan) -> list[str]:
    """The plan's public targets that exist now (any content)."""
    listed = Listings(fs)
    return [f.target for f in plan.files if listed.entry(places.target(f)) is not None]


def check_targets(fs: Primitives, places: Places, plan: PublishPlan) -> None:
    """Before anything moves: every public target is absent or already the planned content
    (else :class:`PromotionConflict`), every absent one has its file frozen or staged."""
    listed = Listings(fs)
    folders = {posixpath.dirname(places.target(f)) for f in plan.files}
    for folder in sorted({a for d in folders for a in ancestors(d, places.public)}):
        entry = listed.entry(folder)
        if entry is not None and not entry.is_dir:
            raise StorageError(
                f"{folder} is in the way: it should be a folder of public files; nothing "
                "was moved (move it away and the publish resumes by itself)."
            )
    public = [f for f in plan.files if listed.entry(places.target(f)) is not None]
    for f in public:
        entry = listed.entry(places.target(f))
        assert entry is not None
        if not entry.is_file:
            raise PromotionConflict(
                f"{f.target} is already public and is not a regular file; nothing was moved "
                "(remove or rename it first)."
            )
    digests = fs.hash([places.target(f) for f in public]) if public else {}
    for f in public:
        if digests[places.target(f)] != f.sha256:
            raise PromotionConflict(
                f"{f.target} is already public with different content; "
                "nothing was moved (remove or rename one of them first)."
            )
    for f in plan.files:
        if f in public:
            continue
        entry = listed.entry(places.frozen(plan, f.path)) or listed.entry(
            places.staged(plan, f.path)
        )
        if entry is None:
            raise StorageError(
                f"{f.path} is neither in staging nor public; nothing was moved "
                f"(/abort {plan.tag} puts the other files back in staging)."
            )
        if not entry.is_file:
            raise StorageError(
                f"{f.path} is not a regular file (a symlink?); it is never published: "
                "replace it with the file itself and re-run /publish."
            )


def freeze(fs: Primitives, places: Places, plan: PublishPlan, *, fresh: bool) -> int:
    """Move the plan's files that are still staged into the bot's area: a staging folder
    holding exactly planned files (and no folder) in one rename, the rest file by file.
    A file already frozen is kept (a resumed freeze never takes a newer upload). With
    ``fresh`` (a new confirmation), whatever an earlier publish left in the area is set aside
    first. Not-regular entries are left in staging (the check reports them). Returns how
    many renames it made (0: everything was frozen already)."""
    check_area(fs, places, create=True)
    release = places.frozen(plan)
    if fresh and fs.lstat(release) is not None:
        _set_aside(fs, places, plan)
    if fs.lstat(release) is None and holds_exactly(
        fs, places.staged(plan), {f.path for f in plan.files}
    ):
        fs.rename(places.staged(plan), release)
        return 1
    renames = 0
    groups: dict[str, list[PlanFile]] = {}
    for f in plan.files:
        groups.setdefault(posixpath.dirname(f.path), []).append(f)
    for folder in sorted(groups, key=lambda d: (-d.count("/") - bool(d), d)):
        source, target = places.staged(plan, folder), places.frozen(plan, folder)
        names = {posixpath.basename(f.path) for f in groups[folder]}
        entries = fs.listdir(source)
        if entries is None:
            continue
        whole = (
            set(entries) == names
            and all(e.is_file for e in entries.values())
            and fs.lstat(target) is None
        )
        if whole:
            make_folders(fs, posixpath.dirname(target), places.area, FOLDER_MODE)
            fs.rename(source, target)
            renames += 1
            continue
        make_folders(fs, target, places.area, FOLDER_MODE)
        for name in sorted(names):
            entry = entries.get(name)
            if entry is None or not entry.is_file:
                continue
            frozen = posixpath.join(target, name)
            if fs.lstat(frozen) is None:
                fs.rename(posixpath.join(source, name), frozen)
                renames += 1
    prune(fs, places.staged(plan), keep_root=False)
    return renames


def frozen_file(fs: Primitives, places: Places, plan: PublishPlan, path: str) -> str:
    """Where a file the bot adds to a frozen release goes (a signature beside a frozen
    file): checked to be inside the bot's area, in a folder the freeze made. Raises
    :class:`StorageError`."""
    check_area(fs, places, create=False)
    target = places.frozen(plan, path)
    folder = fs.lstat(posixpath.dirname(target))
    if folder is None or not folder.is_dir:
        raise StorageError(
            f"The frozen files of {plan.tag} are not in the bot's area, so nothing can be "
            "written beside them."
        )
    return target


def frozen_problems(
    fs: Primitives, places: Places, plan: PublishPlan, *, public_before: Iterable[str] = ()
) -> list[str]:
    """What keeps the frozen files from being exactly the plan: ``X changed``, ``X is
    missing``, ``X is not a regular file``. A file no longer frozen because it is public
    already (a resumed promotion) is not a problem; the check after promotion covers it."""
    check_area(fs, places, create=False)
    listed = Listings(fs)
    before = set(public_before)
    problems, wanted = [], []
    for f in plan.files:
        entry = listed.entry(places.frozen(plan, f.path))
        if entry is None:
            public = listed.entry(places.target(f))
            if public is None or f.target in before:
                problems.append(f"{f.path} is missing")
        elif not entry.is_file:
            problems.append(f"{f.path} is not a regular file")
        else:
            wanted.append(f)
    digests = fs.hash([places.frozen(plan, f.path) for f in wanted]) if wanted else {}
    problems += [
        f"{f.path} changed" for f in wanted if digests[places.frozen(plan, f.path)] != f.sha256
    ]
    return problems


def public_problems(fs: Primitives, places: Places, plan: PublishPlan) -> list[str]:
    """After promotion, hashed where the files live: ``TARGET differs``, ``TARGET is
    missing``, ``TARGET is not a regular file``."""
    listed = Listings(fs)
    problems, present = [], []
    for f in plan.files:
        entry = listed.entry(places.target(f))
        if entry is None:
            problems.append(f"{f.target} is missing")
        elif not entry.is_file:
            problems.append(f"{f.target} is not a regular file")
        else:
            present.append(f)
    digests = fs.hash([places.target(f) for f in present]) if present else {}
    problems += [f"{f.target} differs" for f in present if digests[places.target(f)] != f.sha256]
    return problems


def thaw(fs: Primitives, places: Places, plan: PublishPlan) -> list[str]:
    """Put the frozen files back in staging, never over a file uploaded there since: those
    clash, stay frozen and are returned. A frozen release folder that was the uploaders' own
    folder goes back in one rename when its staging place is free."""
    if fs.lstat(places.area) is None:
        return []  # nothing was ever frozen (a crash before the freeze)
    check_area(fs, places, create=False)
    release, staged = places.frozen(plan), places.staged(plan)
    entry = fs.lstat(release)
    if entry is None:
        return []
    if entry.uid != fs.uid() and fs.lstat(staged) is None:
        fs.rename(release, staged)
        return []
    clashes = []
    listed = Listings(fs)
    for f in plan.files:
        source = places.frozen(plan, f.path)
        if listed.entry(source) is None:
            continue
        target = places.staged(plan, f.path)
        make_folders(fs, posixpath.dirname(target), places.staging, FOLDER_MODE)
        try:
            fs.link(source, target)
        except FileExistsError:
            clashes.append(f.path)
            continue
        fs.remove(source)
    prune(fs, release, keep_root=False)
    return clashes


def prune(fs: Primitives, root: str, *, keep_root: bool) -> None:
    """Remove folders left empty under ``root``, innermost first (a folder someone staged
    more into stays)."""
    folders = _folders(fs, root)
    if not keep_root and folders is not None:
        folders.append(root)
    for folder in sorted(folders or [], key=lambda d: -d.count("/")):
        fs.rmdir(folder)


def holds_exactly(
    fs: Primitives,
    root: str,
    expected: set[str],
    *,
    prefix: str = "",
    ignoring: set[str] | frozenset[str] = frozenset(),
) -> bool:
    """Whether folder ``root`` holds regular files named ``expected`` (paths below ``root``
    joined onto ``prefix``) and nothing else, not counting ``ignoring``: no other file, no
    link, no empty folder. Only then may one rename move the whole folder."""
    found: set[str] = set()

    def walk(folder: str, relative: str) -> int | None:
        """How many files lie below ``folder``; None for anything that is not a file."""
        entries = fs.listdir(folder)
        if entries is None:
            return None
        files = 0
        for name, entry in entries.items():
            path = f"{relative}/{name}" if relative else name
            if entry.is_dir:
                inner = walk(posixpath.join(folder, name), path)
                if not inner:  # unreadable, odd, or empty: an unplanned folder
                    return None
                files += inner
            elif entry.is_file:
                found.add(path)
                files += 1
            else:
                return None
        return files

    return walk(root, prefix) is not None and found - ignoring == expected


def _folders(fs: Primitives, root: str) -> list[str] | None:
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


def make_folders(fs: Primitives, folder: str, stop: str, mode: int) -> None:
    """``mkdir -p`` below ``stop`` (``"/"``: the whole path, as far as it is missing)."""
    inner = folder.startswith(stop.rstrip("/") + "/")
    if folder == stop or not inner or fs.lstat(folder) is not None:
        return
    make_folders(fs, posixpath.dirname(folder), stop, mode)
    with contextlib.suppress(FileExistsError):
        fs.mkdir(folder, mode)


def _set_aside(fs: Primitives, places: Places, plan: PublishPlan) -> None:
    """Files an aborted publish could not put back (they clashed) must not be taken for
    this confirmation's: rename the old frozen folder to a free ``TAG.N`` name."""
    release = places.frozen(plan)
    n = 1
    while fs.lstat(f"{release}.{n}") is not None:
        n += 1
    fs.rename(release, f"{release}.{n}")


class Listings:
    """``lstat`` answers from one listing per folder (one round trip each on SFTP)."""

    def __init__(self, fs: Primitives) -> None:
        self.fs = fs
        self.folders: dict[str, dict[str, Entry]] = {}

    def entry(self, path: str) -> Entry | None:
        folder, name = posixpath.split(path)
        if folder not in self.folders:
            self.folders[folder] = self.fs.listdir(folder) or {}
        return self.folders[folder].get(name)
