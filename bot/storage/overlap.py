"""Staging and public must be two separate folders: if they are one (or nested, or the same
through a symbolic link), publishing moves files onto themselves and loses them.

Checked where each can be: when the config is read (local folders resolved on this machine;
server paths compared as written, ``//srv/x`` being ``/srv/x``), and over SFTP where the
server resolves them (``relbot check``, and ``relbot run`` before it takes the storage
lock).
"""

from __future__ import annotations

import posixpath
from pathlib import PurePath, PurePosixPath
from typing import TYPE_CHECKING

from bot.errors import ConfigError, StorageLocked

if TYPE_CHECKING:
    from bot.ports import Storage
    from bot.storage.lock import Holder, StorageLease


def folders_overlap(staging: PurePath, public: PurePath) -> bool:
    """Whether two resolved folders are one, or one is inside the other. Server paths
    (``PurePosixPath``) are compared as the server reads them: ``//srv/x`` is ``/srv/x``."""
    staging, public = _as_read(staging), _as_read(public)
    return staging == public or staging.is_relative_to(public) or public.is_relative_to(staging)


def server_path(path: str) -> str:
    """``path`` as a POSIX server reads it: ``.``, ``..`` and repeated slashes folded, and
    two leading slashes (which ``posixpath.normpath`` keeps) made one."""
    normal = posixpath.normpath(path)
    return "/" + normal.lstrip("/") if normal.startswith("//") else normal


def _as_read(path: PurePath) -> PurePath:
    if isinstance(path, PurePosixPath) and str(path).startswith("//"):
        return type(path)(server_path(str(path)))
    return path


def overlap_message(staging: str, public: str) -> str:
    """The one sentence that says so, naming both keys."""
    return (
        f"storage.staging and storage.public overlap ({staging} and {public}: the same "
        "folder, one inside the other, or one through a symbolic link); publishing would "
        "move files onto themselves and lose them, so give them two separate folders."
    )


def refuse_overlap_on_server(storage: Storage) -> None:
    """Raise :class:`ConfigError` when the SFTP server resolves staging and public to one
    folder or one inside the other (a symbolic link there); a missing folder is not judged
    here (``relbot check`` says so). Local folders were resolved when the config was read.
    Raises ``StagingUnreachable`` when the server cannot be reached."""
    if problem := storage.overlap_on_server():
        raise ConfigError(problem)


def lock_unless_overlapping(storage: Storage, holder: Holder) -> StorageLease:
    """The storage lock of a bot that started while the server was unreachable, taken only
    once the server said staging and public are separate: else :class:`StorageLocked` (the
    bot then tells the channel, and publishes nothing)."""
    try:
        refuse_overlap_on_server(storage)
    except ConfigError as err:
        raise StorageLocked(f"{err} Fix the config and restart relbot.") from err
    return storage.lock(holder)
