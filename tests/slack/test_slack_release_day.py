"""Release day over Slack: five releases of five branches, three release managers, and every
Publish button clicked in the same second. Each release is published exactly, with no retry by
anyone, and announced once. The real Bolt app in HTTP mode, a mock of Slack's servers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from adapters.slack.platform import SlackPlatform
from bot.domain.history import EventKind
from tests.conftest import BaseWorld
from tests.release_day import (
    DAY,
    INDEX,
    announced,
    day_public,
    day_team_toml,
    made_live_once,
    stage_shared_index,
)
from tests.slack.conftest import (
    BOT_TOKEN,
    CHANNEL,
    HUGO,
    NED,
    SIGNING_SECRET,
    STEVE,
    GatedStorage,
    Workspace,
    release_workspace,
)
from tests.slack.test_slack import publish_button

THOMAS, PABLO = "U0THOMAS", "U0PABLO"
IDS = {"hugo": HUGO, "thomas": THOMAS, "pablo": PABLO, "steve": STEVE, "ned": NED}
SLACK_TABLE = f'[slack]\nchannel = "{CHANNEL}"\nmode = "http"'


class DayWorld(BaseWorld[Any]):
    """The day's team on Slack, on local folders."""

    storage: GatedStorage

    def __init__(self, root: Path, chat: Any) -> None:
        team = day_team_toml(SLACK_TABLE, "slack", IDS)
        super().__init__(root, team_toml=team, chat=chat)

    def make_storage(self) -> GatedStorage:
        return GatedStorage(self.staging, self.public)


def day_platform(api_url: str) -> SlackPlatform:
    return SlackPlatform(
        bot_token=BOT_TOKEN,
        channel=CHANNEL,
        mode="http",
        signing_secret=SIGNING_SECRET,
        port=0,
        host="127.0.0.1",
        api_url=api_url,
        people=IDS,
    )


@pytest.fixture
async def day(tmp_path: Path) -> AsyncIterator[Workspace]:
    mock = release_workspace()
    mock.add_users(THOMAS, PABLO)
    await mock.start()
    platform = day_platform(mock.api_url)
    world = DayWorld(tmp_path, platform.chat)
    await platform.start(world.gate)
    yield Workspace(mock, platform, world)  # type: ignore[arg-type]
    await platform.stop()
    world.store.close()
    await mock.stop()


async def test_five_releases_confirmed_in_the_same_second_are_each_published_exactly_once(
    day: Workspace,
) -> None:
    """…and the one install index built for the two bugfix releases is made live once."""
    ws = day
    world = ws.world
    for tag in DAY:
        world.stage(tag)
    shared = stage_shared_index(world.staging, world.public)
    for tag in DAY:
        await ws.ready_all(tag)
    buttons = {}
    for tag, rm in DAY.items():
        plan = await ws.answer(await ws.command(IDS[rm], "/publish", tag))
        buttons[tag] = publish_button(plan)["value"]
    assert world.public_files() == set(INDEX)

    clicks = await asyncio.gather(*(ws.click(IDS[DAY[tag]], buttons[tag]) for tag in DAY))
    await ws.platform.drain()

    assert [c.status for c in clicks] == [200] * len(DAY)
    for tag, click in zip(DAY, clicks, strict=True):
        said = ws.mock.responses(click.name)[-1]["text"]
        assert said.startswith(f"Published {tag}: "), said
        assert world.events(tag, EventKind.PUBLISHED) == ["published"]
        assert world.events(tag, EventKind.REFUSED) == []
    posts = [c.body.get("text", "") for c in ws.mock.ok("chat.postMessage")]
    assert sorted(announced(posts)) == sorted(DAY)  # one each
    assert world.public_files() == day_public(world.profile) | set(INDEX)
    made_live_once(world.store, world.public, shared)
