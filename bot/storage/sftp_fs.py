"""The filesystem interface (:class:`bot.storage.primitives.FileSystem`) over one SFTP
connection: what :class:`bot.storage.sftp.SftpStorage` runs the storage algorithms over.
Hashing, copying, identities, stamps and the batch of no-clobber moves happen on the server,
one command per batch, where the server lets the bot run commands; :class:`SftpFs` makes
that choice, and the work of each way lives with its concern: what the server's commands say
about paths (:mod:`bot.storage.remote_stat`), the copies made there
(:mod:`bot.storage.remote_copy`) or through the bot (:mod:`bot.storage.sftp_stream`), the
hashes (:mod:`bot.storage.remote_hash`), the tidy of staging
(:mod:`bot.storage.remote_tidy`), and the small files read and written whole
(:mod:`bot.storage.sftp_small`).

The round trips that tests replace to inject faults (a listing, an ``lstat``, a hard link, a
rename, the batch of moves) are callables it is given (:class:`RoundTrips`); the module's own
functions are the real ones.

Over 400 lines because every primitive of the interface is here, each with the SFTP
failures it turns into the storage's errors, and so are the real round trips tests replace
(among them a listing that keeps names that are not UTF-8, and the script of the moves).
"""

from __future__ import annotations

import logging
import posixpath
import shlex
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import paramiko
from paramiko.sftp import (
    CMD_CLOSE,
    CMD_EXTENDED,
    CMD_HANDLE,
    CMD_NAME,
    CMD_OPENDIR,
    CMD_READDIR,
)

from bot.errors import StorageError
from bot.storage import remote_stat, remote_tidy, sftp_small, sftp_stream
from bot.storage.primitives import Copied, CopyJob, Entry, Move, Stamp, Touched
from bot.storage.remote_copy import copy_on_server
from bot.storage.remote_hash import RemoteHasher
from bot.storage.ssh import MAX_COMMAND, Connection, SshLink, first_line, reason
from bot.storage.walk import Dirent, Walked, walk

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RoundTrips:
    """The SFTP round trips a storage may replace: defaults are this module's functions."""

    listdir: Callable[[Connection, str], list[paramiko.SFTPAttributes]]
    lstat: Callable[[Connection, str], paramiko.SFTPAttributes | None]
    hardlink: Callable[[Connection, str, str], None]
    rename: Callable[[Connection, str, str], None]
    replace: Callable[[Connection, str, str], None]
    run_batch: Callable[[Connection, list[Move]], bool]


