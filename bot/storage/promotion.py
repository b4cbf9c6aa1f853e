"""Promotion, written once for every storage backend: the bot's copies (made by
:mod:`bot.storage.freezer` at the confirmation) become public, all at once where possible,
and public is then checked against what the bot wrote.

The copies wait in the public layout (``WORK/frozen/TAG/tree/3.14.1/...``), on public's
filesystem: a folder whose public place does not exist yet becomes public by one rename
(every file appears at once); into an existing folder (prereleases share ``3.14.0/``) the
files are linked no-clobber in plan order, as one batch on the server where it can, and the
copies' other names removed afterwards. Before anything moves, every folder that gets a new
entry is tried for writing, so a folder the bot cannot write stops the publish with nothing
public. After the moves every public file must be the bot's copy: the same inode, owned by
the bot, mode 0444, the planned size; only where the backend cannot tell an inode (SFTP
without exec) or the file was not the bot's (public before the confirmation) is it hashed.
"""

from __future__ import annotations

import errno
import posixpath
import secrets
from collections.abc import Sequence

from bot.domain.plan import PlanFile, PublishPlan
from bot.errors import PromotionConflict, PublishStopped, StorageError
from bot.ports import PromotionReport
from bot.storage.freezer import (
    Listings,
    Record,
    ancestors,
    frozen_problems,
    holds_exactly,
    intact,
    make_folders,
    read_record,
    targets_in_public,
)
from bot.storage.primitives import FOLDER_MODE, Entry, FileSystem, Move, Places, Touched
from bot.storage.workarea import check_area

DENIED = (errno.EACCES, errno.EPERM)


class FrozenMismatch(PublishStopped):
    """The bot's copies are not what it made at the confirmation."""

    def __init__(self, problems: Sequence[str], files: Sequence[str]) -> None:
        super().__init__(
            f"The bot's copies differ from the confirmed plan ({', '.join(problems)}); "
            "nothing more was made public.",
            tuple(files),
        )


def promote(
    fs: FileSystem,
    places: Places,
    plan: PublishPlan,
    *,
    public_before: Sequence[str] = (),
    recheck: bool = False,
) -> PromotionReport:
    """Make the bot's copies of ``plan`` public; idempotent, so a resumed promotion finishes.

    With ``recheck`` (the copies were made by an earlier process, or before a stop: time has
    passed since they were hashed), every copy still waiting and every target an earlier
    attempt made public is hashed again just before the first move: identity (inode, owner,
    mode, size) cannot see bytes rewritten in place.

    Raises :class:`FrozenMismatch` when a copy is missing or changed, ``WorkAreaUntrusted``
    when the work folder is not the bot's, :class:`PromotionConflict` when a target is public
    with other content, and ``StorageError`` naming the public folder when one is in the way
    or cannot be written (then nothing was made public). The report's ``problems`` name the
    public files that are not what the bot wrote after the moves.
    """
    tag = plan.tag
    check_area(fs, places, places.frozen_area)
    record = read_record(fs, places, tag)
    listed = Listings(fs)
    _folders_in_the_way(places, plan, listed)
    if frozen := frozen_problems(fs, places, plan, listed, record):
        raise FrozenMismatch([p for _, p in frozen], [f for f, _ in frozen])
    before = set(public_before)
    copies = {f: listed.entry(places.tree(tag, f.target)) for f in plan.files}
    present = [f for f in plan.files if listed.entry(places.target(f)) is not None]
    resumed = any(f.target not in before for f in present)
    _check_present(fs, places, present, copies, record, moved=resumed)
    renames, singles, leftovers = _moves(fs, places, plan, listed, copies)
    _try_writing(fs, renames, singles)
    if recheck:
        waiting = [f for f in plan.files if copies[f] is not None and f not in present]
        _rehash(fs, places, plan, waiting, [f for f in present if f.target not in before])
    touched = Touched()
    where = places.public  # the public folder being written, for the message of a failure
    try:
        for where in dict.fromkeys(posixpath.dirname(m.target) for m in singles):
            make_folders(fs, where, places.public, FOLDER_MODE)
        for source, target, _ in renames:
            where = posixpath.dirname(target)
            make_folders(fs, where, "/", FOLDER_MODE)
            fs.rename_public(source, target)
            touched.trees.append(target)
            touched.folders.update(ancestors(posixpath.dirname(target), places.public))
        for m in singles:
            touched.files.append(m.target)
            touched.folders.update(ancestors(posixpath.dirname(m.target), places.public))
        where = posixpath.dirname(singles[0].target) if singles else where
        moved = _move_singles(fs, singles, moved_before=bool(renames) or resumed)
    except OSError as err:
        try:
            public = [t for t in targets_in_public(fs, places, plan) if t not in before]
        except OSError:
            raise err from None  # what is public cannot be told now: the cause itself is said
        raise _partly_public(plan, public, where, err) from err
    for copy in leftovers:  # public already (an interrupted promotion): the other name goes
        fs.remove(copy)
    fs.finish(touched)
    problems = _public_problems(fs, places, plan, before, record)
    renamed = tuple(posixpath.relpath(t, places.public) for _, t, _ in renames)
    return PromotionReport(renamed, moved, len(present), tuple(problems))


