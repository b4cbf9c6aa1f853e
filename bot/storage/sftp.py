"""The Storage port over SFTP (paramiko): the download server, reached with an SSH key.

Same semantics as :class:`bot.storage.local.LocalStorage`; the work happens on the server:
listings are one ``listdir_attr`` per folder, digests are ``sha256sum`` over an exec
channel, and a promotion is a folder rename or one shell batch of no-clobber moves.

This class composes the concepts that live in their own modules: the connection
(:mod:`bot.storage.ssh`), server-side hashing (:mod:`bot.storage.remote_hash`), the
freezer's and promoter's primitives (:mod:`bot.storage.sftp_fs`) and the check
(:mod:`bot.storage.sftp_check`).
"""

from __future__ import annotations

import contextlib
import posixpath
import secrets
import stat
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import paramiko
from paramiko.sftp import CMD_EXTENDED

from bot.domain.files import StagedFile
from bot.domain.plan import PublishPlan
from bot.domain.tags import ReleaseTag
from bot.errors import StagingUnreachable, StorageError
from bot.ports import PromotionReport
from bot.storage import freezer, promotion
from bot.storage.aside import ASIDE_FOLDER, ASIDE_MODE
from bot.storage.freezer import Places
from bot.storage.listing import (
    RELEASE_FOLDER,
    linked_release_folder,
    unreadable_release_folder,
)
from bot.storage.lock import Holder, SftpLease
from bot.storage.promotion import Touched
from bot.storage.remote_hash import RemoteHasher
from bot.storage.sftp_check import check_server
from bot.storage.sftp_fs import FileMove, SftpFs, inside, read_folder, run_moves
from bot.storage.ssh import (
    Connection,
    Endpoint,
    HostKeyRejected,
    SshLink,
    SshRefused,
    reason,
)

__all__ = ["HostKeyRejected", "SftpStorage", "SshRefused"]

T = TypeVar("T")

# The names the fault-injection tests subclass with.
_Connection = Connection
_FileMove = FileMove
_Touched = Touched


