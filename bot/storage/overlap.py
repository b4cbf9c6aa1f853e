"""Staging and public must be two separate folders: if they are one (or nested, or the same
through a symbolic link), publishing moves files onto themselves and loses them.

Checked where each can be: when the config is read (local folders resolved on this machine;
server paths compared as written, ``//srv/x`` being ``/srv/x``), and over SFTP where the
server resolves them (``relbot check``, and ``relbot run`` before it takes the storage
lock). The rule itself is pure (:mod:`bot.domain.folders`); here it is applied to a live
storage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.errors import ConfigError, StorageLocked

if TYPE_CHECKING:
    from bot.ports import Storage
    from bot.ports.lease import Holder, StorageLease


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
