"""Late files: a published release accepts additions through the same flow (stage, /ready,
/publish, confirm); nothing already public changes; python.org keeps the earlier records and
gets the new ones; the channel hears what was added."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.domain.history import EventKind
from bot.http_client import RetryPolicy
from bot.ports.messages import ChannelKind, Tone
from bot.pydotorg.registry import PydotorgRegistry
from tests.conftest import World
from tests.doubles.pydotorg import PydotorgDouble

TAG = "3.14.1"
PKG = "python-3.14.1-macos11.pkg"
KEY = "late-files-api-key"
FAST = RetryPolicy(attempts=2, backoff=0.0, sleep=lambda _: None)


@pytest.fixture
def api() -> Iterator[PydotorgDouble]:
    with PydotorgDouble(users={"rm": (KEY, True)}) as double:
        double.add_release("Python 3.14.1")
        yield double


@pytest.fixture
def published(tmp_path: Path, api: PydotorgDouble) -> World:
    """3.14.1 published without its macOS installer (the role waived)."""
    world = World(tmp_path)
    world.conn.registry = PydotorgRegistry(api.url, f"rm:{KEY}", world.profile, retry=FAST)
    world.stage(TAG, roles=["source", "docs", "windows"])
    return world


async def publish_without_macos(world: World) -> None:
    for role, person in (("source", "hugo"), ("docs", "hugo"), ("windows", "steve")):
        assert not (await world.say(person, f"/ready {role} {TAG}")).private
    assert not (await world.say("hugo", f"/waive {TAG} macos notarization is down")).private
    reply = await world.say("hugo", await world.plan(TAG))
    assert not reply.private, reply.text


def snapshot(world: World) -> dict[str, tuple[bytes, int]]:
    return {
        p: ((world.public / p).read_bytes(), (world.public / p).stat().st_mtime_ns)
        for p in world.public_files()
    }


async def test_a_late_installer_is_published_registered_and_announced(
    published: World, api: PydotorgDouble
) -> None:
    world = published
    await publish_without_macos(world)
    before = snapshot(world)
    records_before = {r["url"]: r for r in api.files("Python 3.14.1")}
    assert len(records_before) == 11 and f"3.14.1/{PKG}" not in before

    world.write(TAG, PKG, "the notarized installer\n")
    status = await world.say("eve", f"/status {TAG}")
    assert "Late files staged; not publishable yet" in status.text
    assert "source   public" in status.text
    blocked = await world.say("hugo", f"/publish {TAG}")
    assert blocked.private  # the macos role is waived but has not claimed: nothing to add
    ready = await world.say("ned", f"/ready macos {TAG}")
    assert not ready.private, ready.text
    plan = await world.say("hugo", f"/publish {TAG}")
    assert plan.confirm is not None and plan.plan is not None
    assert [f.path for f in plan.plan.files] == [PKG]
    done = await world.say("hugo", plan.confirm.line)

    assert not done.private, done.text
    assert snapshot(world).items() >= before.items()  # nothing already public changed
    assert world.public_files() - set(before) == {f"3.14.1/{PKG}"}
    records = {r["url"]: r for r in api.files("Python 3.14.1")}
    assert len(records) == 12 and records.items() >= records_before.items()
    added = world.chat.texts(ChannelKind.ANNOUNCEMENT)[-1]
    assert added.startswith(f"{TAG} has 1 file added: {PKG}; confirmed by hugo.")
    assert world.events(TAG, EventKind.PUBLISHED) == ["published", "published"]
    assert (await world.say("eve", f"/status {TAG}")).text.startswith(f"{TAG}: published by hugo")


async def test_a_late_publish_says_how_many_files_it_added_and_how_many_are_public_in_all(
    published: World,
) -> None:
    world = published
    await publish_without_macos(world)
    public = len(world.public_files())
    world.write(TAG, PKG, "the notarized installer\n")
    assert not (await world.say("ned", f"/ready macos {TAG}")).private

    done = await world.say("hugo", await world.plan(TAG))

    assert done.text == f"Published {TAG}: 1 more file is public ({public + 1} in all)."
    assert done.tone is Tone.SUCCESS


async def test_a_staged_file_under_a_public_name_blocks(published: World) -> None:
    world = published
    await publish_without_macos(world)
    world.write(TAG, "Python-3.14.1.tgz", "a rebuilt tarball\n")

    ready = await world.say("hugo", f"/ready source {TAG}")
    plan = await world.say("hugo", f"/publish {TAG}")

    assert ready.private and "Python-3.14.1.tgz (already public)" in ready.text
    assert plan.private and "Python-3.14.1.tgz (already public)" in plan.text
    assert (world.public / TAG / "Python-3.14.1.tgz").read_text() != "a rebuilt tarball\n"


async def test_with_nothing_staged_a_published_release_still_refuses_changes(
    published: World,
) -> None:
    world = published
    await publish_without_macos(world)

    for line in (f"/ready source {TAG}", f"/publish {TAG}", f"/hold {TAG}"):
        reply = await world.say("hugo", line)
        assert reply.private and "is already published" in reply.text


async def test_an_unexpected_late_file_needs_a_waiver(published: World) -> None:
    world = published
    await publish_without_macos(world)
    world.write(TAG, "python-3.14.1-errata.txt", "errata\n")

    blocked = await world.say("hugo", f"/publish {TAG}")
    assert blocked.private and "python-3.14.1-errata.txt (unexpected)" in blocked.text
    assert not (await world.say("hugo", f"/waive {TAG} python-3.14.1-errata.txt")).private
    assert not (await world.say("hugo", f"/ready source {TAG}")).private
    done = await world.say("hugo", await world.plan(TAG))

    assert not done.private, done.text
    assert "3.14.1/python-3.14.1-errata.txt" in world.public_files()


async def test_a_late_publish_stopped_midway_resumes_after_a_restart(
    published: World, api: PydotorgDouble
) -> None:
    world = published
    await publish_without_macos(world)
    world.write(TAG, PKG, "the notarized installer\n")
    assert not (await world.say("ned", f"/ready macos {TAG}")).private
    line = await world.plan(TAG)
    api.fail("create", nth=1, status=500, times=10)

    stopped = await world.say("hugo", line)

    assert stopped.private and "did not finish" in stopped.text
    assert f"3.14.1/{PKG}" in world.public_files()  # promotion is done and stays done
    assert len(api.files("Python 3.14.1")) == 11  # the earlier records were not touched
    busy = await world.say("hugo", f"/publish {TAG}")
    assert busy.private and "being published right now" in busy.text
    api.faults.clear()
    world.start()  # a restart; the next scan resumes the journal
    world.conn.registry = PydotorgRegistry(api.url, f"rm:{KEY}", world.profile, retry=FAST)
    await world.gate.scan()

    assert len(api.files("Python 3.14.1")) == 12
    assert world.events(TAG, EventKind.PUBLISHED) == ["published", "published"]
    assert len(world.chat.texts(ChannelKind.ANNOUNCEMENT)) == 2
