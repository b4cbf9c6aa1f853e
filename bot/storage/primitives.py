"""The one small filesystem interface the storage algorithms are written over (the freeze,
the copy, the promotion, the work area, the aside area, the storage lock): the operations
over absolute paths (:class:`FileSystem`, implemented by ``local_fs.LocalFs`` and
``sftp_fs.SftpFs``), the values they exchange, and the places of one backend (staging,
public, and the bot's own work folder)."""

from __future__ import annotations

import posixpath
import secrets
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from bot.domain.plan import PlanFile, PublishPlan
from bot.errors import StorageError

WORK_MODE = 0o700  # the work folder and its areas: only the bot's account may enter them
FILE_MODE = 0o444  # the bot's copies: read-only for everyone, writable by nobody but root
FOLDER_MODE = 0o755  # folders of copies: they become public folders as they are
FROZEN = "frozen"  # WORK/frozen/TAG/tree/TARGET: the copies promotion moves to public
ASIDE = "aside"  # WORK/aside/TAG/PATH: copies that replace live files (the install index)
LOCK = "lock"  # WORK/lock: the storage lock
SOURCES = "sources.json"  # WORK/frozen/TAG/sources.json: the staged originals as copied


@dataclass(frozen=True)
class Entry:
    """A path as ``lstat`` sees it (links are never followed). ``ino`` is None where the
    backend cannot tell (SFTP attributes carry none)."""

    mode: int  # st_mode: type and permission bits
    uid: int
    size: int = 0
    ino: int | None = None

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.mode)

    @property
    def is_file(self) -> bool:
        return stat.S_ISREG(self.mode)

    @property
    def permissions(self) -> int:
        return stat.S_IMODE(self.mode)


@dataclass(frozen=True)
class Stamp:
    """A staged original as the bot found it: what says, later, that it did not change.

    ``ctime_ns`` is what no uploader can set back (a rewrite with its mtime restored still
    moves it); it is None where the backend cannot tell (SFTP without exec), and then only
    a hash can say the file is unchanged."""

    ino: int | None
    size: int
    mtime_ns: int
    ctime_ns: int | None

    @property
    def complete(self) -> bool:
        return self.ino is not None and self.ctime_ns is not None

    def to_json(self) -> list[int | None]:
        return [self.ino, self.size, self.mtime_ns, self.ctime_ns]

    @classmethod
    def from_json(cls, data: object) -> Stamp | None:
        if not isinstance(data, list) or len(data) != 4:
            return None
        ino, size, mtime, ctime = data
        if not isinstance(size, int) or not isinstance(mtime, int):
            return None
        return cls(
            ino if isinstance(ino, int) else None,
            size,
            mtime,
            ctime if isinstance(ctime, int) else None,
        )


@dataclass(frozen=True)
class CopyJob:
    """Copy ``source`` (a staged original) to ``target`` (in the work folder), expecting
    ``sha256``: the copy lands at ``target`` only when its bytes hash to it."""

    source: str
    target: str
    sha256: str


@dataclass(frozen=True)
class Copied:
    """What copying one file found. ``problem`` is "" when the copy is at its target:
    owned by the bot, mode 0444, durable, with the expected SHA-256; else one of
    ``is missing``, ``is not a regular file``, ``changed`` (the bytes hash to ``sha256``
    instead), ``cannot be read (…)``; nothing is left at the target then."""

    problem: str
    sha256: str = ""
    source: Stamp | None = None  # the original before the copy, when the copy saw it unchanged
    copy_ino: int | None = None


@dataclass(frozen=True)
class Move:
    """One file of the per-file phase of a promotion: a copy the listing saw, to a target it
    saw absent (a target public already is checked, never moved to)."""

    file: PlanFile
    source: str  # the bot's copy
    target: str  # in public


@dataclass
class Touched:
    """What a promotion made public, for flushing and the group fix-up."""

    trees: list[str] = field(default_factory=list)  # renamed folders, fixed recursively
    files: list[str] = field(default_factory=list)
    folders: set[str] = field(default_factory=set)  # parents of moved files, not recursed


