"""A full filesystem during ``/publish TAG confirm CODE``: a real tmpfs, mounted by the test
(tests run as root), holding staging and public. The bot must stay up, tell the channel,
and finish the publish by itself once space is back."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.domain.history import EventKind
from bot.ports.messages import ChannelKind
from tests.conftest import World
from tests.mounts import tmpfs


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    with tmpfs(tmp_path / "fs", "size=4m,nr_inodes=400") as mount:
        yield mount


def fill(folder: Path) -> list[Path]:
    """Take every free byte and inode of ``folder``'s filesystem; returns what to delete."""
    fillers = []
    big = folder / "filler"
    fillers.append(big)
    with big.open("wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError as err:
            assert err.errno == errno.ENOSPC
    for i in range(10_000):
        try:
            (folder / f"filler-{i}").touch()
        except OSError as err:
            assert err.errno == errno.ENOSPC
            break
        fillers.append(folder / f"filler-{i}")
    return fillers


async def test_a_full_filesystem_at_confirmation_leaves_the_bot_serving_then_publishes(
    tmp_path: Path, small_fs: Path
) -> None:
    (small_fs / "staging").mkdir()
    (small_fs / "public").mkdir()
    (tmp_path / "data").mkdir()
    # The state file stays on the normal disk; staging and public share the small one.
    (tmp_path / "data" / "staging").symlink_to(small_fs / "staging")
    (tmp_path / "data" / "public").symlink_to(small_fs / "public")
    world = World(tmp_path)
    staged = world.stage("3.14.1")
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    fillers = fill(small_fs)

    reply = await world.say("hugo", line)

    assert reply.private and "did not finish" in reply.text, reply.text
    notices = world.chat.texts(ChannelKind.NOTICE)
    assert any("No space left on device" in n for n in notices), notices
    assert world.public_files() == set()
    status = await world.say("eve", "/status 3.14.1")  # still serving
    assert "3.14.1" in status.text
    await world.gate.scan()  # retried, not crashed, not told twice
    assert sum("No space left on device" in n for n in world.chat.texts(ChannelKind.NOTICE)) == 1

    for filler in fillers:
        filler.unlink()
    await world.gate.scan()

    assert world.events("3.14.1", EventKind.PUBLISHED) == ["published"]
    assert len(world.public_files()) == len(staged)
    assert world.chat.texts(ChannelKind.ANNOUNCEMENT)
