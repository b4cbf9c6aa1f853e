"""The Storage port over SFTP (paramiko): the download server, reached with an SSH key.

Same semantics as :class:`bot.storage.local.LocalStorage`; the work happens on the server:
listings are one ``listdir_attr`` per folder, digests are ``sha256sum`` over an exec
channel, and a promotion is a folder rename or one shell batch of no-clobber moves.

The class composes concepts that live in their own modules: the connection
(:mod:`bot.storage.ssh`), server-side hashing and copying (:mod:`bot.storage.remote_hash`,
:mod:`bot.storage.remote_copy`), the primitives the freeze, the promotion and the aside area
are written over (:mod:`bot.storage.sftp_fs`), listing and small files
(:mod:`bot.storage.sftp_files`) and the check (:mod:`bot.storage.sftp_check`). It keeps the
calls tests override to inject faults.
"""

from __future__ import annotations

import posixpath
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import paramiko

from bot.domain.files import StagedFile
from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.tags import ReleaseTag
from bot.errors import StorageError
from bot.ports import PromotionReport
from bot.ports.lease import Holder
from bot.storage import aside, freezer, promotion, sftp_files, sftp_fs
from bot.storage.lock import Lease
from bot.storage.primitives import FileSystem, Move, Places, Touched, default_work, inside
from bot.storage.remote_hash import RemoteHasher
from bot.storage.sftp_check import check_server, overlap_on_server
from bot.storage.sftp_fs import RoundTrips, SftpFs
from bot.storage.ssh import (
    Connection,
    Endpoint,
    HostKeyRejected,
    SshLink,
    SshRefused,
)

__all__ = ["Connection", "HostKeyRejected", "Move", "SftpStorage", "SshRefused", "Touched"]

CONNECT_TIMEOUT = 10.0  # seconds for the TCP connection, the SSH handshake and the login
IO_TIMEOUT = 300.0  # seconds a request or a command may go silent (a big file hashed, say)


