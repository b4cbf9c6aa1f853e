"""The people who must act are named in the notice that calls on them (the gate), and the
console renders them as @name: a withdrawn claim calls its claimer, a release that became
publishable its RMs, a stopped publish the RM who confirmed."""

from __future__ import annotations

import io
from pathlib import Path

from adapters.console import ConsoleChat
from bot.ports.messages import ChannelKind, ChannelMessage
from tests.conftest import RecordingChat, World


def notices(world: World) -> list[ChannelMessage]:
    assert isinstance(world.chat, RecordingChat)
    return [m for m in world.chat.posts if m.kind is ChannelKind.NOTICE]


async def test_a_claim_withdrawn_by_a_scan_calls_its_claimer(world: World) -> None:
    world.stage("3.14.1")
    await world.say("steve", "/ready windows 3.14.1")
    world.write("3.14.1", "python-3.14.1-amd64.exe", "rebuilt\n")
    await world.gate.scan()

    [notice] = notices(world)
    assert notice.text.startswith("The windows claim on 3.14.1 was withdrawn")
    assert notice.mentions == ("steve",)


async def test_an_rm_withdrawing_someone_elses_claim_calls_the_claimer(world: World) -> None:
    world.stage("3.14.1")
    await world.say("ned", "/ready macos 3.14.1")
    await world.say("hugo", "/unready macos 3.14.1")
    await world.say("hugo", "/ready source 3.14.1")
    await world.say("hugo", "/unready source 3.14.1")

    assert [(n.text, n.mentions) for n in notices(world)] == [
        ("hugo withdrew macos from 3.14.1.", ("ned",)),
        ("hugo withdrew source from 3.14.1.", ()),  # nobody else to tell
    ]


async def test_the_last_ready_calls_every_rm_of_the_branch_once(world: World) -> None:
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    await world.gate.scan()  # publishable still: nobody is called twice

    [notice] = notices(world)
    assert notice.text == "3.14.1 is publishable: every role is ready. RM: /publish 3.14.1"
    assert notice.mentions == ("hugo", "alice")


async def test_a_restart_that_finds_it_publishable_calls_nobody(world: World) -> None:
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    assert isinstance(world.chat, RecordingChat)
    world.chat.posts.clear()
    world.start()  # a new process on the same state
    await world.gate.scan()

    assert notices(world) == []


async def test_a_stopped_publish_calls_the_rm_who_confirmed(world: World) -> None:
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1", "alice")
    clash = world.public / "3.14.1" / "Python-3.14.1.tgz"
    clash.parent.mkdir(parents=True)
    clash.write_text("an older upload, different bytes\n")

    reply = await world.say("alice", line)

    assert reply.private
    stopped = notices(world)[-1]
    assert stopped.text.startswith("Publishing 3.14.1 was stopped before anything moved")
    assert stopped.mentions == ("alice",)


async def test_the_console_renders_mentions_as_at_names(tmp_path: Path) -> None:
    out = io.StringIO()
    chat = ConsoleChat(out)
    await chat.post(ChannelMessage(ChannelKind.NOTICE, "3.14.1", "Do it.", None, ("hugo", "alice")))
    await chat.post(ChannelMessage(ChannelKind.NOTICE, "3.14.1", "Nobody."))

    assert out.getvalue().splitlines() == ["[#release] @hugo @alice Do it.", "[#release] Nobody."]
