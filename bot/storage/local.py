"""The Storage port on folders of this machine (the default, and the rehearsal backend)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

from bot.domain.files import StagedFile
from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.tags import ReleaseTag
from bot.errors import PromotionConflict, StagingUnreachable, StorageError
from bot.ports import PromotionReport
from bot.storage.aside import ASIDE_FOLDER, ASIDE_MODE
from bot.storage.promotion import FolderMove, folder_moves, join


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

    def promote(self, plan: PublishPlan) -> PromotionReport:
        root = self.staging / str(plan.tag)
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
        linked = [(s, t) for s, t, f in links if self._link_no_clobber(s, t, f)]
        for source, target, _ in links:
            if source.exists() and target.exists():
                source.unlink()
        for folder in {t.parent for _, t, _ in renames} | {t.parent for _, t, _ in links}:
            _fsync_dir(folder)
        _prune_empty(root)
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

    def _link_no_clobber(self, source: Path, target: Path, f: PlanFile) -> bool:
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
                    f"{f.target} appeared in public with different content while publishing."
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
