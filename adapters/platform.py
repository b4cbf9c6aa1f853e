"""What every chat platform adapter provides, and the fan-out that lets several platforms
share one release channel (a claim made on Slack shows on Discord too)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from bot.channel_health import ChannelHealth
from bot.errors import RelbotError
from bot.ports import Chat
from bot.ports.messages import ChannelMessage
from bot.service.gate import Gate

log = logging.getLogger(__name__)


class ChannelRefused(RelbotError):
    """The platform refused a post for a reason the operator must fix (the bot is not in the
    channel, a scope is missing, the channel is gone); the message says what to do. Every
    later post would fail the same way until then."""


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


@runtime_checkable
class ProbedChat(Protocol):
    """A release channel that can tell whether it would take a post now."""

    async def probe(self) -> str | None:
        """None when a post would go through; else why not, as :class:`ChannelRefused` says;
        "" when it cannot tell (the platform cannot be reached)."""
        ...


class FanoutChat:
    """Posts to every platform's channel; a message reference holds one per platform.

    One platform failing to post must not keep the others (or the gate) from going on. A
    :class:`ChannelRefused` is recorded in ``health`` and logged once, in one line, until a
    post goes through again; any other failure is logged with its traceback.
    """

    def __init__(self, chats: Sequence[tuple[str, Chat]], health: ChannelHealth | None = None):
        self._chats = list(chats)
        self.health = health or ChannelHealth()
        for name, chat in self._chats:
            if isinstance(chat, ProbedChat):
                self.health.watch(name, chat.probe)

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
            ref = await chat.post(message)
        except ChannelRefused as err:
            self._refused(name, err)
            return None
        except Exception:  # one platform's outage must not stop the others
            log.exception("posting to %s failed", name)
            return None
        self._posted(name)
        return ref

    async def _update_one(
        self, name: str, chat: Chat, ref: str | None, message: ChannelMessage
    ) -> None:
        try:
            if ref is None:
                await chat.post(message)
            else:
                await chat.update(ref, message)
        except ChannelRefused as err:
            self._refused(name, err)
            return
        except Exception:  # see _post_one
            log.exception("updating the message on %s failed", name)
            return
        self._posted(name)

    def _refused(self, name: str, err: ChannelRefused) -> None:
        if self.health.refused(name, str(err)):
            log.error("%s: the release channel refuses the bot's posts: %s", name, err)
        else:  # said already: the team's messages are lost until it is fixed
            log.debug("%s: a post was refused again: %s", name, err)

    def _posted(self, name: str) -> None:
        if self.health.posted(name):
            log.warning("%s: the release channel takes the bot's posts again", name)