class SftpFs:
    """The filesystem interface over one SFTP connection; ``group``: the group published
    files get (needs exec). Each primitive with its SFTP error handling, and the choice,
    where it matters, between the server's own commands and SFTP alone (see the module)."""

    def __init__(
        self,
        ssh: SshLink,
        conn: Connection,
        hasher: RemoteHasher,
        trips: RoundTrips,
        group: str | None = None,
    ) -> None:
        self.ssh = ssh
        self.conn = conn
        self.hasher = hasher
        self.trips = trips
        self.group = group
        self.where = ssh.where
        self.requests = ssh.requests

    @property
    def _exec(self) -> bool:
        return self.ssh.exec_allowed(self.conn)

    @property
    def runs_commands(self) -> bool:
        """Whether the server runs the bot's commands (else SFTP alone)."""
        return self._exec

    def uid(self) -> int:
        if self.conn.uid is None:
            if self._exec:
                self.conn.uid = remote_stat.login_uid(self.ssh, self.conn)
            else:  # the login folder is the user's own
                attr = self.conn.sftp.stat(self.conn.sftp.normalize("."))
                self.conn.uid = attr.st_uid or 0
        return self.conn.uid

    def lstat(self, path: str) -> Entry | None:
        attr = self.trips.lstat(self.conn, path)
        return None if attr is None else _entry(attr)

    def stat(self, path: str) -> paramiko.SFTPAttributes | None:
        """What ``path`` points to (symlinks followed), or None when nothing is there: not
        a primitive of the interface, the storage check's look at the configured roots."""
        self.requests["stat"] += 1
        try:
            return self.conn.sftp.stat(path)
        except FileNotFoundError:
            return None

    def listdir(self, path: str) -> dict[str, Entry] | None:
        try:
            entries = self.trips.listdir(self.conn, path)
        except FileNotFoundError:
            return None
        return {e.filename: _entry(e) for e in entries}

    def identities(self, paths: Sequence[str]) -> dict[str, Entry | None]:
        if not paths:
            return {}
        if not self._exec:  # SFTP's attributes: no inode
            return {path: self.lstat(path) for path in paths}
        return remote_stat.identities(self.ssh, self.conn, paths)

    def stamps(self, paths: Sequence[str]) -> dict[str, Stamp | None]:
        if not paths:
            return {}
        if not self._exec:  # no inode, no ctime: only a hash can tell a rewrite
            return {path: _stamp(self.trips.lstat(self.conn, path)) for path in paths}
        return remote_stat.stamps(self.ssh, self.conn, paths)

    def rename(self, source: str, target: str) -> None:
        self.requests["rename"] += 1
        self.conn.sftp.rename(source, target)

    def replace(self, source: str, target: str) -> None:
        """``rename(2)``: ``target`` is replaced in one step (readers see old or new)."""
        self.requests["rename"] += 1
        self.conn.sftp.posix_rename(source, target)

    def link(self, source: str, target: str) -> None:
        """A second name; ``FileExistsError`` when ``target`` exists (never replaced)."""
        try:
            self.trips.hardlink(self.conn, source, target)
        except OSError:
            # The server answers an existing target with a bare "Failure": look.
            if self.conn.alive and self.lstat(target) is not None:
                raise FileExistsError(target) from None
            raise

    def rename_public(self, source: str, target: str) -> None:
        self.trips.rename(self.conn, source, target)

    def link_public(self, source: str, target: str) -> None:
        self.link(source, target)

    def replace_public(self, source: str, target: str) -> None:
        self.trips.replace(self.conn, source, target)

    def move_batch(self, moves: Sequence[Move]) -> bool:
        if not self._exec:
            return False
        return self.trips.run_batch(self.conn, list(moves))

    def finish(self, touched: Touched) -> None:
        """After the moves, in one command: flush the public folders' new entries and give
        them the configured group. Failures are logged, not raised: the files are public."""
        if not self._exec:
            return  # SFTP knows no group names: the group needs exec
        q = shlex.quote
        commands = []
        folders = {posixpath.dirname(p) for p in [*touched.trees, *touched.files]}
        if folders:
            commands.append(f"sync -- {' '.join(q(f) for f in sorted(folders))}")
        if self.group is not None:
            commands += _group_commands(touched, self.group)
        if not commands:
            return
        status, _out, err = self.ssh.exec(
            self.conn, "s=0; " + "".join(f"{c} || s=1; " for c in commands) + "exit $s"
        )
        if status != 0:
            log.warning("Finishing the publication on %s: %s", self.where, first_line(err))

    def walk(self, folder: str, prefix: str) -> Walked:
        """One ``listdir_attr`` per folder (bot/storage/walk.py: no recursion, a depth and
        an entry budget); entries carry ``lstat`` attributes. A sub-folder that cannot be
        listed, an empty one and an odd name are reported as problems."""

        def listdir(where: str, limit: int) -> list[Dirent]:
            return [
                Dirent(
                    e.filename,
                    e.st_mode or 0,
                    e.st_size or 0,
                    float(e.st_mtime or 0),
                    _links(getattr(e, "longname", "")),
                )
                for e in self.trips.listdir(self.conn, where)[:limit]
            ]

        return walk(listdir, folder, prefix, unreadable=(PermissionError,), reason=reason)

    def remove(self, path: str) -> None:
        self.requests["remove"] += 1
        self.conn.sftp.remove(path)

    def remove_tree(self, path: str) -> None:
        entries = self.listdir(path)
        if entries is None:
            return
        if self._exec:
            status, _out, err = self.ssh.exec(self.conn, f"rm -rf -- {shlex.quote(path)}")
            if status != 0:
                raise StorageError(f"Cannot remove {path} on {self.where}: {first_line(err)}.")
            return
        for name, entry in entries.items():
            inner = posixpath.join(path, name)
            if entry.is_dir:
                self.remove_tree(inner)
            else:
                self.remove(inner)
        self.rmdir(path)

    def rmdir(self, path: str) -> None:
        try:
            self.requests["rmdir"] += 1
            self.conn.sftp.rmdir(path)
        except OSError:
            if not self.conn.alive:
                raise

    def mkdir(self, path: str, mode: int) -> None:
        self.requests["mkdir"] += 1
        self.conn.sftp.mkdir(path, mode)
        self.conn.sftp.chmod(path, mode)  # not narrowed by the server's umask

    def hash(self, paths: Sequence[str]) -> dict[str, str]:
        return self.hasher.hash(self.conn, paths)  # afresh, where they are now

    def copy(self, jobs: Sequence[CopyJob]) -> list[Copied]:
        if not self._exec:  # the bytes come through the bot
            return sftp_stream.copy(self.ssh, self.conn, self.trips.lstat, jobs)
        return copy_on_server(self.ssh, self.conn, jobs)

    def folder_ids(self, root: str, folders: Sequence[str]) -> dict[str, str]:
        if not self._exec or not folders:
            return {}  # the tidy then leaves staging as it is
        return remote_tidy.folder_ids(self.ssh, self.conn, root, folders)

    def remove_staged(
        self, root: str, files: Mapping[str, Stamp], folders: Mapping[str, str]
    ) -> dict[str, str]:
        if not self._exec:
            raise StorageError(
                f"{self.where} runs no commands for the bot, and SFTP alone cannot remove a "
                "file without following the links of its path"
            )
        if not files:
            return {}
        return remote_tidy.remove_staged(self.ssh, self.conn, root, files, folders)

    def read_small(self, path: str, limit: int) -> bytes | None:
        return sftp_small.read(self.ssh, self.conn, self.trips.lstat, path, limit)

    def write_small(self, path: str, data: bytes) -> None:
        sftp_small.write(self.ssh, self.conn, path, data)

    def create_small(self, path: str, data: bytes) -> bool:
        return sftp_small.create(self.ssh, self.conn, path, data)

    def pin(self, path: str) -> bool | None:
        return None  # SFTP has no locks

    def unpin(self, path: str) -> None:
        return None


