"""The release channel on Discord, and the sentences for what only the operator can fix there
(the channel unknown, a permission the bot lacks)."""

from __future__ import annotations

from collections.abc import Mapping

import aiohttp
import discord

from adapters.discord.embeds import channel_payload
from adapters.discord.errors import DiscordError
from adapters.platform import ChannelRefused
from bot.ports.messages import ChannelMessage


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
        """Post ``message``; returns its ID. Raises :class:`ChannelRefused` when Discord
        refuses for a reason the operator must fix (403, or an unknown channel)."""
        try:
            sent = await self._messageable().send(**channel_payload(message, self._people))
        except (discord.Forbidden, discord.NotFound) as err:
            raise self._refused(err) from err
        return str(sent.id)

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
# What the bot needs in the release channel: see it, post, and show the summary's embed.
NEEDED = {"View Channel": 1 << 10, "Send Messages": 1 << 11, "Embed Links": 1 << 14}


def channel_unknown(channel: int) -> str:
    return (
        f"discord.channel: Discord has no channel {channel}; copy its ID again (Developer "
        "Mode, right-click the channel, Copy Channel ID)."
    )


def channel_not_allowed(channel: int, why: str) -> str:
    return (
        f"discord.channel: Discord does not let the bot post in channel {channel} ({why}); "
        "give its role View Channel, Send Messages and Embed Links there (docs/discord.md)."
    )
