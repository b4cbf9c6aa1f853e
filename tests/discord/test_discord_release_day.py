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
from tests.discord.conftest import CHANNEL, GUILD, HUGO, NED, STEVE, TOKEN, TOKEN_ENV
from tests.discord.mock_discord import MockDiscord
from tests.discord.test_discord import plain_posts
from tests.discord.test_discord_confirm import buttons
from tests.release_day import (
    DAY,
    INDEX,
    announced,
    day_public,
    day_team_toml,
    made_live_once,
    stage_shared_index,
)

THOMAS, PABLO = "500000000000000005", "600000000000000006"
IDS = {"hugo": HUGO, "thomas": THOMAS, "pablo": PABLO, "steve": STEVE, "ned": NED}
HOLDERS = {"source": HUGO, "docs": HUGO, "windows": STEVE, "macos": NED}


class DayWorld(BaseWorld[Any]):
    """The day's team on Discord, on local folders."""

    def __init__(self, root: Path, api_url: str) -> None:
        table = (
            f'[discord]\ntoken_env = "{TOKEN_ENV}"\nguild = {GUILD}\nchannel = {CHANNEL}\n'
            f'api_url = "{api_url}"'
        )
        team = day_team_toml(table, "discord", IDS)
        super().__init__(root, team_toml=team, chat=RecordingChat())


@pytest.fixture
async def day(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[MockDiscord, DayWorld]]:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    async with MockDiscord(guild=GUILD, channel=CHANNEL, token=TOKEN) as mock:
        mock.add_members(*IDS.values())
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
    for tag in DAY:
        world.stage(tag)
    shared = stage_shared_index(world.staging, world.public)  # one for both bugfix releases
    for tag in DAY:
        for role in world.profile.roles_for(ReleaseTag.parse(tag)):
            await mock.reply(await mock.command("ready", user=HOLDERS[role], role=role, tag=tag))
    for tag, rm in DAY.items():
        plan = await mock.reply(await mock.command("publish", user=IDS[rm], tag=tag))
        [publish] = buttons(plan)
        ask = await mock.click(publish["custom_id"], user=IDS[rm], message=plan)
        questions[tag] = await mock.reply(ask)
    assert world.public_files() == set(INDEX)

    async def yes(tag: str) -> dict[str, Any]:
        question = questions[tag]
        confirm, _ = buttons(question)
        return await mock.reply(
            await mock.click(confirm["custom_id"], user=IDS[DAY[tag]], message=question)
        )

    done = await asyncio.gather(*(yes(tag) for tag in DAY))

    for tag, answer in zip(DAY, done, strict=True):
        assert answer["content"].startswith(f"Published {tag}: "), answer["content"]
        assert world.events(tag, EventKind.PUBLISHED) == ["published"]
        assert world.events(tag, EventKind.REFUSED) == []
    await mock.wait_for(lambda: len(announced(plain_posts(mock))) >= len(DAY))
    assert sorted(announced(plain_posts(mock))) == sorted(DAY)  # one each
    assert world.public_files() == day_public(world.profile) | set(INDEX)
    made_live_once(world.store, world.public, shared)