class FileSystem(Protocol):
    """What a backend offers the algorithms over it. Paths are absolute on the backend.
    Failures raise ``OSError`` (``FileExistsError`` when a no-clobber call finds its target
    taken)."""

    def uid(self) -> int:
        """The bot's own user id on the backend."""
        ...

    def lstat(self, path: str) -> Entry | None:
        """None when nothing is there."""
        ...

    def listdir(self, path: str) -> dict[str, Entry] | None:
        """The folder's entries by name (one round trip), or None when it does not exist."""
        ...

    def identities(self, paths: Sequence[str]) -> dict[str, Entry | None]:
        """``lstat`` of many paths at once, with inode and link count where the backend can
        tell them (over SFTP: one command on the server)."""
        ...

    def stamps(self, paths: Sequence[str]) -> dict[str, Stamp | None]:
        """The :class:`Stamp` of each regular file (None: absent, or not a regular file)."""
        ...

    def rename(self, source: str, target: str) -> None:
        """Move within the filesystem; the caller has checked that ``target`` is absent."""
        ...

    def remove(self, path: str) -> None: ...

    def remove_tree(self, path: str) -> None:
        """Remove a folder of the bot's own and everything in it (nothing when absent)."""
        ...

    def rmdir(self, path: str) -> None:
        """Remove the folder if it is empty; one that is not (or is gone) is left, silently."""
        ...

    def mkdir(self, path: str, mode: int) -> None:
        """A folder with exactly ``mode`` (not narrowed by the umask)."""
        ...

    def hash(self, paths: Sequence[str]) -> dict[str, str]:
        """SHA-256 of regular files, computed afresh where they are."""
        ...

    def folder_ids(self, root: str, folders: Sequence[str]) -> dict[str, str]:
        """The identity (``DEVICE:INODE``) of each folder (a path relative to ``root``),
        reached from ``root`` without following a link at any level below it; a path that
        is not a folder all the way down is left out, and every one where the backend cannot
        tell (SFTP without exec)."""
        ...

    def remove_staged(
        self, root: str, files: Mapping[str, Stamp], folders: Mapping[str, str]
    ) -> dict[str, str]:
        """Remove each file (a path relative to ``root``) whose :class:`Stamp` is still
        ``files[path]``, then each folder of ``folders`` left empty, innermost first. Every
        folder is entered from ``root`` without following a link at any level, and only
        when its identity is the one ``folders`` recorded (``DEVICE:INODE``); each removal
        is relative to the folder so held, so a path swapped meanwhile cannot redirect it.
        Returns what was left and why (``changed``, ``folder REL``: its folder is not the
        recorded one, ``error REASON``); a file already gone is not left.
        ``StorageError`` where the backend cannot do this (SFTP without exec)."""
        ...

    def copy(self, jobs: Sequence[CopyJob]) -> list[Copied]:
        """Copy each job's source into the bot's area, hashing the copy (a reflink or an
        in-kernel copy where the filesystem can, a streamed one otherwise), in parallel;
        never through a symlink, never blocking on a FIFO. One :class:`Copied` per job."""
        ...

    def read_small(self, path: str, limit: int) -> bytes | None:
        """A small file whole, or None when absent; never through a symlink, never blocking
        on a FIFO. ``StorageError`` when it is not a regular file or is over ``limit``."""
        ...

    def write_small(self, path: str, data: bytes) -> None:
        """Put a small file of the bot's own in place, whole or not at all (written under a
        temporary name, then renamed over ``path``)."""
        ...

    def create_small(self, path: str, data: bytes) -> bool:
        """Create a small file that must not exist yet (``O_EXCL``: one creator wins);
        False when it exists."""
        ...

    def pin(self, path: str) -> bool | None:
        """Hold a kernel lock on folder ``path`` for as long as this process lives or until
        :meth:`unpin`: True when held (now or already), False when another process holds it,
        None when the backend has no such locks (SFTP)."""
        ...

    def unpin(self, path: str) -> None: ...

    # The moves that make files public, kept apart from the others so that a test can inject
    # a crash between two of them, and the clean-up after them.

    def rename_public(self, source: str, target: str) -> None:
        """A folder of copies renamed onto an absent public one: all its files at once."""
        ...

    def link_public(self, source: str, target: str) -> None:
        """A second, public name; ``FileExistsError`` when ``target`` exists."""
        ...

    def replace_public(self, source: str, target: str) -> None:
        """A copy of the aside area renamed over a live public file (``rename(2)``)."""
        ...

    def move_batch(self, moves: Sequence[Move]) -> bool:
        """Every link in plan order, then the removal of the copies' other names, as one
        batch where the backend can (one command on the server); False when it cannot or
        stopped part-way: the promoter then finishes file by file."""
        ...

    def finish(self, touched: Touched) -> None:
        """Flush the new public entries and set their group where configured; failures are
        logged, not raised (the files are public by then)."""
        ...


