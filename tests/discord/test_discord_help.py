"""Discord's /help takes an optional command to explain, like `/help ready` on the console."""

from __future__ import annotations

from adapters.discord.platform import DiscordPlatform
from tests.discord.conftest import STRANGER
from tests.discord.mock_discord import MockDiscord


async def test_help_with_a_command_explains_that_one(
    bot: DiscordPlatform, mock_discord: MockDiscord
) -> None:
    reply = await mock_discord.reply(
        await mock_discord.command("help", user=STRANGER, command="ready")
    )
    assert reply["content"].startswith("/ready ROLE TAG: say your ROLE")

    wrong = await mock_discord.reply(
        await mock_discord.command("help", user=STRANGER, command="readdy")
    )
    assert "(did you mean /ready?)" in wrong["content"]
