"""The Storage port on folders of this machine (the default, and the rehearsal backend)."""

from __future__ import annotations

import errno
import hashlib
import itertools
import os
import stat
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from bot.domain.files import RELEASE_FOLDER, StagedFile
from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.tags import ReleaseTag
from bot.errors import StagingUnreachable, StorageError
from bot.ports import PromotionReport
from bot.ports.lease import Holder
from bot.storage import aside, freezer, promotion
from bot.storage.listing import (
    crowded_public_folder,
    crowded_release_folder,
    linked_release_folder,
    unreadable_release_folder,
)
from bot.storage.local_fs import LocalFs, PublicMoves
from bot.storage.lock import Lease
from bot.storage.primitives import FileSystem, Places, default_work, temp_name
from bot.storage.walk import Dirent, Walked, walk
from bot.storage.workarea import not_on_public_filesystem, work_problems

T = TypeVar("T")


class LocalStorage:
    """Staging, public and the bot's work folder are folders of this machine; the work
    folder is on public's filesystem, so making the bot's copies public is a rename."""

    def __init__(self, staging: Path, public: Path, work: Path | None = None) -> None:
        self.staging = staging
        self.public = public
        # Beside the real public folder: a public reached through a symlink has its
        # filesystem there, and the work folder must share it.
        self.work = work if work is not None else Path(default_work(os.path.realpath(public)))
        self._places = Places(str(staging), str(public), str(self.work))
        # The public moves go through this class's own hooks, where tests inject crashes.
        self._fs = LocalFs(PublicMoves(self._rename, self._link, self._replace))
        # One promotion at a time (each takes milliseconds): releases confirmed in the same
        # second share public folders (doc/ on a fresh public folder), and two of them
        # renaming their own doc/ into place at once left the second "Directory not empty".
        # Over SFTP the one connection already does one operation at a time.
        self._promoting = threading.Lock()

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
            walked = _walk(root, "")
        except FileNotFoundError:
            return None
        except OSError as err:  # this release's problem: other releases are still scanned
            return {RELEASE_FOLDER: unreadable_release_folder(err.strerror or str(err))}
        if walked.cut:
            walked.entries[RELEASE_FOLDER] = crowded_release_folder(walked.limit)
        return walked.entries

    def list_all_staging(
        self, tags: Sequence[ReleaseTag]
    ) -> dict[str, dict[str, StagedFile] | None]:
        """Nothing: listing a folder of this machine is cheap, each release is listed on its
        own (with its own deadline)."""
        return {}

    def list_public(self, folders: Sequence[str]) -> dict[str, StagedFile]:
        found: dict[str, StagedFile] = {}
        for folder in folders:
            try:
                walked = _walk(_inside(self.public, folder), folder)
            except FileNotFoundError:
                continue
            except OSError as err:
                raise StagingUnreachable(
                    f"Cannot list {self.public / folder}: {err.strerror}."
                ) from err
            if walked.cut:
                raise StorageError(crowded_public_folder(str(self.public / folder), walked.limit))
            found.update(walked.entries)
        return found

    def digest(
        self, tag: ReleaseTag, paths: Sequence[str], *, fresh: bool = False
    ) -> dict[str, str]:
        # Always read afresh (there is no cache here), and only regular files: never
        # through a symbolic link (to /etc/passwd), never a FIFO or a device (a hang).
        found = {}
        for path in paths:
            with os.fdopen(_open_staged(self.staging, f"{tag}/{path}"), "rb") as f:
                try:
                    found[path] = hashlib.file_digest(f, "sha256").hexdigest()
                except OSError as err:
                    raise StorageError(
                        f"Cannot read {self.staging / str(tag) / path}: {err.strerror or err}."
                    ) from err
        return found

    def read(self, tag: ReleaseTag, path: str, limit: int) -> bytes:
        file = self.staging / str(tag) / path
        with os.fdopen(_open_staged(self.staging, f"{tag}/{path}"), "rb") as f:
            try:
                data = f.read(limit + 1)
            except OSError as err:
                raise StorageError(f"Cannot read {file}: {err.strerror or err}.") from err
        if len(data) > limit:
            raise StorageError(f"{file} is larger than {limit:,} bytes.")
        return data

    def write(self, tag: ReleaseTag, path: str, data: bytes, *, replace: bool = False) -> None:
        target = _inside(self.staging / str(tag), path)
        temp = target.with_name(temp_name())
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
        """Problems with the folders, each with its fix. Staging and public are never created
        here: a mistyped path must not become a folder nobody uploads to."""
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
        if problems:
            return problems
        problems += work_problems(self._fs, self._places)
        if not problems:
            where = self.work if self.work.exists() else self.work.parent
            if where.stat().st_dev != self.public.stat().st_dev:
                problems.append(not_on_public_filesystem(self._places))
        return problems

    def lock(self, holder: Holder) -> Lease:
        # As staging was made for the lock before: on this machine the bot may make the
        # work folder's parents (``relbot check`` names a folder that is missing).
        _wrapped(
            "take the storage lock", lambda: self.work.parent.mkdir(parents=True, exist_ok=True)
        )
        lease = Lease(self._run, self._places, str(self.work), holder)
        lease.acquire()
        return lease

    def _run(self, what: str, op: Callable[[FileSystem], None]) -> None:
        _wrapped(what, lambda: op(self._fs))

    # -- publishing ------------------------------------------------------------------------

    def freeze(self, plan: PublishPlan, *, fresh: bool = True) -> list[str]:
        return _wrapped(
            f"copy the files of {plan.tag}",
            lambda: freezer.freeze(self._fs, self._places, plan, fresh=fresh),
        )

    def write_frozen(self, plan: PublishPlan, made: Sequence[tuple[PlanFile, bytes]]) -> None:
        _wrapped(
            f"add to the copies of {plan.tag}",
            lambda: freezer.add_copies(self._fs, self._places, plan, made),
        )

    def promote(
        self, plan: PublishPlan, *, public_before: Sequence[str] = (), recheck: bool = False
    ) -> PromotionReport:
        with self._promoting:
            return _wrapped(
                f"publish {plan.tag}",
                lambda: promotion.promote(
                    self._fs, self._places, plan, public_before=public_before, recheck=recheck
                ),
            )

    def overlap_on_server(self) -> str | None:
        return None  # the config resolved both folders when it was read

    def in_public(self, plan: PublishPlan) -> list[str]:
        return _wrapped(
            f"look at {self.public}",
            lambda: freezer.targets_in_public(self._fs, self._places, plan),
        )

    def discard(self, tag: ReleaseTag) -> None:
        _wrapped(f"drop the copies of {tag}", lambda: freezer.discard(self._fs, self._places, tag))

    def tidy(self, plan: PublishPlan) -> list[str]:
        return _wrapped(
            f"tidy staging of {plan.tag}",
            lambda: freezer.tidy(self._fs, self._places, plan),
        )

    # The public moves, kept apart so tests can inject a crash between them.
    def _rename(self, source: Path, target: Path) -> None:
        os.rename(source, target)

    def _link(self, source: Path, target: Path) -> None:
        os.link(source, target)

    # -- files that replace live ones (the install index) ------------------------------------

    def read_public(self, path: str, limit: int) -> bytes | None:
        return aside.read_public(self._fs, self._places, path, limit)

    def read_aside(self, tag: ReleaseTag, path: str, limit: int) -> bytes | None:
        return aside.read_aside(self._fs, self._places, tag, path, limit)

    def replace_public(self, tag: ReleaseTag, path: str, target: str) -> None:
        _wrapped(
            f"replace {self.public / target}",
            lambda: aside.replace_public(self._fs, self._places, tag, path, target),
        )

    def _replace(self, source: Path, target: Path) -> None:
        os.replace(source, target)  # rename(2): readers see the old file or the new, whole


