"""The console platform: each stdin line is a chat message, replies and channel posts go to
stdout. ``printf '/ready source 3.14.1\n' | relbot run`` scripts a rehearsal."""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TextIO

from bot.domain.commands import CODE_RE
from bot.errors import ConfigError
from bot.ports import Chat
from bot.ports.messages import ChannelMessage
from bot.scheduler import Poller
from bot.service.gate import Gate

CHANNEL_PREFIX = "[#release] "
UPDATED = "(updated) "
# Test-only: a scripted rehearsal knows its confirmation code in advance. Honoured by the
# console platform only; `relbot run` refuses to start a chat platform while it is set.
FIXED_CODE_ENV = "RELBOT_CONSOLE_FIXED_CODE"
AS_HELP = "/as PERSON"


def fixed_code(environ: Mapping[str, str]) -> Callable[[], str] | None:
    """The code factory that ``RELBOT_CONSOLE_FIXED_CODE`` asks for, or None when unset.

    Raises :class:`ConfigError` when the value is not a code (6 to 12 of A-Z and 0-9).
    """
    value = environ.get(FIXED_CODE_ENV, "")
    if not value:
        return None
    if not CODE_RE.fullmatch(value):
        raise ConfigError(
            f"{FIXED_CODE_ENV}: a confirmation code is 6 to 12 characters of A-Z and 0-9."
        )
    return lambda: value


class ConsoleChat:
    """The release channel, printed. A summary is printed whole when first posted; an edit
    prints only the lines that changed, and nothing when none did, so the reply to what was
    typed is not buried under the same nine lines again.

    A message marked to go out once (the announcement) is printed and flushed before
    :meth:`post` returns, never held for a command's reply: the bot journals it as posted
    once this returns, and a bot killed later must not take it with it. A console keeps no
    history to look in, so a bot killed between the print and the journal prints it again
    after its restart."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._posted = 0
        self._shown: dict[str, list[str]] = {}  # message ref -> the lines it shows now
        self._held: list[str] | None = None  # channel output waiting for a command's reply

    async def post(self, message: ChannelMessage) -> str:
        self._posted += 1
        ref = str(self._posted)
        self._shown[ref] = message.text.splitlines()
        called = "".join(f"@{person} " for person in message.mentions)
        self._write(CHANNEL_PREFIX + called + message.text, now=message.once is not None)
        return ref

    async def update(self, ref: str, message: ChannelMessage) -> None:
        lines = message.text.splitlines()
        before = self._shown.get(ref)
        self._shown[ref] = lines
        if before is None:  # not printed by this console (a restart): show it whole
            self._write(CHANNEL_PREFIX + UPDATED + message.text)
        elif changed := changed_lines(before, lines, message.tag):
            self._write(CHANNEL_PREFIX + UPDATED + "\n".join(changed))

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Keep what the channel prints until the block ends: the console prints the reply
        to a command first, where the eye is, then what the command changed in the channel."""
        self._held = []
        try:
            yield
        finally:
            waiting, self._held = self._held, None
            for text in waiting:
                self._write(text)

    def _write(self, text: str, *, now: bool = False) -> None:
        if self._held is not None and not now:
            self._held.append(text)
            return
        self._out.write(text + "\n")
        self._out.flush()


def changed_lines(before: Sequence[str], after: Sequence[str], tag: str | None) -> list[str]:
    """What an edit changed, as lines to print: the first line (the headline, which names
    the release) when it changed, else the tag alone; then each new or changed line; then
    each line gone, marked ``no longer:``, unless the message lost its whole body (a
    published release's summary is its headline). Empty when nothing changed."""
    if list(before) == list(after):
        return []
    if len(after) == 1:
        return list(after)
    head = after[0] if after and (not before or before[0] != after[0]) else f"{tag or ''}:"
    body: list[str] = []
    matcher = difflib.SequenceMatcher(a=before[1:], b=after[1:], autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op in ("replace", "insert"):
            body += after[1:][j1:j2]
        if op == "delete" or (op == "replace" and i2 - i1 > j2 - j1):
            gone = before[1:][i1 + (j2 - j1 if op == "replace" else 0) : i2]
            body += [f"  no longer: {line.strip()}" for line in gone]
    return [head, *body]


class Console:
    """Reads lines until end of input, answering each before reading the next."""

    def __init__(
        self,
        gate: Gate,
        chat: Chat,
        poller: Poller,
        people: Sequence[str],
        speaker: str,
        out: TextIO,
    ) -> None:
        self._gate = gate
        self._poller = poller
        self._people = list(people)
        self._speaker = speaker
        self._out = out
        # The console's own channel (always, from `relbot run`) prints after each reply.
        self._channel = chat if isinstance(chat, ConsoleChat) else None

    async def run(self, stdin: TextIO) -> int:
        """Serve until end of input, then finish pending work; returns the exit status."""
        await self._gate.resume()
        self._poller.start()
        lines = _lines(stdin)
        try:
            while (line := await lines.get()) is not None:
                if line.strip():
                    with self._held():
                        self._say(await self._answer(line))
        finally:
            await self._poller.stop()
        return 0

    async def _answer(self, line: str) -> str:
        words = line.split()
        if words[0] == "/as":
            return self._switch(words[1:])
        asks_help = words[0].lower() == "/help"
        if asks_help and [w.lower().removeprefix("/") for w in words[1:]] == ["as"]:
            return f"{AS_HELP}: {self._as_help()}"
        reply = await self._gate.handle("console", self._speaker, line)
        if asks_help and len(words) == 1 and not reply.private:
            return f"{reply.text}\n  {AS_HELP:<48} {self._as_help()}"
        return reply.text

    def _held(self) -> contextlib.AbstractContextManager[None]:
        return self._channel.held() if self._channel is not None else contextlib.nullcontext()

    def _as_help(self) -> str:
        return f"console only: speak as another person ({', '.join(self._people)}); e.g. /as steve"

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
