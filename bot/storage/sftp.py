"""The Storage port over SFTP (paramiko): the download server, reached with an SSH key.

Same semantics as :class:`bot.storage.local.LocalStorage`; the work happens on the server:
listings are one ``listdir_attr`` per folder, digests are ``sha256sum`` over an exec
channel, and a promotion is a folder rename or one shell batch of no-clobber moves.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import posixpath
import secrets
import shlex
import stat
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, NoReturn, TypeVar

import paramiko
from paramiko.sftp import (
    CMD_CLOSE,
    CMD_EXTENDED,
    CMD_HANDLE,
    CMD_NAME,
    CMD_OPENDIR,
    CMD_READDIR,
)

from bot.domain.files import StagedFile
from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.tags import ReleaseTag
from bot.errors import StagingUnreachable, StorageError
from bot.ports import PromotionReport
from bot.storage import freezer, promotion
from bot.storage.aside import ASIDE_FOLDER, ASIDE_MODE
from bot.storage.freezer import Entry, Places
from bot.storage.listing import (
    RELEASE_FOLDER,
    empty_folder,
    linked_release_folder,
    odd_name,
    unreadable_folder,
    unreadable_release_folder,
)
from bot.storage.lock import Holder, SftpLease
from bot.storage.overlap import folders_overlap, overlap_message
from bot.storage.promotion import Move, Touched, join

log = logging.getLogger(__name__)

T = TypeVar("T")
Stamp = tuple[int, int]  # (size, mtime in whole seconds): what SFTP v3 reports

_RECONNECT_DELAYS = (0.2, 0.5)  # seconds between connection attempts within one call
_HASH_PROCESSES = 4  # parallel sha256sum processes on the server for one batch of files
_MAX_COMMAND = 100_000  # bytes per exec command: Linux caps one argument at 128 KiB
_EXEC_PROBE = "sha256sum --version >/dev/null && echo relbot-exec-ok"
_CONNECTION_ERRORS = (OSError, EOFError, paramiko.SSHException)
_PRESENT = paramiko.SFTPAttributes()  # "there" for a batch move (only presence matters)


class SshRefused(StagingUnreachable):
    """The server answered but the connection was refused (host key, client key):
    retrying cannot help until someone changes the configuration."""


class HostKeyRejected(SshRefused):
    """The server's host key is not in known_hosts, or differs from it. Never accepted."""


@dataclass
class _Connection:
    client: paramiko.SSHClient
    sftp: paramiko.SFTPClient
    exec_allowed: bool | None = None  # probed on first need
    uid: int | None = None  # the bot's uid on the server, learned on first need

    @property
    def alive(self) -> bool:
        transport = self.client.get_transport()
        return transport is not None and transport.is_active()

    def close(self) -> None:
        self.client.close()


@dataclass
class _Entry:
    """A server path as seen by ``lstat`` (None when absent)."""

    path: str
    attr: paramiko.SFTPAttributes | None

    @property
    def present(self) -> bool:
        return self.attr is not None

    @property
    def regular(self) -> bool:
        return self.attr is not None and stat.S_ISREG(self.attr.st_mode or 0)


@dataclass
class _FileMove:
    """One file of a per-file batch, with what the conflict check saw."""

    file: PlanFile
    source: _Entry
    target: _Entry


_Touched = Touched  # the name the crash-injection tests override with


