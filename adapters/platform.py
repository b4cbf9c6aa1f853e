"""What every chat platform adapter provides, and the fan-out that lets several platforms
share one release channel (a claim made on Slack shows on Discord too)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from typing import Protocol

from bot.gate import Gate
from bot.messages import ChannelMessage
from bot.ports import Chat

log = logging.getLogger(__name__)


class Platform(Protocol):
    """A running connection to one chat platform.

    ``chat`` is the platform's release channel; ``start`` begins delivering commands to the
    gate (and returns once connected); ``stop`` disconnects. An adapter is built with
    ``from_config(config)``, which reads its secrets from the environment and raises
    :class:`bot.errors.ConfigError` naming the key when one is missing.
    """

    name: str

    @property
    def chat(self) -> Chat: ...

    async def start(self, gate: Gate) -> None: ...

    async def stop(self) -> None: ...

    def check(self) -> list[str]:
        """For ``relbot check``: problems reaching the platform (tokens present and accepted,
        channel reachable), each a sentence with the fix. Blocking is fine here."""
        ...


class FanoutChat:
    """Posts to every platform's channel; a message reference holds one per platform.

    One platform failing to post must not keep the others (or the gate) from going on.
    """

    def __init__(self, chats: Sequence[tuple[str, Chat]]) -> None:
        self._chats = list(chats)

    async def post(self, message: ChannelMessage) -> str:
        refs = await asyncio.gather(
            *(self._post_one(name, chat, message) for name, chat in self._chats)
        )
        return json.dumps(dict(zip((name for name, _ in self._chats), refs, strict=True)))

    async def update(self, ref: str, message: ChannelMessage) -> None:
        refs: dict[str, str | None] = json.loads(ref)
        await asyncio.gather(
            *(self._update_one(name, chat, refs.get(name), message) for name, chat in self._chats)
        )

    async def _post_one(self, name: str, chat: Chat, message: ChannelMessage) -> str | None:
        try:
            return await chat.post(message)
        except Exception:  # one platform's outage must not stop the others
            log.exception("posting to %s failed", name)
            return None

    async def _update_one(
        self, name: str, chat: Chat, ref: str | None, message: ChannelMessage
    ) -> None:
        try:
            if ref is None:
                await chat.post(message)
            else:
                await chat.update(ref, message)
        except Exception:  # see _post_one
            log.exception("updating the message on %s failed", name)
