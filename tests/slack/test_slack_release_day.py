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
from bot.domain.tags import ReleaseTag
from tests.conftest import BaseWorld
from tests.pinned import RELEASE_CYCLE_LINE
from tests.slack.conftest import (
    BOT_TOKEN,
    CHANNEL,
    NED,
    SIGNING_SECRET,
    STEVE,
    GatedStorage,
    Workspace,
    release_workspace,
)
from tests.slack.test_slack import publish_button

HUGO, THOMAS, PABLO = "U0HUGO", "U0THOMAS", "U0PABLO"
# Two bugfix branches (with Windows and macOS files) and three security branches (source and
# docs only), as in the pinned release cycle.
DAY = {"3.15.1": THOMAS, "3.14.2": HUGO, "3.13.11": PABLO, "3.12.13": PABLO, "3.11.15": PABLO}

DAY_TEAM_TOML = f"""
    {RELEASE_CYCLE_LINE.strip()}
    profile = "cpython"
    state = "data/state.db"
    confirm_timeout = 600

    [storage]
    kind = "local"
    staging = "data/staging"
    public = "data/public"

    [slack]
    channel = "{CHANNEL}"
    mode = "http"

    [people.hugo]
    rm = ["3.14"]
    roles = ["source", "docs"]
    slack = "{HUGO}"

    [people.thomas]
    rm = ["3.15"]
    slack = "{THOMAS}"

    [people.pablo]
    rm = ["3.11", "3.12", "3.13"]
    slack = "{PABLO}"

    [people.steve]
    roles = ["windows"]
    slack = "{STEVE}"

    [people.ned]
    roles = ["macos"]
    slack = "{NED}"
"""


class DayWorld(BaseWorld[Any]):
    storage: GatedStorage

    def __init__(self, root: Path, chat: Any) -> None:
        super().__init__(root, team_toml=DAY_TEAM_TOML, chat=chat)

    def make_storage(self) -> GatedStorage:
        return GatedStorage(self.staging, self.public)


@pytest.fixture
async def day(tmp_path: Path) -> AsyncIterator[Workspace]:
    mock = release_workspace()
    mock.add_users(THOMAS, PABLO)
    await mock.start()
    platform = SlackPlatform(
        bot_token=BOT_TOKEN,
        channel=CHANNEL,
        mode="http",
        signing_secret=SIGNING_SECRET,
        port=0,
        host="127.0.0.1",
        api_url=mock.api_url,
        people={"hugo": HUGO, "thomas": THOMAS, "pablo": PABLO, "steve": STEVE, "ned": NED},
    )
    world = DayWorld(tmp_path, platform.chat)
    await platform.start(world.gate)
    yield Workspace(mock, platform, world)  # type: ignore[arg-type]
    await platform.stop()
    world.store.close()
    await mock.stop()


def expected_public(world: BaseWorld[Any], tag: str) -> set[str]:
    """Where the profile puts each file staged for ``tag`` once it is public."""
    parsed = ReleaseTag.parse(tag)
    return {
        world.profile.public_target(parsed, e.role, e.path) for e in world.profile.expected(parsed)
    }


async def test_five_releases_confirmed_in_the_same_second_are_each_published_exactly_once(
    day: Workspace,
) -> None:
    ws = day
    world = ws.world
    for tag in DAY:
        world.stage(tag)
        await ws.ready_all(tag)
    buttons = {}
    for tag, rm in DAY.items():
        plan = await ws.answer(await ws.command(rm, "/publish", tag))
        buttons[tag] = publish_button(plan)["value"]
    assert world.public_files() == set()

    clicks = await asyncio.gather(*(ws.click(DAY[tag], buttons[tag]) for tag in DAY))
    await ws.platform.drain()

    assert [c.status for c in clicks] == [200] * len(DAY)
    for tag, click in zip(DAY, clicks, strict=True):
        said = ws.mock.responses(click.name)[-1]["text"]
        assert said.startswith(f"Published {tag}: "), said
        assert world.events(tag, EventKind.PUBLISHED) == ["published"]
        assert world.events(tag, EventKind.REFUSED) == []
    announced = [
        c.body["text"].split(" ", 1)[0]
        for c in ws.mock.ok("chat.postMessage")
        if " is published: " in c.body.get("text", "")
    ]
    assert sorted(announced) == sorted(DAY)  # one each
    made_public = {tag: expected_public(world, tag) for tag in DAY}
    assert world.public_files() == set().union(*made_public.values())
