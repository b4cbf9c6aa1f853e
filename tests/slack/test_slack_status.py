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


async def test_status_of_every_release_divides_them_and_names_one_with_nothing_staged(
    workspace: Workspace,
) -> None:
    ws = workspace
    ws.world.stage(TAG)
    ws.world.stage("3.15.0a2")
    ws.world.stage("3.14.2")
    await ws.answer(await ws.command(HUGO, "/hold", "3.14.2"))  # recorded...
    shutil.rmtree(ws.world.staging / "3.14.2")  # ...and nothing staged any more

    status = await ws.answer(await ws.command(EVE, "/status"))

    blocks = status["blocks"]
    assert block_problem(blocks) is None
    assert [b["type"] for b in blocks].count("divider") == 2
    headers = [b["text"]["text"] for b in blocks if b["type"] == "header"]
    assert [h.split(":")[0] for h in headers] == ["3.14.1", "3.15.0a2"]
    assert any(
        "Nothing is staged for 3.14.2 yet" in b["text"]["text"]
        for b in blocks
        if b["type"] == "section"
    )