@dataclass(frozen=True)
class Places:
    """The roots of one backend: staging, public and the bot's work folder.

    ``seen`` remembers the inode of each area the first time this process checked it, so a
    folder swapped in since is told apart from the one the bot made (where the backend
    reports inodes)."""

    staging: str
    public: str
    work: str
    seen: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    @property
    def frozen_area(self) -> str:
        return posixpath.join(self.work, FROZEN)

    @property
    def aside_area(self) -> str:
        return posixpath.join(self.work, ASIDE)

    @property
    def lock(self) -> str:
        return posixpath.join(self.work, LOCK)

    def staged(self, tag: object, path: str = "") -> str:
        return inside(posixpath.join(self.staging, str(tag)), path)

    def frozen(self, tag: object) -> str:
        """The bot's folder for ``tag``'s copies."""
        return posixpath.join(self.frozen_area, str(tag))

    def tree(self, tag: object, target: str) -> str:
        """Where the copy of a file going to ``target`` waits: the public layout, so that a
        folder of copies becomes a public folder by one rename."""
        return inside(posixpath.join(self.frozen(tag), "tree"), target)

    def sources(self, tag: object) -> str:
        return posixpath.join(self.frozen(tag), SOURCES)

    def aside(self, tag: object, path: str = "") -> str:
        return inside(posixpath.join(self.aside_area, str(tag)), path)

    def copy_of(self, plan: PublishPlan, f: PlanFile) -> str:
        """Where the bot's copy of ``f`` lives until it is published."""
        if f.is_replacement:
            return self.aside(plan.tag, f.path)
        return self.tree(plan.tag, f.target)

    def target(self, f: PlanFile) -> str:
        return inside(self.public, f.target)

    def target_folder(self, relative: str) -> str:
        """A folder under public (``3.14.1``, ``doc/3.14.1``)."""
        return inside(self.public, relative)


def default_work(public: str) -> str:
    """The work folder when the config names none: ``.relbot-NAME`` beside public
    (``/srv/ftp/.relbot-python`` for ``/srv/ftp/python``). Beside, not inside: out of the
    folder the web server serves and that uploaders may have been allowed to write, and in
    a parent that is usually the admins' alone; on public's filesystem unless public is a
    mount point of its own (``relbot check`` says so, and what to set instead)."""
    public = posixpath.normpath(public)
    return posixpath.join(posixpath.dirname(public), f".relbot-{posixpath.basename(public)}")


def temp_name() -> str:
    """A name for a file the bot writes and then renames into place: hidden and ``.tmp``
    (scans skip it), the bot's, and short, so that any name that fits in a folder has a
    temporary name that fits beside it."""
    return f".relbot-{secrets.token_hex(8)}.tmp"


def inside(root: str, relative: str) -> str:
    """``root/relative``, refusing anything that would step outside ``root``."""
    if relative.startswith("/") or ".." in relative.split("/"):
        raise StorageError(f"{relative!r} is not a path inside {root}.")
    return posixpath.join(root, relative) if relative else root
