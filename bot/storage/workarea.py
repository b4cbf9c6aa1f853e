"""The bot's work folder (``[storage] work``): where the copies made at the confirmation wait
(``frozen/``), where the files that replace live ones wait (``aside/``), and the storage
lock. It must be out of uploaders' reach: a folder of the bot's own, mode 0700, in a parent
that only the bot can write (or a sticky one), on public's filesystem so that promotion is
one rename.

Every area is checked before each use: a real folder (``lstat``: a symlink is refused),
owned by the bot, mode 0700, and the same folder (inode) as when this process first saw it.
A folder that fails is never used, never "repaired": the publish stops and says so.
"""

from __future__ import annotations

import posixpath
import stat

from bot.errors import PublishStopped, StorageError
from bot.storage.primitives import WORK_MODE, Entry, FileSystem, Places


class WorkAreaUntrusted(PublishStopped):
    """The work folder or one of its areas is missing, replaced, or not the bot's."""


def check_work(fs: FileSystem, places: Places, *, create: bool) -> None:
    """Make sure the work folder and its areas are the bot's, creating those missing when
    ``create`` (the work folder's parent must exist). Raises :class:`WorkAreaUntrusted`
    naming what is wrong, :class:`StorageError` when a folder cannot be made."""
    for path in (places.work, places.frozen_area, places.aside_area):
        _check(fs, places, path, create=create)


def check_area(fs: FileSystem, places: Places, path: str) -> None:
    """The work folder, then ``path`` (one of its areas), checked; nothing is created."""
    _check(fs, places, places.work, create=False)
    if path != places.work:
        _check(fs, places, path, create=False)


def _check(fs: FileSystem, places: Places, path: str, *, create: bool) -> None:
    entry = fs.lstat(path)
    if entry is None and create:
        try:
            fs.mkdir(path, WORK_MODE)
        except FileExistsError:
            pass  # made meanwhile: judged below like any other
        except FileNotFoundError as err:
            raise StorageError(
                f"storage.work: cannot create {path}: {posixpath.dirname(path)} does not "
                "exist; create it or set [storage] work to a folder that can be made."
            ) from err
        entry = fs.lstat(path)
        if entry is not None and entry.ino is not None:
            places.seen[path] = entry.ino  # made by the bot just now
    if entry is None:
        raise WorkAreaUntrusted(
            f"The bot's work folder {path} is gone (moved or removed since the bot made it)."
        )
    problems = area_problems(entry, fs.uid())
    known = places.seen.get(path)
    if not problems and known is not None and entry.ino is not None and entry.ino != known:
        problems.append("it is not the folder the bot made: it was replaced since")
    if problems:
        raise WorkAreaUntrusted(
            f"The bot's work folder {path} cannot be trusted ({'; '.join(problems)}): "
            "someone who can write its parent folder must have replaced it; check it "
            "before removing it."
        )
    if entry.ino is not None:
        places.seen.setdefault(path, entry.ino)


def area_problems(entry: Entry, uid: int) -> list[str]:
    """Why ``entry`` is not an area of the bot's own (empty when it is)."""
    problems = []
    if not entry.is_dir:
        problems.append("it is not a real folder")
    if entry.uid != uid:
        problems.append(f"it is owned by uid {entry.uid}, not by the bot (uid {uid})")
    if entry.permissions != WORK_MODE:
        problems.append(f"its mode is {entry.permissions:o}, not 700")
    return problems


def work_problems(fs: FileSystem, places: Places) -> list[str]:
    """For ``relbot check``: what to change so that the work folder is the bot's and out of
    uploaders' reach (each a sentence with the fix). The work folder is not created here."""
    work, parent = places.work, posixpath.dirname(places.work)
    uid = fs.uid()
    entry = fs.lstat(work)
    if entry is not None and (problems := area_problems(entry, uid)):
        return [
            f"storage.work: {work} is not the bot's own folder ({'; '.join(problems)}); "
            f"move it away and check what is in it (the bot makes its own, mode 700)."
        ]
    above = fs.lstat(parent)
    if above is None:
        return [
            f"storage.work: {parent} does not exist; create it (mkdir -p {parent}) or set "
            "[storage] work to a folder whose parent exists."
        ]
    if not above.is_dir:
        return [f"storage.work: {parent} is not a folder; fix [storage] work."]
    exposed = []
    if above.uid not in (uid, 0):
        exposed.append(f"it belongs to uid {above.uid}")
    if above.mode & (stat.S_IWGRP | stat.S_IWOTH) and not above.mode & stat.S_ISVTX:
        exposed.append(f"its mode {above.permissions:o} lets others write it")
    if exposed:
        return [
            f"storage.work: {parent}, the parent of the bot's work folder {work}, lets other "
            f"accounts rename the work folder away or put their own in its place "
            f"({'; '.join(exposed)}); make it writable by the bot alone (chmod go-w "
            f"{parent}), set its sticky bit (chmod +t {parent}), or set [storage] work to a "
            "folder in a parent only the bot can write, on public's filesystem."
        ]
    return []


def not_on_public_filesystem(places: Places, where: str = "") -> str:
    """The sentence when the work folder and public are on two filesystems (on server
    ``where``, when remote)."""
    on = f" on {where}" if where else ""
    return (
        f"storage.work: the bot's work folder {places.work} and public {places.public}{on} "
        "are on different filesystems, so publishing cannot be one rename; set [storage] work "
        "to a folder on public's filesystem (the default, beside public, is on it unless "
        "public is a mount point of its own)."
    )
