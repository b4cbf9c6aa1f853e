"""A download server that stops answering (its SSH sessions stopped with SIGSTOP, as a hung
machine or a saturated link does) costs each read its deadline and nothing more: chat
answers, the scan reports it once, later scans still run, and all is well once it answers."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from bot.ports.messages import ChannelKind
from tests.sshd import SshServer, _descendants
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