class _RejectUnknownHost(paramiko.RejectPolicy):
    """paramiko's RejectPolicy, raising our error so the message says how to add the key."""

    def __init__(self, message: str) -> None:
        self.message = message

    def missing_host_key(
        self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey
    ) -> NoReturn:
        raise HostKeyRejected(self.message)


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
        self._passphrase = passphrase
        self._lock = threading.Lock()
        self._connection: _Connection | None = None
        self._stamps: dict[str, Stamp] = {}  # path -> stamp from the latest listing
        self._digests: dict[str, tuple[Stamp, str]] = {}  # path -> (stamp hashed, sha256)

    def __repr__(self) -> str:
        return f"SftpStorage({self.where!r}, staging={self.staging!r}, public={self.public!r})"

    @property
    def where(self) -> str:
        """The server as known_hosts and messages name it: ``host`` or ``[host]:port``."""
        return self.host if self.port == 22 else f"[{self.host}]:{self.port}"

    def close(self) -> None:
        """Close the connection (the next call opens a new one)."""
        with self._lock:
            self._drop()

    # -- reading ---------------------------------------------------------------------------

    def staged_tags(self) -> list[str]:
        """Names of the release folders in staging (one listing)."""

        def op(conn: _Connection) -> list[str]:
            try:
                entries = self._listdir(conn, self.staging)
            except FileNotFoundError:
                return []
            except PermissionError as err:
                raise StagingUnreachable(
                    f"Cannot read staging {self.staging} on {self.where}: {_reason(err)}."
                ) from err
            # A symlinked release folder is listed too: scans show why it is refused.
            return sorted(
                e.filename
                for e in entries
                if stat.S_ISDIR(e.st_mode or 0) or stat.S_ISLNK(e.st_mode or 0)
            )

        return self._call(f"list {self.staging}", op)

    def list_staging(self, tag: ReleaseTag) -> dict[str, StagedFile] | None:
        """Every entry below the release's staging folder, or None if there is no folder.

        One ``listdir_attr`` per folder; the server reports entries as ``lstat`` sees
        them, so symlinks are reported (``regular=False``) and never followed.
        """
        root = self._release(tag)

        def op(conn: _Connection) -> dict[str, StagedFile] | None:
            attr = self._lstat(conn, root)
            if attr is None:
                return None
            if stat.S_ISLNK(attr.st_mode or 0):
                return {RELEASE_FOLDER: linked_release_folder(conn.sftp.readlink(root) or "?")}
            try:
                found = dict(self._walk(conn, root, ""))
            except FileNotFoundError:
                return None
            except PermissionError as err:  # this release's problem, not the scan's
                return {RELEASE_FOLDER: unreadable_release_folder(_reason(err))}
            self._remember(
                root,
                {_inside(root, p): (f.size, int(f.mtime)) for p, f in found.items() if f.regular},
            )
            return found

        return self._call(f"list {root}", op)

    def list_public(self, folders: Sequence[str]) -> dict[str, StagedFile]:
        """Every entry below the given public folders, keyed by path under the public root;
        one ``listdir_attr`` per folder, a missing folder adds nothing."""

        def op(conn: _Connection) -> dict[str, StagedFile]:
            found: dict[str, StagedFile] = {}
            for folder in folders:
                try:
                    found.update(self._walk(conn, _inside(self.public, folder), folder))
                except FileNotFoundError:
                    continue
                except PermissionError as err:
                    raise StagingUnreachable(
                        f"Cannot list {self.public}/{folder} on {self.where}: {_reason(err)}."
                    ) from err
            return found

        return self._call(f"list {self.public}", op)

    def digest(
        self, tag: ReleaseTag, paths: Sequence[str], *, fresh: bool = False
    ) -> dict[str, str]:
        """SHA-256 (hex) of staged files, computed on the server.

        A file whose size and mtime in the latest listing match those it was hashed at is
        not hashed again, unless ``fresh``. Raises :class:`StorageError` when a file cannot
        be read.
        """
        root = self._release(tag)
        full = {path: _inside(root, path) for path in paths}
        with self._lock:
            known = (
                {}
                if fresh
                else {p: d for p, fp in full.items() if (d := self._cached(fp)) is not None}
            )
        missing = [fp for p, fp in full.items() if p not in known]
        if missing:
            hashed = self._call(
                f"hash files in {root}", lambda conn: self._hash(conn, missing, cache=not fresh)
            )
            known.update({p: hashed[fp] for p, fp in full.items() if p not in known})
        return {path: known[path] for path in paths}

    def read(self, tag: ReleaseTag, path: str, limit: int) -> bytes:
        """A small staged file (a signature bundle), whole. Raises :class:`StorageError`
        past ``limit`` bytes, or when it is missing or not a regular file (never followed)."""
        full = _inside(self._release(tag), path)

        def op(conn: _Connection) -> bytes:
            attr = self._lstat(conn, full)
            if attr is None or not stat.S_ISREG(attr.st_mode or 0):
                raise StorageError(f"{path} is not a regular file in {self._release(tag)}.")
            self.requests["read"] += 1
            with conn.sftp.open(full, "rb") as f:
                data = f.read(limit + 1)
            if len(data) > limit:
                raise StorageError(f"{path} is larger than {limit:,} bytes; it is not a bundle.")
            return data

        return self._call(f"read {full}", op)

    def write(self, tag: ReleaseTag, path: str, data: bytes, *, replace: bool = False) -> None:
        """Write a small staged file under a temporary name, then rename it into place (an
        existing file only with ``replace``). Raises :class:`StorageError`."""
        full = _inside(self._release(tag), path)
        folder, name = posixpath.split(full)
        temp = posixpath.join(folder, f".{name}.{secrets.token_hex(4)}.tmp")

        def op(conn: _Connection) -> None:
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

        self._call(f"write {full}", op)

    def _holds(self, conn: _Connection, path: str, data: bytes) -> bool:
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
            return self._call("check the storage folders", self._check)
        except StorageError as err:
            return [str(err)]

    def lock(self, holder: Holder) -> SftpLease:
        """A lock file in staging with a heartbeat (SFTP has no locks): see bot.storage.lock."""

        def call(what: str, op: Callable[[paramiko.SFTPClient], None]) -> None:
            self._call(what, lambda conn: op(conn.sftp))

        lease = SftpLease(self.staging, self.where, holder, call)
        lease.acquire()
        return lease

    # -- promotion -------------------------------------------------------------------------

    def freeze(self, plan: PublishPlan) -> list[str]:
        """Move the plan's staged files into the bot's area on the server and hash them
        there; returns what differs from the plan (see :mod:`bot.storage.freezer`)."""

        def op(conn: _Connection) -> list[str]:
            fs = _SftpFs(self, conn)
            freezer.freeze(fs, self._places, plan, fresh=True)
            return freezer.frozen_problems(fs, self._places, plan)

        return self._call(f"freeze {plan.tag}", op)

    def thaw(self, plan: PublishPlan) -> list[str]:
        """Put frozen files back in staging; returns the files that clashed."""
        return self._call(
            f"put back {plan.tag}",
            lambda conn: freezer.thaw(_SftpFs(self, conn), self._places, plan),
        )

    def in_public(self, plan: PublishPlan) -> list[str]:
        return self._call(
            f"look at {self.public}",
            lambda conn: freezer.targets_in_public(_SftpFs(self, conn), self._places, plan),
        )

    def verify_public(self, plan: PublishPlan) -> list[str]:
        return self._call(
            f"check {self.public}",
            lambda conn: freezer.public_problems(_SftpFs(self, conn), self._places, plan),
        )

    def promote(
        self, plan: PublishPlan, *, verified: bool = False, public_before: Sequence[str] = ()
    ) -> PromotionReport:
        """Make the plan's frozen files public (see :func:`bot.storage.promotion.promote`);
        :class:`StagingUnreachable` when the connection drops (run it again)."""
        return self._call(
            f"publish {plan.tag}",
            lambda conn: promotion.promote(
                _SftpFs(self, conn),
                self._places,
                plan,
                verified=verified,
                public_before=public_before,
            ),
        )

    @property
    def _places(self) -> Places:
        return Places(self.staging, self.public)

    def _run_batch(self, conn: _Connection, moves: list[_FileMove], touched: _Touched) -> bool:
        """No-clobber moves of single files in one shell command per batch: every link in
        plan order, then the removal of the frozen copies. False when a batch stopped
        half-way (a target appeared meanwhile): the promoter then looks at each file again
        and finishes whatever the batch left."""
        for script in _move_scripts(moves):
            status, _out, err = self._exec(conn, script)
            if status != 0:
                log.warning(
                    "Batch move on %s stopped (%s); finishing file by file.",
                    self.where,
                    _first_line(err),
                )
                return False
        return True

    # The primitive moves, kept apart so tests can inject a crash or a dropped connection.
    def _rename(self, conn: _Connection, source: str, target: str) -> None:
        # OpenSSH renames a folder only onto a missing target: no clobbering.
        self.requests["rename"] += 1
        conn.sftp.rename(source, target)

    def _link(self, conn: _Connection, source: str, target: str) -> None:
        # link(2) on the server refuses an existing target: a race-free no-clobber.
        self.requests["hardlink"] += 1
        # paramiko has no public call for this OpenSSH extension.
        conn.sftp._request(CMD_EXTENDED, "hardlink@openssh.com", source, target)  # type: ignore[attr-defined]

    # -- files that replace live ones (the install index) ------------------------------------

    def read_public(self, path: str, limit: int) -> bytes | None:
        """A small file under the public root, whole, or None when absent."""
        full = _inside(self.public, path)
        return self._call(f"read {full}", lambda conn: self._read_small(conn, full, limit))

    def set_aside(self, tag: ReleaseTag, path: str) -> None:
        """Move a file of the release (frozen by the confirmation, else staged) to the bot's
        aside folder, replacing an older copy there; nothing when it is in neither place."""
        frozen = _inside(posixpath.join(self.staging, freezer.AREA, str(tag)), path)
        staged = _inside(self._release(tag), path)
        target = _inside(self._aside(tag), path)

        def op(conn: _Connection) -> None:
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

        self._call(f"set {path} of {tag} aside", op)

    def put_back(self, tag: ReleaseTag, path: str) -> None:
        """Move a file set aside back into the release's staging folder; a file staged
        since under that name is kept (SFTP's rename refuses an existing target)."""
        source, target = _inside(self._aside(tag), path), _inside(self._release(tag), path)

        def op(conn: _Connection) -> None:
            if self._lstat(conn, source) is None or self._lstat(conn, target) is not None:
                return
            self._makedirs(conn, posixpath.dirname(target))
            self.requests["rename"] += 1
            conn.sftp.rename(source, target)
            self._remove_if_empty(conn, self._aside(tag))

        self._call(f"put {source} back", op)

    def read_aside(self, tag: ReleaseTag, path: str, limit: int) -> bytes | None:
        full = _inside(self._aside(tag), path)
        return self._call(f"read {full}", lambda conn: self._read_small(conn, full, limit))

    def replace_public(self, tag: ReleaseTag, path: str, target: str) -> None:
        """Replace the public ``target`` with the file set aside, by one ``posix-rename``
        (rename(2) on the server: readers see the old file or the new one, whole)."""
        source, live = _inside(self._aside(tag), path), _inside(self.public, target)

        def op(conn: _Connection) -> None:
            self._makedirs(conn, posixpath.dirname(live))
            self._replace(conn, source, live)
            self._finish(conn, _Touched(files=[live]))
            self._remove_if_empty(conn, self._aside(tag))

        self._call(f"replace {live}", op)

    def _replace(self, conn: _Connection, source: str, target: str) -> None:
        self.requests["rename"] += 1
        conn.sftp.posix_rename(source, target)

    def _read_small(self, conn: _Connection, path: str, limit: int) -> bytes | None:
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

    def _remove_if_empty(self, conn: _Connection, folder: str) -> None:
        """Remove a folder of the aside area once its last file left (else leave it)."""
        try:
            self.requests["rmdir"] += 1
            conn.sftp.rmdir(folder)
        except OSError:
            if not conn.alive:
                raise

    def _finish(self, conn: _Connection, touched: _Touched) -> None:
        """After the moves, in one command: flush the public folders' new entries and fix
        permissions. Failures are logged, not raised: the files are public by now."""
        if not self._exec_allowed(conn):
            if self.group is not None:
                self._fix_modes_by_sftp(conn, touched)
            return
        q = shlex.quote
        commands = []
        folders = {posixpath.dirname(p) for p in [*touched.trees, *touched.files]}
        if folders:
            commands.append(f"sync -- {' '.join(q(f) for f in sorted(folders))}")
        if self.group is not None:
            commands += self._permission_commands(touched, self.group)
        if not commands:
            return
        status, _out, err = self._exec(
            conn, "s=0; " + "".join(f"{c} || s=1; " for c in commands) + "exit $s"
        )
        if status != 0:
            log.warning("Finishing the publication on %s: %s", self.where, _first_line(err))

    def _permission_commands(self, touched: _Touched, group: str) -> list[str]:
        """Group ``group``, folders 775 and files 664, as today's tooling leaves them; only
        what is not already right is changed (another RM may own a folder)."""
        g = shlex.quote(group)
        commands = []
        for paths, depth in (
            ([*touched.trees, *touched.files], ""),
            (sorted(touched.folders), " -maxdepth 0"),
        ):
            if not paths:
                continue
            start = " ".join(shlex.quote(p) for p in paths) + depth  # absolute: never options
            commands += [
                f"find {start} ! -group {g} -exec chgrp {g} {{}} +",
                f"find {start} \\( -type d \\( ! -perm -775 -o -perm /002 \\)"
                " -exec chmod 775 {} + \\) -o \\( -type f ! -perm 664 -exec chmod 664 {} + \\)",
            ]
        return commands

    def _fix_modes_by_sftp(self, conn: _Connection, touched: _Touched) -> None:
        """Without exec only modes can be fixed (SFTP knows no group names)."""
        paths = [*touched.files, *sorted(touched.folders)]
        for tree in touched.trees:
            paths += [tree, *self._folders(conn, tree)]
            paths += [_inside(tree, p) for p, f in self._walk(conn, tree, "") if f.regular]
        for path in paths:
            attr = self._lstat(conn, path)
            if attr is None or attr.st_mode is None:
                continue
            kind = stat.S_IFMT(attr.st_mode)
            want = 0o775 if kind == stat.S_IFDIR else 0o664
            if kind in (stat.S_IFDIR, stat.S_IFREG) and stat.S_IMODE(attr.st_mode) & 0o777 != want:
                try:
                    self.requests["chmod"] += 1
                    conn.sftp.chmod(path, (stat.S_IMODE(attr.st_mode) & 0o7000) | want)
                except OSError as err:
                    if not conn.alive:
                        raise
                    log.warning("Could not chmod %s on %s: %s", path, self.where, err)

    # -- check -----------------------------------------------------------------------------

    def _check(self, conn: _Connection) -> list[str]:
        problems = []
        for name, folder in (("staging", self.staging), ("public", self.public)):
            # Never created here: a mistyped path must not become a folder nobody uploads to.
            try:
                attr = self._stat(conn, folder)  # a symlinked root is fine; overlap is not
            except OSError as err:
                if not conn.alive:
                    raise
                problems.append(
                    f"storage.{name}: cannot read {folder} on {self.where} ({_reason(err)})."
                )
                continue
            if attr is None:
                problems.append(
                    f"storage.{name}: {folder} does not exist on {self.where}; create it there "
                    f"(mkdir -p {shlex.quote(folder)}) or fix the path."
                )
            elif not stat.S_ISDIR(attr.st_mode or 0):
                problems.append(f"storage.{name}: {folder} on {self.where} is not a folder.")
        if not problems:  # where the server says the folders really are (symlinks resolved)
            real = [conn.sftp.normalize(folder) for folder in (self.staging, self.public)]
            if folders_overlap(PurePosixPath(real[0]), PurePosixPath(real[1])):
                return [f"storage on {self.where}: {overlap_message(real[0], real[1])}"]
        if not self._exec_allowed(conn):
            problems.append(
                f"storage: {self.where} does not let {self.user} run commands (exec), so "
                "SHA-256 digests fall back to downloading each file, files move one at a "
                "time and the group cannot be set; allow exec for this user (no "
                "ForceCommand internal-sftp) so hashing and moves happen on the server."
            )
            return problems
        if problems:
            return problems
        if area := freezer.area_problem(_SftpFs(self, conn), self._places):
            problems.append(area)
        folders = f"{shlex.quote(self.staging)} {shlex.quote(self.public)}"
        status, out, errors = self._exec(
            conn,
            f"stat -c %d -- {folders} && for d in {folders}; do "
            '[ -w "$d" ] && [ -x "$d" ] || echo "read-only $d"; done; id -Gn',
        )
        lines = out.decode(errors="replace").splitlines()
        if status != 0 or len(lines) < 3:
            return [f"storage: cannot inspect the folders on {self.where}: {_first_line(errors)}."]
        if lines[0] != lines[1]:
            problems.append(
                f"storage: staging {self.staging} and public {self.public} are on different "
                f"filesystems on {self.where}, so publishing cannot be one rename; put them "
                "on the same one."
            )
        for line in lines[2:-1]:
            problems.append(
                f"storage: {line.removeprefix('read-only ')} is not writable by {self.user} "
                f"on {self.where}; give the user write access to it."
            )
        if self.group is not None and self.group not in lines[-1].split():
            problems.append(
                f"storage.group: {self.user} is not in group {self.group} on {self.where}, "
                f"so published files cannot be given to it; add the user to the group."
            )
        return problems

    # -- hashing ---------------------------------------------------------------------------

    def _cached(self, path: str) -> str | None:
        stamp, hit = self._stamps.get(path), self._digests.get(path)
        return hit[1] if stamp is not None and hit is not None and hit[0] == stamp else None

    def _hash(
        self, conn: _Connection, paths: Sequence[str], *, cache: bool = True
    ) -> dict[str, str]:
        """SHA-256 of server paths: cached, else hashed by the server, else downloaded."""
        result = {p: d for p in paths if cache and (d := self._cached(p)) is not None}
        todo = list(dict.fromkeys(p for p in paths if p not in result))
        if not todo:
            return result
        if self._exec_allowed(conn):
            for chunk in _chunks(todo):
                result.update(self._hash_on_server(conn, chunk))
        else:
            for path in todo:
                result[path] = self._hash_by_download(conn, path)
        return result

    def _hash_on_server(self, conn: _Connection, paths: list[str]) -> dict[str, str]:
        """``sha256sum -z`` (NUL-terminated, names unescaped) between two ``stat``s: a
        digest is cached only when the file did not change while it was read. Several files
        are hashed by parallel ``sha256sum`` processes (a release's big installers then take
        the time of the biggest, not of all), their outputs joined in order."""
        q = shlex.quote
        self.requests["hash"] += 1
        groups = [paths[i::_HASH_PROCESSES] for i in range(min(_HASH_PROCESSES, len(paths)))]
        paths = [p for group in groups for p in group]  # the order of the joined outputs
        quoted = " ".join(q(p) for p in paths)
        stamps = f"stat --printf '%s %Y\\0' -- {quoted}"
        if len(groups) == 1:
            hashing = f"sha256sum -z -- {quoted}"
        else:
            jobs = [
                f'sha256sum -z -- {" ".join(q(p) for p in g)} >"$t/{i}" & p{i}=$!'
                for i, g in enumerate(groups)
            ]
            waits = " && ".join(f"wait $p{i}" for i in range(len(groups)))
            outputs = " ".join(f'"$t/{i}"' for i in range(len(groups)))
            hashing = (
                "{ t=$(mktemp -d) || exit 1; trap 'rm -rf \"$t\"' EXIT; "
                + "; ".join(jobs)
                + f"; {waits} && cat {outputs}; }}"
            )
        status, out, err = self._exec(conn, f"{stamps} && {hashing} && {stamps}")
        records = out.split(b"\0")
        n = len(paths)
        if status != 0 or len(records) != 3 * n + 1:
            raise StorageError(f"Cannot hash on {self.where}: {_first_line(err) or 'no output'}.")
        result = {}
        for i, path in enumerate(paths):
            line = records[n + i]
            digest, name = line[:64].decode("ascii", "replace"), line[66:]
            if name != path.encode("utf-8", "surrogateescape") or not _is_hex(digest):
                raise StorageError(f"Unexpected sha256sum output on {self.where} for {path}.")
            result[path] = digest
            before, after = _stamp(records[i]), _stamp(records[2 * n + i])
            if before is not None and before == after:
                self._digests[path] = (before, digest)
        return result

    def _hash_by_download(self, conn: _Connection, path: str) -> str:
        self.requests["download"] += 1
        try:
            with conn.sftp.open(path, "rb") as f:
                before = f.stat()
                f.prefetch(before.st_size)
                h = hashlib.sha256()
                while chunk := f.read(1 << 20):
                    h.update(chunk)
                after = f.stat()
        except FileNotFoundError:
            raise StorageError(f"Cannot hash {path} on {self.where}: it is gone.") from None
        digest = h.hexdigest()
        stamp = (before.st_size or 0, before.st_mtime or 0)
        if stamp == (after.st_size or 0, after.st_mtime or 0):
            self._digests[path] = (stamp, digest)
        return digest

    def _remember(self, root: str, stamps: dict[str, Stamp]) -> None:
        """Keep the latest listing's stamps under ``root`` (and forget gone files)."""
        prefix = root + "/"
        for cache in (self._stamps, self._digests):
            for path in [p for p in cache if p.startswith(prefix) and p not in stamps]:
                del cache[path]
        self._stamps.update(stamps)

    # -- exec ------------------------------------------------------------------------------

    def _exec_allowed(self, conn: _Connection) -> bool:
        """Whether the server runs our commands (``ForceCommand internal-sftp`` does not:
        it answers every command with an SFTP server, which prints nothing here)."""
        if conn.exec_allowed is None:
            try:
                status, out, _err = self._exec(conn, _EXEC_PROBE)
                conn.exec_allowed = status == 0 and out.strip() == b"relbot-exec-ok"
            except paramiko.SSHException:
                if not conn.alive:
                    raise
                conn.exec_allowed = False
        return conn.exec_allowed

    def _exec(self, conn: _Connection, command: str) -> tuple[int, bytes, bytes]:
        """Run ``command`` on the server; returns (exit status, stdout, stderr)."""
        self.requests["exec"] += 1
        transport = conn.client.get_transport()
        if transport is None:
            raise EOFError("no transport")
        channel = transport.open_session(timeout=self.io_timeout)
        try:
            channel.settimeout(self.io_timeout)
            channel.exec_command(command)
            channel.shutdown_write()
            out = channel.makefile("rb").read()
            err = channel.makefile_stderr("rb").read()
            status = channel.recv_exit_status()
        finally:
            channel.close()
        if status == -1 and not conn.alive:
            raise EOFError("connection closed during a command")
        return status, out, err

    # -- listing ---------------------------------------------------------------------------

    def _listdir(self, conn: _Connection, folder: str) -> list[paramiko.SFTPAttributes]:
        """``listdir_attr``, except that a name which is not UTF-8 arrives with its odd bytes
        kept as surrogates (paramiko's own decoding raises on it, which stopped every scan)."""
        self.requests["listdir"] += 1
        sftp: Any = conn.sftp  # paramiko's request primitives are not typed
        attributes: Any = paramiko.SFTPAttributes
        folder = sftp._adjust_cwd(folder)
        kind, msg = sftp._request(CMD_OPENDIR, folder)
        if kind != CMD_HANDLE:
            raise paramiko.SFTPError("Expected handle")
        handle = msg.get_binary()
        found = []
        try:
            while True:
                try:
                    kind, msg = sftp._request(CMD_READDIR, handle)
                except EOFError:
                    break  # the end of the folder
                if kind != CMD_NAME:
                    raise paramiko.SFTPError("Expected name response")
                for _ in range(msg.get_int()):
                    name = msg.get_string().decode("utf-8", "surrogateescape")
                    longname = msg.get_string().decode("utf-8", "replace")
                    attr = attributes._from_msg(msg, name, longname)
                    if name not in (".", ".."):
                        found.append(attr)
        finally:
            sftp._request(CMD_CLOSE, handle)
        return found

    def _walk(self, conn: _Connection, folder: str, prefix: str) -> list[tuple[str, StagedFile]]:
        """One ``listdir_attr`` per folder; entries carry ``lstat`` attributes. A sub-folder
        that cannot be listed, an empty one and an odd name are reported as problems."""
        found = []
        for entry in sorted(self._listdir(conn, folder), key=lambda e: e.filename):
            path, mode = join(prefix, entry.filename), entry.st_mode or 0
            if (odd := odd_name(path)) is not None:
                found.append((odd.path, odd))
                continue
            if stat.S_ISDIR(mode):
                try:
                    inner = self._walk(conn, posixpath.join(folder, entry.filename), path)
                except FileNotFoundError:
                    continue  # removed since the parent was listed
                except PermissionError as err:
                    inner = [(path + "/", unreadable_folder(path + "/", _reason(err)))]
                found += inner or [(path + "/", empty_folder(path + "/"))]
                continue
            size, mtime = entry.st_size or 0, float(entry.st_mtime or 0)
            regular = stat.S_ISREG(mode)
            links = _links(getattr(entry, "longname", "")) if regular else 1
            found.append((path, StagedFile(path, size, mtime, regular, links=links)))
        return found

    def _folders(self, conn: _Connection, folder: str) -> list[str]:
        """Every folder below ``folder``."""
        found = []
        for entry in self._listdir(conn, folder):
            if stat.S_ISDIR(entry.st_mode or 0):
                inner = posixpath.join(folder, entry.filename)
                found += [inner, *self._folders(conn, inner)]
        return found

    def _stat(self, conn: _Connection, path: str) -> paramiko.SFTPAttributes | None:
        """What ``path`` points to (symlinks followed), or None when nothing is there."""
        self.requests["stat"] += 1
        try:
            return conn.sftp.stat(path)
        except FileNotFoundError:
            return None

    def _lstat(self, conn: _Connection, path: str) -> paramiko.SFTPAttributes | None:
        self.requests["stat"] += 1
        try:
            return conn.sftp.lstat(path)
        except FileNotFoundError:
            return None

    def _makedirs(self, conn: _Connection, folder: str) -> None:
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

    def _call(self, what: str, op: Callable[[_Connection], T]) -> T:
        """Run ``op`` on the shared connection, connecting first when needed.

        A connection found dead (the server restarted since the last call) is replaced
        and ``op`` run once more: every operation here is idempotent.
        """
        with self._lock:
            for attempt in (1, 2):
                fresh = self._connection is None or not self._connection.alive
                if fresh:
                    self._drop()
                    self._connection = self._connect()
                conn = self._connection
                assert conn is not None
                try:
                    return op(conn)
                except TimeoutError as err:
                    self._drop()
                    raise StagingUnreachable(
                        f"{self.where} stopped answering while trying to {what}."
                    ) from err
                except _CONNECTION_ERRORS as err:
                    if conn.alive:
                        raise StorageError(
                            f"Cannot {what} on {self.where}: {_reason(err)}."
                        ) from err
                    self._drop()
                    if fresh or attempt == 2:
                        raise StagingUnreachable(
                            f"Lost the connection to {self.where} while trying to {what}; "
                            "it is re-established on the next try."
                        ) from err
            raise AssertionError("unreachable")

    def _drop(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _connect(self) -> _Connection:
        """Connect, retrying briefly on network errors (not on refused keys), within about
        one ``connect_timeout`` in all: the caller (the scheduler) has its own backoff."""
        deadline = time.monotonic() + self.connect_timeout
        for attempt, delay in enumerate((*_RECONNECT_DELAYS, None), start=1):
            try:
                return self._open()
            except SshRefused:
                raise
            except StagingUnreachable as err:
                if delay is None or time.monotonic() + delay > deadline:
                    raise
                log.warning(
                    "storage: connecting to %s failed (attempt %d: %s); retrying in %.1f s",
                    self.where,
                    attempt,
                    err,
                    delay,
                )
                time.sleep(delay)
        raise AssertionError("unreachable")

    def _open(self) -> _Connection:
        self.requests["connect"] += 1
        keyscan = f"ssh-keyscan -p {self.port} {self.host} >> {self.known_hosts}"
        client = paramiko.SSHClient()
        try:
            client.load_host_keys(str(self.known_hosts))
        except OSError as err:
            raise SshRefused(
                f"storage.known_hosts: cannot read {self.known_hosts} ({_reason(err)}); "
                f"create it with the server's key: {keyscan} (check the fingerprint)."
            ) from err
        client.set_missing_host_key_policy(
            _RejectUnknownHost(
                f"The SSH host key of {self.where} is not in {self.known_hosts}; add it with "
                f"`{keyscan}` after checking its fingerprint with the server's admins."
            )
        )
        pkey = self._load_key()
        try:
            client.connect(
                self.host,
                self.port,
                username=self.user,
                pkey=pkey,
                timeout=self.connect_timeout,
                banner_timeout=self.connect_timeout,
                auth_timeout=self.connect_timeout,
                allow_agent=False,
                look_for_keys=False,
            )
            transport = client.get_transport()
            assert transport is not None
            transport.set_keepalive(30)
            sftp = client.open_sftp()
            channel = sftp.get_channel()
            if channel is not None:
                channel.settimeout(self.io_timeout)
        except HostKeyRejected:
            client.close()
            raise
        except paramiko.BadHostKeyException as err:
            client.close()
            raise HostKeyRejected(
                f"The SSH host key of {self.where} differs from the one in "
                f"{self.known_hosts}: someone may be intercepting the connection. If the "
                f"server's key really changed, remove the old line (ssh-keygen -R "
                f"'{self.where}' -f {self.known_hosts}) and add the new one with `{keyscan}`."
            ) from err
        except paramiko.AuthenticationException as err:
            client.close()
            raise SshRefused(
                f"{self.where} refused the key {self.key_file} for user {self.user}; add "
                f"its public key to ~{self.user}/.ssh/authorized_keys on the server."
            ) from err
        except _CONNECTION_ERRORS as err:
            client.close()
            raise StagingUnreachable(
                f"Cannot reach {self.where} ({_reason(err)}); check the host, the port and "
                "the network."
            ) from err
        return _Connection(client, sftp)

    def _load_key(self) -> paramiko.PKey:
        """The client key (Ed25519, RSA or ECDSA), decrypted with the passphrase if any."""
        password = self._passphrase or None
        last: Exception | None = None
        for kind in (paramiko.Ed25519Key, paramiko.RSAKey, paramiko.ECDSAKey):
            try:
                return kind.from_private_key_file(str(self.key_file), password=password)
            except paramiko.PasswordRequiredException as err:
                raise SshRefused(
                    f"storage.key_file: {self.key_file} is protected by a passphrase; "
                    "provide it through the configured environment variable."
                ) from err
            except OSError as err:
                raise SshRefused(
                    f"storage.key_file: cannot read {self.key_file} ({_reason(err)})."
                ) from err
            except (paramiko.SSHException, ValueError) as err:
                last = err
        raise SshRefused(
            f"storage.key_file: {self.key_file} is not an Ed25519, RSA or ECDSA private key "
            "this passphrase opens; check the file and the passphrase."
        ) from last


def _links(longname: str) -> int:
    """The hard-link count from a listing's ``ls -l`` style line (SFTP v3 attributes have
    none; OpenSSH's long name has it second). 1 when the server's line does not say."""
    fields = longname.split(maxsplit=2)
    return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else 1


class _SftpFs:
    """The freezer's primitives over one SFTP connection (hashes computed on the server)."""

    def __init__(self, storage: SftpStorage, conn: _Connection) -> None:
        self.storage = storage
        self.conn = conn

    def uid(self) -> int:
        if self.conn.uid is None:
            if self.storage._exec_allowed(self.conn):
                status, out, err = self.storage._exec(self.conn, "id -u")
                if status != 0:
                    raise StorageError(f"Cannot learn the bot's uid: {_first_line(err)}.")
                self.conn.uid = int(out.strip())
            else:  # the login folder is the user's own
                attr = self.conn.sftp.stat(self.conn.sftp.normalize("."))
                self.conn.uid = attr.st_uid or 0
        return self.conn.uid

    def lstat(self, path: str) -> Entry | None:
        attr = self.storage._lstat(self.conn, path)
        return None if attr is None else Entry(attr.st_mode or 0, attr.st_uid or 0)

    def listdir(self, path: str) -> dict[str, Entry] | None:
        try:
            entries = self.storage._listdir(self.conn, path)
        except FileNotFoundError:
            return None
        return {e.filename: Entry(e.st_mode or 0, e.st_uid or 0) for e in entries}

    def rename(self, source: str, target: str) -> None:
        self.storage.requests["rename"] += 1
        self.conn.sftp.rename(source, target)

    def link(self, source: str, target: str) -> None:
        try:
            self.storage._link(self.conn, source, target)
        except OSError:
            # The server answers an existing target with a bare "Failure": look.
            if self.conn.alive and self.lstat(target) is not None:
                raise FileExistsError(target) from None
            raise

    def rename_public(self, source: str, target: str) -> None:
        self.storage._rename(self.conn, source, target)

    def link_public(self, source: str, target: str) -> None:
        self.link(source, target)

    def move_batch(self, moves: Sequence[Move], touched: Touched) -> bool:
        if not self.storage._exec_allowed(self.conn):
            return False
        batch = [
            _FileMove(
                m.file,
                _Entry(m.source, _PRESENT if m.source_present else None),
                _Entry(m.target, _PRESENT if m.target_present else None),
            )
            for m in moves
        ]
        return self.storage._run_batch(self.conn, batch, touched)

    def finish(self, touched: Touched) -> None:
        self.storage._finish(self.conn, touched)

    def remove(self, path: str) -> None:
        self.storage.requests["remove"] += 1
        self.conn.sftp.remove(path)

    def rmdir(self, path: str) -> bool:
        try:
            self.storage.requests["rmdir"] += 1
            self.conn.sftp.rmdir(path)
        except OSError:
            if not self.conn.alive:
                raise
            return False
        return True

    def mkdir(self, path: str, mode: int) -> None:
        self.storage.requests["mkdir"] += 1
        self.conn.sftp.mkdir(path, mode)
        self.conn.sftp.chmod(path, mode)  # not narrowed by the server's umask

    def hash(self, paths: Sequence[str]) -> dict[str, str]:
        return self.storage._hash(self.conn, paths, cache=False)


def _inside(root: str, relative: str) -> str:
    """``root/relative`` on the server, refusing anything that would step outside."""
    if relative.startswith("/") or ".." in relative.split("/"):
        raise StorageError(f"{relative!r} is not a path inside {root}.")
    return posixpath.join(root, relative) if relative else root


def _move_scripts(moves: list[_FileMove]) -> list[str]:
    """``set -e`` shell scripts of no-clobber moves in plan order: the links, then the
    removal of the staged copies. One script unless the batch is too long for one command.

    ``ln`` without ``-f`` refuses an existing target. Consecutive files going to the same
    folder under their own name are linked by ONE ``ln SRC... DIR``: a process per file
    would stretch the window in which the release is partly visible to ~2 ms per file.
    """
    q = shlex.quote
    todo = [m for m in moves if m.source.present]  # the others are public already
    scripts: list[str] = []
    while todo:
        chunk: list[_FileMove] = []
        size = 0
        while todo and (not chunk or size < _MAX_COMMAND // 3):
            chunk.append(todo.pop(0))
            size += 2 * len(chunk[-1].source.path) + 2 * len(chunk[-1].target.path) + 20
        folders = dict.fromkeys(posixpath.dirname(m.target.path) for m in chunk)
        links: list[str] = []
        group: list[str] = []  # sources going to ``folder`` under their own name
        folder = ""
        for m in (m for m in chunk if not m.target.present):
            target_folder, name = posixpath.split(m.target.path)
            same_name = name == posixpath.basename(m.source.path)
            if group and (target_folder != folder or not same_name):
                links.append(f"ln -- {' '.join(group)} {q(folder)}")
                group = []
            if same_name:
                folder = target_folder
                group.append(q(m.source.path))
            else:
                links.append(f"ln -T -- {q(m.source.path)} {q(m.target.path)}")
        if group:
            links.append(f"ln -- {' '.join(group)} {q(folder)}")
        script = [
            "set -e",
            f"mkdir -p -- {' '.join(q(d) for d in folders)}",
            *links,
            f"rm -- {' '.join(q(m.source.path) for m in chunk)}",
        ]
        scripts.append("\n".join(script))
    return scripts


def _chunks(paths: list[str]) -> Iterable[list[str]]:
    """Split paths so each hashing command stays well below the argument limit."""
    chunk: list[str] = []
    size = 0
    for path in paths:
        if chunk and size + 2 * len(path) > _MAX_COMMAND // 2:
            yield chunk
            chunk, size = [], 0
        chunk.append(path)
        size += 2 * len(path) + 16
    if chunk:
        yield chunk


def _stamp(record: bytes) -> Stamp | None:
    try:
        size, mtime = record.split()
        return int(size), int(mtime)
    except ValueError:
        return None


def _is_hex(text: str) -> bool:
    return len(text) == 64 and all(c in "0123456789abcdef" for c in text)


def _first_line(data: bytes) -> str:
    lines = data.decode(errors="replace").strip().splitlines()
    return lines[0] if lines else ""


def _reason(err: BaseException) -> str:
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    return str(err) or type(err).__name__
