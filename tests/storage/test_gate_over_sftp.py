"""The whole gate on the real download-server path: SFTP storage against a real sshd."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

from bot.demo import stage_demo
from bot.domain.history import EventKind
from bot.domain.profile import load_profile
from bot.ports.messages import ChannelKind
from bot.service.gate import PIPELINE
from bot.storage.sftp import Connection, Move, SftpStorage
from tests.conftest import World
from tests.console_driver import RELBOT, publish_through_console
from tests.pinned import NO_SIGNATURES, RELEASE_CYCLE_LINE
from tests.sshd import SshServer
from tests.storage.conftest import sftp_storage


def test_console_rehearsal_over_sftp_publishes_every_file(tmp_path: Path, sshd: SshServer) -> None:
    staging, public = tmp_path / "srv" / "staging", tmp_path / "srv" / "public"
    (tmp_path / "relbot.toml").write_text(
        RELEASE_CYCLE_LINE
        + textwrap.dedent(f"""
        [storage]
        kind = "sftp"
        host = "127.0.0.1"
        port = {sshd.port}
        user = "{sshd.user}"
        key_file = "{sshd.client_key}"
        known_hosts = "{sshd.known_hosts}"
        staging = "{staging}"
        public = "{public}"

        [people.hugo]
        rm = ["3.14"]
        roles = ["source", "docs", "windows", "macos"]
        """)
        + NO_SIGNATURES
    )
    staged = stage_demo(staging, load_profile("cpython"))
    public.mkdir(parents=True)  # relbot check reports a missing folder, it never makes one
    check = subprocess.run(
        [str(RELBOT), "check"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert check.returncode == 0, check.stderr
    lines = [f"/ready {role} 3.14.1" for role in ("source", "docs", "windows", "macos")]
    session = publish_through_console(tmp_path, [*lines, "/publish 3.14.1"], "3.14.1")
    assert session.returncode == 0, session.stderr
    assert "Published 3.14.1: 19 files are public." in session.after_confirm
    published = {p.name for p in public.rglob("*") if p.is_file()}
    assert published == {p.name for p in staged}
    assert not (staging / "3.14.1").exists()  # the staged originals, unchanged: removed


def sftp_world(tmp_path: Path, server: SshServer, cls: type[SftpStorage] = SftpStorage) -> World:
    world = World(tmp_path)
    world.storage = sftp_storage(server, world.staging, world.public, cls)  # type: ignore[assignment]
    world.start()
    return world


async def test_sshd_stopped_during_scans_gives_one_notice_and_one_recovery(
    tmp_path: Path, own_sshd: SshServer
) -> None:
    world = sftp_world(tmp_path, own_sshd)
    world.stage("3.14.1")
    await world.gate.scan()
    own_sshd.stop()
    for _ in range(5):
        await world.gate.scan()
    own_sshd.start()
    for _ in range(12):
        await world.gate.scan()
    notices = world.chat.texts(ChannelKind.NOTICE)
    assert sum("Cannot scan staging" in n for n in notices) == 1, notices
    assert sum("reachable again" in n for n in notices) == 1, notices


class DroppedMidPublish(SftpStorage):
    """The server goes away just as the batch of moves starts."""

    server: SshServer

    def _run_batch(self, conn: Connection, moves: list[Move]) -> bool:
        self.server.stop()
        return super()._run_batch(conn, moves)


async def test_sshd_stopped_in_the_middle_of_a_publish_then_restarted_publishes_once(
    tmp_path: Path, own_sshd: SshServer
) -> None:
    DroppedMidPublish.server = own_sshd
    world = sftp_world(tmp_path, own_sshd)
    (world.public / "3.14.0").mkdir(parents=True)  # a prerelease: the per-file batch
    (world.public / "3.14.0" / "python-3.14.0b3.exe").write_text("b3")
    staged = world.stage("3.14.0rc1")
    await world.ready_all("3.14.0rc1")
    line = await world.plan("3.14.0rc1")
    world.start(sftp_storage(own_sshd, world.staging, world.public, DroppedMidPublish))  # type: ignore[arg-type]
    reply = await world.say("hugo", line)
    assert reply.private and "did not finish" in reply.text
    assert any("stopped at promote" in n for n in world.chat.texts(ChannelKind.NOTICE))

    own_sshd.start()
    world.start()  # restarted bot with a plain SFTP storage
    await world.gate.scan()
    public = world.public_files() - {"3.14.0/python-3.14.0b3.exe"}
    assert len(public) == len(staged)
    assert world.staged_files("3.14.0rc1") == set()
    assert world.events("3.14.0rc1", EventKind.PUBLISHED) == ["published"]
    assert world.events("3.14.0rc1", EventKind.STEP_DONE).count("step-done") == len(PIPELINE)


async def test_the_copy_hashes_afresh_so_a_same_second_rewrite_is_refused_and_its_claim_withdrawn(
    tmp_path: Path, sshd: SshServer
) -> None:
    world = sftp_world(tmp_path, sshd)
    world.stage("3.14.1")
    pkg = world.staging / "3.14.1" / "python-3.14.1-macos11.pkg"
    os.utime(pkg, (1_800_000_000.2, 1_800_000_000.2))
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    size = pkg.stat().st_size
    pkg.write_bytes(b"X" * size)  # same size, same whole second: the listing cannot tell
    os.utime(pkg, (1_800_000_000.7, 1_800_000_000.7))
    reply = await world.say("hugo", line)
    assert reply.private and "python-3.14.1-macos11.pkg changed" in reply.text
    assert world.public_files() == set()
    # The claim is withdrawn and the cache forgets the stale hash: no loop of stale plans.
    again = await world.say("hugo", "/publish 3.14.1")
    assert again.private and "macos" in again.text
    await world.ready_all("3.14.1")
    done = await world.say("hugo", await world.plan("3.14.1"))
    assert "Published 3.14.1" in done.text, done.text
    assert (world.public / "3.14.1" / pkg.name).read_bytes() == b"X" * size
