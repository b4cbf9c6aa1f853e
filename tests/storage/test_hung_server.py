"""A download server that stops answering (its SSH sessions stopped with SIGSTOP, as a hung
machine or a saturated link does) costs each read its deadline and nothing more: chat
answers, the scan reports it once, later scans still run, and all is well once it answers."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.domain.tags import ReleaseTag
from bot.errors import StagingUnreachable
from bot.ports.messages import ChannelKind
from bot.storage.sftp import SftpStorage
from tests.sshd import SshServer, _descendants
from tests.storage.conftest import Backend, on_fs, plan_for, sftp_storage, staged_release
from tests.storage.test_gate_over_sftp import sftp_world


async def test_a_server_that_stops_answering_blocks_neither_chat_nor_later_scans(
    tmp_path: Path, own_sshd: SshServer
) -> None:
    world = sftp_world(tmp_path, own_sshd)
    world.gate.reads.seconds = 1.0
    world.stage("3.14.1")
    await world.gate.scan()  # connected, one session open
    assert own_sshd._process is not None
    sessions = _descendants(own_sshd._process.pid)
    assert sessions
    for pid in sessions:
        os.kill(pid, signal.SIGSTOP)
    try:
        await asyncio.wait_for(world.gate.scan(), 30)
        help_text = await asyncio.wait_for(world.say("eve", "/help"), 5)
        status = await asyncio.wait_for(world.say("eve", "/status 3.14.1"), 30)
        await asyncio.wait_for(world.gate.scan(), 30)  # the next scan runs and reports
    finally:
        for pid in sessions:
            os.kill(pid, signal.SIGCONT)

    assert "relbot commands" in help_text.text
    assert "has not finished after 1 s." in status.text
    notices = world.chat.texts(ChannelKind.NOTICE)
    assert notices == [
        "Cannot scan staging: Listing the staging folder has not finished after 1 s. I keep trying."
    ]
    for _ in range(30):  # the stuck reads end once the server answers; scans back off
        await world.gate.scan()
        if world.chat.texts(ChannelKind.NOTICE)[-1] == "Staging is reachable again.":
            break
        await asyncio.sleep(0.2)
    assert world.chat.texts(ChannelKind.NOTICE)[-1] == "Staging is reachable again."
    assert world.gate.reads.stuck() == []


FILES = ["Python-3.14.1.tgz", "Python-3.14.1.tgz.sigstore"]
REL = ReleaseTag.parse("3.14.1")


def operations(team: Backend) -> dict[str, Callable[[SftpStorage], object]]:
    """Each storage operation, and (by its test id) the words it is named by."""
    plan = plan_for(team, "3.14.1", FILES)
    return {
        f"list {team.staging}": lambda s: s.staged_tags(),
        f"list {team.staging / '3.14.1'}": lambda s: s.list_staging(REL),
        f"hash files in {team.staging / '3.14.1'}": lambda s: s.digest(REL, FILES[:1]),
        f"read {team.staging / '3.14.1' / FILES[1]}": lambda s: s.read(REL, FILES[1], 9999),
        "tidy staging of 3.14.1": lambda s: s.tidy(plan),
        f"look at {team.public}": lambda s: s.in_public(plan),
        "publish 3.14.1": lambda s: s.promote(plan),
        "copy the files of 3.14.1": lambda s: s.freeze(plan),
    }


@pytest.mark.parametrize("step", range(8))
def test_each_operation_on_a_hung_server_ends_at_its_deadline_naming_what_it_was_doing(
    tmp_path: Path, own_sshd: SshServer, step: int
) -> None:
    team = staged_release(tmp_path, "3.14.1", FILES)
    what, op = list(operations(team).items())[step]
    # 2 s: the connection and its first command must not miss it on a machine busy with the
    # other test workers.
    storage = sftp_storage(own_sshd, team.staging, team.public, io_timeout=2.0)
    try:
        on_fs(storage, lambda fs: fs.uid())  # connected, exec probed, one session open
        assert own_sshd._process is not None
        sessions = _descendants(own_sshd._process.pid)
        for pid in sessions:
            os.kill(pid, signal.SIGSTOP)
        try:
            with pytest.raises(StagingUnreachable) as stopped:
                op(storage)
        finally:
            for pid in sessions:
                os.kill(pid, signal.SIGCONT)
    finally:
        storage.close()

    assert str(stopped.value) == (
        f"[127.0.0.1]:{own_sshd.port} stopped answering while trying to {what}."
    )
