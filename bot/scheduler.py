"""The poller: APScheduler 3 runs a staging scan every ``poll_interval`` seconds."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger

from bot.service.gate import Gate

log = logging.getLogger(__name__)


class Poller:
    """Scans every open release on a schedule; one scan at a time, missed runs coalesced."""

    def __init__(self, gate: Gate, interval: float) -> None:
        self._gate = gate
        self._interval = interval
        self._scheduler = AsyncIOScheduler(timezone=dt.UTC)
        self._running = asyncio.Lock()

    def start(self) -> None:
        """Start scanning now, then every interval (call from a running event loop)."""
        self._scheduler.add_job(
            self._tick,
            IntervalTrigger(seconds=self._interval),
            id="scan",
            next_run_time=dt.datetime.now(dt.UTC),
            coalesce=True,
            max_instances=1,
            misfire_grace_time=30,
        )
        self._scheduler.start()

    async def stop(self) -> None:
        """Stop scheduling and wait for a scan under way to finish."""
        if not self._scheduler.running:
            return
        self._scheduler.pause()  # no new scans
        # A scan the scheduler has just handed to the loop has not taken the lock yet: let it
        # start, so the lock below waits for it. Only then shut down: APScheduler's shutdown
        # cancels the coroutine jobs still running.
        for _ in range(3):
            await asyncio.sleep(0)
        async with self._running:
            self._scheduler.shutdown(wait=False)

    async def _tick(self) -> None:
        async with self._running:
            await self._gate.scan()
