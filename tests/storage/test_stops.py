"""How a publish stops, and its one way out: nothing half-public when a public folder cannot
be written, exactly which files are public when a move fails part-way, a changed copy told
once, an interrupted /abort finished as an abort."""

from __future__ import annotations

import errno
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.domain.history import EventKind
from bot.domain.tags import ReleaseTag
from bot.ports.messages import ChannelKind
from bot.storage.local import LocalStorage
from tests.conftest import World
from tests.sshd import SshServer
from tests.storage.test_gate_over_sftp import sftp_world

PKG = "python-3.14.1-macos11.pkg"


@pytest.fixture
def immutable() -> Iterator[list[Path]]:
    """Folders made immutable (``chattr +i``: even root cannot add to them), made mutable
    again at the end."""
    made: list[Path] = []
    yield made
    for folder in made:
        subprocess.run(["chattr", "-i", str(folder)], check=False)


async def confirmed(world: World, tag: str = "3.14.1") -> list[str]:
    staged = world.stage(tag)
    await world.ready_all(tag)
    reply = await world.say("hugo", await world.plan(tag))
    assert reply.private and "did not finish" in reply.text, reply.text
    return staged


async def test_a_public_root_the_bot_cannot_write_leaves_nothing_public_then_resumes(
    world: World, immutable: list[Path]
) -> None:
    (world.public / "doc").mkdir(parents=True)  # writable, while its parent is not
    subprocess.run(["chattr", "+i", str(world.public)], check=True)
    immutable.append(world.public)

    staged = await confirmed(world)

    assert world.public_files() == set()  # not even the docs: the folders were tried first
    (told,) = [n for n in world.chat.texts(ChannelKind.NOTICE) if "stopped at promote" in n]
    assert f"{world.public} cannot be written by the bot" in told
    assert "nothing was made public" in told and ".relbot" not in told
    subprocess.run(["chattr", "-i", str(world.public)], check=True)
    await world.gate.scan()
    assert world.events("3.14.1", EventKind.PUBLISHED) == ["published"]
    assert len(world.public_files()) == len(staged)


class FailsAtTheSecondRename(LocalStorage):
    """The second folder's rename fails (the public root turned read-only meanwhile)."""

    renames = 0

    def _rename(self, source: Path, target: Path) -> None:
        self.renames += 1
        if self.renames == 2:
            raise PermissionError(errno.EACCES, "Permission denied", str(source), None, str(target))
        super()._rename(source, target)


async def test_a_move_failing_part_way_names_exactly_the_files_that_are_public(
    world: World,
) -> None:
    world.start(FailsAtTheSecondRename(world.staging, world.public))

    staged = await confirmed(world)

    docs = sorted(world.public_files())
    assert docs and all(p.startswith("doc/3.14.1/") for p in docs)  # the first folder went
    (told,) = [n for n in world.chat.texts(ChannelKind.NOTICE) if "stopped at promote" in n]
    assert f"Cannot publish into {world.public}: Permission denied" in told
    assert f"public already: {docs[0]}" in told
    assert f"({len(docs)} of {len(staged)} files)" in told
    assert ".relbot" not in told  # the public folder is named, never the bot's own
    world.start()  # the cause is gone
    await world.gate.scan()
    assert world.events("3.14.1", EventKind.PUBLISHED) == ["published"]
    assert len(world.public_files()) == len(staged)


class KilledWhileAborting(LocalStorage):
    """The process dies while /abort drops the bot's copies."""

    def discard(self, tag: ReleaseTag) -> None:
        raise KeyboardInterrupt  # not an error the gate handles: the process is gone


async def test_an_abort_killed_midway_finishes_as_an_abort_after_a_restart(world: World) -> None:
    blocker = world.public / "3.14.1"
    world.public.mkdir(parents=True)
    blocker.write_text("a file where the release's folder goes")
    staged = await confirmed(world)
    world.start(KilledWhileAborting(world.staging, world.public))
    with pytest.raises(KeyboardInterrupt):
        await world.say("hugo", "/abort 3.14.1")
    blocker.unlink()  # the publish could go on now: it must not

    world.start()  # restarted
    for _ in range(3):
        await world.gate.scan()

    assert world.public_files() == set()
    assert world.events("3.14.1", EventKind.ABORTED) == ["aborted"]
    assert world.events("3.14.1", EventKind.PUBLISHED) == []
    assert world.staged_files("3.14.1") == set(staged)
    assert not (world.storage.work / "frozen" / "3.14.1").exists()
    done = await world.say("hugo", await world.plan("3.14.1"))
    assert "Published 3.14.1" in done.text, done.text


async def test_over_sftp_a_changed_copy_is_told_once_and_abort_is_the_way_out(
    tmp_path: Path, sshd: SshServer
) -> None:
    world = sftp_world(tmp_path, sshd)
    world.public.mkdir(parents=True)
    blocker = world.public / "3.14.1"
    blocker.write_text("a file where the release's folder goes")
    staged = await confirmed(world)
    copy = tmp_path / "data" / ".relbot-public" / "frozen" / "3.14.1" / "tree" / "3.14.1" / PKG
    copy.chmod(0o644)
    copy.write_bytes(b"tampered")  # only root could
    blocker.unlink()

    for _ in range(3):
        await world.gate.scan()

    assert world.public_files() == set()
    assert world.events("3.14.1", EventKind.STOPPED) == ["stopped"]
    told = [n for n in world.chat.texts(ChannelKind.NOTICE) if f"copy of {PKG} changed" in n]
    assert len(told) == 1 and "/abort 3.14.1" in told[0], told
    aborted = await world.say("hugo", "/abort 3.14.1")
    assert not aborted.private, aborted.text
    assert world.staged_files("3.14.1") == set(staged)
    assert not copy.exists()
