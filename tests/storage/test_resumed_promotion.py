"""A promotion that resumes after time has passed (a stop, a restart) hashes what it promotes
again: the bot's copies are checked by identity (inode, owner, mode, size) everywhere else,
and identity cannot see bytes rewritten in place (only root could, but a tampered copy must
never become public)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bot.domain.history import EventKind
from bot.domain.plan import PublishPlan
from bot.domain.tags import ReleaseTag
from bot.ports.messages import ChannelKind
from bot.storage.local import LocalStorage
from tests.conftest import World
from tests.storage.test_stops import FailsAtTheSecondRename

PKG = "python-3.14.1-macos11.pkg"
TAG = "3.14.1"


def copy_of(world: World, path: str) -> Path:
    return world.storage.work / "frozen" / TAG / "tree" / TAG / path


def rewrite_in_place(path: Path, text: bytes = b"EVIL") -> None:
    """Same inode, owner, mode (0444 stays: root writes through it) and size."""
    before = path.stat()
    with path.open("r+b") as f:
        f.write(text)
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mode) == (
        before.st_ino,
        before.st_size,
        before.st_mode,
    )


async def stuck_at_promote(world: World) -> list[str]:
    """A confirmed publish whose promotion waits: a file stands where public/3.14.1 goes."""
    staged = world.stage(TAG)
    await world.ready_all(TAG)
    line = await world.plan(TAG)
    world.public.mkdir(parents=True, exist_ok=True)
    (world.public / TAG).write_text("in the way")
    reply = await world.say("hugo", line)
    assert reply.private and "did not finish" in reply.text, reply.text
    return staged


async def test_a_copy_rewritten_in_place_while_stopped_is_never_published_after_a_restart(
    world: World,
) -> None:
    staged = await stuck_at_promote(world)
    rewrite_in_place(copy_of(world, PKG))
    (world.public / TAG).unlink()  # the cause is gone
    world.start()  # a new process: its copies were made by another
    for _ in range(3):
        await world.gate.scan()

    assert world.public_files() == set()
    assert world.events(TAG, EventKind.PUBLISHED) == []
    assert world.events(TAG, EventKind.STOPPED) == ["stopped"]  # once, no retry loop
    told = [n for n in world.chat.texts(ChannelKind.NOTICE) if "stopped at promote" in n]
    assert f"the bot's copy of {PKG} changed" in told[-1], told
    assert "/abort 3.14.1" in told[-1]
    assert world.chat.texts(ChannelKind.ANNOUNCEMENT) == []

    aborted = await world.say("hugo", "/abort 3.14.1")
    assert not aborted.private, aborted.text
    assert world.staged_files(TAG) == set(staged)  # staging was never touched
    assert not copy_of(world, PKG).exists()
    offer = await world.say("hugo", "/publish 3.14.1")
    assert offer.confirm is not None, offer.text  # publish works again


async def test_a_copy_rewritten_while_waiting_in_the_same_process_is_caught_too(
    world: World,
) -> None:
    await stuck_at_promote(world)
    rewrite_in_place(copy_of(world, PKG))
    (world.public / TAG).unlink()
    await world.gate.scan()  # the same bot, the next scan: time has passed all the same

    assert world.public_files() == set()
    assert world.events(TAG, EventKind.STOPPED) == ["stopped"]
    assert world.chat.texts(ChannelKind.ANNOUNCEMENT) == []


async def test_an_untouched_stopped_publish_resumes_and_publishes_the_confirmed_bytes(
    world: World,
) -> None:
    staged = await stuck_at_promote(world)
    confirmed = copy_of(world, PKG).read_bytes()
    (world.public / TAG).unlink()
    world.start()
    await world.gate.scan()

    assert world.events(TAG, EventKind.PUBLISHED) == ["published"]
    assert len(world.public_files()) == len(staged)
    assert (world.public / TAG / PKG).read_bytes() == confirmed


async def test_a_public_file_rewritten_before_a_resumed_promotion_stops_it_unannounced(
    world: World,
) -> None:
    world.start(FailsAtTheSecondRename(world.staging, world.public))  # the docs went
    world.stage(TAG)
    await world.ready_all(TAG)
    reply = await world.say("hugo", await world.plan(TAG))
    assert reply.private and "did not finish" in reply.text, reply.text
    docs = sorted(world.public_files())
    assert docs and all(p.startswith("doc/3.14.1/") for p in docs)
    tampered = world.public / docs[0]
    rewrite_in_place(tampered)

    world.start()  # restarted, the cause gone
    await world.gate.scan()
    await world.gate.scan()

    assert world.events(TAG, EventKind.PUBLISHED) == []
    assert world.events(TAG, EventKind.STOPPED) == ["stopped"]
    assert world.chat.texts(ChannelKind.ANNOUNCEMENT) == []
    name = os.path.basename(docs[0])
    told = [n for n in world.chat.texts(ChannelKind.NOTICE) if "stopped at promote" in n]
    assert f"the bot's copy of docs/{name} changed" in told[-1], told
    # Nothing more became public after the check: the release's own folder is not there.
    assert not (world.public / TAG).exists()
    state = world.store.release(ReleaseTag.parse(TAG))
    assert state.stopped is not None and state.stopped.public


class KilledAfterTheCopies(LocalStorage):
    """The process dies once every copy is made, before the freeze is journaled as done."""

    def freeze(self, plan: PublishPlan, *, fresh: bool = True) -> list[str]:
        assert super().freeze(plan, fresh=fresh) == []
        raise KeyboardInterrupt  # not an error the gate handles: the process is gone


async def test_a_copy_kept_by_a_resumed_freeze_is_hashed_again_before_it_moves(
    world: World,
) -> None:
    world.stage(TAG)
    await world.ready_all(TAG)
    line = await world.plan(TAG)
    world.start(KilledAfterTheCopies(world.staging, world.public))
    with pytest.raises(KeyboardInterrupt):
        await world.say("hugo", line)
    rewrite_in_place(copy_of(world, PKG))  # the resumed freeze keeps it: same size and owner

    world.start()
    await world.gate.scan()
    await world.gate.scan()

    assert world.public_files() == set()
    assert world.events(TAG, EventKind.STOPPED) == ["stopped"]
    assert world.chat.texts(ChannelKind.ANNOUNCEMENT) == []
