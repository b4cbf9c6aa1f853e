"""One asyncio lock per release, kept only while someone holds it or waits for it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class ReleaseLocks:
    """Serializes the commands and scans of one release. A lock lives only as long as a
    task holds or awaits it, so commands naming any number of releases (refused ones too)
    leave no lock behind."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}  # key → (lock, tasks using it)

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        """Hold ``key``'s lock for the ``async with`` block (waiting for it first)."""
        lock, users = self._locks.get(key, (asyncio.Lock(), 0))
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)

    def locked(self, key: str) -> bool:
        """Whether a task holds or awaits ``key``'s lock right now."""
        return key in self._locks

    def keys(self) -> set[str]:
        """The keys whose lock is held or awaited right now."""
        return set(self._locks)
