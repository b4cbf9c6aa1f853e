"""The bot's copies of staged files on a server that runs no commands for it (``ForceCommand
internal-sftp``): the bytes come through the bot and go back, hashed as they are written
(slow, but the copy is still the bot's and its hash is of what it wrote). Where the server
runs commands, the copies are made there (:mod:`bot.storage.remote_copy`).

Like the copy on the server, a file is read only if it is the regular file the ``lstat``
before saw, and a copy gets its name only when its bytes are the confirmed ones.
"""

from __future__ import annotations

import hashlib
import stat
from collections.abc import Callable, Sequence

import paramiko

from bot.storage.primitives import FILE_MODE, Copied, CopyJob, Stamp
from bot.storage.ssh import Connection, SshLink

Lstat = Callable[[Connection, str], paramiko.SFTPAttributes | None]


def copy(link: SshLink, conn: Connection, lstat: Lstat, jobs: Sequence[CopyJob]) -> list[Copied]:
    """One :class:`Copied` per job; ``lstat``: the storage's round trip (see
    :class:`bot.storage.sftp_fs.RoundTrips`)."""
    # The copies are written through an SFTP session of their own: on the session that
    # reads, paramiko's read-ahead thread raced the writes' replies and the server dropped
    # the connection now and then (4 runs in 25 of a 4 MiB copy).
    with conn.client.open_sftp() as writer:
        return [_stream(link, conn, lstat, job, writer) for job in jobs]


def _stream(
    link: SshLink, conn: Connection, lstat: Lstat, job: CopyJob, writer: paramiko.SFTPClient
) -> Copied:
    """One job: read on ``conn``'s session, written on ``writer`` under ``.part``, renamed
    into place once its digest is the confirmed one."""
    sftp = conn.sftp
    before = lstat(conn, job.source)
    if before is None:
        return Copied("is missing")
    if not stat.S_ISREG(before.st_mode or 0):
        return Copied("is not a regular file")
    part = f"{job.target}.part"
    h = hashlib.sha256()
    link.requests["download"] += 1
    try:
        with sftp.open(job.source, "rb") as src:
            opened = src.stat()
            if not stat.S_ISREG(opened.st_mode or 0) or opened.st_uid != before.st_uid:
                return Copied("is not a regular file")  # swapped since the lstat
            with writer.open(part, "wb") as out:  # only now: nothing is left if swapped
                src.prefetch(opened.st_size)
                while chunk := src.read(1 << 20):
                    h.update(chunk)
                    out.write(chunk)
        sftp.chmod(part, FILE_MODE)
    except FileNotFoundError:
        return Copied("is missing")
    digest = h.hexdigest()
    if digest != job.sha256:
        sftp.remove(part)
        return Copied("changed", digest)
    sftp.posix_rename(part, job.target)
    size, mtime = before.st_size or 0, int(before.st_mtime or 0) * 10**9
    return Copied("", digest, Stamp(None, size, mtime, None))
