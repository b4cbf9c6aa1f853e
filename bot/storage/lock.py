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

import json
import os
import secrets
import socket
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Protocol

from bot.errors import StorageLocked
from bot.storage.primitives import FileSystem, Places
from bot.storage.workarea import check_work

STALE_POLLS = 10  # heartbeats a holder may miss before its lock is taken
MIN_STALE = 300.0  # seconds: a slow scan (hashing large files) is not a dead bot


@dataclass(frozen=True)
class Holder:
    """Who holds the storage, written into the lock file for the message others get."""

    host: str
    pid: int
    state: str  # the holder's state file
    since: float
    beat: float  # the last heartbeat (holder's clock)
    stale_after: float  # seconds without a heartbeat after which the lock is abandoned
    token: str  # tells this holder from a later one with the same host and pid

    @classmethod
    def this_process(cls, state: Path, poll_interval: float) -> Holder:
        now = time.time()
        return cls(
            host=socket.gethostname(),
            pid=os.getpid(),
            state=str(state),
            since=now,
            beat=now,
            stale_after=max(STALE_POLLS * poll_interval, MIN_STALE),
            token=secrets.token_hex(8),
        )

    def outlives(self, other: Holder) -> bool:
        """Whether ``other`` must be dead because this holder replaced it: it names this
        host and this state file, whose own lock this process holds (``relbot run`` takes
        it before the storage lock), so no other live process can be that holder."""
        return (
            other.token != self.token
            and other.host == self.host
            and os.path.realpath(other.state) == os.path.realpath(self.state)
        )

    def describe(self) -> str:
        """``relbot pid 4242 on host dl1 (state file /srv/relbot/state.db) since …``."""
        return (
            f"relbot pid {self.pid} on host {self.host} (state file {self.state}) "
            f"since {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(self.since))}"
        )

    def to_bytes(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True).encode() + b"\n"

    @classmethod
    def from_bytes(cls, data: bytes) -> Holder | None:
        """The holder a lock file names, or None when it is not one relbot wrote."""
        try:
            fields = json.loads(data.decode())
            return cls(
                host=str(fields["host"]),
                pid=int(fields["pid"]),
                state=str(fields["state"]),
                since=float(fields["since"]),
                beat=float(fields["beat"]),
                stale_after=float(fields["stale_after"]),
                token=str(fields["token"]),
            )
        except (ValueError, KeyError, TypeError):
            return None


class StorageLease(Protocol):
    """The storage lock, held by this process until :meth:`release`."""

    def renew(self) -> None:
        """Heartbeat, and confirm this process still holds the lock; raises
        :class:`StorageLocked` naming the holder when another bot holds it now."""
        ...

    def release(self) -> None: ...


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

    def acquire(self) -> None:
        """Take the lock now, or take over one whose holder is gone; raises
        :class:`StorageLocked` naming a live holder."""
        self._run(f"lock {self.path}", self._acquire)

    def renew(self) -> None:
        """Heartbeat, and confirm this process still holds the lock; raises
        :class:`StorageLocked` naming the holder when another bot holds it now."""
        self._run(f"renew the lock {self.path}", self._renew)

    def release(self) -> None:
        self._run(f"unlock {self.path}", self._release)

    def _acquire(self, fs: FileSystem) -> None:
        check_work(fs, self.places, create=True)
        pinned = fs.pin(self.places.work)
        if pinned is False:  # a live process holds the kernel lock
            raise StorageLocked(locked_message(self.where, self._holder(fs)))
        for _attempt in range(3):
            if fs.create_small(self.path, self.holder.to_bytes()):
                return
            found = fs.read_small(self.path, 4096)
            if found is None:
                continue  # removed meanwhile: try to create it again
            holder = Holder.from_bytes(found)
            if holder is not None and holder.token == self.holder.token:
                return
            if not pinned and holder is None:  # being written this instant, or not relbot's
                raise StorageLocked(
                    f"{self.path} on {self.where} names no relbot; if no other relbot runs "
                    "on this storage, remove that file."
                )
            if not pinned and not self._gone(holder):
                raise StorageLocked(locked_message(self.where, holder))
            # Abandoned: move it aside under a name only we use, then take it.
            aside = f"{self.path}.stale-{self.holder.token}"
            try:
                fs.rename(self.path, aside)
            except OSError:
                continue
            fs.remove(aside)
        raise StorageLocked(locked_message(self.where, self._holder(fs)))

    def _gone(self, holder: Holder | None) -> bool:
        """Whether ``holder`` (as the lock file names it) cannot be alive."""
        if holder is None:
            return False
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
        found = fs.read_small(self.path, 4096)
        return None if found is None else Holder.from_bytes(found)
