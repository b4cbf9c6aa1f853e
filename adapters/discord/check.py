"""``relbot check`` on Discord: whether the token, the server, the channel, the bot's
permissions there and the people's IDs would work on release day, each problem a sentence
with its fix. It asks Discord's HTTP API directly (httpx), without a gateway connection."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import discord
import httpx

from adapters.discord.channel import NEEDED, channel_not_allowed, channel_unknown
from bot.config.sections import DiscordConfig


class ServerCheck:
    """What :meth:`DiscordPlatform.check` asks Discord, with a blocking client (``relbot
    check`` runs it in a thread)."""

    def __init__(
        self, token: str, settings: DiscordConfig, api: str, people: Mapping[str, str]
    ) -> None:
        self._token = token
        self._settings = settings
        self._api = api
        self._people = dict(people)  # person → Discord user ID

    def problems(self) -> list[str]:
        """Each problem found, a sentence with its fix; none when all would work."""
        headers = {"Authorization": f"Bot {self._token}", "User-Agent": "DiscordBot relbot"}
        try:
            with httpx.Client(base_url=self._api + "/", headers=headers, timeout=10) as http:
                return self._check(http)
        except httpx.HTTPError as err:
            return [f"discord.api_url: cannot reach {self._api}: {err}."]

    def _check(self, http: httpx.Client) -> list[str]:
        settings = self._settings
        me = http.get("users/@me")
        if me.status_code == 401:
            return [
                f"discord.token_env: Discord refused the token in {settings.token_env}; "
                "copy it again from the Developer Portal (Bot, Reset Token)."
            ]
        me.raise_for_status()
        guild = http.get(f"guilds/{settings.guild}")
        bot = http.get(f"guilds/{settings.guild}/members/{me.json()['id']}")
        if guild.status_code in (403, 404) or bot.status_code in (403, 404):
            return [
                f"discord.guild: the bot is not in server {settings.guild}; invite it with the "
                "scopes bot and applications.commands (docs/discord.md)."
            ]
        guild.raise_for_status()
        bot.raise_for_status()
        channel = http.get(f"channels/{settings.channel}")
        problems = self._check_channel(channel, guild.json(), bot.json())
        for person, user in self._people.items():
            member = http.get(f"guilds/{settings.guild}/members/{user}")
            if member.status_code in (400, 404):  # 400: not even an ID
                problems.append(
                    f"people.{person}.discord: user {user} is not a member of server "
                    f"{settings.guild}; copy their ID (Developer Mode, right-click them, Copy "
                    "User ID), or invite them to the server."
                )
            elif member.status_code != 200:
                problems.append(
                    f"people.{person}.discord: Discord answered {member.status_code} for user "
                    f"{user}."
                )
        return problems

    def _check_channel(
        self, channel: httpx.Response, guild: dict[str, Any], bot: dict[str, Any]
    ) -> list[str]:
        settings = self._settings
        if channel.status_code == 404:
            return [channel_unknown(settings.channel)]
        if channel.status_code == 403:
            return [channel_not_allowed(settings.channel, "it cannot see the channel")]
        if channel.status_code != 200:
            return [f"discord.channel: Discord answered {channel.status_code} for the channel."]
        found = channel.json()
        if found.get("guild_id") != str(settings.guild):
            return [
                f"discord.channel: channel {settings.channel} is in server "
                f"{found.get('guild_id')}, not in discord.guild = {settings.guild}."
            ]
        granted = channel_permissions(guild, bot, found)
        missing = [name for name, bit in NEEDED.items() if granted & bit != bit]
        if missing:
            return [channel_not_allowed(settings.channel, "it lacks " + ", ".join(missing))]
        return []


def channel_permissions(
    guild: Mapping[str, Any], member: Mapping[str, Any], channel: Mapping[str, Any]
) -> int:
    """A member's permission bits in a channel, as Discord computes them: @everyone's and the
    member's roles, then the channel's overwrites for @everyone, the member's roles and the
    member (https://discord.com/developers/docs/topics/permissions)."""
    everyone = str(guild["id"])
    roles = {str(r["id"]): int(r["permissions"]) for r in guild.get("roles", [])}
    mine = [str(r) for r in member.get("roles", [])]
    base = roles.get(everyone, 0)
    for role in mine:
        base |= roles.get(role, 0)
    granted = discord.Permissions(base)
    if granted.administrator:
        return discord.Permissions.all().value
    overwrites = {
        str(o["id"]): (int(o["allow"]), int(o["deny"]))
        for o in channel.get("permission_overwrites", [])
    }
    granted.handle_overwrite(*overwrites.get(everyone, (0, 0)))
    allow = deny = 0
    for role in mine:
        role_allow, role_deny = overwrites.get(role, (0, 0))
        allow, deny = allow | role_allow, deny | role_deny
    granted.handle_overwrite(allow, deny)
    granted.handle_overwrite(*overwrites.get(str(member["user"]["id"]), (0, 0)))
    return granted.value
