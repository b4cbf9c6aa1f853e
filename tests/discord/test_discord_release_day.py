"""Release day over Discord: five releases of five branches, three release managers, and every
"Yes, publish" clicked in the same second. Each release is published exactly, with no retry by
anyone, and announced once. The real discord.py client against a mock of Discord's API."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from adapters.discord.platform import DiscordPlatform
from bot.domain.history import EventKind
from bot.domain.tags import ReleaseTag
from tests.conftest import BaseWorld, RecordingChat
from tests.discord.conftest import CHANNEL, GUILD, NED, STEVE, TOKEN, TOKEN_ENV
from tests.discord.mock_discord import MockDiscord
from tests.discord.test_discord import plain_posts
from tests.discord.test_discord_confirm import buttons
from tests.pinned import RELEASE_CYCLE_LINE

HUGO, THOMAS, PABLO = "112233445566778899", "500000000000000005", "600000000000000006"
# Two bugfix branches (with Windows and macOS files) and three security branches (source and
# docs only), as in the pinned release cycle.
DAY = {"3.15.1": THOMAS, "3.14.2": HUGO, "3.13.11": PABLO, "3.12.13": PABLO, "3.11.15": PABLO}
HOLDERS = {"source": HUGO, "docs": HUGO, "windows": STEVE, "macos": NED}

DAY_TEAM_TOML = f"""
    {RELEASE_CYCLE_LINE.strip()}
    profile = "cpython"
    state = "data/state.db"
    confirm_timeout = 600

    [storage]
    kind = "local"
    staging = "data/staging"
    public = "data/public"

    [discord]
    token_env = "{TOKEN_ENV}"
    guild = {GUILD}
    channel = {CHANNEL}
    api_url = "API_URL"

    [people.hugo]
    rm = ["3.14"]
    roles = ["source", "docs"]
    discord = "{HUGO}"

    [people.thomas]
    rm = ["3.15"]
    discord = "{THOMAS}"

    [people.pablo]
    rm = ["3.11", "3.12", "3.13"]
    discord = "{PABLO}"

    [people.steve]
    roles = ["windows"]
    discord = "{STEVE}"

    [people.ned]
    roles = ["macos"]
    discord = "{NED}"
"""


class DayWorld(BaseWorld[Any]):
    def __init__(self, root: Path, api_url: str) -> None:
        toml = DAY_TEAM_TOML.replace("API_URL", api_url)
        super().__init__(root, team_toml=toml, chat=RecordingChat())


@pytest.fixture
async def day(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[MockDiscord, DayWorld]]:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    async with MockDiscord(guild=GUILD, channel=CHANNEL, token=TOKEN) as mock:
        mock.add_members(HUGO, THOMAS, PABLO, STEVE, NED)
        world = DayWorld(tmp_path, mock.api_url)
        settings = world.config.model.discord
        assert settings is not None
        platform = DiscordPlatform(TOKEN, settings, world.profile.roles, guild_ready_timeout=0.05)
        world.chat = platform.chat
        await platform.start(world.start())
        yield mock, world
        await platform.stop()
        world.store.close()


async def test_five_releases_confirmed_in_the_same_second_are_each_published_exactly_once(
    day: tuple[MockDiscord, DayWorld],
) -> None:
    mock, world = day
    questions: dict[str, dict[str, Any]] = {}
    for tag, rm in DAY.items():
        world.stage(tag)
        for role in world.profile.roles_for(ReleaseTag.parse(tag)):
            await mock.reply(await mock.command("ready", user=HOLDERS[role], role=role, tag=tag))
        plan = await mock.reply(await mock.command("publish", user=rm, tag=tag))
        [publish] = buttons(plan)
        ask = await mock.click(publish["custom_id"], user=rm, message=plan)
        questions[tag] = await mock.reply(ask)
    assert world.public_files() == set()

    async def yes(tag: str) -> dict[str, Any]:
        question = questions[tag]
        confirm, _ = buttons(question)
        return await mock.reply(
            await mock.click(confirm["custom_id"], user=DAY[tag], message=question)
        )

    done = await asyncio.gather(*(yes(tag) for tag in DAY))

    for tag, answer in zip(DAY, done, strict=True):
        assert answer["content"].startswith(f"Published {tag}: "), answer["content"]
        assert world.events(tag, EventKind.PUBLISHED) == ["published"]
        assert world.events(tag, EventKind.REFUSED) == []
    await mock.wait_for(lambda: len(announced(mock)) >= len(DAY))
    assert sorted(announced(mock)) == sorted(DAY)  # one each
    public = set()
    for tag in DAY:
        parsed = ReleaseTag.parse(tag)
        public |= {
            world.profile.public_target(parsed, e.role, e.path)
            for e in world.profile.expected(parsed)
        }
    assert world.public_files() == public


def announced(mock: MockDiscord) -> list[str]:
    return [t.split(" ", 1)[0] for t in plain_posts(mock) if " is published: " in t]
