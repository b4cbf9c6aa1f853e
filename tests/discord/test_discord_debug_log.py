"""At debug level discord.py logs REST requests and gateway events whole: the RM's plan with
its code, the Publish buttons' IDs and the confirm option typed in the slash command. No log
line shows the code, and typed text reaches Discord escaped."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from adapters.discord.platform import DiscordPlatform
from tests.discord.conftest import HOLDERS, HUGO, DiscordWorld
from tests.discord.mock_discord import MockDiscord

TAG = "3.14.1"


def buttons(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for row in message["components"] for b in row["components"]]


@pytest.mark.parametrize("confirm_by", ["button", "typed"])
async def test_no_debug_line_shows_a_confirmation_code(
    bot: DiscordPlatform,
    mock_discord: MockDiscord,
    dworld: DiscordWorld,
    debug_log: io.StringIO,
    confirm_by: str,
) -> None:
    mock = mock_discord
    dworld.stage(TAG)
    for role, user in HOLDERS.items():
        await mock.reply(await mock.command("ready", user=user, role=role, tag=TAG))
    plan = await mock.reply(await mock.command("publish", user=HUGO, tag=TAG))
    [publish] = buttons(plan)
    code = str(publish["custom_id"]).rsplit(":", 1)[-1]
    if confirm_by == "button":
        ask = await mock.click(publish["custom_id"], user=HUGO, message=plan)
        question = await mock.reply(ask)
        yes = next(b for b in buttons(question) if b["custom_id"].startswith("relbot:confirm:"))
        await mock.reply(await mock.click(yes["custom_id"], user=HUGO, message=question))
    else:
        await mock.reply(await mock.command("publish", user=HUGO, tag=TAG, confirm=code))
    await mock.wait_for(lambda: "published" in dworld.events(TAG) or None)

    assert f"confirm {code}" in plan["content"]  # the code really went through Discord
    logged = debug_log.getvalue()
    assert "discord." in logged and "DEBUG" in logged  # discord.py did log its traffic
    assert code not in logged and code.lower() not in logged
    assert "<code>" in logged


async def test_a_waiver_reason_reaches_discord_escaped(
    bot: DiscordPlatform, mock_discord: MockDiscord, dworld: DiscordWorld
) -> None:
    dworld.stage(TAG, skip=["python-3.14.1-macos11.pkg"])

    sent = await mock_discord.command(
        "waive", user=HUGO, tag=TAG, target="macos", reason="\x1b[2J \u202eevil"
    )
    reply = await mock_discord.reply(sent)

    assert reply["content"].startswith(f"macos is waived for {TAG}"), reply
    await mock_discord.wait_for(lambda: mock_discord.calls_to("POST", "/channels/") or None)
    posted = json.dumps([c.body for c in mock_discord.calls], ensure_ascii=False)
    assert "\x1b" not in posted and "\u202e" not in posted
    assert "\\\\u202eevil" in posted  # shown, escaped (and JSON-escaped once more here)
