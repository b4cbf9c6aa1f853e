"""The storage lock: one running relbot per download server.

The state file's lock stops two bots sharing a state file; two bots with different state
files on the same staging and public folders would both publish. So ``relbot run`` also
holds a lock in the bot's work folder (``WORK/lock``, out of uploaders' reach), for as long
as it runs, and checks it is still the holder before every publish.

It is written once, over the filesystem interface (:class:`Lease`). The lock is a file
created with ``O_EXCL`` (only one creator wins) that names its holder; the holder rewrites
it on every scan (its heartbeat). Before every publish the holder reads it again and refuses
to publish unless it still names it, so only the bot the file names publishes. A lock whose
holder is gone is moved aside and taken:

- where the backend holds kernel locks (local folders: ``flock`` on the work folder), the
  kernel lock says who is alive; the kernel drops it when a process dies, so a lock file is
  never stale for long and never taken from a live bot;
- over SFTP (no locks), a holder is gone when its heartbeat is older than its own
  ``stale_after`` (several poll intervals), or at once when it names this host and this
  state file: the process asking holds the state file's own lock (``relbot run`` takes it
  first), which proves that holder dead (killed, or out of memory), so the unit's restart
  resumes a stopped publish without waiting. Two bots may both believe they hold it for a
  while (a heartbeat stalled past ``stale_after``, two take-overs at once, clocks further
  apart than ``stale_after``); the check before a publish is what keeps that harmless.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace

from bot.errors import StorageLocked
from bot.ports.lease import Holder, StorageLease
from bot.storage.primitives import FileSystem, Places
from bot.storage.workarea import check_work

LOCK_LIMIT = 4096  # bytes: relbot writes a few hundred; a larger lock file is not read


class LateLease:
    """The lock of a storage that was unreachable when the bot started: the bot serves on
    (staging outages are reported and retried) and takes the lock at the first renewal
    that reaches the storage; until then the gate publishes nothing."""

    def __init__(self, take: Callable[[], StorageLease]) -> None:
        self._take = take
        self._lease: StorageLease | None = None

    def renew(self) -> None:
        if self._lease is None:
            self._lease = self._take()
        else:
            self._lease.renew()

    def release(self) -> None:
        if self._lease is not None:
            self._lease.release()


def locked_message(where: str, holder: Holder | None) -> str:
    who = holder.describe() if holder is not None else "a relbot that left no name"
    return (
        f"Another relbot holds the storage {where}: {who}; stop it first, only one bot may "
        "publish to a download server."
    )


Run = Callable[[str, Callable[[FileSystem], None]], None]
"""How a lease reaches the backend: ``run(what, op)`` calls ``op`` with the backend's
filesystem, turning its failures into :class:`StorageError` saying it could not do
``what``."""


class Lease:
    """The storage lock of ``holder`` (this process), in the work folder of ``places``."""

    def __init__(
        self,
        run: Run,
        places: Places,
        where: str,
        holder: Holder,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = places.lock
        self.places = places
        self.where = where
        self.holder = holder
        self._run = run
        self._clock = clock
        # One operation at a time: the publishes of several releases each renew before they
        # move anything, in threads of their own, and two renewals writing the lock file at
        # once collided on its temporary name (a confirmation refused, "lock.new: File exists").
        self._guard = threading.Lock()

    def acquire(self) -> None:
        """Take the lock now, or take over one whose holder is gone; raises
        :class:`StorageLocked` naming a live holder."""
        with self._guard:
            self._run(f"lock {self.path}", self._acquire)

    def renew(self) -> None:
        """Heartbeat, and confirm this process still holds the lock; raises
        :class:`StorageLocked` naming the holder when another bot holds it now."""
        with self._guard:
            self._run(f"renew the lock {self.path}", self._renew)

    def release(self) -> None:
        with self._guard:
            self._run(f"unlock {self.path}", self._release)

    def _acquire(self, fs: FileSystem) -> None:
        check_work(fs, self.places, create=True)
        pinned = fs.pin(self.places.work)
        if pinned is False:  # a live process holds the kernel lock
            raise StorageLocked(locked_message(self.where, self._holder(fs)))
        for _attempt in range(3):
            if fs.create_small(self.path, self.holder.to_bytes()):
                return
            found = fs.read_small(self.path, LOCK_LIMIT)
            if found is None:
                continue  # removed meanwhile: try to create it again
            holder = Holder.from_bytes(found)
            if holder is not None and holder.token == self.holder.token:
                return
            if not pinned:  # no kernel lock says who is alive: the lock file does
                if holder is None:  # being written this instant, or not relbot's
                    raise StorageLocked(
                        f"{self.path} on {self.where} names no relbot; if no other relbot "
                        "runs on this storage, remove that file."
                    )
                if not self._gone(holder):
                    raise StorageLocked(locked_message(self.where, holder))
            # Abandoned: move it aside under a name only we use, then take it.
            aside = f"{self.path}.stale-{self.holder.token}"
            try:
                fs.rename(self.path, aside)
            except OSError:
                continue
            fs.remove(aside)
        raise StorageLocked(locked_message(self.where, self._holder(fs)))

    def _gone(self, holder: Holder) -> bool:
        """Whether ``holder`` (as the lock file names it) cannot be alive."""
        return self.holder.outlives(holder) or self._clock() - holder.beat > holder.stale_after

    def _renew(self, fs: FileSystem) -> None:
        holder = self._holder(fs)
        if holder is None:  # removed by hand: take it again, unless another bot did
            self._acquire(fs)
            return
        if holder.token != self.holder.token:
            if fs.pin(self.places.work):  # the kernel says nobody else is alive: ours
                self._acquire(fs)
                return
            raise StorageLocked(locked_message(self.where, holder))
        self.holder = replace(self.holder, beat=self._clock())
        # Written aside and renamed over: a reader never sees a half-written file.
        fs.write_small(self.path, self.holder.to_bytes())

    def _release(self, fs: FileSystem) -> None:
        holder = self._holder(fs)
        if holder is not None and holder.token == self.holder.token:
            fs.remove(self.path)
        fs.unpin(self.places.work)

    def _holder(self, fs: FileSystem) -> Holder | None:
        found = fs.read_small(self.path, LOCK_LIMIT)
        return None if found is None else Holder.from_bytes(found)
