"""The storage check over SFTP: whether the configured server and folders can work, each
problem a sentence that says the fix (connection, folders, the bot's work folder out of
uploaders' reach and on public's filesystem, exec allowed, write access, the group)."""

from __future__ import annotations

import posixpath
import shlex
import stat
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from bot.storage.overlap import folders_overlap, overlap_message
from bot.storage.sftp_fs import SftpFs
from bot.storage.ssh import Connection, first_line, reason
from bot.storage.workarea import not_on_public_filesystem, work_problems

if TYPE_CHECKING:
    from bot.storage.sftp import SftpStorage


def check_server(storage: SftpStorage, conn: Connection) -> list[str]:
    """Problems that would stop the bot from working, each a sentence with the fix."""
    s = storage
    problems = []
    for name, folder in (("staging", s.staging), ("public", s.public)):
        # Never created here: a mistyped path must not become a folder nobody uploads to.
        try:
            attr = s._stat(conn, folder)  # a symlinked root is fine; overlap is not
        except OSError as err:
            if not conn.alive:
                raise
            problems.append(f"storage.{name}: cannot read {folder} on {s.where} ({reason(err)}).")
            continue
        if attr is None:
            problems.append(
                f"storage.{name}: {folder} does not exist on {s.where}; create it there "
                f"(mkdir -p {shlex.quote(folder)}) or fix the path."
            )
        elif not stat.S_ISDIR(attr.st_mode or 0):
            problems.append(f"storage.{name}: {folder} on {s.where} is not a folder.")
    if not problems:  # where the server says the folders really are (symlinks resolved)
        real = [conn.sftp.normalize(folder) for folder in (s.staging, s.public)]
        if folders_overlap(PurePosixPath(real[0]), PurePosixPath(real[1])):
            return [f"storage on {s.where}: {overlap_message(real[0], real[1])}"]
    if problems:
        return problems
    fs = SftpFs(s, conn)
    problems += work_problems(fs, s._places)
    if not s._ssh.exec_allowed(conn):
        problems.append(
            f"storage: {s.where} does not let {s.user} run commands (exec), so "
            "SHA-256 digests fall back to downloading each file, the bot's copies of a "
            "release go through this machine, files move one at a time and the group "
            "cannot be set; allow exec for this user (no ForceCommand internal-sftp) so "
            "hashing, copies and moves happen on the server."
        )
        return problems
    work = s.work if fs.lstat(s.work) is not None else posixpath.dirname(s.work)
    folders = f"{shlex.quote(s.staging)} {shlex.quote(s.public)}"
    status, out, errors = s._ssh.exec(
        conn,
        f"stat -c %d -- {shlex.quote(s.public)} {shlex.quote(work)} && for d in {folders}; do "
        '[ -w "$d" ] && [ -x "$d" ] || echo "read-only $d"; done; id -Gn',
    )
    lines = out.decode(errors="replace").splitlines()
    if status != 0 or len(lines) < 3:
        return [f"storage: cannot inspect the folders on {s.where}: {first_line(errors)}."]
    if lines[0] != lines[1] and not problems:
        problems.append(f"{not_on_public_filesystem(s._places)[:-1]} (on {s.where}).")
    for line in lines[2:-1]:
        problems.append(
            f"storage: {line.removeprefix('read-only ')} is not writable by {s.user} "
            f"on {s.where}; give the user write access to it."
        )
    if s.group is not None and s.group not in lines[-1].split():
        problems.append(
            f"storage.group: {s.user} is not in group {s.group} on {s.where}, "
            f"so published files cannot be given to it; add the user to the group."
        )
    return problems
