"""The publish pipeline's steps are objects found by name: every name the journal can hold
has one, in the order a publish runs them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.domain.history import EventKind
from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.tags import ReleaseTag
from bot.metrics import Metrics
from bot.ports.messages import ChannelKind
from bot.service import windows_index
from bot.service.connections import Connections
from bot.service.pipeline import sign
from bot.service.pipeline.runner import Pipeline
from bot.service.pipeline.steps import BOT, PIPELINE, announcement, who
from bot.service.reporter import Reporter
from bot.team import Team
from tests.conftest import World

TAG = ReleaseTag.parse("3.14.1")


def plan(*files: PlanFile) -> PublishPlan:
    return PublishPlan(TAG, files)


def test_every_step_a_publish_can_journal_has_its_object(tmp_path: Path) -> None:
    world = World(tmp_path)
    conn = Connections(world.storage, world.chat)
    reporter = Reporter(
        conn, world.store, Team(world.config.people), clock=world.clock, poll_interval=1
    )

    async def published(tag: ReleaseTag) -> None:
        raise AssertionError("nothing is run here")

    steps = Pipeline(
        conn, world.store, world.profile, Metrics(), reporter, published=published
    ).steps
    index = PlanFile("windows.json", "windows.json", "windows", 10, "a" * 64, replaces="absent")

    names = windows_index.pipeline_for(plan(index), PIPELINE)

    assert names == (
        "freeze",
        "promote",
        "index",
        "register",
        "purge",
        "downloads",
        "release-page",
        "discourse",
        "announce",
        "tidy",
    )
    assert {*names, sign.NAME} == set(steps)  # sign: when confirmed with a login
    assert all(steps[name].name == name for name in names)


def test_the_bot_itself_is_never_mentioned_about_a_publish() -> None:
    assert who("hugo") == ["hugo"]
    assert who(BOT) == [] and who(None) == []


def test_the_announcement_counts_files_per_role_and_names_the_publisher() -> None:
    files = (
        PlanFile("a.tgz", "3.14.1/a.tgz", "source", 1024, "a" * 64),
        PlanFile("b.exe", "3.14.1/b.exe", "windows", 2048, "b" * 64),
    )

    text = announcement(plan(*files), "hugo", {"release": "https://example.org/3.14.1"})

    assert text.startswith("3.14.1 is published: 2 files (source 1, windows 1; ")
    assert "confirmed by hugo. Release: https://example.org/3.14.1" in text


class Killed(BaseException):
    """The bot dies here (not an error any layer may catch)."""


async def test_a_restart_after_the_announcement_never_announces_twice(tmp_path: Path) -> None:
    world = World(tmp_path)
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    append = world.store.append

    def killed_before_published(tag: ReleaseTag, actor: str, kind: EventKind, **data: Any) -> Any:
        if kind is EventKind.PUBLISHED:
            raise Killed
        return append(tag, actor, kind, **data)

    world.store.append = killed_before_published  # type: ignore[method-assign]
    with pytest.raises(Killed):
        await world.say("hugo", line)
    assert world.chat.texts(ChannelKind.ANNOUNCEMENT) != []  # announced, then killed

    world.start()
    await world.gate.scan()

    assert world.events("3.14.1", EventKind.PUBLISHED) == ["published"]
    assert len(world.chat.texts(ChannelKind.ANNOUNCEMENT)) == 1
