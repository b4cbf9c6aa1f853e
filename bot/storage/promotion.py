"""Promotion, written once for every storage backend: how a plan maps onto folder moves, and
the promoter that carries them out over the backend's primitives (see
:mod:`bot.storage.freezer` for the freeze that comes first)."""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from bot.domain.plan import PlanFile, PublishPlan
from bot.errors import PromotionConflict
from bot.ports import PromotionReport
from bot.storage.freezer import (
    FrozenMismatch,
    Listings,
    ancestors,
    check_targets,
    freeze,
    frozen_problems,
    holds_exactly,
    make_folders,
    prune,
)
from bot.storage.primitives import FOLDER_MODE, Places, Primitives, inside


@dataclass(frozen=True)
class FolderMove:
    """Files going from one staging folder to one public folder.

    When ``target`` does not exist yet, renaming ``source`` onto it moves every file at once.
    """

    source: str  # relative to the release's staging folder ("" for the folder itself)
    target: str  # relative to the public root
    files: tuple[PlanFile, ...]


def folder_moves(plan: PublishPlan) -> list[FolderMove]:
    """Group the plan by (staging folder, public folder), innermost staging folders first
    (``docs/`` leaves before the release folder it sits in is renamed)."""
    groups: dict[tuple[str, str], list[PlanFile]] = {}
    for f in plan.files:
        groups.setdefault(_split(f), []).append(f)
    moves = [FolderMove(src, dst, tuple(files)) for (src, dst), files in groups.items()]
    return sorted(moves, key=lambda m: -len(m.source))


def join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def _split(f: PlanFile) -> tuple[str, str]:
    """The longest common trailing path of ``f.path`` and ``f.target`` is what moves along."""
    src, dst = f.path.split("/"), f.target.split("/")
    common = 0
    while common < min(len(src), len(dst) - 1) and src[-1 - common] == dst[-1 - common]:
        common += 1
    return "/".join(src[: len(src) - common]), "/".join(dst[: len(dst) - common])


# -- the promoter: written once over the storage primitives -----------------------------------


@dataclass(frozen=True)
class Move:
    """One file of the per-file phase, with what the listing saw before anything moved."""

    file: PlanFile
    source: str  # in the bot's area
    target: str  # in public
    source_present: bool
    target_present: bool


@dataclass
class Touched:
    """What a promotion made public, for flushing and the permission fix-up."""

    trees: list[str] = field(default_factory=list)  # renamed folders, fixed recursively
    files: list[str] = field(default_factory=list)
    folders: set[str] = field(default_factory=set)  # parents of moved files, not recursed


class Mover(Primitives, Protocol):
    """The primitives, plus the moves that make files public (kept apart from the freezer's
    renames so a test can inject a crash between two of them) and the clean-up."""

    def rename_public(self, source: str, target: str) -> None:
        """A frozen folder renamed onto an absent public one: all its files at once."""
        ...

    def link_public(self, source: str, target: str) -> None:
        """A second, public name; ``FileExistsError`` when ``target`` exists."""
        ...

    def move_batch(self, moves: Sequence[Move], touched: Touched) -> bool:
        """Every link in plan order, then the removal of the sources, as one batch where
        the backend can (one command on the server); False when it cannot or stopped
        part-way: the promoter then finishes file by file."""
        ...

    def finish(self, touched: Touched) -> None:
        """Flush the new public entries and fix permissions; failures are logged, not raised
        (the files are public by then)."""
        ...


def promote(
    fs: Mover,
    places: Places,
    plan: PublishPlan,
    *,
    verified: bool = False,
    public_before: Sequence[str] = (),
) -> PromotionReport:
    """Make the plan's frozen files public; idempotent, so a resumed promotion finishes.

    Before anything moves: every target is checked (:class:`PromotionConflict` when one is
    public with other content), staged files still unfrozen are frozen, and the frozen files
    are hashed unless ``verified`` just now (:class:`FrozenMismatch`). Then a frozen folder
    whose public folder does not exist is renamed onto it (every file appears at once); the
    other files are linked no-clobber in plan order (artifacts first, indexes last) in one
    batch, and only then are the frozen copies removed.
    """
    check_targets(fs, places, plan)
    # Files frozen only now (an interrupted freeze) were never hashed in the area.
    if freeze(fs, places, plan, fresh=False) or not verified:
        problems = frozen_problems(fs, places, plan, public_before=public_before)
        if problems:
            raise FrozenMismatch(problems)
    root = places.frozen(plan)
    listed = Listings(fs)
    # Decide and make folders first, so the phase in which files become visible holds
    # nothing but renames and links; removing frozen copies and flushing come after it.
    renames: list[tuple[str, str, FolderMove]] = []
    singles: list[Move] = []
    for move in folder_moves(plan):
        source, target = inside(root, move.source), inside(places.public, move.target)
        leaving = {f.path for _, _, m in renames for f in m.files}
        if fs.lstat(target) is None and holds_exactly(
            fs, source, {f.path for f in move.files}, prefix=move.source, ignoring=leaving
        ):
            make_folders(fs, posixpath.dirname(target), "/", FOLDER_MODE)
            renames.append((source, target, move))
            continue
        for f in move.files:
            s, t = places.frozen(plan, f.path), places.target(f)
            singles.append(Move(f, s, t, listed.entry(s) is not None, listed.entry(t) is not None))
    for folder in dict.fromkeys(posixpath.dirname(m.target) for m in singles):
        make_folders(fs, folder, "/", FOLDER_MODE)
    touched = Touched()
    for source, target, _ in renames:
        fs.rename_public(source, target)
        touched.trees.append(target)
        touched.folders.update(ancestors(posixpath.dirname(target), places.public))
    for m in singles:
        touched.files.append(m.target)
        touched.folders.update(ancestors(posixpath.dirname(m.target), places.public))
    moved = _move_singles(fs, singles, touched, moved_before=bool(renames))
    fs.finish(touched)
    prune(fs, root, keep_root=False)
    prune(fs, places.staged(plan), keep_root=False)
    return PromotionReport(tuple(m.target for _, _, m in renames), moved, len(singles) - moved)


def _move_singles(fs: Mover, moves: list[Move], touched: Touched, *, moved_before: bool) -> int:
    """The per-file phase; returns how many files it made public (the rest were already)."""
    if not moves:
        return 0
    if fs.move_batch(moves, touched):
        return sum(m.source_present and not m.target_present for m in moves)
    moved, done = 0, moved_before
    for m in moves:
        # Files linked before this one (a folder rename, the batch, this loop) are public
        # already: a conflict now is not "before anything moved".
        moved += _link_no_clobber(fs, m, moved=done)
        done = done or not m.target_present
    for m in moves:
        if fs.lstat(m.source) is not None and fs.lstat(m.target) is not None:
            fs.remove(m.source)
    return moved


def _link_no_clobber(fs: Mover, m: Move, *, moved: bool) -> bool:
    """Make the target a second name of the frozen file; False when it was public already
    (a resumed promotion). A different file at the target is never replaced."""
    if fs.lstat(m.source) is None:
        return False
    try:
        fs.link_public(m.source, m.target)
    except FileExistsError:
        # The target appeared since the check, or a crash hit between link and removal:
        # fine only if it is the planned content.
        if fs.hash([m.target])[m.target] != m.file.sha256:
            raise PromotionConflict(
                f"{m.file.target} appeared in public with different content while publishing.",
                moved=moved,
            ) from None
        return False
    return True