class SftpStorage:
    """Staging and public folders on an SSH server (absolute paths on that server).
    Over 250 lines because it is the whole :class:`bot.ports.Storage` port for SFTP, each
    method a few lines over the shared algorithms.

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
        work: str | None = None,
        connect_timeout: float = CONNECT_TIMEOUT,
        io_timeout: float = IO_TIMEOUT,
    ) -> None:
        work = work if work is not None else default_work(public)
        for name, folder in (("staging", staging), ("public", public), ("work", work)):
            if not posixpath.isabs(folder):
                raise StorageError(
                    f"storage.{name}: {folder!r} must be an absolute path on the server."
                )
        self.user = user
        self.staging = posixpath.normpath(staging)
        self.public = posixpath.normpath(public)
        self.work = posixpath.normpath(work)
        self.group = group
        self._places = Places(self.staging, self.public, self.work)
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
        return self._ssh.call(
            f"list {self.staging}",
            lambda conn: sftp_files.staged_tags(self._fs(conn), self.staging),
        )

    def list_staging(self, tag: ReleaseTag) -> dict[str, StagedFile] | None:
        """Every entry below the release's staging folder (symlinks reported, never
        followed), or None if there is no folder."""
        root = self._release(tag)

        def op(conn: Connection) -> dict[str, StagedFile] | None:
            found = sftp_files.list_release(self._fs(conn), root)
            if found is not None:
                self._remember(root, found)
            return found

        return self._ssh.call(f"list {root}", op)

    def _remember(self, root: str, listing: dict[str, StagedFile]) -> None:
        """Keep the stamps of a release's listing: the digest cache is keyed by them."""
        regular = {inside(root, p): (f.size, int(f.mtime)) for p, f in listing.items() if f.regular}
        self._hasher.remember(root, regular)

    def list_all_staging(
        self, tags: Sequence[ReleaseTag]
    ) -> dict[str, dict[str, StagedFile] | None]:
        """Every release's listing from ONE command on the server (a scan's look; see
        :func:`bot.storage.sftp_files.list_releases`); empty where the server runs no
        commands (each release is then listed on its own, one listing per folder)."""
        names = sorted({str(tag) for tag in tags})
        if not names:
            return {}

        def op(conn: Connection) -> dict[str, dict[str, StagedFile] | None]:
            found = sftp_files.list_releases(self._fs(conn), self.staging, names)
            for name, listing in found.items():
                if listing is not None:
                    self._remember(posixpath.join(self.staging, name), listing)
            return found

        return self._ssh.call(f"list the releases in {self.staging}", op)

    def list_public(self, folders: Sequence[str]) -> dict[str, StagedFile]:
        """Every entry below the given public folders, keyed by path under the public root."""
        return self._ssh.call(
            f"list {self.public}",
            lambda conn: sftp_files.list_public(self._fs(conn), self.public, folders),
        )

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
                lambda conn: self._hasher.hash(conn, missing, below=root),
            )
            known.update({p: hashed[fp] for p, fp in full.items() if p not in known})
        return {path: known[path] for path in paths}

    def read(self, tag: ReleaseTag, path: str, limit: int) -> bytes:
        """A small staged file (a signature bundle), whole; :class:`StorageError` past
        ``limit`` bytes, or when it is missing or not a regular file."""
        root = self._release(tag)
        return self._ssh.call(
            f"read {inside(root, path)}",
            lambda conn: sftp_files.read(self._fs(conn), root, path, limit),
        )

    def write(self, tag: ReleaseTag, path: str, data: bytes, *, replace: bool = False) -> None:
        """Write a small staged file, never over an existing one unless ``replace``."""
        full = inside(self._release(tag), path)
        self._ssh.call(
            f"write {full}",
            lambda conn: sftp_files.write(self._fs(conn), full, data, replace=replace),
        )

    def staging_location(self, tag: ReleaseTag) -> str:
        """Where people upload ``tag``'s files, for messages."""
        return f"{self._release(tag)}/"

    def check(self) -> list[str]:
        """Problems that would stop the bot from working, each a sentence with the fix:
        connection, folders, one filesystem for both, exec and group availability."""
        try:
            return self._ssh.call(
                "check the storage folders",
                lambda conn: check_server(self._fs(conn), self._places, self.user, self.group),
            )
        except StorageError as err:
            return [str(err)]

    def lock(self, holder: Holder) -> Lease:
        """A lock file in the work folder with a heartbeat (SFTP has no locks): see
        bot.storage.lock."""
        lease = Lease(self._run, self._places, f"{self.where}:{self.work}", holder)
        lease.acquire()
        return lease

    def _run(self, what: str, op: Callable[[FileSystem], None]) -> None:
        self._ssh.call(what, lambda conn: op(self._fs(conn)))

    def overlap_on_server(self) -> str | None:
        """Whether the server resolves staging and public to one folder (or one inside the
        other) through a link: the sentence saying so, else None."""
        return self._ssh.call(
            f"resolve {self.staging} and {self.public}",
            lambda conn: overlap_on_server(self._fs(conn), self._places),
        )

    def _fs(self, conn: Connection) -> SftpFs:
        """The filesystem interface on ``conn``, its round trips this class's own hooks
        (where tests inject faults)."""
        trips = RoundTrips(
            self._listdir, self._lstat, self._link, self._rename, self._replace, self._run_batch
        )
        return SftpFs(self._ssh, conn, self._hasher, trips, self.group)

    # -- promotion -------------------------------------------------------------------------

    def freeze(self, plan: PublishPlan, *, fresh: bool = True) -> list[str]:
        """Copy the plan's staged files into the bot's work folder on the server, hashing
        each copy there; returns what differs from the plan (see bot.storage.freezer)."""
        return self._ssh.call(
            f"copy the files of {plan.tag}",
            lambda conn: freezer.freeze(self._fs(conn), self._places, plan, fresh=fresh),
        )

    def write_frozen(self, plan: PublishPlan, made: Sequence[tuple[PlanFile, bytes]]) -> None:
        """Add files the bot made (signatures) to its copies on the server."""
        self._ssh.call(
            f"add to the copies of {plan.tag}",
            lambda conn: freezer.add_copies(self._fs(conn), self._places, plan, made),
        )

    def discard(self, tag: ReleaseTag) -> None:
        """Drop the bot's copies of ``tag``."""
        self._ssh.call(
            f"drop the copies of {tag}",
            lambda conn: freezer.discard(self._fs(conn), self._places, tag),
        )

    def tidy(self, plan: PublishPlan) -> list[str]:
        """Remove the staged originals unchanged since the copy; returns those left."""
        return self._ssh.call(
            f"tidy staging of {plan.tag}",
            lambda conn: freezer.tidy(self._fs(conn), self._places, plan),
        )

    def in_public(self, plan: PublishPlan) -> list[str]:
        return self._ssh.call(
            f"look at {self.public}",
            lambda conn: freezer.targets_in_public(self._fs(conn), self._places, plan),
        )

    def promote(
        self, plan: PublishPlan, *, public_before: Sequence[str] = (), recheck: bool = False
    ) -> PromotionReport:
        """Make the bot's copies public (see :func:`bot.storage.promotion.promote`);
        :class:`StagingUnreachable` when the connection drops (run it again)."""
        return self._ssh.call(
            f"publish {plan.tag}",
            lambda conn: promotion.promote(
                self._fs(conn), self._places, plan, public_before=public_before, recheck=recheck
            ),
        )

    # The round trips, kept apart so tests can inject a crash or a dropped connection.
    def _run_batch(self, conn: Connection, moves: list[Move]) -> bool:
        """The per-file batch of moves (see :func:`bot.storage.sftp_fs.run_moves`)."""
        return sftp_fs.run_moves(self._ssh, conn, moves)

    def _rename(self, conn: Connection, source: str, target: str) -> None:
        sftp_fs.rename(self._ssh, conn, source, target)

    def _link(self, conn: Connection, source: str, target: str) -> None:
        sftp_fs.hardlink(self._ssh, conn, source, target)

    def _replace(self, conn: Connection, source: str, target: str) -> None:
        sftp_fs.replace(self._ssh, conn, source, target)

    def _listdir(self, conn: Connection, folder: str) -> list[paramiko.SFTPAttributes]:
        return sftp_fs.listdir(self._ssh, conn, folder)

    def _lstat(self, conn: Connection, path: str) -> paramiko.SFTPAttributes | None:
        return sftp_fs.lstat(self._ssh, conn, path)

    # -- files that replace live ones (the install index) ------------------------------------

    def read_public(self, path: str, limit: int) -> bytes | None:
        """A small file under the public root, whole, or None when absent."""
        return self._ssh.call(
            f"read {path} in {self.public}",
            lambda conn: aside.read_public(self._fs(conn), self._places, path, limit),
        )

    def read_aside(self, tag: ReleaseTag, path: str, limit: int) -> bytes | None:
        return self._ssh.call(
            f"read the bot's copy of {path}",
            lambda conn: aside.read_aside(self._fs(conn), self._places, tag, path, limit),
        )

    def replace_public(self, tag: ReleaseTag, path: str, target: str) -> None:
        """Replace the public ``target`` with the bot's copy of ``path``, by one rename."""
        self._ssh.call(
            f"replace {target} in {self.public}",
            lambda conn: aside.replace_public(self._fs(conn), self._places, tag, path, target),
        )

    def _release(self, tag: ReleaseTag) -> str:
        return posixpath.join(self.staging, str(tag))
