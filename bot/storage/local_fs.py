"""The filesystem interface (:class:`bot.storage.primitives.FileSystem`) on this machine's
filesystem: what :class:`bot.storage.local.LocalStorage` runs the storage algorithms over.
The moves that make files public are callables it is given (the storage passes its own, which
tests replace to inject a crash between two moves)."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import shutil
import stat
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from bot.errors import StorageError
from bot.storage import local_tidy
from bot.storage.primitives import FILE_MODE, Copied, CopyJob, Entry, Move, Stamp, Touched

Moving = Callable[[Path, Path], None]

FICLONE = 0x40049409  # ioctl(2): share the source's blocks (btrfs, XFS): a copy in no time
_COPY_FALLBACK = (errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL, errno.EBADF)
_WORKERS = 4  # files copied and hashed at once (hashlib and the copy release the GIL)


@dataclass(frozen=True)
class PublicMoves:
    """The moves that make files public: ``rename(2)`` of a folder, ``link(2)`` of a file,
    ``rename(2)`` over a live file."""

    rename: Moving = os.rename
    link: Moving = os.link
    replace: Moving = os.replace


class LocalFs:
    """The filesystem interface on this machine's filesystem. One instance per storage: it
    keeps the kernel locks it holds (:meth:`pin`) for as long as the process lives."""

    def __init__(self, moves: PublicMoves | None = None) -> None:
        self.moves = moves or PublicMoves()
        self._pins: dict[str, int] = {}  # folder -> descriptor holding its flock

    def uid(self) -> int:
        return os.geteuid()  # the account that owns what the bot makes

    def lstat(self, path: str) -> Entry | None:
        try:
            st = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        return _entry(st)

    def listdir(self, path: str) -> dict[str, Entry] | None:
        try:
            with os.scandir(path) as entries:
                return {e.name: _entry(e.stat(follow_symlinks=False)) for e in entries}
        except (FileNotFoundError, NotADirectoryError):
            return None

    def identities(self, paths: Sequence[str]) -> dict[str, Entry | None]:
        return {path: self.lstat(path) for path in paths}

    def stamps(self, paths: Sequence[str]) -> dict[str, Stamp | None]:
        found: dict[str, Stamp | None] = {}
        for path in paths:
            try:
                st = os.lstat(path)
            except (FileNotFoundError, NotADirectoryError):
                found[path] = None
                continue
            found[path] = _stamp(st) if stat.S_ISREG(st.st_mode) else None
        return found

    def rename(self, source: str, target: str) -> None:
        os.rename(source, target)

    def remove(self, path: str) -> None:
        os.unlink(path)

    def remove_tree(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(path)  # refuses a symlink: only the bot's own folders go

    def rmdir(self, path: str) -> None:
        with contextlib.suppress(OSError):
            os.rmdir(path)

    def mkdir(self, path: str, mode: int) -> None:
        os.mkdir(path, mode)
        os.chmod(path, mode)  # not narrowed by the umask (the shipped unit's is 0027)

    def rename_public(self, source: str, target: str) -> None:
        self.moves.rename(Path(source), Path(target))

    def link_public(self, source: str, target: str) -> None:
        self.moves.link(Path(source), Path(target))

    def replace_public(self, source: str, target: str) -> None:
        self.moves.replace(Path(source), Path(target))

    def move_batch(self, moves: Sequence[Move]) -> bool:
        return False  # a link here costs microseconds: file by file is the batch

    def finish(self, touched: Touched) -> None:
        for folder in {os.path.dirname(p) for p in [*touched.trees, *touched.files]}:
            fsync_dir(Path(folder))

    def hash(self, paths: Sequence[str]) -> dict[str, str]:
        if len(paths) < 2:
            return {p: _sha256_nofollow(p) for p in paths}
        # hashlib releases the GIL on large buffers: a few threads use every core.
        with ThreadPoolExecutor(max_workers=min(_WORKERS, len(paths))) as pool:
            return dict(zip(paths, pool.map(_sha256_nofollow, paths), strict=True))

    def copy(self, jobs: Sequence[CopyJob]) -> list[Copied]:
        with ThreadPoolExecutor(max_workers=max(1, min(_WORKERS, len(jobs)))) as pool:
            results = list(pool.map(_copy_one, jobs))
        for folder in {os.path.dirname(job.target) for job in jobs}:
            fsync_dir(Path(folder))  # the renames of the copies are durable too
        return results

    def folder_ids(self, root: str, folders: Sequence[str]) -> dict[str, str]:
        return local_tidy.folder_ids(root, folders)

    def remove_staged(
        self, root: str, files: Mapping[str, Stamp], folders: Mapping[str, str]
    ) -> dict[str, str]:
        return local_tidy.remove_staged(root, files, folders)

    def read_small(self, path: str, limit: int) -> bytes | None:
        return read_small(Path(path), limit)

    def write_small(self, path: str, data: bytes) -> None:
        temp = f"{path}.new"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)  # left by a crash: the bot's own
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, path)
        fsync_dir(Path(path).parent)

    def create_small(self, path: str, data: bytes) -> bool:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            return False
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        return True

    def pin(self, path: str) -> bool | None:
        if path in self._pins:
            return True
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._pins[path] = fd  # the kernel drops the lock when the process dies
        return True

    def unpin(self, path: str) -> None:
        fd = self._pins.pop(path, None)
        if fd is not None:
            os.close(fd)


def _entry(st: os.stat_result) -> Entry:
    return Entry(st.st_mode, st.st_uid, st.st_size, st.st_ino)


def _stamp(st: os.stat_result) -> Stamp:
    return Stamp(st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _copy_one(job: CopyJob) -> Copied:
    """Copy one staged original to ``job.target`` (see :meth:`Primitives.copy`): opened once,
    without following a symlink and without blocking on a FIFO; the copy is written under a
    temporary name, made durable and read-only, hashed, and renamed into place only when its
    bytes are the expected ones."""
    try:
        source = os.open(job.source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return Copied("is missing")
    except OSError as err:
        if err.errno == errno.ELOOP:
            return Copied("is not a regular file")
        return Copied(f"cannot be read ({err.strerror or err})")
    part = f"{job.target}.part"
    try:
        before = os.fstat(source)
        if not stat.S_ISREG(before.st_mode):
            return Copied("is not a regular file")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(part)  # left by a crash: the bot's own
        out = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            _clone_or_copy(source, out)
            os.fsync(out)
            os.fchmod(out, FILE_MODE)
            copy_ino = os.fstat(out).st_ino
        finally:
            os.close(out)
        digest = _sha256_nofollow(part)
        after = os.fstat(source)
    except OSError:  # a full disk, mostly: the freeze is tried again
        with contextlib.suppress(FileNotFoundError):
            os.unlink(part)
        raise
    finally:
        os.close(source)
    if digest != job.sha256:
        os.unlink(part)
        return Copied("changed", digest)
    os.rename(part, job.target)
    unchanged = _stamp(before) == _stamp(after)
    return Copied("", digest, _stamp(before) if unchanged else None, copy_ino)


def _clone_or_copy(source: int, out: int) -> None:
    """A reflink where the filesystem shares blocks, else an in-kernel copy, else a copy
    through this process."""
    try:
        fcntl.ioctl(out, FICLONE, source)
        return
    except OSError:
        pass
    try:
        while os.copy_file_range(source, out, 1 << 30):
            pass
        return
    except OSError as err:
        if err.errno not in _COPY_FALLBACK:
            raise
    os.lseek(source, 0, os.SEEK_SET)
    os.lseek(out, 0, os.SEEK_SET)
    os.ftruncate(out, 0)
    while chunk := os.read(source, 1 << 20):
        view = memoryview(chunk)
        while view:
            view = view[os.write(out, view) :]


def _sha256_nofollow(path: str) -> str:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def read_small(path: Path, limit: int) -> bytes | None:
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


def fsync_dir(folder: Path) -> None:
    """Flush a folder's entries to disk (a rename or a link is durable only then)."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
