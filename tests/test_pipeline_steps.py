"""The publish pipeline's steps are objects found by name: every name the journal can hold
has one, in the order a publish runs them."""

from __future__ import annotations

from pathlib import Path

from bot import index_publishing
from bot.connections import Connections
from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.tags import ReleaseTag
from bot.metrics import Metrics
from bot.pipeline import BOT, PIPELINE, Pipeline, announcement, who
from bot.reporter import Reporter
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

    names = index_publishing.pipeline_for(plan(index), PIPELINE)

    assert names == ("freeze", "promote", "index", "register", "purge", "announce", "tidy")
    assert set(names) == set(steps)
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