def _entry(attr: paramiko.SFTPAttributes) -> Entry:
    return Entry(attr.st_mode or 0, attr.st_uid or 0, attr.st_size or 0)


def _stamp(attr: paramiko.SFTPAttributes | None) -> Stamp | None:
    """A regular file's stamp from SFTP's attributes (whole seconds), else None."""
    regular = attr is not None and stat.S_ISREG(attr.st_mode or 0)
    return (
        Stamp(None, attr.st_size or 0, int(attr.st_mtime or 0) * 10**9, None)
        if attr is not None and regular
        else None
    )


def listdir(link: SshLink, conn: Connection, folder: str) -> list[paramiko.SFTPAttributes]:
    """One listing (see :func:`read_folder`)."""
    link.requests["listdir"] += 1
    return read_folder(conn.sftp, folder)


def lstat(link: SshLink, conn: Connection, path: str) -> paramiko.SFTPAttributes | None:
    """``path`` as ``lstat`` sees it, or None when nothing is there."""
    link.requests["stat"] += 1
    try:
        return conn.sftp.lstat(path)
    except FileNotFoundError:
        return None


def hardlink(link: SshLink, conn: Connection, source: str, target: str) -> None:
    """``link(2)`` on the server: it refuses an existing target, a race-free no-clobber."""
    link.requests["hardlink"] += 1
    sftp: Any = conn.sftp  # paramiko has no public call for this OpenSSH extension
    sftp._request(CMD_EXTENDED, "hardlink@openssh.com", source, target)


