"""Holds: each person lifts their own (an RM lifts any), and a hold pauses a publish that
stopped part-way: nothing more becomes public until it is lifted."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.domain.history import EventKind
from bot.domain.tags import ReleaseTag
from tests.conftest import World

TAG = ReleaseTag.parse("3.14.1")


async def test_unhold_by_one_holder_keeps_the_other_holders_hold(world: World) -> None:
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    assert not (await world.say("steve", "/hold 3.14.1 installer crashes")).private
    assert not (await world.say("ned", "/hold 3.14.1 notarization failed")).private

    assert not (await world.say("steve", "/unhold 3.14.1")).private

    assert set(world.store.release(TAG).holds) == {"ned"}
    blocked = await world.say("hugo", "/publish 3.14.1")
    assert blocked.private and blocked.confirm is None
    assert "held by ned" in blocked.text


async def stopped_publish(world: World) -> Path:
    """A confirmed publish of 3.14.1 whose promotion cannot run: a file where its public
    folder goes. Returns that file (remove it and the cause is gone)."""
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    world.public.mkdir(parents=True, exist_ok=True)
    blocker = world.public / "3.14.1"
    blocker.write_text("not a folder")
    reply = await world.say("hugo", line)
    assert reply.private and world.store.release(TAG).publishing is not None, reply.text
    return blocker


async def test_a_hold_keeps_a_stopped_publish_from_resuming_until_it_is_lifted(
    world: World,
) -> None:
    blocker = await stopped_publish(world)
    assert not (await world.say("ned", "/hold 3.14.1 wrong pkg")).private
    blocker.unlink()  # the cause is gone, but the release is held

    await world.gate.scan()
    world.start()  # a restart does not lift it either
    await world.gate.scan()

    assert world.public_files() == set()
    assert world.events("3.14.1", EventKind.PUBLISHED) == []
    assert not (await world.say("ned", "/unhold 3.14.1")).private
    await world.gate.scan()
    assert world.events("3.14.1", EventKind.PUBLISHED) == ["published"]


async def test_a_hold_taken_while_a_resume_waits_for_the_release_is_respected(
    world: World,
) -> None:
    # The resume looks at the release, then waits for its lock while /hold holds it: the
    # hold must count, or the publish would resume under it.
    blocker = await stopped_publish(world)
    blocker.unlink()
    lock = world.gate._services.lock(TAG)
    await lock.__aenter__()
    try:
        resuming = asyncio.ensure_future(world.gate.resume())
        for _ in range(20):  # no I/O on its way: it saw no hold and now waits for the lock
            await asyncio.sleep(0)
        assert not resuming.done()
        world.store.append(TAG, "ned", EventKind.HELD, reason="wrong pkg")
    finally:
        await lock.__aexit__(None, None, None)
    await resuming

    assert world.public_files() == set()
    assert world.events("3.14.1", EventKind.PUBLISHED) == []
