"""The files that replace live ones (the install index), written once over the storage
primitives: the bot's copies wait in its aside area (``WORK/aside/TAG/PATH``, made by the
freeze at the confirmation) until they replace the live public files, each by one atomic
rename, after every other file of the release is public.

The aside area is inside the bot's work folder (mode 0700, the bot's alone): no upload can
take a copy's place, and the final rename stays within public's filesystem.
"""

from __future__ import annotations

import posixpath

from bot.storage.freezer import make_folders
from bot.storage.primitives import FOLDER_MODE, FileSystem, Places, Touched, inside
from bot.storage.workarea import check_area


def read_public(fs: FileSystem, places: Places, path: str, limit: int) -> bytes | None:
    """A small file under the public root (``index-windows.json``), or None if absent."""
    return fs.read_small(inside(places.public, path), limit)


def read_aside(fs: FileSystem, places: Places, tag: object, path: str, limit: int) -> bytes | None:
    """The bot's copy of ``path`` waiting to replace a live file, or None if absent."""
    if fs.lstat(places.work) is None:
        return None  # nothing was ever copied
    check_area(fs, places, places.aside_area)
    return fs.read_small(places.aside(tag, path), limit)


def replace_public(fs: FileSystem, places: Places, tag: object, path: str, target: str) -> None:
    """Replace the public ``target`` with the bot's copy of ``path``, by one rename."""
    check_area(fs, places, places.aside_area)
    live = inside(places.public, target)
    make_folders(fs, posixpath.dirname(live), places.public, FOLDER_MODE)
    fs.replace_public(places.aside(tag, path), live)
    fs.finish(Touched(files=[live]))
