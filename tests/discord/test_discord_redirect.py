"""discord.py keeps Discord's addresses in class attributes, so pointing it at another API is
process-wide: it happens only when ``discord.api_url`` names another API, only while the
platform runs, and never on import."""

from __future__ import annotations

import subprocess
import sys

import discord
import pytest
from discord.gateway import DiscordWebSocket
from discord.http import Route

from adapters.discord.errors import DiscordError
from adapters.discord.platform import DISCORD_API, DiscordPlatform
from bot.config.sections import DiscordConfig
from tests.discord.conftest import GUILD, TOKEN, DiscordWorld
from tests.discord.mock_discord import MockDiscord


def test_importing_the_adapter_changes_nothing_in_discord_py() -> None:
    script = (
        "from discord.http import Route; from discord.gateway import DiscordWebSocket as W\n"
        "before = (Route.BASE, str(W.DEFAULT_GATEWAY))\n"
        "import adapters.discord.platform, bot.app, bot.cli\n"
        "assert (Route.BASE, str(W.DEFAULT_GATEWAY)) == before, before\n"
        "print(before[0])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == DISCORD_API  # an unset api_url is discord.py's own


async def test_a_platform_on_discords_own_api_leaves_discord_py_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As discord.http.set_api_version(9) would: the adapter must not write over it.
    monkeypatch.setattr(Route, "BASE", "https://discord.com/api/v9")
    settings = DiscordConfig(guild=GUILD, channel=GUILD + 1)
    platform = DiscordPlatform(TOKEN, settings, ("source",))
    before = (Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY)
    seen: list[str] = []

    async def login(token: str) -> None:  # Discord itself cannot be reached from here
        seen.append(Route.BASE)
        raise discord.LoginFailure("refused")

    platform._client.login = login  # type: ignore[method-assign]
    with pytest.raises(DiscordError, match=r"discord\.token_env"):
        await platform.start(None)  # type: ignore[arg-type]
    assert seen == ["https://discord.com/api/v9"]
    assert before == (Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY)


async def test_api_url_points_discord_py_there_while_running_only(
    dworld: DiscordWorld, mock_discord: MockDiscord
) -> None:
    before = (Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY)
    platform = dworld.platform()
    dworld.chat = platform.chat
    await platform.start(dworld.start())
    try:
        assert mock_discord.api_url.rstrip("/") == Route.BASE
        assert before[1] != DiscordWebSocket.DEFAULT_GATEWAY
    finally:
        await platform.stop()
    assert before == (Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY)
