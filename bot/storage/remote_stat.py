"""What the server's own commands say about its files and the bot's login, where it lets the
bot run commands: the identities of paths with their inodes (``stat``), the stamps that tell
a rewrite (inode, size, mtime and ctime in nanoseconds) and the bot's uid (``id -u``). One
command per batch of paths. SFTP's attributes carry no inode and no ctime: without commands
:class:`bot.storage.sftp_fs.SftpFs` answers from them instead.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from bot.errors import StorageError
from bot.storage.primitives import Entry, Stamp
from bot.storage.remote_copy import parse_stamp, stamp_command
from bot.storage.remote_hash import chunks
from bot.storage.ssh import Connection, SshLink, first_line


def login_uid(link: SshLink, conn: Connection) -> int:
    """The uid the bot logs in as."""
    status, out, err = link.exec(conn, "id -u")
    if status != 0:
        raise StorageError(f"Cannot learn the bot's uid: {first_line(err)}.")
    return int(out.strip())


def identities(link: SshLink, conn: Connection, paths: Sequence[str]) -> dict[str, Entry | None]:
    """See :meth:`bot.storage.primitives.FileSystem.identities`: one ``stat`` per batch."""
    found: dict[str, Entry | None] = dict.fromkeys(paths)
    for chunk in chunks(list(paths)):
        # One stat for the whole chunk: a record per path that exists, named, so an
        # absent path is simply not there (stat says so on stderr, exit status 1).
        quoted = " ".join(shlex.quote(p) for p in chunk)
        status, out, err = link.exec(
            conn, f"LC_ALL=C stat --printf '%f %u %s %i %n\\0' -- {quoted}"
        )
        for record in out.split(b"\0")[:-1]:
            mode, uid, size, ino, name = record.decode(errors="surrogateescape").split(" ", 4)
            found[name] = Entry(int(mode, 16), int(uid), int(size), int(ino))
        absent = sum(entry is None for p, entry in found.items() if p in chunk)
        if status != 0 and err.count(b"No such file or directory") < absent:
            why = first_line(err) or "no output"
            raise StorageError(f"Cannot look at files on {link.where}: {why}.")
    return found


def stamps(link: SshLink, conn: Connection, paths: Sequence[str]) -> dict[str, Stamp | None]:
    """See :meth:`bot.storage.primitives.FileSystem.stamps`: one command per batch."""
    found: dict[str, Stamp | None] = {}
    for path, line in zip(paths, _lines(link, conn, paths, stamp_command()), strict=True):
        found[path] = parse_stamp(line)
    return found


def _lines(link: SshLink, conn: Connection, paths: Sequence[str], command: str) -> list[str]:
    """One line of ``command`` (shell, the path in ``$p``) per path, in one command on the
    server per batch."""
    lines: list[str] = []
    for chunk in chunks(list(paths)):
        quoted = " ".join(shlex.quote(p) for p in chunk)
        status, out, err = link.exec(
            conn, f"export LC_ALL=C; for p in {quoted}; do {command}; done"
        )
        got = out.decode(errors="replace").splitlines()
        if status != 0 or len(got) != len(chunk):
            raise StorageError(
                f"Cannot look at files on {link.where}: {first_line(err) or 'unexpected output'}."
            )
        lines += got
    return lines
