"""At debug level slack_sdk and Bolt log whole requests: the RM's private plan, the Publish
button's value and the typed confirmation. No log line shows the code, and typed text reaches
Slack escaped."""

from __future__ import annotations

import io
import json

import pytest

from tests.slack.conftest import HUGO, Workspace
from tests.slack.test_slack import block_texts, publish_button

TAG = "3.14.1"


@pytest.mark.parametrize("confirm_by", ["button", "typed"])
async def test_no_debug_line_shows_a_confirmation_code(
    workspace: Workspace, debug_log: io.StringIO, confirm_by: str
) -> None:
    ws = workspace
    ws.world.stage(TAG)
    await ws.ready_all(TAG)

    plan = await ws.answer(await ws.command(HUGO, "/publish", TAG))
    value = publish_button(plan)["value"]
    code = json.loads(value)["code"]
    if confirm_by == "button":
        done = await ws.answer(await ws.click(HUGO, value))
    else:
        done = await ws.answer(await ws.command(HUGO, "/publish", f"{TAG} confirm {code}"))

    assert f"confirm {code}" in block_texts(plan)  # the code really went through Slack
    assert "Published" in done["text"] or "published" in done["text"], done
    logged = debug_log.getvalue()
    assert "slack_sdk" in logged and "DEBUG" in logged  # the SDK did log its traffic
    assert code not in logged and code.lower() not in logged
    assert "<code>" in logged


async def test_a_waiver_reason_reaches_slack_escaped(workspace: Workspace) -> None:
    ws = workspace
    ws.world.stage(TAG, skip=["python-3.14.1-macos11.pkg"])

    answer = await ws.answer(await ws.command(HUGO, "/waive", f"{TAG} macos \x1b[2J \u202eevil"))

    assert answer["text"].startswith(f"macos is waived for {TAG}")
    sent = json.dumps([c.body for c in ws.mock.calls], ensure_ascii=False)
    assert "\x1b" not in sent and "\u202e" not in sent
    assert "\\\\u202eevil" in sent  # shown, escaped (and JSON-escaped once more here)
