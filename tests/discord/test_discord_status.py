"""/status on Discord, through the real discord.py client against the mock: the day at a
glance (every open release) is one message within Discord's 2,000 characters, whatever the
number of releases; /status TAG is that release's summary in full."""

from __future__ import annotations

import asyncio

from adapters.discord.platform import DiscordPlatform
from tests.discord.conftest import HUGO, STRANGER, DiscordWorld
from tests.discord.mock_discord import APP_ID, EPHEMERAL, MockDiscord

MAX_CONTENT = 2000  # Discord's limit on a message's content


def release_day(count: int) -> list[str]:
    """``count`` tags over seven series (3.9 to 3.15), as on a day that releases many."""
    tags = [f"3.{minor}.{patch}" for patch in range(1, 9) for minor in range(9, 16)]
    return tags[:count]


async def test_status_of_50_releases_is_one_message_within_discords_limit(
    bot: DiscordPlatform, mock_discord: MockDiscord, dworld: DiscordWorld
) -> None:
    tags = release_day(50)
    for tag in tags:
        dworld.stage(tag, roles=["source"])  # the installers missing: the longest lines

    sent = await mock_discord.command("status", user=STRANGER)
    reply = await mock_discord.reply(sent)
    await asyncio.sleep(0.5)  # any further message of the answer would be sent by now

    followups = mock_discord.calls_to("POST", f"/webhooks/{APP_ID}/{sent.token}")
    assert len(followups) == 1, [len(c.body["content"]) for c in followups]
    content = reply["content"]
    assert len(content) <= MAX_CONTENT and reply["flags"] & EPHEMERAL
    assert "embeds" not in reply or not reply["embeds"]  # no embed per release
    lines = content.removeprefix("```\n").removesuffix("\n```").splitlines()
    assert lines[0] == "50 open releases, newest first (/status TAG shows one in full):"
    shown = [line.split()[0] for line in lines[1:-1]]
    assert (
        shown
        == sorted(tags, key=lambda t: tuple(map(int, t.split("."))), reverse=True)[: len(shown)]
    )
    assert len(shown) >= 12, content  # the longest lines: each role lacks files
    assert lines[-1] == f"…and {50 - len(shown)} more releases: /status TAG shows one in full."
    assert lines[1].startswith("3.15.7  collecting   waits for source (hugo), docs (hugo: 7 ")


async def test_status_of_a_few_releases_names_each_with_who_must_act(
    bot: DiscordPlatform, mock_discord: MockDiscord, dworld: DiscordWorld
) -> None:
    dworld.stage("3.14.1")
    dworld.stage("3.15.0a2", roles=["source"])

    reply = await mock_discord.reply(await mock_discord.command("status", user=HUGO))

    assert reply["content"] == (
        "```\n"
        "2 open releases, newest first (/status TAG shows one in full):\n"
        "3.15.0a2  collecting   waits for source (hugo), windows (steve: 7 files missing), "
        "macos (ned: 1 file missing)\n"
        "3.14.1    collecting   waits for source, docs (hugo), windows (steve), macos (ned)\n"
        "```"
    )


async def test_status_of_one_tag_is_still_its_full_summary(
    bot: DiscordPlatform, mock_discord: MockDiscord, dworld: DiscordWorld
) -> None:
    dworld.stage("3.14.1")

    reply = await mock_discord.reply(await mock_discord.command("status", user=HUGO, tag="3.14.1"))

    lines = reply["content"].removeprefix("```\n").removesuffix("\n```").splitlines()
    assert lines[0] == "3.14.1: 0 of 4 roles ready; not publishable yet"
    assert [line.split()[0] for line in lines[1:5]] == ["source", "docs", "windows", "macos"]
