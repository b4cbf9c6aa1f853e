"""Discord's Publish button asks before it publishes, as Slack's confirm dialog does; the
confirming click is authorized by the gate like the typed confirm line."""

from __future__ import annotations

from typing import Any

from adapters.discord.platform import DiscordPlatform
from tests.discord.conftest import HOLDERS, HUGO, DiscordWorld
from tests.discord.mock_discord import EPHEMERAL, MockDiscord

TAG = "3.14.1"


async def plan(mock: MockDiscord, dworld: DiscordWorld) -> dict[str, Any]:
    dworld.stage(TAG)
    for role, user in HOLDERS.items():
        await mock.reply(await mock.command("ready", user=user, role=role, tag=TAG))
    return await mock.reply(await mock.command("publish", user=HUGO, tag=TAG))


def buttons(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for row in message["components"] for b in row["components"]]


async def test_a_click_on_publish_asks_and_publishes_nothing(
    bot: DiscordPlatform, mock_discord: MockDiscord, dworld: DiscordWorld
) -> None:
    message = await plan(mock_discord, dworld)
    [publish] = buttons(message)

    ask = await mock_discord.click(publish["custom_id"], user=HUGO, message=message)
    question = await mock_discord.reply(ask)

    assert question["flags"] & EPHEMERAL
    assert question["content"].startswith(f"Publish {TAG} now?")
    yes, cancel = buttons(question)
    assert yes["label"] == f"Yes, publish {TAG}" and cancel["label"] == "Cancel"
    assert dworld.public_files() == set()
    assert "confirmed" not in dworld.events(TAG)


async def test_yes_publishes_and_cancel_does_not(
    bot: DiscordPlatform, mock_discord: MockDiscord, dworld: DiscordWorld
) -> None:
    message = await plan(mock_discord, dworld)
    [publish] = buttons(message)

    ask = await mock_discord.click(publish["custom_id"], user=HUGO, message=message)
    question = await mock_discord.reply(ask)
    _, cancel = buttons(question)
    cancelled = await mock_discord.click(cancel["custom_id"], user=HUGO, message=question)
    answer = await mock_discord.wait_for(lambda: mock_discord.callback(cancelled))
    assert answer["type"] == 7  # the question is replaced
    assert answer["data"]["content"].startswith(f"{TAG} was not published.")
    assert answer["data"]["components"] == []
    assert dworld.public_files() == set()

    ask = await mock_discord.click(publish["custom_id"], user=HUGO, message=message)
    question = await mock_discord.reply(ask)
    yes, _ = buttons(question)
    done = await mock_discord.reply(
        await mock_discord.click(yes["custom_id"], user=HUGO, message=question)
    )
    assert done["content"].startswith(f"Published {TAG}:")
    assert dworld.public_files()
