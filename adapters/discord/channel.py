"""The release channel on Discord, and the sentences for what only the operator can fix there
(the channel unknown, a permission the bot lacks)."""

from __future__ import annotations

from collections.abc import Mapping

import aiohttp
import discord

from adapters.discord.embeds import MAX_CONTENT, channel_payload, clip
from adapters.discord.errors import DiscordError
from adapters.platform import ChannelRefused
from bot.ports.messages import ChannelMessage, Once


class DiscordChat:
    """The release channel: a summary is an embed (edited in place), anything else text.

    A reference is the Discord message ID. Posting needs the platform connected (see
    :meth:`DiscordPlatform.start`); before that it raises :class:`DiscordError`.
    """

    def __init__(
        self, client: discord.Client, channel: int, people: Mapping[str, str] | None = None
    ) -> None:
        self._client = client
        self._channel = channel
        self._people = dict(people or {})  # person → Discord user ID, for mentions

    async def post(self, message: ChannelMessage) -> str:
        """Post ``message``; returns its ID. A message marked ``once`` ends with its mark (a
        line of small print) and is sent with the mark's nonce, which Discord enforces for a
        few minutes; before that, the channel's last :data:`LOOK_BACK` messages are searched
        for the bot's own with that mark (its ID is returned, nothing is posted). Raises
        :class:`ChannelRefused` when Discord refuses for a reason the operator must fix (403,
        or an unknown channel)."""
        payload = channel_payload(message, self._people)
        try:
            if message.once is not None:
                found = await self._find(message.once)
                if found is not None:
                    return found
                line = mark(message.once)
                payload["content"] = clip(payload["content"], MAX_CONTENT - len(line) - 1)
                payload["content"] += "\n" + line
                payload["nonce"] = message.once.nonce  # discord.py sends enforce_nonce too
            sent = await self._messageable().send(**payload)
        except (discord.Forbidden, discord.NotFound) as err:
            raise self._refused(err) from err
        return str(sent.id)

    async def _find(self, once: Once) -> str | None:
        """The ID of a recent message of the bot's in the channel marked ``once``, if any.
        (Discord keeps no nonce with a message: the mark is looked for in its text.)"""
        me, line = self._client.user, mark(once)
        async for posted in self._messageable().history(limit=LOOK_BACK):
            if me is not None and posted.author.id == me.id and line in posted.content.splitlines():
                return str(posted.id)
        return None

    async def update(self, ref: str, message: ChannelMessage) -> None:
        """Replace the message posted as ``ref``; raises as :meth:`post` does."""
        payload = channel_payload(message, self._people)
        try:
            await self._messageable().get_partial_message(int(ref)).edit(**payload)
        except (discord.Forbidden, discord.NotFound) as err:
            if err.code == UNKNOWN_MESSAGE:  # someone deleted the summary: not the operator's
                raise
            raise self._refused(err) from err

    async def probe(self) -> str | None:
        """Whether a post would go through now, from what the gateway says of the channel
        and the bot's roles: None, the sentence with the fix, or "" when not connected."""
        if not self._client.is_ready():
            return ""
        channel = self._client.get_channel(self._channel)
        if not isinstance(channel, discord.abc.GuildChannel):
            try:  # not in the gateway's cache: ask
                await self._client.fetch_channel(self._channel)
            except discord.NotFound:
                return channel_unknown(self._channel)
            except discord.Forbidden:
                return channel_not_allowed(self._channel, "it cannot see the channel")
            except (discord.HTTPException, aiohttp.ClientError, OSError):
                return ""
            return ""  # visible but not cached yet: the next post will tell
        granted = channel.permissions_for(channel.guild.me).value
        missing = [name for name, bit in NEEDED.items() if granted & bit != bit]
        if missing:
            return channel_not_allowed(self._channel, "it lacks " + ", ".join(missing))
        return None

    def _refused(self, err: discord.HTTPException) -> ChannelRefused:
        if err.code == UNKNOWN_CHANNEL:
            return ChannelRefused(channel_unknown(self._channel))
        return ChannelRefused(channel_not_allowed(self._channel, str(err.text or err.status)))

    def _messageable(self) -> discord.PartialMessageable:
        if not self._client.is_ready():
            raise DiscordError("Discord is not connected yet; the message was not posted.")
        return self._client.get_partial_messageable(self._channel)


UNKNOWN_CHANNEL, UNKNOWN_MESSAGE = 10003, 10008  # Discord's JSON error codes
# What the bot needs in the release channel: see it, post, show the summary's embed, and
# read back what it posted (without it Discord answers an empty history).
NEEDED = {
    "View Channel": 1 << 10,
    "Send Messages": 1 << 11,
    "Embed Links": 1 << 14,
    "Read Message History": 1 << 16,
}
# How many of the channel's last messages are searched for a mark (one request: Discord
# answers at most 100): the announcement is looked for right after a restart.
LOOK_BACK = 100


def mark(once: Once) -> str:
    """The line that carries the mark ``once`` in a message's text (Discord's small print)."""
    return "-# " + discord.utils.escape_markdown(once.line)


def channel_unknown(channel: int) -> str:
    return (
        f"discord.channel: Discord has no channel {channel}; copy its ID again (Developer "
        "Mode, right-click the channel, Copy Channel ID)."
    )


def channel_not_allowed(channel: int, why: str) -> str:
    return (
        f"discord.channel: Discord does not let the bot post in channel {channel} ({why}); "
        "give its role View Channel, Send Messages, Embed Links and Read Message History there "
        "(docs/discord.md)."
    )
