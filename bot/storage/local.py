"""The Storage port on folders of this machine (the default, and the rehearsal backend)."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import itertools
import os
import secrets
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from bot.domain.files import StagedFile
from bot.domain.plan import PublishPlan
from bot.domain.tags import ReleaseTag
from bot.errors import StagingUnreachable, StorageError
from bot.ports import PromotionReport
from bot.storage import freezer, promotion
from bot.storage.aside import ASIDE_FOLDER, ASIDE_MODE
from bot.storage.listing import (
    RELEASE_FOLDER,
    crowded_public_folder,
    crowded_release_folder,
    linked_release_folder,
    unreadable_release_folder,
)
from bot.storage.local_fs import LocalFs, fsync_dir
from bot.storage.lock import Holder, LocalLease
from bot.storage.primitives import AREA, Places
from bot.storage.walk import Dirent, Walked, walk

T = TypeVar("T")


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
            walked = _walk(root, "")
        except FileNotFoundError:
            return None
        except OSError as err:  # this release's problem: other releases are still scanned
            return {RELEASE_FOLDER: unreadable_release_folder(err.strerror or str(err))}
        if walked.cut:
            walked.entries[RELEASE_FOLDER] = crowded_release_folder(walked.limit)
        return walked.entries

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
        if not problems and (area := freezer.area_problem(LocalFs(self), self._places)):
            problems.append(area)
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

    def freeze(self, plan: PublishPlan) -> list[str]:
        def op() -> list[str]:
            fs, places = LocalFs(self), self._places
            freezer.freeze(fs, places, plan, fresh=True)
            return freezer.frozen_problems(fs, places, plan)

        return _wrapped(f"freeze {plan.tag}", op)

    def write_frozen(self, plan: PublishPlan, path: str, data: bytes) -> None:
        def op() -> None:
            target = Path(freezer.frozen_file(LocalFs(self), self._places, plan, path))
            temp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
            try:
                with temp.open("xb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(temp, target)  # the bot's own area: an earlier attempt's goes
            finally:
                temp.unlink(missing_ok=True)

        _wrapped(f"write {path} beside the frozen files", op)

    def thaw(self, plan: PublishPlan) -> list[str]:
        return _wrapped(
            f"put back {plan.tag}", lambda: freezer.thaw(LocalFs(self), self._places, plan)
        )

    def in_public(self, plan: PublishPlan) -> list[str]:
        return _wrapped(
            f"look at {self.public}",
            lambda: freezer.targets_in_public(LocalFs(self), self._places, plan),
        )

    def verify_public(self, plan: PublishPlan) -> list[str]:
        return _wrapped(
            f"check {self.public}",
            lambda: freezer.public_problems(LocalFs(self), self._places, plan),
        )

    def promote(
        self, plan: PublishPlan, *, verified: bool = False, public_before: Sequence[str] = ()
    ) -> PromotionReport:
        return _wrapped(
            f"publish {plan.tag}",
            lambda: promotion.promote(
                LocalFs(self), self._places, plan, verified=verified, public_before=public_before
            ),
        )

    @property
    def _places(self) -> Places:
        return Places(str(self.staging), str(self.public))

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
        source = _inside(self.staging / AREA / str(tag), path)
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
            fsync_dir(target.parent)
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
        _remove_if_empty(source.parent)

    def read_aside(self, tag: ReleaseTag, path: str, limit: int) -> bytes | None:
        return _read_small(_inside(self.staging / ASIDE_FOLDER / str(tag), path), limit)

    def replace_public(self, tag: ReleaseTag, path: str, target: str) -> None:
        source = _inside(self.staging / ASIDE_FOLDER / str(tag), path)
        live = _inside(self.public, target)
        try:
            live.parent.mkdir(parents=True, exist_ok=True)
            self._replace(source, live)
            fsync_dir(live.parent)
        except OSError as err:
            raise StorageError(f"Cannot replace {live} with {path}: {err.strerror}.") from err
        _remove_if_empty(source.parent)

    def _replace(self, source: Path, target: Path) -> None:
        os.replace(source, target)  # rename(2): readers see the old file or the new, whole


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
            found.append(Dirent(entry.name, st.st_mode, st.st_size, st.st_mtime, st.st_nlink))
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


def _remove_if_empty(folder: Path) -> None:
    """Remove a folder of the aside area once its last file left (else leave it)."""
    with contextlib.suppress(OSError):
        folder.rmdir()


def _read_small(path: Path, limit: int) -> bytes | None:
    """A small file whole, or None when absent. Never through a symlink (one swapped in since
    the listing included) and never blocking on a FIFO: StorageError when ``path`` is not a
    regular file or is larger than ``limit`` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as err:
        why = "not a regular file" if err.errno == errno.ELOOP else err.strerror or str(err)
        raise StorageError(f"Cannot read {path}: {why}.") from err
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise StorageError(f"Cannot read {path}: not a regular file.")
    with os.fdopen(fd, "rb") as f:
        try:
            data = f.read(limit + 1)
        except OSError as err:
            raise StorageError(f"Cannot read {path}: {err.strerror or err}.") from err
    if len(data) > limit:
        raise StorageError(f"{path} is larger than {limit:,} bytes.")
    return data
