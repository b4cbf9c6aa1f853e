"""The Storage port on folders of this machine (the default, and the rehearsal backend)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from bot.domain.files import StagedFile
from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.tags import ReleaseTag
from bot.errors import PromotionConflict, StagingUnreachable, StorageError
from bot.ports import PromotionReport
from bot.storage import freezer
from bot.storage.aside import ASIDE_FOLDER, ASIDE_MODE
from bot.storage.freezer import Entry, Places
from bot.storage.promotion import FolderMove, folder_moves, join

T = TypeVar("T")


class LocalStorage:
    """Staging and public are folders on one filesystem, so a rename is atomic."""

    def __init__(self, staging: Path, public: Path) -> None:
        self.staging = staging
        self.public = public

    # -- reading ---------------------------------------------------------------------------

    def staged_tags(self) -> list[str]:
        try:
            return sorted(
                e.name for e in os.scandir(self.staging) if e.is_dir(follow_symlinks=False)
            )
        except FileNotFoundError:
            return []
        except OSError as err:
            raise StagingUnreachable(
                f"Cannot read staging {self.staging}: {err.strerror}."
            ) from err

    def list_staging(self, tag: ReleaseTag) -> dict[str, StagedFile] | None:
        root = self.staging / str(tag)
        try:
            return dict(_walk(root, ""))
        except FileNotFoundError:
            return None
        except OSError as err:
            raise StagingUnreachable(f"Cannot list {root}: {err.strerror}.") from err

    def digest(
        self, tag: ReleaseTag, paths: Sequence[str], *, fresh: bool = False
    ) -> dict[str, str]:
        root = self.staging / str(tag)  # always read afresh: there is no cache here
        try:
            return {path: _sha256(_inside(root, path)) for path in paths}
        except OSError as err:
            raise StorageError(f"Cannot read {err.filename}: {err.strerror}.") from err

    def read(self, tag: ReleaseTag, path: str, limit: int) -> bytes:
        file = _inside(self.staging / str(tag), path)
        with file.open("rb") as f:
            data = f.read(limit + 1)
        if len(data) > limit:
            raise StorageError(f"{path} is larger than {limit:,} bytes; it is not a bundle.")
        return data

    def staging_location(self, tag: ReleaseTag) -> str:
        return f"{self.staging / str(tag)}/"

    def check(self) -> list[str]:
        problems = []
        for name, folder in (("staging", self.staging), ("public", self.public)):
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                problems.append(f"storage.{name}: cannot create {folder} ({err.strerror}).")
                continue
            if not os.access(folder, os.W_OK | os.X_OK):
                problems.append(f"storage.{name}: {folder} is not writable by this user.")
        if not problems and self.staging.stat().st_dev != self.public.stat().st_dev:
            problems.append(
                f"storage: staging {self.staging} and public {self.public} are on different "
                "filesystems, so publishing cannot be one rename; put them on the same one."
            )
        return problems

    # -- promotion -------------------------------------------------------------------------

    def freeze(self, plan: PublishPlan) -> list[str]:
        def op() -> list[str]:
            fs, places = _LocalFs(), self._places
            freezer.freeze(fs, places, plan, fresh=True)
            return freezer.frozen_problems(fs, places, plan)

        return _wrapped(f"freeze {plan.tag}", op)

    def thaw(self, plan: PublishPlan) -> list[str]:
        return _wrapped(
            f"put back {plan.tag}", lambda: freezer.thaw(_LocalFs(), self._places, plan)
        )

    def in_public(self, plan: PublishPlan) -> list[str]:
        return _wrapped(
            f"look at {self.public}",
            lambda: freezer.targets_in_public(_LocalFs(), self._places, plan),
        )

    def verify_public(self, plan: PublishPlan) -> list[str]:
        return _wrapped(
            f"check {self.public}", lambda: freezer.public_problems(_LocalFs(), self._places, plan)
        )

    def promote(
        self, plan: PublishPlan, *, verified: bool = False, public_before: Sequence[str] = ()
    ) -> PromotionReport:
        return _wrapped(f"publish {plan.tag}", lambda: self._promote(plan, verified, public_before))

    @property
    def _places(self) -> Places:
        return Places(str(self.staging), str(self.public))

    def _promote(
        self, plan: PublishPlan, verified: bool, public_before: Sequence[str]
    ) -> PromotionReport:
        fs, places = _LocalFs(), self._places
        freezer.check_targets(fs, places, plan)
        # Files frozen only now (an interrupted freeze) were never hashed in the area.
        if freezer.freeze(fs, places, plan, fresh=False) or not verified:
            problems = freezer.frozen_problems(fs, places, plan, public_before=public_before)
            if problems:
                raise freezer.FrozenMismatch(problems)
        root = Path(places.frozen(plan))
        self._refuse_conflicts(root, plan)
        # Prepare first (decide, make folders), so the phase in which files become visible
        # holds nothing but renames and links; unlinking sources and fsync come after it.
        renames: list[tuple[Path, Path, FolderMove]] = []
        links: list[tuple[Path, Path, PlanFile]] = []
        for move in folder_moves(plan):
            source, target = _inside(root, move.source), _inside(self.public, move.target)
            leaving = {f.path for _, _, m in renames for f in m.files}
            if not target.exists() and self._holds_exactly(source, move, leaving):
                target.parent.mkdir(parents=True, exist_ok=True)
                renames.append((source, target, move))
                continue
            for f in move.files:
                file_source, file_target = _inside(root, f.path), _inside(self.public, f.target)
                file_target.parent.mkdir(parents=True, exist_ok=True)
                links.append((file_source, file_target, f))
        for source, target, _ in renames:
            self._rename(source, target)
        linked: list[tuple[Path, Path]] = []
        for s, t, f in links:
            if self._link_no_clobber(s, t, f, moved=bool(renames or linked)):
                linked.append((s, t))
        for source, target, _ in links:
            if source.exists() and target.exists():
                source.unlink()
        for folder in {t.parent for _, t, _ in renames} | {t.parent for _, t, _ in links}:
            _fsync_dir(folder)
        _prune_empty(root)
        _prune_empty(self.staging / str(plan.tag))
        return PromotionReport(
            tuple(m.target for _, _, m in renames), len(linked), len(links) - len(linked)
        )

    def _refuse_conflicts(self, root: Path, plan: PublishPlan) -> None:
        """Check every target before anything moves: an existing public file must be the
        planned content; a file in neither place means the plan cannot be completed."""
        for f in plan.files:
            source, target = _inside(root, f.path), _inside(self.public, f.target)
            if source.is_symlink():
                raise StorageError(
                    f"{f.path} is a symbolic link; only regular files are published."
                )
            if target.exists():
                if _sha256(target) != f.sha256:
                    raise PromotionConflict(
                        f"{f.target} is already public with different content; "
                        "nothing was moved (remove or rename one of them first)."
                    )
            elif not source.exists():
                raise StorageError(f"{f.path} is neither in staging nor public; re-run /publish.")

    def _holds_exactly(self, source: Path, move: FolderMove, leaving: set[str]) -> bool:
        """Whether the staging folder holds exactly the move's files (so a rename moves
        nothing unplanned), not counting ``leaving``: inner folders renamed before it."""
        if not source.is_dir():
            return False
        present = {join(move.source, path) for path, _ in _walk(source, "")} - leaving
        return present == {f.path for f in move.files}

    def _link_no_clobber(self, source: Path, target: Path, f: PlanFile, *, moved: bool) -> bool:
        """Make ``target`` a second name of ``source``; False when it was already public
        (a resumed promotion). A different file at ``target`` is never replaced."""
        if not source.exists():
            return False
        try:
            self._link(source, target)
        except FileExistsError:
            # The target appeared since the conflict check, or a crash hit between link and
            # unlink: fine only if it is the planned content.
            if _sha256(target) != f.sha256:
                raise PromotionConflict(
                    f"{f.target} appeared in public with different content while publishing.",
                    moved=moved,
                ) from None
            return False
        return True

    # The two primitive moves, kept apart so tests can inject a crash between them.
    def _rename(self, source: Path, target: Path) -> None:
        os.rename(source, target)

    def _link(self, source: Path, target: Path) -> None:
        os.link(source, target)

    # -- files that replace live ones (the install index) ------------------------------------

    def read_public(self, path: str, limit: int) -> bytes | None:
        return _read_small(_inside(self.public, path), limit)

    def set_aside(self, tag: ReleaseTag, path: str) -> None:
        # From the frozen release when the confirmation froze it, else from staging.
        source = _inside(self.staging / freezer.AREA / str(tag), path)
        if not source.exists() and not source.is_symlink():
            source = _inside(self.staging / str(tag), path)
        target = _inside(self.staging / ASIDE_FOLDER / str(tag), path)
        try:
            if not source.is_file() or source.is_symlink():
                if source.exists() or source.is_symlink():
                    raise StorageError(f"{path} is not a regular file; it is never published.")
                return
            aside = self.staging / ASIDE_FOLDER
            if not aside.is_dir():
                aside.mkdir(mode=ASIDE_MODE)
                aside.chmod(ASIDE_MODE)  # not narrowed by the umask
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(source, target)
            _fsync_dir(target.parent)
        except OSError as err:
            raise StorageError(
                f"Cannot set {path} aside in {target.parent}: {err.strerror}."
            ) from err

    def put_back(self, tag: ReleaseTag, path: str) -> None:
        source = _inside(self.staging / ASIDE_FOLDER / str(tag), path)
        target = _inside(self.staging / str(tag), path)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.link(source, target)  # no clobber: a newer upload stays
            source.unlink()
        except FileNotFoundError:
            return  # nothing set aside
        except FileExistsError:
            return
        except OSError as err:
            raise StorageError(
                f"Cannot put {path} back in {target.parent}: {err.strerror}."
            ) from err
        _prune_empty(source.parent)

    def read_aside(self, tag: ReleaseTag, path: str, limit: int) -> bytes | None:
        return _read_small(_inside(self.staging / ASIDE_FOLDER / str(tag), path), limit)

    def replace_public(self, tag: ReleaseTag, path: str, target: str) -> None:
        source = _inside(self.staging / ASIDE_FOLDER / str(tag), path)
        live = _inside(self.public, target)
        try:
            live.parent.mkdir(parents=True, exist_ok=True)
            self._replace(source, live)
            _fsync_dir(live.parent)
        except OSError as err:
            raise StorageError(f"Cannot replace {live} with {path}: {err.strerror}.") from err
        _prune_empty(source.parent)

    def _replace(self, source: Path, target: Path) -> None:
        os.replace(source, target)  # rename(2): readers see the old file or the new, whole


class _LocalFs:
    """The freezer's primitives on this machine's filesystem."""

    def uid(self) -> int:
        return os.getuid()

    def lstat(self, path: str) -> Entry | None:
        try:
            st = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        return Entry(st.st_mode, st.st_uid)

    def listdir(self, path: str) -> dict[str, Entry] | None:
        try:
            with os.scandir(path) as entries:
                found = {}
                for e in entries:
                    st = e.stat(follow_symlinks=False)
                    found[e.name] = Entry(st.st_mode, st.st_uid)
                return found
        except (FileNotFoundError, NotADirectoryError):
            return None

    def rename(self, source: str, target: str) -> None:
        os.rename(source, target)

    def link(self, source: str, target: str) -> None:
        os.link(source, target, follow_symlinks=False)

    def remove(self, path: str) -> None:
        os.unlink(path)

    def rmdir(self, path: str) -> bool:
        try:
            os.rmdir(path)
        except OSError:
            return False
        return True

    def mkdir(self, path: str, mode: int) -> None:
        os.mkdir(path, mode)
        os.chmod(path, mode)  # not narrowed by the umask: the area must be exactly 0700

    def hash(self, paths: Sequence[str]) -> dict[str, str]:
        if len(paths) < 2:
            return {p: _sha256_nofollow(p) for p in paths}
        # hashlib releases the GIL on large buffers: a few threads use every core.
        with ThreadPoolExecutor(max_workers=min(4, len(paths))) as pool:
            return dict(zip(paths, pool.map(_sha256_nofollow, paths), strict=True))


def _wrapped(what: str, op: Callable[[], T]) -> T:
    """Run ``op``, turning an ``OSError`` (a full disk, a permission, a file where a folder
    should be) into a :class:`StorageError` with one sentence."""
    try:
        return op()
    except OSError as err:
        where = f" {err.filename}" if err.filename else ""
        raise StorageError(
            f"Cannot {what}:{where} {err.strerror or err}.".replace(":.", ".")
        ) from err


def _sha256_nofollow(path: str) -> str:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _walk(folder: Path, prefix: str) -> list[tuple[str, StagedFile]]:
    """One ``scandir`` per folder; symlinks are reported, never followed."""
    found = []
    for entry in os.scandir(folder):
        path = join(prefix, entry.name)
        if entry.is_dir(follow_symlinks=False):
            found += _walk(Path(entry.path), path)
            continue
        st = entry.stat(follow_symlinks=False)
        regular = entry.is_file(follow_symlinks=False)
        found.append((path, StagedFile(path, st.st_size, st.st_mtime, regular)))
    return found


def _inside(root: Path, relative: str) -> Path:
    """``root / relative``, refusing anything that would step outside ``root``."""
    path = root / relative if relative else root
    if ".." in Path(relative).parts or Path(relative).is_absolute():
        raise StorageError(f"{relative!r} is not a path inside {root}.")
    return path


def _read_small(path: Path, limit: int) -> bytes | None:
    """A small file whole, or None when absent; StorageError when it is not a regular file
    or larger than ``limit`` bytes."""
    try:
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise StorageError(f"{path} is not a regular file.")
        with path.open("rb") as f:
            data = f.read(limit + 1)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise StorageError(f"Cannot read {path}: {err.strerror}.") from err
    if len(data) > limit:
        raise StorageError(f"{path} is larger than {limit:,} bytes.")
    return data


def _sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _prune_empty(folder: Path) -> None:
    """Remove the release's staging folders left empty by the moves, innermost first."""
    if not folder.is_dir():
        return
    for dirpath, _dirnames, _files in sorted(os.walk(folder), key=lambda w: -len(w[0])):
        try:
            os.rmdir(dirpath)
        except OSError:
            continue  # not empty: someone staged more since the plan; leave it
