"""The bot's places are out of uploaders' reach: the work folder (copies, aside area, lock)
is the bot's own, checked before every use, and a folder that is not (renamed away,
pre-created by an uploader, a symlink, another mode) stops the publish with the truth. Tried
with a real uploader account, locally and over SFTP against the real sshd."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from bot.domain.history import EventKind
from bot.domain.tags import ReleaseTag
from bot.ports.messages import ChannelKind
from tests.conftest import World
from tests.sshd import SshServer
from tests.storage.conftest import sftp_storage
from tests.storage.test_bots_bytes import stage_as, team_on
from tests.uploader import Uploader


def work(world: World) -> Path:
    return world.public.parent / f".relbot-{world.public.name}"


async def stuck(world: World, who: Uploader, tag: str = "3.14.1") -> Path:
    """A confirmed publish whose promotion waits (a file where its public folder goes)."""
    stage_as(who, world, tag)
    await world.ready_all(tag)
    line = await world.plan(tag)
    blocker = world.public / ReleaseTag.parse(tag).version
    blocker.write_text("a file where the release's folder goes")
    reply = await world.say("hugo", line)
    assert reply.private and "did not finish" in reply.text, reply.text
    return blocker


async def test_by_default_the_uploader_can_neither_rename_nor_replace_the_bots_places(
    shared_root: Path, uploader: Uploader, request: pytest.FixtureRequest
) -> None:
    world = team_on(shared_root, uploader, "local", request)
    lease = world.storage.lock(world_holder(world))
    try:
        await stuck(world, uploader)
        place = work(world)
        assert stat.S_IMODE(place.stat().st_mode) == 0o700 and place.stat().st_uid == 0
        for attempt in (
            f"mv {place} {place}.away",
            f"rm -rf {place}",
            f"mkdir {place}.new && mv -T {place}.new {place}",
            f"ls {place}",
            f"printf '{{}}' > {place / 'lock'}",
        ):
            result = uploader.run(attempt)
            assert result.returncode != 0, f"the uploader could: {attempt}"
        assert world.storage.check() == []  # nothing to change: the default is safe here
    finally:
        lease.release()


def world_holder(world: World):  # type: ignore[no-untyped-def]
    from bot.ports.lease import Holder

    return Holder.this_process(world.root / "data" / "state.db", 30)


@pytest.mark.parametrize("kind", ["local", "sftp"])
async def test_a_work_folder_renamed_away_while_stopped_stops_the_publish_with_the_truth(
    shared_root: Path, uploader: Uploader, kind: str, request: pytest.FixtureRequest
) -> None:
    world = team_on(shared_root, uploader, kind, request)
    work(world).parent.chmod(0o777)  # a bad setup: uploaders may write the work's parent
    problems = world.storage.check()
    assert any("chmod go-w" in p and "chmod +t" in p for p in problems), problems
    blocker = await stuck(world, uploader)
    staged = world.staged_files("3.14.1")

    moved = uploader.run(f"mv {work(world)} {work(world).parent / 'stolen'}")
    assert moved.returncode == 0, moved.stderr
    blocker.unlink()
    for _ in range(3):
        await world.gate.scan()

    assert world.public_files() == set()
    told = [n for n in world.chat.texts(ChannelKind.NOTICE) if "work folder" in n]
    assert len(told) == 1, told
    assert "is gone" in told[0] and "/abort 3.14.1" in told[0] and "back in staging" not in told[0]
    assert world.events("3.14.1", EventKind.STOPPED) == ["stopped"]
    aborted = await world.say("hugo", "/abort 3.14.1")
    assert not aborted.private, aborted.text
    assert "back in staging" not in aborted.text and "nothing was made public" in aborted.text
    # The truth: staging holds every file as uploaded, the claims stand.
    assert world.staged_files("3.14.1") == staged
    state = world.store.release(ReleaseTag.parse("3.14.1"))
    assert len(state.claims) == 4 and state.publishing is None
    status = await world.say("eve", "/status 3.14.1")
    assert "4 of 4 roles ready" in status.text or "publishable" in status.text, status.text


@pytest.mark.parametrize("kind", ["local", "sftp"])
@pytest.mark.parametrize("inner", ["700", "777"], ids=["like-the-bots", "open"])
async def test_a_work_folder_pre_created_by_an_uploader_is_never_used(
    shared_root: Path, uploader: Uploader, kind: str, inner: str, request: pytest.FixtureRequest
) -> None:
    world = team_on(shared_root, uploader, kind, request)
    place = work(world)
    place.parent.chmod(0o777)  # a bad setup: uploaders may write the work's parent
    # The uploader makes it first, mode 700 like the bot's own, its areas as the bot's too
    # (only the owner gives it away) or open to anyone.
    made = uploader.run(f"mkdir -m 700 {place} && mkdir -m {inner} {place}/aside {place}/frozen")
    assert made.returncode == 0, made.stderr
    problems = world.storage.check()
    assert any(f"owned by uid {uploader.uid}" in p for p in problems), problems
    stage_as(uploader, world, "3.14.1")
    await world.ready_all("3.14.1")

    reply = await world.say("hugo", await world.plan("3.14.1"))

    assert reply.private and "did not finish" in reply.text
    assert f"owned by uid {uploader.uid}, not by the bot" in reply.text
    assert "/abort 3.14.1" in reply.text
    assert world.public_files() == set()
    found = [p for p in place.rglob("*")]
    assert {p.name for p in found} == {"aside", "frozen"}  # nothing of the bot's went in
    aborted = await world.say("hugo", "/abort 3.14.1")
    assert not aborted.private, aborted.text


async def test_a_work_folder_that_is_a_symlink_to_a_bot_owned_folder_is_refused(
    shared_root: Path, uploader: Uploader, request: pytest.FixtureRequest
) -> None:
    world = team_on(shared_root, uploader, "local", request)
    elsewhere = shared_root / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    elsewhere.chmod(0o700)  # the bot's own, mode 700: only the link gives it away
    work(world).symlink_to(elsewhere)
    stage_as(uploader, world, "3.14.1")
    await world.ready_all("3.14.1")

    reply = await world.say("hugo", await world.plan("3.14.1"))

    assert reply.private and "cannot be trusted (it is not a real folder;" in reply.text, reply.text
    assert list(elsewhere.iterdir()) == []
    assert world.public_files() == set()


@pytest.mark.parametrize("kind", ["local", "sftp"])
async def test_new_public_folders_are_0755_and_files_0444_under_the_units_umask(
    tmp_path: Path, kind: str
) -> None:
    # The shipped unit runs the bot with UMask=0027; over SFTP the server's umask counts.
    old = os.umask(0o027)
    server = None
    try:
        world = World(tmp_path)
        if kind == "sftp":
            server = SshServer.create(tmp_path / "sshd-umask")
            server.start()  # started under the umask: its sessions inherit it
            world.storage = sftp_storage(server, world.staging, world.public)  # type: ignore[assignment]
            world.start()
        world.stage("3.14.0rc1")  # into an existing 3.14.0/: new folders made file by file
        (world.public / "3.14.0").mkdir(parents=True)
        (world.public / "3.14.0").chmod(0o755)
        await world.ready_all("3.14.0rc1")
        done = await world.say("hugo", await world.plan("3.14.0rc1"))
        assert "Published" in done.text, done.text
    finally:
        os.umask(old)
        if server is not None:
            server.stop()
    made = [p for p in world.public.rglob("*")]
    assert {stat.S_IMODE(p.stat().st_mode) for p in made if p.is_dir()} == {0o755}
    assert {stat.S_IMODE(p.stat().st_mode) for p in made if p.is_file()} == {0o444}