def _folders_in_the_way(places: Places, plan: PublishPlan, listed: Listings) -> None:
    folders = {posixpath.dirname(places.target(f)) for f in plan.files}
    for folder in sorted({a for d in folders for a in ancestors(d, places.public)}):
        entry = listed.entry(folder)
        if entry is not None and not entry.is_dir:
            raise StorageError(
                f"{folder} is in the way: it should be a folder of public files (move it "
                "away); nothing was made public."
            )


def _check_present(
    fs: FileSystem,
    places: Places,
    present: list[PlanFile],
    copies: dict[PlanFile, Entry | None],
    record: Record,
    *,
    moved: bool,
) -> None:
    """Targets that exist already must hold the planned content (public before the
    confirmation, or put there by an interrupted promotion); else nothing moves."""
    listed = Listings(fs)
    unproven = []
    for f in present:
        entry = listed.entry(places.target(f))
        assert entry is not None
        if not entry.is_file:
            raise PromotionConflict(
                f"{f.target} is already public and is not a regular file; nothing more was "
                "moved (remove or rename it first).",
                moved=moved,
                target=f.target,
            )
        copy, known = copies[f], record.copies.get(f.path)
        ours = entry.ino is not None and entry.ino in (known, copy.ino if copy else None)
        if not (ours and intact(entry, f, fs.uid())):
            unproven.append(f)
    digests = fs.hash([places.target(f) for f in unproven]) if unproven else {}
    for f in unproven:
        if digests[places.target(f)] != f.sha256:
            raise PromotionConflict(
                f"{f.target} is already public with different content; nothing more was "
                "moved (remove or rename one of them first).",
                moved=moved,
                target=f.target,
            )


def _rehash(
    fs: FileSystem,
    places: Places,
    plan: PublishPlan,
    waiting: list[PlanFile],
    moved: list[PlanFile],
) -> None:
    """Hash afresh the copies about to move (``waiting``) and the targets an earlier attempt
    made public (``moved``); raise :class:`FrozenMismatch` naming those whose bytes are not
    the confirmed ones (nothing has moved in this attempt yet)."""
    paths = {places.tree(plan.tag, f.target): f for f in waiting}
    paths |= {places.target(f): f for f in moved}
    digests = fs.hash(list(paths)) if paths else {}
    changed = [f for path, f in paths.items() if digests[path] != f.sha256]
    if changed:
        raise FrozenMismatch(
            [f"the bot's copy of {f.path} changed" for f in changed], [f.path for f in changed]
        )


def _moves(
    fs: FileSystem,
    places: Places,
    plan: PublishPlan,
    listed: Listings,
    copies: dict[PlanFile, Entry | None],
) -> tuple[list[tuple[str, str, list[PlanFile]]], list[Move], list[str]]:
    """Which folders of copies become public by one rename (their public place is absent
    and they hold exactly planned files), which files are linked one by one, and which
    copies are public already under their target (checked by ``_check_present``)."""
    tag = plan.tag
    renames: list[tuple[str, str, list[PlanFile]]] = []
    singles: list[Move] = []
    leftovers: list[str] = []
    handled: set[PlanFile] = set()
    for f in plan.files:
        if f in handled or copies[f] is None:
            continue
        if listed.entry(places.target(f)) is not None:
            leftovers.append(places.tree(tag, f.target))
            continue
        parts = f.target.split("/")[:-1]
        absent = next(
            (
                "/".join(parts[:i])
                for i in range(1, len(parts) + 1)
                if listed.entry(places.target_folder("/".join(parts[:i]))) is None
            ),
            None,
        )
        if absent is not None:
            under = [g for g in plan.files if g.target.startswith(absent + "/")]
            wanted = {g.target[len(absent) + 1 :] for g in under}
            if all(copies[g] is not None for g in under) and holds_exactly(
                fs, places.tree(tag, absent), wanted
            ):
                renames.append((places.tree(tag, absent), places.target_folder(absent), under))
                handled.update(under)
                continue
        target = places.target(f)
        singles.append(Move(f, places.tree(tag, f.target), target))
    # A folder renamed into a public folder that also gets single files (a prerelease's MSI
    # folder in 3.14.0/) would show before the batch of links: its files join the batch,
    # which links every file in one command, so the release appears within milliseconds.
    receiving = {posixpath.dirname(m.target) for m in singles}
    kept = []
    for source, target, files in renames:
        parent = posixpath.dirname(target)
        if any(parent == folder or parent.startswith(folder + "/") for folder in receiving):
            singles += [Move(g, places.tree(tag, g.target), places.target(g)) for g in files]
        else:
            kept.append((source, target, files))
    order = {f: i for i, f in enumerate(plan.files)}
    singles.sort(key=lambda m: order[m.file])
    return kept, singles, leftovers


