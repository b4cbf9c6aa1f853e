"""The freezer's and the promoter's primitives over one SFTP connection, the shell batch
of no-clobber moves, the listing walk and the permissions fixed after a publication.

The round trips tests override to inject faults (``_listdir``, ``_lstat``, ``_link``,
``_rename``, ``_run_batch``) stay on :class:`bot.storage.sftp.SftpStorage`, and the
primitives here call them there.
"""

from __future__ import annotations

import logging
import posixpath
import shlex
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import paramiko
from paramiko.sftp import CMD_CLOSE, CMD_HANDLE, CMD_NAME, CMD_OPENDIR, CMD_READDIR

from bot.domain.files import StagedFile
from bot.domain.plan import PlanFile
from bot.errors import StorageError
from bot.storage.listing import empty_folder, odd_name, unreadable_folder
from bot.storage.primitives import Entry
from bot.storage.promotion import Move, Touched, join
from bot.storage.ssh import MAX_COMMAND, Connection, SshLink, first_line, reason

if TYPE_CHECKING:
    from bot.storage.sftp import SftpStorage

log = logging.getLogger(__name__)

_PRESENT = paramiko.SFTPAttributes()  # "there" for a batch move (only presence matters)


@dataclass
class RemoteEntry:
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
class FileMove:
    """One file of a per-file batch, with what the conflict check saw."""

    file: PlanFile
    source: RemoteEntry
    target: RemoteEntry


class SftpFs:
    """The freezer's primitives over one SFTP connection (hashes computed on the server)."""

    def __init__(self, storage: SftpStorage, conn: Connection) -> None:
        self.storage = storage
        self.conn = conn

    def uid(self) -> int:
        if self.conn.uid is None:
            if self.storage._ssh.exec_allowed(self.conn):
                status, out, err = self.storage._ssh.exec(self.conn, "id -u")
                if status != 0:
                    raise StorageError(f"Cannot learn the bot's uid: {first_line(err)}.")
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
        if not self.storage._ssh.exec_allowed(self.conn):
            return False
        batch = [
            FileMove(
                m.file,
                RemoteEntry(m.source, _PRESENT if m.source_present else None),
                RemoteEntry(m.target, _PRESENT if m.target_present else None),
            )
            for m in moves
        ]
        return self.storage._run_batch(self.conn, batch, touched)

    def finish(self, touched: Touched) -> None:
        """After the moves, in one command: flush the public folders' new entries and fix
        permissions. Failures are logged, not raised: the files are public by now."""
        if not self.storage._ssh.exec_allowed(self.conn):
            if self.storage.group is not None:
                self._fix_modes_by_sftp(touched)
            return
        q = shlex.quote
        commands = []
        folders = {posixpath.dirname(p) for p in [*touched.trees, *touched.files]}
        if folders:
            commands.append(f"sync -- {' '.join(q(f) for f in sorted(folders))}")
        if self.storage.group is not None:
            commands += _permission_commands(touched, self.storage.group)
        if not commands:
            return
        status, _out, err = self.storage._ssh.exec(
            self.conn, "s=0; " + "".join(f"{c} || s=1; " for c in commands) + "exit $s"
        )
        if status != 0:
            log.warning("Finishing the publication on %s: %s", self.storage.where, first_line(err))

    def _fix_modes_by_sftp(self, touched: Touched) -> None:
        """Without exec only modes can be fixed (SFTP knows no group names)."""
        paths = [*touched.files, *sorted(touched.folders)]
        for tree in touched.trees:
            paths += [tree, *self.folders(tree)]
            paths += [inside(tree, p) for p, f in self.walk(tree, "") if f.regular]
        for path in paths:
            attr = self.storage._lstat(self.conn, path)
            if attr is None or attr.st_mode is None:
                continue
            kind = stat.S_IFMT(attr.st_mode)
            want = 0o775 if kind == stat.S_IFDIR else 0o664
            if kind in (stat.S_IFDIR, stat.S_IFREG) and stat.S_IMODE(attr.st_mode) & 0o777 != want:
                try:
                    self.storage.requests["chmod"] += 1
                    self.conn.sftp.chmod(path, (stat.S_IMODE(attr.st_mode) & 0o7000) | want)
                except OSError as err:
                    if not self.conn.alive:
                        raise
                    log.warning("Could not chmod %s on %s: %s", path, self.storage.where, err)

    def walk(self, folder: str, prefix: str) -> list[tuple[str, StagedFile]]:
        """One ``listdir_attr`` per folder; entries carry ``lstat`` attributes. A sub-folder
        that cannot be listed, an empty one and an odd name are reported as problems."""
        found = []
        for entry in sorted(self.storage._listdir(self.conn, folder), key=lambda e: e.filename):
            path, mode = join(prefix, entry.filename), entry.st_mode or 0
            if (odd := odd_name(path)) is not None:
                found.append((odd.path, odd))
                continue
            if stat.S_ISDIR(mode):
                try:
                    inner = self.walk(posixpath.join(folder, entry.filename), path)
                except FileNotFoundError:
                    continue  # removed since the parent was listed
                except PermissionError as err:
                    inner = [(path + "/", unreadable_folder(path + "/", reason(err)))]
                found += inner or [(path + "/", empty_folder(path + "/"))]
                continue
            size, mtime = entry.st_size or 0, float(entry.st_mtime or 0)
            regular = stat.S_ISREG(mode)
            links = _links(getattr(entry, "longname", "")) if regular else 1
            found.append((path, StagedFile(path, size, mtime, regular, links=links)))
        return found

    def folders(self, folder: str) -> list[str]:
        """Every folder below ``folder``."""
        found = []
        for entry in self.storage._listdir(self.conn, folder):
            if stat.S_ISDIR(entry.st_mode or 0):
                inner = posixpath.join(folder, entry.filename)
                found += [inner, *self.folders(inner)]
        return found

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
        return self.storage._hasher.hash(self.conn, paths, cache=False)


def run_moves(link: SshLink, conn: Connection, moves: list[FileMove]) -> bool:
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


def _move_scripts(moves: list[FileMove]) -> list[str]:
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
        chunk: list[FileMove] = []
        size = 0
        while todo and (not chunk or size < MAX_COMMAND // 3):
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


def _permission_commands(touched: Touched, group: str) -> list[str]:
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


def inside(root: str, relative: str) -> str:
    """``root/relative`` on the server, refusing anything that would step outside."""
    if relative.startswith("/") or ".." in relative.split("/"):
        raise StorageError(f"{relative!r} is not a path inside {root}.")
    return posixpath.join(root, relative) if relative else root
