"""Reads of staging run in threads of their own, each with a deadline.

Staging is untrusted: a read may never return (a FIFO swapped in for a file, a hung mount,
a server that stops answering). A read that passes its deadline costs its caller that long
and one thread, never the event loop (chat and ``/healthz`` go on) and never the next scan:
the same read is not started again while the stuck one still runs (it is refused at once,
with the same sentence), and the threads are daemons, so a stuck one never stops the bot
from exiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
from collections.abc import Callable
from typing import TypeVar

from bot.errors import StorageError

T = TypeVar("T")

READ_SECONDS = 120.0  # a listing, a bundle, a batch of hashes: seconds even over SFTP
MOST_STUCK = 16  # reads past their deadline kept running at once; more are refused


class ReadTimedOut(StorageError):
    """A read of staging did not finish within its deadline (it may still be running)."""


class Deadlines:
    """Runs blocking reads in daemon threads, each with a deadline of ``seconds``."""

    def __init__(self, seconds: float = READ_SECONDS, most_stuck: int = MOST_STUCK) -> None:
        self.seconds = seconds
        self._most_stuck = most_stuck
        self._stuck: dict[str, str] = {}  # key → the sentence that reported it

    def stuck(self) -> list[str]:
        """The keys of reads past their deadline and still running."""
        return sorted(self._stuck)

    async def run(self, key: str, what: str, work: Callable[[], T]) -> T:
        """``work()`` in a thread of its own; its result, or its exception. Raises
        :class:`ReadTimedOut` ("``what`` has not finished after N s") when it takes longer
        than the deadline, and at once while the last read under ``key`` is still stuck."""
        if (sentence := self._stuck.get(key)) is not None:
            raise ReadTimedOut(sentence)
        if len(self._stuck) >= self._most_stuck:
            raise ReadTimedOut(
                f"{what} was not started: {len(self._stuck)} other reads of staging have "
                f"not finished after {self.seconds:g} s."
            )
        loop = asyncio.get_running_loop()
        done: asyncio.Future[T] = loop.create_future()
        threading.Thread(
            target=_work, args=(loop, done, work), name=f"relbot {key}", daemon=True
        ).start()
        try:
            return await asyncio.wait_for(asyncio.shield(done), self.seconds)
        except TimeoutError:
            sentence = f"{what} has not finished after {self.seconds:g} s."
            self._stuck[key] = sentence
            done.add_done_callback(lambda _: self._stuck.pop(key, None))
            raise ReadTimedOut(sentence) from None


def _work(loop: asyncio.AbstractEventLoop, done: asyncio.Future[T], work: Callable[[], T]) -> None:
    try:
        result = work()
    except Exception as err:  # noqa: BLE001 - handed, as it is, to the coroutine that waits
        _settle(loop, done, functools.partial(done.set_exception, err))
    else:
        _settle(loop, done, functools.partial(done.set_result, result))


def _settle(
    loop: asyncio.AbstractEventLoop, done: asyncio.Future[T], set_it: Callable[[], None]
) -> None:
    # asyncio.shield marks the result retrieved once its caller gave up: no stray log.
    def settle() -> None:
        if not done.done():
            set_it()

    with contextlib.suppress(RuntimeError):  # the loop is closed: the bot stopped meanwhile
        loop.call_soon_threadsafe(settle)
