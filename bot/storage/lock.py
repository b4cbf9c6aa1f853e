"""The storage lock: one running relbot per download server.

The state file's lock stops two bots sharing a state file; two bots with different state
files on the same staging and public folders would both publish. So ``relbot run`` also
holds a lock in the bot's work folder (``WORK/lock``, out of uploaders' reach), for as long
as it runs, and checks it is still the holder before every publish.

- Local folders: ``flock`` on the lock file. The kernel drops it when the process dies, so
  it is never stale.
- SFTP has no locks. The lock is a file created with ``O_EXCL`` (only one creator wins)
  that names its holder; the holder rewrites it on every scan (its heartbeat). A lock
  whose heartbeat is older than the holder's own ``stale_after`` (several poll intervals)
  belongs to a bot that died: it is moved aside and taken. A lock naming this host and this
  state file is taken over at once: the process asking holds the state file's own lock
  (``relbot run`` takes it first), which proves the holder named is gone (killed, or out of
  memory) and lets the unit's restart resume a stopped publish without waiting. Before
  every publish the holder reads the file again and refuses to publish unless it still
  names it, so only the bot the file names publishes. Two bots may both believe they hold
  it for a while (a heartbeat stalled past ``stale_after``, two take-overs at once, clocks
  further apart than ``stale_after``); the check before a publish is what keeps that
  harmless.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import socket
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

from bot.errors import StorageError, StorageLocked

STALE_POLLS = 10  # heartbeats a holder may miss before its lock is taken
MIN_STALE = 300.0  # seconds: a slow scan (hashing large files) is not a dead bot

T = TypeVar("T")

if TYPE_CHECKING:  # paramiko is loaded only when SFTP is configured
    import paramiko


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


class LocalLease:
    """``flock`` on the lock file in the bot's work folder (made and checked by the
    storage before the lease is taken)."""

    def __init__(self, path: Path, holder: Holder) -> None:
        self.path = path
        self.holder = holder
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock now or raise :class:`StorageLocked` naming the holder."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except OSError as err:
            raise StorageError(
                f"storage.work: cannot create the storage lock {self.path} "
                f"({err.strerror}); the work folder must be one this user can write."
            ) from err
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = Holder.from_bytes(os.pread(fd, 4096, 0))
            os.close(fd)
            raise StorageLocked(locked_message(str(self.path.parent), holder)) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, self.holder.to_bytes(), 0)
        self._fd = fd

    def renew(self) -> None:
        """Still ours unless the lock file was removed or replaced (then take it again), or
        lost to another bot at an earlier renewal (then try again: it may have stopped)."""
        if self._fd is None:
            self.acquire()
            return
        try:
            same = os.stat(self.path).st_ino == os.fstat(self._fd).st_ino
        except FileNotFoundError:
            same = False
        if not same:
            self.release()
            self.acquire()

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class SftpLease:
    """A lock file created with ``O_EXCL`` and kept alive by a heartbeat (see above)."""

    def __init__(
        self,
        path: str,
        where: str,
        holder: Holder,
        call: Callable[[str, Callable[[paramiko.SFTPClient], None]], None],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = path
        self.where = f"{where}:{path.rsplit('/', 1)[0]}"
        self.holder = holder
        self._call = call
        self._clock = clock

    def acquire(self) -> None:
        """Create the lock file, or take it over when its holder stopped beating; raises
        :class:`StorageLocked` naming a live holder."""
        self._call(f"lock {self.path}", self._acquire)

    def renew(self) -> None:
        self._call(f"renew the lock {self.path}", self._renew)

    def release(self) -> None:
        self._call(f"unlock {self.path}", self._release)

    def _acquire(self, sftp: paramiko.SFTPClient) -> None:
        for _attempt in range(3):
            if self._create(sftp):
                return
            found = self._read(sftp)
            if found is None:
                continue  # removed meanwhile: try to create it again
            holder = Holder.from_bytes(found)
            if holder is None:  # being written this instant, or not relbot's
                raise StorageLocked(
                    f"{self.path} on {self.where} names no relbot; if no other relbot "
                    "runs on this storage, remove that file."
                )
            if holder.token == self.holder.token:
                return
            if not self.holder.outlives(holder) and (
                self._clock() - holder.beat <= holder.stale_after
            ):
                raise StorageLocked(locked_message(self.where, holder))
            # Abandoned: move it aside under a name only we use, then take it.
            aside = f"{self.path}.stale-{self.holder.token}"
            try:
                sftp.posix_rename(self.path, aside)
            except OSError:
                continue
            sftp.remove(aside)
        raise StorageLocked(locked_message(self.where, self._holder(sftp)))

    def _renew(self, sftp: paramiko.SFTPClient) -> None:
        holder = self._holder(sftp)
        if holder is None:  # removed by hand: take it again, unless another bot did
            self._acquire(sftp)
            return
        if holder.token != self.holder.token:
            raise StorageLocked(locked_message(self.where, holder))
        self.holder = replace(self.holder, beat=self._clock())
        # Written aside and renamed over: a reader never sees a half-written file.
        fresh = f"{self.path}.new-{self.holder.token}"
        with sftp.open(fresh, "w") as f:
            f.write(self.holder.to_bytes())
        sftp.posix_rename(fresh, self.path)

    def _release(self, sftp: paramiko.SFTPClient) -> None:
        holder = self._holder(sftp)
        if holder is not None and holder.token == self.holder.token:
            sftp.remove(self.path)

    def _create(self, sftp: paramiko.SFTPClient) -> bool:
        """Whether this call created the lock file (``wx``: SFTP's O_CREAT | O_EXCL)."""
        try:
            with sftp.open(self.path, "wx") as f:
                f.write(self.holder.to_bytes())
        except FileNotFoundError as err:
            raise StorageError(
                f"storage.work: {self.where} does not exist; relbot check says what to do."
            ) from err
        except OSError:
            return False  # it exists (SFTP v3 says only "failure")
        return True

    def _read(self, sftp: paramiko.SFTPClient) -> bytes | None:
        try:
            with sftp.open(self.path, "r") as f:
                data: bytes = f.read(4096)
                return data
        except FileNotFoundError:
            return None

    def _holder(self, sftp: paramiko.SFTPClient) -> Holder | None:
        data = self._read(sftp)
        return None if data is None else Holder.from_bytes(data)
