"""The console platform: each stdin line is a chat message, replies and channel posts go to
stdout. ``printf '/ready source 3.14.1\n' | relbot run`` scripts a rehearsal."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable, Sequence
from typing import TextIO

from bot.gate import Gate
from bot.messages import ChannelMessage
from bot.scheduler import Poller

CHANNEL_PREFIX = "[#release] "


class ConsoleChat:
    """The release channel, printed. An edited summary is printed again, marked as such."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._posted = 0

    async def post(self, message: ChannelMessage) -> str:
        self._posted += 1
        self._write(CHANNEL_PREFIX + message.text)
        return str(self._posted)

    async def update(self, ref: str, message: ChannelMessage) -> None:
        self._write(CHANNEL_PREFIX + "(updated) " + message.text)

    def _write(self, text: str) -> None:
        self._out.write(text + "\n")
        self._out.flush()


class Console:
    """Reads lines until end of input, answering each before reading the next."""

    def __init__(
        self, gate: Gate, poller: Poller, people: Sequence[str], speaker: str, out: TextIO
    ) -> None:
        self._gate = gate
        self._poller = poller
        self._people = list(people)
        self._speaker = speaker
        self._out = out

    async def run(self, stdin: TextIO) -> int:
        """Serve until end of input, then finish pending work; returns the exit status."""
        await self._gate.resume()
        self._poller.start()
        lines = _lines(stdin)
        try:
            while (line := await lines.get()) is not None:
                if line.strip():
                    self._say(await self._answer(line))
        finally:
            await self._poller.stop()
        return 0

    async def _answer(self, line: str) -> str:
        words = line.split()
        if words[0] == "/as":
            return self._switch(words[1:])
        reply = await self._gate.handle("console", self._speaker, line)
        return reply.text

    def _switch(self, args: list[str]) -> str:
        if len(args) != 1 or args[0] not in self._people:
            return f"Usage: /as PERSON, where PERSON is one of {', '.join(self._people)}."
        self._speaker = args[0]
        return f"You are now {self._speaker}."

    def _say(self, text: str) -> None:
        self._out.write(text + "\n")
        self._out.flush()


def _lines(stdin: TextIO) -> asyncio.Queue[str | None]:
    """Lines of ``stdin`` fed from a daemon thread (so Ctrl-C never waits on a read);
    None marks the end of input."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[str | None] = asyncio.Queue()

    def pump() -> None:
        # Bytes, decoded line by line with replacement: one undecodable byte (a Latin-1
        # paste under a strict UTF-8 locale) must be answered, not end the reader.
        encoding = getattr(stdin, "encoding", None) or "utf-8"
        source: Iterable[str | bytes] = getattr(stdin, "buffer", stdin)
        try:
            for line in source:
                text = line.decode(encoding, "replace") if isinstance(line, bytes) else line
                loop.call_soon_threadsafe(queue.put_nowait, text.rstrip("\r\n"))
        finally:
            loop.call_soon_threadsafe(queue.put_nowait, None)

    threading.Thread(target=pump, name="console-stdin", daemon=True).start()
    return queue
