"""Slack's /status answers with the same Block Kit as the channel's summary."""

from __future__ import annotations

import shutil

from tests.slack.conftest import EVE, HUGO, Workspace
from tests.slack.mock_web_api import block_problem

TAG = "3.14.1"


async def test_status_of_a_tag_is_the_summarys_blocks(workspace: Workspace) -> None:
    ws = workspace
    ws.world.stage(TAG)
    await ws.answer(await ws.command(HUGO, "/ready", f"source {TAG}"))
    [shown] = [m["blocks"] for m in ws.mock.messages.values() if m.get("blocks")]

    status = await ws.answer(await ws.command(EVE, "/status", TAG))

    assert status["response_type"] == "ephemeral"
    assert status["blocks"] == shown
    assert block_problem(status["blocks"]) is None
    assert status["blocks"][0]["type"] == "header"
    assert status["text"].startswith(f"{TAG}: 1 of 4 roles ready")


async def test_status_of_every_release_is_a_line_each_a_held_one_with_nothing_staged_too(
    workspace: Workspace,
) -> None:
    ws = workspace
    ws.world.stage(TAG)
    ws.world.stage("3.15.0a2")
    ws.world.stage("3.14.2")
    await ws.answer(await ws.command(HUGO, "/hold", "3.14.2"))  # recorded...
    shutil.rmtree(ws.world.staging / "3.14.2")  # ...and nothing staged any more
    ws.world.start()  # a restarted bot: /status lists each release once

    status = await ws.answer(await ws.command(EVE, "/status"))

    blocks = status["blocks"]
    assert block_problem(blocks) is None
    assert [b["type"] for b in blocks] == ["section"]  # no header nor divider per release
    assert status["text"].splitlines() == [
        "3 open releases, newest first (/status TAG shows one in full):",
        "3.15.0a2  collecting   waits for source (hugo), windows (steve), macos (ned)",
        "3.14.2    held         by hugo; hugo or alice may /unhold 3.14.2",
        "3.14.1    collecting   waits for source, docs (hugo), windows (steve), macos (ned)",
    ]
    assert blocks[0]["text"]["text"] == f"```{status['text']}```"


async def test_status_of_50_releases_fits_slacks_text_and_one_section(
    workspace: Workspace,
) -> None:
    ws = workspace
    tags = [f"3.{minor}.{patch}" for patch in range(1, 9) for minor in range(9, 16)][:50]
    for tag in tags:
        ws.world.stage(tag, roles=["source"])

    status = await ws.answer(await ws.command(EVE, "/status"))

    assert block_problem(status["blocks"]) is None
    assert len(status["text"]) <= 3000  # Slack's notification text, never clipped
    assert [b["type"] for b in status["blocks"]] == ["section"]
    lines = status["text"].splitlines()
    assert lines[0] == "50 open releases, newest first (/status TAG shows one in full):"
    assert lines[-1].startswith("…and ") and lines[-1].endswith(
        " more releases: /status TAG shows one in full."
    )
    assert len(lines) - 2 + int(lines[-1].split()[1]) == 50
