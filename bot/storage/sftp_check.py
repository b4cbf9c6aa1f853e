"""The storage check over SFTP: whether the configured server and folders can work, each
problem a sentence that says the fix (connection, folders, the bot's work folder out of
uploaders' reach and on public's filesystem, exec allowed, write access, the group)."""

from __future__ import annotations

import posixpath
import shlex
import stat
from pathlib import PurePosixPath

from bot.domain.folders import folders_overlap, overlap_message
from bot.storage.primitives import Places
from bot.storage.sftp_fs import SftpFs
from bot.storage.ssh import first_line, reason
from bot.storage.workarea import not_on_public_filesystem, work_problems


def overlap_on_server(fs: SftpFs, places: Places) -> str | None:
    """The sentence saying the server resolves staging and public to one folder (or one
    inside the other), links resolved, or None; None too while either folder is missing."""
    try:
        real = [fs.conn.sftp.normalize(folder) for folder in (places.staging, places.public)]
    except FileNotFoundError:
        return None
    if folders_overlap(PurePosixPath(real[0]), PurePosixPath(real[1])):
        return f"storage on {fs.where}: {overlap_message(real[0], real[1])}"
    return None


def check_server(fs: SftpFs, places: Places, user: str, group: str | None) -> list[str]:
    """Problems that would stop the bot from working, each a sentence with the fix."""
    conn, where = fs.conn, fs.where
    problems = []
    for name, folder in (("staging", places.staging), ("public", places.public)):
        # Never created here: a mistyped path must not become a folder nobody uploads to.
        try:
            attr = fs.stat(folder)  # a symlinked root is fine; overlap is not
        except OSError as err:
            if not conn.alive:
                raise
            problems.append(f"storage.{name}: cannot read {folder} on {where} ({reason(err)}).")
            continue
        if attr is None:
            problems.append(
                f"storage.{name}: {folder} does not exist on {where}; create it there "
                f"(mkdir -p {shlex.quote(folder)}) or fix the path."
            )
        elif not stat.S_ISDIR(attr.st_mode or 0):
            problems.append(f"storage.{name}: {folder} on {where} is not a folder.")
    if not problems and (overlap := overlap_on_server(fs, places)):
        return [overlap]
    if problems:
        return problems
    problems += work_problems(fs, places)
    if not fs.ssh.exec_allowed(conn):
        lost = (
            "SHA-256 digests fall back to downloading each file, the bot's copies of a "
            "release go through this machine, files move one at a time and the group "
            "cannot be set"
        )
        if conn.exec_noise:
            problems.append(
                f"storage: {where} prints {conn.exec_noise!r} with the output of every "
                f"command {user} runs, so the bot cannot read what its commands answer and "
                f"uses none: {lost}; remove that greeting (a login script's echo, a "
                "ForceCommand wrapper's banner) so hashing, copies and moves happen on the "
                "server."
            )
        else:
            problems.append(
                f"storage: {where} does not let {user} run commands (exec), so {lost}; "
                "allow exec for this user (no ForceCommand internal-sftp) so hashing, "
                "copies and moves happen on the server."
            )
        return problems
    work = places.work if fs.lstat(places.work) is not None else posixpath.dirname(places.work)
    folders = f"{shlex.quote(places.staging)} {shlex.quote(places.public)}"
    status, out, errors = fs.ssh.exec(
        conn,
        f"stat -c %d -- {shlex.quote(places.public)} {shlex.quote(work)} && for d in {folders}; do "
        '[ -w "$d" ] && [ -x "$d" ] || echo "read-only $d"; done; id -Gn',
    )
    lines = out.decode(errors="replace").splitlines()
    if status != 0 or len(lines) < 3:
        return [*problems, f"storage: cannot inspect the folders on {where}: {first_line(errors)}."]
    if lines[0] != lines[1] and not problems:
        problems.append(not_on_public_filesystem(places, where))
    for line in lines[2:-1]:
        problems.append(
            f"storage: {line.removeprefix('read-only ')} is not writable by {user} "
            f"on {where}; give the user write access to it."
        )
    if group is not None and group not in lines[-1].split():
        problems.append(
            f"storage.group: {user} is not in group {group} on {where}, "
            f"so published files cannot be given to it; add the user to the group."
        )
    return problems
