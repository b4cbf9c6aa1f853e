"""What the console prints: the reply to what was typed first, then only what the command
changed in the channel's summary (nothing when it changed nothing)."""

from __future__ import annotations

import asyncio
import io

from adapters.console import Console, ConsoleChat
from bot.ports.messages import ChannelKind, ChannelMessage
from bot.scheduler import Poller
from bot.service.connections import Connections
from bot.service.gate import Gate
from tests.conftest import World

SUMMARY = [
    "3.14.1: 0 of 2 roles ready; not publishable yet",
    "  source   complete   4 files, 212 bytes; waiting for /ready source 3.14.1",
    "  docs     complete   7 files, 385 bytes; waiting for /ready docs 3.14.1",
    "  staging: notes.txt (unexpected)",
    "  branch 3.14: bugfix",
]


def summary(lines: list[str]) -> ChannelMessage:
    return ChannelMessage(ChannelKind.SUMMARY, "3.14.1", "\n".join(lines))


async def test_an_edit_prints_only_the_lines_it_changed_and_the_lines_it_removed() -> None:
    out = io.StringIO()
    chat = ConsoleChat(out)
    ref = await chat.post(summary(SUMMARY))
    printed = len(out.getvalue().splitlines())

    edited = [
        "3.14.1: 1 of 2 roles ready; not publishable yet",
        "  source   ready      hugo, 4 files, 212 bytes",
        SUMMARY[2],
        SUMMARY[4],
    ]
    await chat.update(ref, summary(edited))

    assert out.getvalue().splitlines()[printed:] == [
        "[#release] (updated) 3.14.1: 1 of 2 roles ready; not publishable yet",
        "  source   ready      hugo, 4 files, 212 bytes",
        "  no longer: staging: notes.txt (unexpected)",
    ]


async def test_an_edit_that_keeps_the_headline_names_the_release_then_the_change() -> None:
    out = io.StringIO()
    chat = ConsoleChat(out)
    ref = await chat.post(summary(SUMMARY))
    before = out.getvalue()

    await chat.update(ref, summary([*SUMMARY[:4], "  on hold by ned: wait", SUMMARY[4]]))

    assert out.getvalue()[len(before) :].splitlines() == [
        "[#release] (updated) 3.14.1:",
        "  on hold by ned: wait",
    ]


async def test_an_edit_that_changes_nothing_prints_nothing() -> None:
    out = io.StringIO()
    chat = ConsoleChat(out)
    ref = await chat.post(summary(SUMMARY))
    before = out.getvalue()

    await chat.update(ref, summary(SUMMARY))

    assert out.getvalue() == before


async def test_a_published_summary_is_its_headline_alone() -> None:
    out = io.StringIO()
    chat = ConsoleChat(out)
    ref = await chat.post(summary(SUMMARY))
    before = out.getvalue()

    await chat.update(ref, summary(["3.14.1: published by hugo at 2027-01-15 08:00 UTC."]))

    assert out.getvalue()[len(before) :] == (
        "[#release] (updated) 3.14.1: published by hugo at 2027-01-15 08:00 UTC.\n"
    )


async def test_an_edit_of_a_message_this_console_never_printed_is_printed_whole() -> None:
    out = io.StringIO()

    await ConsoleChat(out).update("7", summary(SUMMARY))

    assert out.getvalue().splitlines() == ["[#release] (updated) " + SUMMARY[0], *SUMMARY[1:]]


def test_the_reply_comes_first_then_what_the_command_changed(world: World) -> None:
    world.stage("3.14.1")
    out = io.StringIO()
    chat = ConsoleChat(out)
    gate = Gate(
        world.config,
        world.store,
        Connections(world.storage, chat, verifier=world.verifier),
        clock=world.clock,
        sleep=world._settle,
    )
    asyncio.run(gate.scan())  # the summary is in the channel before anyone types
    posted = len(out.getvalue().splitlines())
    console = Console(gate, chat, Poller(gate, 3600), list(world.config.people), "hugo", out)

    code = asyncio.run(console.run(io.StringIO("/ready source 3.14.1\n/ready docs 3.14.1\n")))

    assert code == 0
    printed = out.getvalue().splitlines()[posted:]
    assert printed[0].startswith("source is ready for 3.14.1: 4 files")
    assert printed[1] == "[#release] (updated) 3.14.1: 1 of 4 roles ready; not publishable yet"
    assert printed[2].split()[:3] == ["source", "ready", "hugo,"]
    assert printed[3].startswith("docs is ready for 3.14.1: 7 files")
    assert printed[4] == "[#release] (updated) 3.14.1: 2 of 4 roles ready; not publishable yet"
    assert printed[5].split()[:3] == ["docs", "ready", "hugo,"]
    assert len(printed) == 6, printed  # no role line that did not change
