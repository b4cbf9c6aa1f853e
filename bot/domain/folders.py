"""Staging and public must be two separate folders: if they are one (or nested, or the same
through a symbolic link), publishing moves files onto themselves and loses them. The rule
itself, pure: the config applies it to the paths it reads, and storage to the paths the SFTP
server resolves (:mod:`bot.storage.overlap`)."""

from __future__ import annotations

import posixpath
from pathlib import PurePath


def folders_overlap(staging: PurePath, public: PurePath) -> bool:
    """Whether two resolved folders are one, or one is inside the other (a folder is inside
    itself). POSIX paths are compared as a server reads them: ``//srv/x`` is ``/srv/x``."""
    staging, public = _as_read(staging), _as_read(public)
    return staging.is_relative_to(public) or public.is_relative_to(staging)


def server_path(path: str) -> str:
    """``path`` as a POSIX server reads it: ``.``, ``..`` and repeated slashes folded, and
    two leading slashes (which ``posixpath.normpath`` keeps) made one."""
    normal = posixpath.normpath(path)
    # normpath makes three or more leading slashes one, and keeps exactly two.
    return normal[1:] if normal.startswith("//") else normal


def _as_read(path: PurePath) -> PurePath:
    # relbot runs on POSIX: both callers pass PurePosixPath or Path (a PosixPath).
    return type(path)(server_path(str(path)))


def overlap_message(staging: str, public: str) -> str:
    """The one sentence that says so, naming both keys."""
    return (
        f"storage.staging and storage.public overlap ({staging} and {public}: the same "
        "folder, one inside the other, or one through a symbolic link); publishing would "
        "move files onto themselves and lose them, so give them two separate folders."
    )
