"""The storage lock as the service layer sees it: who holds it (:class:`Holder`, written into
the lock file for the message others get) and the lease this process holds
(:class:`StorageLease`). The lock itself is :mod:`bot.storage.lock`."""

from __future__ import annotations

import json
import os
import secrets
import socket
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

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