def _wrapped(what: str, op: Callable[[], T]) -> T:
    """Run ``op``, turning an ``OSError`` (a full disk, a permission, a file where a folder
    should be) into a :class:`StorageError` with one sentence."""
    try:
        return op()
    except OSError as err:
        where = f" {err.filename}" if err.filename else ""
        raise StorageError(f"Cannot {what}:{where} {err.strerror or err}.") from err


def _walk(folder: Path, prefix: str) -> Walked:
    """One ``scandir`` per folder (bot/storage/walk.py): symlinks are reported, never
    followed; a sub-folder that cannot be listed, an empty one and an odd name are reported
    as problems (and not entered)."""
    return walk(
        _listdir, str(folder), prefix, unreadable=(OSError,), reason=lambda e: e.strerror or str(e)
    )


def _listdir(folder: str, limit: int) -> list[Dirent]:
    """At most ``limit`` entries of ``folder``, as ``lstat`` sees them."""
    found = []
    with os.scandir(folder) as entries:
        for entry in itertools.islice(entries, limit):
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue  # removed since the folder was read
            # st_blocks counts 512-byte units whatever the filesystem's block size.
            allocated = st.st_blocks * 512
            found.append(
                Dirent(entry.name, st.st_mode, st.st_size, st.st_mtime, st.st_nlink, allocated)
            )
    return found


def _open_staged(root: Path, relative: str) -> int:
    """A descriptor on the regular file ``relative`` below ``root``, opened through no
    symbolic link below ``root`` (a folder swapped for one since the listing included) and
    without blocking (a FIFO). Raises :class:`StorageError` when it is missing or not a
    regular file."""
    parts = relative.split("/")
    where = root / relative
    if any(part in ("", ".", "..") for part in parts):
        raise StorageError(f"{relative!r} is not a path inside {root}.")
    try:
        folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for part in parts[:-1]:
                inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
                os.close(folder)
                folder = inner
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY
            fd = os.open(parts[-1], flags, dir_fd=folder)
        finally:
            os.close(folder)
    except FileNotFoundError as err:
        raise StorageError(f"Cannot read {where}: no such file.") from err
    except OSError as err:
        linked = err.errno in (errno.ELOOP, errno.ENOTDIR)
        why = "not a regular file" if linked else err.strerror or str(err)
        raise StorageError(f"Cannot read {where}: {why}.") from err
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise StorageError(f"Cannot read {where}: not a regular file.")
    return fd


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
