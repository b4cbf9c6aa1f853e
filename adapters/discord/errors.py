"""What goes wrong between relbot and Discord, as errors carrying the sentence to show."""

from __future__ import annotations

from bot.errors import RelbotError


class DiscordError(RelbotError):
    """Discord refused the bot or could not be reached (the message says what to fix)."""


class DiscordUnreachable(DiscordError):
    """Discord could not be reached (network, DNS, a 5xx): worth trying again later."""