class SftpStorage:
    """Staging and public folders on an SSH server (absolute paths on that server).

    One connection is reused across calls and re-established when it dropped; calls are
    serialized by a lock because the gate runs them in worker threads.
    """

    def __init__(
        self,
        host: str,
        port: int,
        user: str,
        key_file: Path,
        known_hosts: Path,
        staging: str,
        public: str,
        *,
        passphrase: str | None = None,
        group: str | None = None,
        connect_timeout: float = 10.0,
        io_timeout: float = 300.0,
    ) -> None:
        for name, folder in (("staging", staging), ("public", public)):
            if not posixpath.isabs(folder):
                raise StorageError(
                    f"storage.{name}: {folder!r} must be an absolute path on the server."
                )
        self.host = host
        self.port = port
        self.user = user
        self.key_file = key_file
        self.known_hosts = known_hosts
        self.staging = posixpath.normpath(staging)
        self.public = posixpath.normpath(public)
        self.group = group
        self.connect_timeout = connect_timeout
        self.io_timeout = io_timeout
        self.requests: Counter[str] = Counter()
        """Round trips by kind (``connect``, ``listdir``, ``stat``, ``exec``, ``hash``...),
        for tests, the bench and metrics."""
        endpoint = Endpoint(
            host, port, user, key_file, known_hosts, passphrase, connect_timeout, io_timeout
        )
        self._ssh = SshLink(endpoint, self.requests)
        self._hasher = RemoteHasher(self._ssh)

    def __repr__(self) -> str:
        return f"SftpStorage({self.where!r}, staging={self.staging!r}, public={self.public!r})"

    @property
    def where(self) -> str:
        """The server as known_hosts and messages name it: ``host`` or ``[host]:port``."""
        return self._ssh.where

    def close(self) -> None:
        """Close the connection (the next call opens a new one)."""
        with self._ssh.lock:
            self._ssh.drop()

    # -- reading ---------------------------------------------------------------------------

    def staged_tags(self) -> list[str]:
        """Names of the release folders in staging (one listing)."""

        def op(conn: Connection) -> list[str]:
            try:
                entries = self._listdir(conn, self.staging)
            except FileNotFoundError:
                return []
            except PermissionError as err:
                raise StagingUnreachable(
                    f"Cannot read staging {self.staging} on {self.where}: {reason(err)}."
                ) from err
            # A symlinked release folder is listed too: scans show why it is refused.
            return sorted(
                e.filename
                for e in entries
                if stat.S_ISDIR(e.st_mode or 0) or stat.S_ISLNK(e.st_mode or 0)
            )

        return self._ssh.call(f"list {self.staging}", op)

    def list_staging(self, tag: ReleaseTag) -> dict[str, StagedFile] | None:
        """Every entry below the release's staging folder, or None if there is no folder.

        One ``listdir_attr`` per folder; the server reports entries as ``lstat`` sees
        them, so symlinks are reported (``regular=False``) and never followed.
        """
        root = self._release(tag)

        def op(conn: Connection) -> dict[str, StagedFile] | None:
            attr = self._lstat(conn, root)
            if attr is None:
                return None
            if stat.S_ISLNK(attr.st_mode or 0):
                return {RELEASE_FOLDER: linked_release_folder(conn.sftp.readlink(root) or "?")}
            try:
                found = dict(SftpFs(self, conn).walk(root, ""))
            except FileNotFoundError:
                return None
            except PermissionError as err:  # this release's problem, not the scan's
                return {RELEASE_FOLDER: unreadable_release_folder(reason(err))}
            self._hasher.remember(
                root,
                {inside(root, p): (f.size, int(f.mtime)) for p, f in found.items() if f.regular},
            )
            return found

        return self._ssh.call(f"list {root}", op)

    def list_public(self, folders: Sequence[str]) -> dict[str, StagedFile]:
        """Every entry below the given public folders, keyed by path under the public root;
        one ``listdir_attr`` per folder, a missing folder adds nothing."""

        def op(conn: Connection) -> dict[str, StagedFile]:
            found: dict[str, StagedFile] = {}
            for folder in folders:
                try:
                    found.update(SftpFs(self, conn).walk(inside(self.public, folder), folder))
                except FileNotFoundError:
                    continue
                except PermissionError as err:
                    raise StagingUnreachable(
                        f"Cannot list {self.public}/{folder} on {self.where}: {reason(err)}."
                    ) from err
            return found

        return self._ssh.call(f"list {self.public}", op)

    def digest(
        self, tag: ReleaseTag, paths: Sequence[str], *, fresh: bool = False
    ) -> dict[str, str]:
        """SHA-256 (hex) of staged files, computed on the server.

        A file whose size and mtime in the latest listing match those it was hashed at is
        not hashed again, unless ``fresh``. Raises :class:`StorageError` when a file cannot
        be read.
        """
        root = self._release(tag)
        full = {path: inside(root, path) for path in paths}
        with self._ssh.lock:
            known = (
                {}
                if fresh
                else {p: d for p, fp in full.items() if (d := self._hasher.cached(fp)) is not None}
            )
        missing = [fp for p, fp in full.items() if p not in known]
        if missing:
            hashed = self._ssh.call(
                f"hash files in {root}",
                lambda conn: self._hasher.hash(conn, missing, cache=not fresh),
            )
            known.update({p: hashed[fp] for p, fp in full.items() if p not in known})
        return {path: known[path] for path in paths}

    def read(self, tag: ReleaseTag, path: str, limit: int) -> bytes:
        """A small staged file (a signature bundle), whole. Raises :class:`StorageError`
        past ``limit`` bytes, or when it is missing or not a regular file (never followed)."""
        full = inside(self._release(tag), path)

        def op(conn: Connection) -> bytes:
            attr = self._lstat(conn, full)
            if attr is None or not stat.S_ISREG(attr.st_mode or 0):
                raise StorageError(f"{path} is not a regular file in {self._release(tag)}.")
            self.requests["read"] += 1
            with conn.sftp.open(full, "rb") as f:
                data = f.read(limit + 1)
            if len(data) > limit:
                raise StorageError(f"{path} is larger than {limit:,} bytes; it is not a bundle.")
            return data

        return self._ssh.call(f"read {full}", op)

    def write(self, tag: ReleaseTag, path: str, data: bytes, *, replace: bool = False) -> None:
        """Write a small staged file under a temporary name, then rename it into place (an
        existing file only with ``replace``). Raises :class:`StorageError`."""
        full = inside(self._release(tag), path)
        folder, name = posixpath.split(full)
        temp = posixpath.join(folder, f".{name}.{secrets.token_hex(4)}.tmp")

        def op(conn: Connection) -> None:
            try:
                self.requests["write"] += 1
                with conn.sftp.open(temp, "wb") as f:
                    f.write(data)
                if replace:
                    self.requests["rename"] += 1
                    conn.sftp.posix_rename(temp, full)
                else:
                    self._link(conn, temp, full)  # refuses an existing target
            except OSError as err:
                if not replace and self._lstat(conn, full) is not None:
                    if self._holds(conn, full, data):
                        return  # written by an attempt whose answer was lost: done
                    raise StorageError(
                        f"{path} already exists in {folder}; not overwritten."
                    ) from err
                raise
            finally:
                with contextlib.suppress(OSError):
                    conn.sftp.remove(temp)

        self._ssh.call(f"write {full}", op)

    def _holds(self, conn: Connection, path: str, data: bytes) -> bool:
        """Whether a small file on the server has exactly ``data``."""
        self.requests["read"] += 1
        with conn.sftp.open(path, "rb") as f:
            return bool(f.read(len(data) + 1) == data)

    def staging_location(self, tag: ReleaseTag) -> str:
        """Where people upload ``tag``'s files, for messages."""
        return f"{self._release(tag)}/"

    def check(self) -> list[str]:
        """Problems that would stop the bot from working, each a sentence with the fix:
        connection, folders, one filesystem for both, exec and group availability."""
        try:
            return self._ssh.call(
                "check the storage folders", lambda conn: check_server(self, conn)
            )
        except StorageError as err:
            return [str(err)]

    def lock(self, holder: Holder) -> SftpLease:
        """A lock file in staging with a heartbeat (SFTP has no locks): see bot.storage.lock."""

        def call(what: str, op: Callable[[paramiko.SFTPClient], None]) -> None:
            self._ssh.call(what, lambda conn: op(conn.sftp))

        lease = SftpLease(self.staging, self.where, holder, call)
        lease.acquire()
        return lease

    # -- promotion -------------------------------------------------------------------------

    def freeze(self, plan: PublishPlan) -> list[str]:
        """Move the plan's staged files into the bot's area on the server and hash them
        there; returns what differs from the plan (see :mod:`bot.storage.freezer`)."""

        def op(conn: Connection) -> list[str]:
            fs = SftpFs(self, conn)
            freezer.freeze(fs, self._places, plan, fresh=True)
            return freezer.frozen_problems(fs, self._places, plan)

        return self._ssh.call(f"freeze {plan.tag}", op)

    def thaw(self, plan: PublishPlan) -> list[str]:
        """Put frozen files back in staging; returns the files that clashed."""
        return self._ssh.call(
            f"put back {plan.tag}",
            lambda conn: freezer.thaw(SftpFs(self, conn), self._places, plan),
        )

    def in_public(self, plan: PublishPlan) -> list[str]:
        return self._ssh.call(
            f"look at {self.public}",
            lambda conn: freezer.targets_in_public(SftpFs(self, conn), self._places, plan),
        )

    def verify_public(self, plan: PublishPlan) -> list[str]:
        return self._ssh.call(
            f"check {self.public}",
            lambda conn: freezer.public_problems(SftpFs(self, conn), self._places, plan),
        )

    def promote(
        self, plan: PublishPlan, *, verified: bool = False, public_before: Sequence[str] = ()
    ) -> PromotionReport:
        """Make the plan's frozen files public (see :func:`bot.storage.promotion.promote`);
        :class:`StagingUnreachable` when the connection drops (run it again)."""
        return self._ssh.call(
            f"publish {plan.tag}",
            lambda conn: promotion.promote(
                SftpFs(self, conn),
                self._places,
                plan,
                verified=verified,
                public_before=public_before,
            ),
        )

    @property
    def _places(self) -> Places:
        return Places(self.staging, self.public)

    def _run_batch(self, conn: Connection, moves: list[FileMove], touched: Touched) -> bool:
        """The per-file batch of moves (see :func:`bot.storage.sftp_fs.run_moves`)."""
        return run_moves(self._ssh, conn, moves)

    # The primitive moves, kept apart so tests can inject a crash or a dropped connection.
    def _rename(self, conn: Connection, source: str, target: str) -> None:
        # OpenSSH renames a folder only onto a missing target: no clobbering.
        self.requests["rename"] += 1
        conn.sftp.rename(source, target)

    def _link(self, conn: Connection, source: str, target: str) -> None:
        # link(2) on the server refuses an existing target: a race-free no-clobber.
        self.requests["hardlink"] += 1
        # paramiko has no public call for this OpenSSH extension.
        conn.sftp._request(CMD_EXTENDED, "hardlink@openssh.com", source, target)  # type: ignore[attr-defined]

    # -- files that replace live ones (the install index) ------------------------------------

    def read_public(self, path: str, limit: int) -> bytes | None:
        """A small file under the public root, whole, or None when absent."""
        full = inside(self.public, path)
        return self._ssh.call(f"read {full}", lambda conn: self._read_small(conn, full, limit))

    def set_aside(self, tag: ReleaseTag, path: str) -> None:
        """Move a file of the release (frozen by the confirmation, else staged) to the bot's
        aside folder, replacing an older copy there; nothing when it is in neither place."""
        frozen = inside(posixpath.join(self.staging, freezer.AREA, str(tag)), path)
        staged = inside(self._release(tag), path)
        target = inside(self._aside(tag), path)

        def op(conn: Connection) -> None:
            source, attr = frozen, self._lstat(conn, frozen)
            if attr is None:
                source, attr = staged, self._lstat(conn, staged)
            if attr is None:
                return
            if not stat.S_ISREG(attr.st_mode or 0):
                raise StorageError(f"{path} is not a regular file; it is never published.")
            aside = posixpath.join(self.staging, ASIDE_FOLDER)
            if self._lstat(conn, aside) is None:
                self.requests["mkdir"] += 1
                conn.sftp.mkdir(aside, ASIDE_MODE)
                conn.sftp.chmod(aside, ASIDE_MODE)  # not narrowed by the server's umask
            self._makedirs(conn, posixpath.dirname(target))
            self.requests["rename"] += 1
            conn.sftp.posix_rename(source, target)

        self._ssh.call(f"set {path} of {tag} aside", op)

    def put_back(self, tag: ReleaseTag, path: str) -> None:
        """Move a file set aside back into the release's staging folder; a file staged
        since under that name is kept (SFTP's rename refuses an existing target)."""
        source, target = inside(self._aside(tag), path), inside(self._release(tag), path)

        def op(conn: Connection) -> None:
            if self._lstat(conn, source) is None or self._lstat(conn, target) is not None:
                return
            self._makedirs(conn, posixpath.dirname(target))
            self.requests["rename"] += 1
            conn.sftp.rename(source, target)
            self._remove_if_empty(conn, self._aside(tag))

        self._ssh.call(f"put {source} back", op)

    def read_aside(self, tag: ReleaseTag, path: str, limit: int) -> bytes | None:
        full = inside(self._aside(tag), path)
        return self._ssh.call(f"read {full}", lambda conn: self._read_small(conn, full, limit))

    def replace_public(self, tag: ReleaseTag, path: str, target: str) -> None:
        """Replace the public ``target`` with the file set aside, by one ``posix-rename``
        (rename(2) on the server: readers see the old file or the new one, whole)."""
        source, live = inside(self._aside(tag), path), inside(self.public, target)

        def op(conn: Connection) -> None:
            self._makedirs(conn, posixpath.dirname(live))
            self._replace(conn, source, live)
            SftpFs(self, conn).finish(Touched(files=[live]))
            self._remove_if_empty(conn, self._aside(tag))

        self._ssh.call(f"replace {live}", op)

    def _replace(self, conn: Connection, source: str, target: str) -> None:
        self.requests["rename"] += 1
        conn.sftp.posix_rename(source, target)

    def _read_small(self, conn: Connection, path: str, limit: int) -> bytes | None:
        attr = self._lstat(conn, path)
        if attr is None:
            return None
        if not stat.S_ISREG(attr.st_mode or 0):
            raise StorageError(f"{path} on {self.where} is not a regular file.")
        self.requests["read"] += 1
        with conn.sftp.open(path, "rb") as f:
            data = f.read(limit + 1)
        if len(data) > limit:
            raise StorageError(f"{path} on {self.where} is larger than {limit:,} bytes.")
        return data

    def _aside(self, tag: ReleaseTag) -> str:
        return posixpath.join(self.staging, ASIDE_FOLDER, str(tag))

    def _remove_if_empty(self, conn: Connection, folder: str) -> None:
        """Remove a folder of the aside area once its last file left (else leave it)."""
        try:
            self.requests["rmdir"] += 1
            conn.sftp.rmdir(folder)
        except OSError:
            if not conn.alive:
                raise

    def _listdir(self, conn: Connection, folder: str) -> list[paramiko.SFTPAttributes]:
        """One listing (see :func:`bot.storage.sftp_fs.read_folder`)."""
        self.requests["listdir"] += 1
        return read_folder(conn.sftp, folder)

    def _stat(self, conn: Connection, path: str) -> paramiko.SFTPAttributes | None:
        """What ``path`` points to (symlinks followed), or None when nothing is there."""
        self.requests["stat"] += 1
        try:
            return conn.sftp.stat(path)
        except FileNotFoundError:
            return None

    def _lstat(self, conn: Connection, path: str) -> paramiko.SFTPAttributes | None:
        self.requests["stat"] += 1
        try:
            return conn.sftp.lstat(path)
        except FileNotFoundError:
            return None

    def _makedirs(self, conn: Connection, folder: str) -> None:
        """``mkdir -p`` over SFTP (one stat when the folder exists)."""
        if self._lstat(conn, folder) is not None:
            return
        self._makedirs(conn, posixpath.dirname(folder))
        try:
            self.requests["mkdir"] += 1
            conn.sftp.mkdir(folder, 0o775)
        except OSError:
            if self._lstat(conn, folder) is None:  # not made concurrently: a real failure
                raise

    def _release(self, tag: ReleaseTag) -> str:
        return posixpath.join(self.staging, str(tag))

    # -- connection ------------------------------------------------------------------------
