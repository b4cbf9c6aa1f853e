"""The Storage port on folders of this machine (the default, and the rehearsal backend)."""

from __future__ import annotations

import hashlib
import os
import secrets
from collections.abc import Sequence
from pathlib import Path

from bot.domain.files import StagedFile
from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.tags import ReleaseTag
from bot.errors import PromotionConflict, StagingUnreachable, StorageError
from bot.ports import PromotionReport
from bot.storage.listing import (
    RELEASE_FOLDER,
    empty_folder,
    linked_release_folder,
    odd_name,
    unreadable_folder,
    unreadable_release_folder,
)
from bot.storage.lock import Holder, LocalLease
from bot.storage.promotion import FolderMove, folder_moves, join


class LocalStorage:
    """Staging and public are folders on one filesystem, so a rename is atomic."""

    def __init__(self, staging: Path, public: Path) -> None:
        self.staging = staging
        self.public = public

    # -- reading ---------------------------------------------------------------------------

    def staged_tags(self) -> list[str]:
        try:
            # A symlinked release folder is listed too: scans show why it is refused.
            return sorted(
                e.name
                for e in os.scandir(self.staging)
                if e.is_dir(follow_symlinks=False) or e.is_symlink()
            )
        except FileNotFoundError:
            return []
        except OSError as err:
            raise StagingUnreachable(
                f"Cannot read staging {self.staging}: {err.strerror}."
            ) from err

    def list_staging(self, tag: ReleaseTag) -> dict[str, StagedFile] | None:
        root = self.staging / str(tag)
        if root.is_symlink():
            return {RELEASE_FOLDER: linked_release_folder(os.readlink(root))}
        try:
            return dict(_walk(root, ""))
        except FileNotFoundError:
            return None
        except OSError as err:  # this release's problem: other releases are still scanned
            return {RELEASE_FOLDER: unreadable_release_folder(err.strerror or str(err))}

    def list_public(self, folders: Sequence[str]) -> dict[str, StagedFile]:
        found: dict[str, StagedFile] = {}
        for folder in folders:
            try:
                found.update(_walk(_inside(self.public, folder), folder))
            except FileNotFoundError:
                continue
            except OSError as err:
                raise StagingUnreachable(
                    f"Cannot list {self.public / folder}: {err.strerror}."
                ) from err
        return found

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

    def write(self, tag: ReleaseTag, path: str, data: bytes, *, replace: bool = False) -> None:
        target = _inside(self.staging / str(tag), path)
        temp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
        try:
            with temp.open("xb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            if replace:
                os.replace(temp, target)
            else:
                os.link(temp, target)  # refuses an existing target: no clobbering
        except FileExistsError as err:
            if _holds(target, data):
                return  # the same bytes already in place: a repeated write, done
            raise StorageError(
                f"{path} already exists in {target.parent}; not overwritten."
            ) from err
        except OSError as err:
            raise StorageError(f"Cannot write {target}: {err.strerror}.") from err
        finally:
            temp.unlink(missing_ok=True)

    def staging_location(self, tag: ReleaseTag) -> str:
        return f"{self.staging / str(tag)}/"

    def check(self) -> list[str]:
        """Problems with the two folders, each with its fix. They are never created here: a
        mistyped path must not become a folder nobody uploads to."""
        problems = []
        for name, folder in (("staging", self.staging), ("public", self.public)):
            if not folder.exists():
                problems.append(
                    f"storage.{name}: {folder} does not exist; create it (mkdir -p {folder}) "
                    "or fix the path."
                )
                continue
            if not folder.is_dir():
                problems.append(f"storage.{name}: {folder} is not a folder; fix the path.")
                continue
            if not os.access(folder, os.W_OK | os.X_OK):
                problems.append(f"storage.{name}: {folder} is not writable by this user.")
        if not problems and self.staging.stat().st_dev != self.public.stat().st_dev:
            problems.append(
                f"storage: staging {self.staging} and public {self.public} are on different "
                "filesystems, so publishing cannot be one rename; put them on the same one."
            )
        return problems

    def lock(self, holder: Holder) -> LocalLease:
        lease = LocalLease(self.staging, holder)
        lease.acquire()
        return lease

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


def _walk(folder: Path, prefix: str) -> list[tuple[str, StagedFile]]:
    """One ``scandir`` per folder; symlinks are reported, never followed. A sub-folder that
    cannot be listed, an empty one and an odd name are reported as problems (and not entered).
    """
    found = []
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        path = join(prefix, entry.name)
        if (odd := odd_name(path)) is not None:
            found.append((odd.path, odd))
            continue
        if entry.is_dir(follow_symlinks=False):
            try:
                inner = _walk(Path(entry.path), path)
            except FileNotFoundError:
                continue  # removed since the parent was listed
            except OSError as err:
                inner = [(path + "/", unreadable_folder(path + "/", err.strerror or str(err)))]
            found += inner or [(path + "/", empty_folder(path + "/"))]
            continue
        st = entry.stat(follow_symlinks=False)
        regular = entry.is_file(follow_symlinks=False)
        links = st.st_nlink if regular else 1
        found.append((path, StagedFile(path, st.st_size, st.st_mtime, regular, links=links)))
    return found


def _inside(root: Path, relative: str) -> Path:
    """``root / relative``, refusing anything that would step outside ``root``."""
    path = root / relative if relative else root
    if ".." in Path(relative).parts or Path(relative).is_absolute():
        raise StorageError(f"{relative!r} is not a path inside {root}.")
    return path


def _holds(path: Path, data: bytes) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(len(data) + 1) == data
    except OSError:
        return False


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