def _try_writing(
    fs: FileSystem, renames: list[tuple[str, str, list[PlanFile]]], singles: list[Move]
) -> None:
    """Before the first move: every existing folder that gets a new entry is written to
    (a probe folder made and removed), so a folder the bot cannot write stops the publish
    while nothing is public."""
    parents = [posixpath.dirname(t) for _, t, _ in renames]
    parents += [posixpath.dirname(m.target) for m in singles]
    for folder in dict.fromkeys(_existing(fs, p) for p in dict.fromkeys(parents)):
        probe = posixpath.join(folder, f".relbot-probe-{secrets.token_hex(4)}")
        try:
            fs.mkdir(probe, 0o700)
            fs.rmdir(probe)
        except OSError as err:
            fix = "; give the bot's account write access to it" if err.errno in DENIED else ""
            raise StorageError(
                f"{folder} cannot be written by the bot ({err.strerror or err}{fix}); "
                "nothing was made public."
            ) from err


def _existing(fs: FileSystem, folder: str) -> str:
    """``folder``, or its nearest existing parent (where a missing one will be made)."""
    while folder != posixpath.dirname(folder) and fs.lstat(folder) is None:  # up to the root
        folder = posixpath.dirname(folder)
    return folder


def _move_singles(fs: FileSystem, moves: list[Move], *, moved_before: bool) -> int:
    """The per-file phase; returns how many files it made public."""
    if not moves:
        return 0
    if fs.move_batch(moves):
        return len(moves)
    moved, done = 0, moved_before
    for m in moves:
        # Files linked before this one (a folder rename, the batch, this loop) are public
        # already: a conflict now is not "before anything moved".
        moved += _link_no_clobber(fs, m, moved=done)
        done = True
    for m in moves:
        target = fs.lstat(m.target)
        source = fs.lstat(m.source)
        if source is not None and target is not None:
            fs.remove(m.source)
    return moved


def _link_no_clobber(fs: FileSystem, m: Move, *, moved: bool) -> bool:
    """Make the target a second name of the bot's copy; False when it was public already
    (the batch got that far). A different file at the target is never replaced."""
    if fs.lstat(m.source) is None:
        return False
    try:
        fs.link_public(m.source, m.target)
    except FileExistsError:
        # The target appeared since the check, or the batch stopped after linking it:
        # fine only if it is the bot's copy (same inode) or the planned content.
        found = fs.identities([m.target, m.source])
        target, copy = found[m.target], found[m.source]
        ours = target is not None and copy is not None and target.ino is not None
        ours = ours and target.ino == copy.ino  # type: ignore[union-attr]
        if not ours and fs.hash([m.target])[m.target] != m.file.sha256:
            raise PromotionConflict(
                f"{m.file.target} appeared in public with different content while publishing.",
                moved=moved,
                target=m.file.target,
            ) from None
        return False
    return True


def _partly_public(plan: PublishPlan, public: list[str], where: str, err: OSError) -> StorageError:
    """The error of a move that failed: the public folder, why, and exactly which files
    are public (``public``: the targets this publish made public)."""
    reason = err.strerror or str(err)
    if not public:
        return StorageError(f"Cannot publish into {where}: {reason}; nothing was made public.")
    shown = ", ".join(public[:5]) + (f" and {len(public) - 5} more" if len(public) > 5 else "")
    return StorageError(
        f"Cannot publish into {where}: {reason}; public already: {shown} ({len(public)} of "
        f"{len(plan.files)} files)."
    )


def _public_problems(
    fs: FileSystem, places: Places, plan: PublishPlan, before: set[str], record: Record
) -> list[str]:
    """Every target against what the bot wrote: ``X is missing``, ``X is not a regular
    file``, ``X is not the bot's copy``. By identity (inode, owner, mode, size); by hash
    only where identity cannot prove it."""
    uid = fs.uid()
    found = fs.identities([places.target(f) for f in plan.files])
    problems, unproven = [], []
    for f in plan.files:
        entry = found[places.target(f)]
        if entry is None:
            problems.append(f"{f.target} is missing")
        elif not entry.is_file:
            problems.append(f"{f.target} is not a regular file")
        elif f.target in before or entry.ino is None or f.path not in record.copies:
            unproven.append(f)
        elif not intact(entry, f, uid) or entry.ino != record.copies[f.path]:
            problems.append(f"{f.target} is not the bot's copy")
    digests = fs.hash([places.target(f) for f in unproven]) if unproven else {}
    problems += [f"{f.target} differs" for f in unproven if digests[places.target(f)] != f.sha256]
    return problems
