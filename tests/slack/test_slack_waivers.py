"""/waive over Slack: the slash command reaches the gate, and a waived role shows as waived in
the Block Kit summary instead of listing the files it will not deliver."""

from __future__ import annotations

from bot.domain.history import EventKind
from tests.slack.conftest import HUGO, STEVE, Workspace
from tests.slack.test_slack import block_texts, summaries

TAG = "3.14.1"


async def test_a_waived_role_shows_as_waived_and_others_are_refused(workspace: Workspace) -> None:
    ws = workspace
    ws.world.stage(TAG, skip=["python-3.14.1-macos11.pkg"])

    refused = await ws.answer(await ws.command(STEVE, "/waive", f"{TAG} macos"))
    waived = await ws.answer(await ws.command(HUGO, "/waive", f"{TAG} macos notarization is down"))

    assert "Only a release manager of 3.14" in refused["text"]
    assert waived["text"].startswith(f"macos is waived for {TAG}")
    assert ws.world.events(TAG, EventKind.WAIVED) == ["waived"]
    (summary,) = summaries(ws)  # posted by the waiver, the first change the channel sees
    text = block_texts(summary)
    assert "💤 *macos*: waived, by hugo: notarization is down" in text
    assert "python-3.14.1-macos11.pkg" not in text
