"""The bot's own disk full: the state file on a small tmpfs the test mounts (tests run as
root), filled to the last byte. A command that needs to write the journal is refused in one
sentence and changes nothing; a scheduled resume says so once in the channel; nothing
crashes, and everything goes on once there is space again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.domain.history import EventKind
from bot.domain.tags import ReleaseTag
from bot.ports.messages import ChannelKind
from tests.conftest import World
from tests.mounts import tmpfs
from tests.test_full_disk import fill


@pytest.fixture
def state_fs(tmp_path: Path) -> Iterator[Path]:
    """``data/`` (the state file's folder) on a 1 MiB tmpfs; staging and public elsewhere."""
    with tmpfs(tmp_path / "data", "size=1m,nr_inodes=200") as data:
        for name in ("staging", "public"):
            (tmp_path / "files" / name).mkdir(parents=True)
            (data / name).symlink_to(tmp_path / "files" / name)
        yield data


async def test_a_full_state_disk_refuses_the_confirmation_in_one_sentence(
    tmp_path: Path, state_fs: Path
) -> None:
    world = World(tmp_path)
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    fillers = fill(state_fs)

    reply = await world.say("hugo", line)

    assert reply.private, reply.text
    assert reply.text.startswith(f"Cannot write the state file {state_fs / 'state.db'}: ")
    assert "disk is full" in reply.text and "Nothing was changed" in reply.text
    assert world.public_files() == set()
    refused = await world.say("hugo", "/publish 3.14.9")  # a refusal it cannot record
    assert refused.private and "Traceback" not in refused.text
    status = await world.say("eve", "/status 3.14.1")  # reading still works
    assert "3.14.1" in status.text
    assert world.events("3.14.1", EventKind.CONFIRMED) == []

    for filler in fillers:
        filler.unlink()
    done = await world.say("hugo", line)  # the same code: nothing was spent
    assert "Published 3.14.1" in done.text, done.text


async def test_a_full_state_disk_during_a_resume_is_told_once_then_the_publish_finishes(
    tmp_path: Path, state_fs: Path
) -> None:
    world = World(tmp_path)
    staged = world.stage("3.14.1")
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    blocker = world.public / "3.14.1"
    blocker.write_text("a file where the release's folder goes")
    stopped = await world.say("hugo", line)
    assert stopped.private and "did not finish" in stopped.text
    fillers = fill(state_fs)
    blocker.unlink()  # the publish could go on, but its journal cannot be written

    for _ in range(3):
        await world.gate.scan()  # never raises

    told = [
        n
        for n in world.chat.posts
        if n.kind is ChannelKind.NOTICE and "Cannot write the state file" in n.text
    ]
    assert len(told) == 1, told
    assert told[0].text.startswith(
        f"Publishing 3.14.1 waits: Cannot write the state file {state_fs / 'state.db'}: "
    )
    assert told[0].text.endswith(
        ". Nothing more happens until the state file can be written again; then it resumes "
        "by itself."
    )
    assert told[0].tag == "3.14.1" and told[0].mentions == ("hugo",)  # the publisher acts
    assert not world.store.release(ReleaseTag.parse("3.14.1")).is_published
    assert world.chat.texts(ChannelKind.ANNOUNCEMENT) == []

    for filler in fillers:
        filler.unlink()
    await world.gate.scan()
    assert world.events("3.14.1", EventKind.PUBLISHED) == ["published"]
    assert len(world.public_files()) == len(staged)
    assert len(world.chat.texts(ChannelKind.ANNOUNCEMENT)) == 1