def rename(link: SshLink, conn: Connection, source: str, target: str) -> None:
    """SFTP's rename: OpenSSH renames only onto a missing target (no clobbering)."""
    link.requests["rename"] += 1
    conn.sftp.rename(source, target)


def replace(link: SshLink, conn: Connection, source: str, target: str) -> None:
    """``posix-rename``: ``rename(2)`` on the server, over an existing target."""
    link.requests["rename"] += 1
    conn.sftp.posix_rename(source, target)


def run_moves(link: SshLink, conn: Connection, moves: list[Move]) -> bool:
    """No-clobber moves of single files in one shell command per batch: every link in
    plan order, then the removal of the frozen copies. False when a batch stopped
    half-way (a target appeared meanwhile): the promoter then looks at each file again
    and finishes whatever the batch left."""
    for script in _move_scripts(moves):
        status, _out, err = link.exec(conn, script)
        if status != 0:
            log.warning(
                "Batch move on %s stopped (%s); finishing file by file.",
                link.where,
                first_line(err),
            )
            return False
    return True


def _move_scripts(moves: list[Move]) -> list[str]:
    """``set -e`` shell scripts of no-clobber moves in plan order: the links, then the
    removal of the staged copies. One script unless the batch is too long for one command.

    ``ln`` without ``-f`` refuses an existing target. Consecutive files going to the same
    folder under their own name are linked by ONE ``ln SRC... DIR``: a process per file
    would stretch the window in which the release is partly visible to ~2 ms per file.
    """
    q = shlex.quote
    todo = list(moves)
    scripts: list[str] = []
    while todo:
        chunk: list[Move] = []
        size = 0
        while todo and (not chunk or size < MAX_COMMAND // 3):
            chunk.append(todo.pop(0))
            size += 2 * len(chunk[-1].source) + 2 * len(chunk[-1].target) + 20
        folders = dict.fromkeys(posixpath.dirname(m.target) for m in chunk)
        links: list[str] = []
        group: list[str] = []  # sources going to ``folder`` under their own name
        folder = ""
        for m in chunk:
            target_folder, name = posixpath.split(m.target)
            same_name = name == posixpath.basename(m.source)
            if group and (target_folder != folder or not same_name):
                links.append(f"ln -- {' '.join(group)} {q(folder)}")
                group = []
            if same_name:
                folder = target_folder
                group.append(q(m.source))
            else:
                links.append(f"ln -T -- {q(m.source)} {q(m.target)}")
        if group:
            links.append(f"ln -- {' '.join(group)} {q(folder)}")
        script = [
            "set -e",
            f"mkdir -p -- {' '.join(q(d) for d in folders)}",
            *links,
            f"rm -- {' '.join(q(m.source) for m in chunk)}",
        ]
        scripts.append("\n".join(script))
    return scripts


def _group_commands(touched: Touched, group: str) -> list[str]:
    """Group ``group`` on what this publish made public (the folders it renamed, the files it
    linked), where it is not already. Modes stay the bot's (0444 files, 0755 folders): the
    group may read, never write, a published byte. Folders the publish only added to are
    left as they are (another RM may own them)."""
    paths = [*touched.trees, *touched.files]
    if not paths:
        return []
    g = shlex.quote(group)
    start = " ".join(shlex.quote(p) for p in paths)  # absolute: never options
    return [f"find {start} ! -group {g} -exec chgrp -h {g} {{}} +"]


def read_folder(client: paramiko.SFTPClient, folder: str) -> list[paramiko.SFTPAttributes]:
    """``listdir_attr``, except that a name which is not UTF-8 arrives with its odd bytes
    kept as surrogates (paramiko's own decoding raises on it, which stopped every scan)."""
    sftp: Any = client  # paramiko's request primitives are not typed
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


def _links(longname: str) -> int:
    """The hard-link count from a listing's ``ls -l`` style line (SFTP v3 attributes have
    none; OpenSSH's long name has it second). 1 when the server's line does not say."""
    fields = longname.split(maxsplit=2)
    return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else 1
