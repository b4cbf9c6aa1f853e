"""Work a command left to finish once what it waits for is done (a ``/ready`` whose files
are still being hashed says so at once, and tells the channel its result later): each a
task of its own, kept until it ends, so that a bot that stops can let them finish."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any


class FollowUps:
    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` beside the command loop."""
        task = asyncio.create_task(work, name="relbot follow-up")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def __len__(self) -> int:
        return len(self._tasks)

    async def finish(self) -> None:
        """Wait until no follow-up is left (one may start another)."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
