"""A confirmed publish over SFTP is pinned to its plan, against a real sshd."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from bot.domain.history import EventKind
from bot.domain.plan import PublishPlan
from bot.ports import PromotionReport
from bot.ports.messages import ChannelKind
from bot.storage.sftp import SftpStorage
from tests.sshd import SshServer
from tests.storage.conftest import sftp_storage
from tests.storage.test_gate_over_sftp import sftp_world

PKG = "python-3.14.1-macos11.pkg"


class ServerGoneBeforePromotion(SftpStorage):
    """The download server goes away between the bot's copies and the promotion."""

    server: SshServer

    def promote(
        self, plan: PublishPlan, *, public_before: Sequence[str] = (), recheck: bool = False
    ) -> PromotionReport:
        self.server.stop()
        return super().promote(plan, public_before=public_before, recheck=recheck)


async def test_a_staged_file_overwritten_while_the_server_was_down_is_never_published(
    tmp_path: Path, own_sshd: SshServer
) -> None:
    ServerGoneBeforePromotion.server = own_sshd
    world = sftp_world(tmp_path, own_sshd)
    staged = world.stage("3.14.1")
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    world.start(sftp_storage(own_sshd, world.staging, world.public, ServerGoneBeforePromotion))  # type: ignore[arg-type]

    reply = await world.say("hugo", line)

    assert reply.private and "did not finish" in reply.text, reply.text
    assert any("stopped at promote" in n for n in world.chat.texts(ChannelKind.NOTICE))
    work = world.public.parent / ".relbot-public"
    copy = work / "frozen" / "3.14.1" / "tree" / "3.14.1" / PKG
    confirmed = copy.read_bytes()
    assert work.stat().st_mode & 0o777 == 0o700
    world.write("3.14.1", PKG, b"uploaded after the confirmation")

    own_sshd.start()
    world.start()  # a restarted bot with a plain SFTP storage
    await world.gate.scan()

    assert world.events("3.14.1", EventKind.PUBLISHED) == ["published"]
    assert (world.public / "3.14.1" / PKG).read_bytes() == confirmed
    assert len(world.public_files()) == len(staged)
    assert (world.staging / "3.14.1" / PKG).read_bytes() == b"uploaded after the confirmation"


async def test_a_regular_file_where_the_public_folder_should_be_stops_then_resumes(
    tmp_path: Path, sshd: SshServer
) -> None:
    world = sftp_world(tmp_path, sshd)
    staged = world.stage("3.14.1")
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    world.public.mkdir(parents=True, exist_ok=True)
    (world.public / "3.14.1").write_text("not a folder")

    reply = await world.say("hugo", line)
    assert reply.private and "did not finish" in reply.text, reply.text
    world.write("3.14.1", PKG, b"uploaded after the confirmation")
    world.start()
    await world.gate.resume()  # a restart resumes without crashing
    assert world.public_files() == {"3.14.1"}
    assert len([n for n in world.chat.texts(ChannelKind.NOTICE) if "stopped at" in n]) >= 1

    (world.public / "3.14.1").unlink()
    await world.gate.scan()
    assert world.events("3.14.1", EventKind.PUBLISHED) == ["published"]
    assert len(world.public_files()) == len(staged)
    assert (world.public / "3.14.1" / PKG).read_bytes() != b"uploaded after the confirmation"


async def test_abort_over_sftp_drops_the_copies_and_keeps_a_newer_upload(
    tmp_path: Path, sshd: SshServer
) -> None:
    world = sftp_world(tmp_path, sshd)
    staged = world.stage("3.14.1")
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    world.public.mkdir(parents=True, exist_ok=True)
    (world.public / "3.14.1").write_text("not a folder")
    reply = await world.say("hugo", line)
    assert reply.private and "did not finish" in reply.text, reply.text
    world.write("3.14.1", PKG, b"a newer build")

    aborted = await world.say("hugo", "/abort 3.14.1")

    assert not aborted.private, aborted.text
    assert world.staged_files("3.14.1") == set(staged)
    assert (world.staging / "3.14.1" / PKG).read_bytes() == b"a newer build"
    assert not (world.public.parent / ".relbot-public" / "frozen" / "3.14.1").exists()
    assert world.public_files() == {"3.14.1"}
    refused = await world.say("hugo", "/abort 3.14.1")
    assert refused.private and "no confirmed publish" in refused.text


async def test_a_copy_rewritten_in_place_while_stopped_is_hashed_on_the_server_and_refused(
    tmp_path: Path, sshd: SshServer
) -> None:
    world = sftp_world(tmp_path, sshd)
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    world.public.mkdir(parents=True, exist_ok=True)
    (world.public / "3.14.1").write_text("not a folder")
    reply = await world.say("hugo", line)
    assert reply.private and "did not finish" in reply.text, reply.text
    copy = world.public.parent / ".relbot-public" / "frozen" / "3.14.1" / "tree" / "3.14.1" / PKG
    with copy.open("r+b") as f:  # same inode, owner, mode and size: only the bytes differ
        f.write(b"EVIL")

    (world.public / "3.14.1").unlink()
    world.start()
    await world.gate.scan()
    await world.gate.scan()

    assert world.events("3.14.1", EventKind.PUBLISHED) == []
    assert world.events("3.14.1", EventKind.STOPPED) == ["stopped"]
    assert not (world.public / "3.14.1").exists()
    told = [n for n in world.chat.texts(ChannelKind.NOTICE) if "stopped at promote" in n]
    assert f"the bot's copy of {PKG} changed" in told[-1], told
