"""The Slack platform, end to end on loopback: the real Bolt app in HTTP mode receives signed
slash commands and clicks; a mock of Slack's servers records what relbot posts."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from adapters.slack.blocks import MAX_BLOCKS, MAX_SECTION, PUBLISH_ACTION
from adapters.slack.commands import COMMANDS
from adapters.slack.listeners import SeenDeliveries
from adapters.slack.platform import SlackPlatform
from bot.config import load_config
from bot.domain.history import EventKind
from bot.domain.tags import ReleaseTag
from bot.errors import ConfigError
from tests.slack.conftest import (
    ALICE,
    BOT_TOKEN,
    CHANNEL,
    EVE,
    HUGO,
    NED,
    SIGNING_SECRET,
    STEVE,
    SlackWorld,
    Workspace,
)
from tests.slack.mock_web_api import MockSlack, block_problem

TAG = "3.14.1"


def publish_button(answer: dict[str, Any]) -> dict[str, Any]:
    buttons = [
        element
        for block in answer.get("blocks", [])
        if block["type"] == "actions"
        for element in block["elements"]
        if element.get("action_id") == PUBLISH_ACTION
    ]
    assert len(buttons) == 1, answer
    button: dict[str, Any] = buttons[0]
    return button


def block_texts(body: dict[str, Any]) -> str:
    """Every text of a message's blocks, joined: what a reader sees."""
    texts = []
    for block in body.get("blocks", []):
        if "text" in block:
            texts.append(block["text"]["text"])
        for element in block.get("elements", []):
            if isinstance(element.get("text"), str):
                texts.append(element["text"])
    return "\n".join(texts)


def summaries(ws: Workspace) -> list[dict[str, Any]]:
    return [c.body for c in ws.mock.ok("chat.postMessage") if c.body.get("blocks")]


# -- a release, start to finish --------------------------------------------------------------


async def test_a_full_release_from_slash_commands_to_the_announcement(
    workspace: Workspace,
) -> None:
    ws = workspace
    ws.world.stage(TAG)
    await ws.ready_all(TAG)

    plan = await ws.answer(await ws.command(HUGO, "/publish", TAG))
    assert plan["response_type"] == "ephemeral"
    button = publish_button(plan)
    assert button["confirm"]["title"]["text"] == f"Publish {TAG}?"
    assert TAG in button["confirm"]["text"]["text"]
    value = json.loads(button["value"])
    assert value["tag"] == TAG
    assert f"/publish {TAG} confirm {value['code']}" in block_texts(plan)
    assert ws.world.public_files() == set()

    click = await ws.click(HUGO, button["value"])
    assert click.status == 200
    await ws.platform.drain()
    progress, result = ws.mock.responses(click.name)
    assert progress["replace_original"] is True and "Publishing 3.14.1" in progress["text"]
    assert result["replace_original"] is True
    assert f"Published {TAG}: 19 files are public." in result["text"]

    announcements = [
        c.body["text"]
        for c in ws.mock.ok("chat.postMessage")
        if "is published" in c.body.get("text", "")
    ]
    assert len(announcements) == 1
    assert announcements[0].startswith(
        f"{TAG} is published: 19 files (docs 7, source 4, windows 7, macos 1;"
    )
    summary_ts = {c.body["ts"] for c in ws.mock.ok("chat.update")}
    assert len(summary_ts) == 1
    final_summary = ws.mock.messages[summary_ts.pop()]
    assert "published by hugo" in final_summary["text"]
    assert "3.14.1/python-3.14.1-amd64.exe" in ws.world.public_files()
    assert "doc/3.14.1/python-3.14.1-docs.epub" in ws.world.public_files()
    assert ws.world.events(TAG, EventKind.PUBLISHED) == ["published"]


async def test_a_typed_confirmation_works_as_well_as_the_button(workspace: Workspace) -> None:
    ws = workspace
    ws.world.stage(TAG)
    await ws.ready_all(TAG)
    plan = await ws.answer(await ws.command(HUGO, "/publish", TAG))
    code = json.loads(publish_button(plan)["value"])["code"]

    done = await ws.answer(await ws.command(HUGO, "/publish", f"{TAG} confirm {code}"))

    assert done["text"].startswith(f"Published {TAG}")
    assert ws.world.events(TAG, EventKind.PUBLISHED) == ["published"]


async def test_the_summary_shows_each_role_with_its_state(workspace: Workspace) -> None:
    ws = workspace
    ws.world.stage(TAG, skip=["python-3.14.1-macos11.pkg"])
    await ws.answer(await ws.command(HUGO, "/ready", f"source {TAG}"))
    await ws.answer(await ws.command(HUGO, "/hold", f"{TAG} waiting for the CVE fix"))

    (summary,) = summaries(ws)
    latest = ws.mock.messages[ws.mock.ok("chat.update")[-1].body["ts"]]
    text = block_texts(latest)
    assert latest["blocks"][0]["type"] == "header"
    assert "✅ *source*: ready\nclaimed by hugo at 2027-01-15 08:00 UTC: 4 files" in text
    assert "⏳ *docs*: complete" in text and "waiting for /ready docs 3.14.1" in text
    assert "❌ *macos*: incomplete, 1 of 1 files not ready:\n• `python-3.14.1-macos11.pkg`" in text
    assert "🛑 *On hold*\n• hugo since" in text and "waiting for the CVE fix" in text
    assert "🔏 *Signatures*: 0 of 11 files signed and valid (not required)" in text
    assert summary["channel"] == CHANNEL


# -- acknowledging -----------------------------------------------------------------------------


async def test_the_slash_command_is_acknowledged_before_the_gate_finishes(
    workspace: Workspace,
) -> None:
    ws = workspace
    ws.world.stage(TAG)
    ws.world.storage.hold_next_listing()  # the gate's first staging listing will block

    sent = await ws.command(HUGO, "/ready", f"source {TAG}")

    # The HTTP response is in hand; the gate is stuck inside its listing and has not answered.
    assert sent.status == 200
    assert await asyncio.to_thread(ws.world.storage.entered.wait, 20)
    assert ws.mock.responses(sent.name) == []
    assert ws.world.events(TAG, EventKind.CLAIMED) == []

    ws.world.storage.release.set()
    answer = await ws.answer(sent)
    assert answer["text"].startswith(f"source is ready for {TAG}")
    assert ws.world.events(TAG, EventKind.CLAIMED) == ["claimed"]


async def test_a_bad_signature_gets_401_and_changes_nothing(workspace: Workspace) -> None:
    ws = workspace
    ws.world.stage(TAG)

    forged = await ws.command(HUGO, "/hold", f"{TAG} forged", secret="not-the-signing-secret")

    assert forged.status == 401
    await ws.platform.drain()
    assert ws.mock.calls == []
    assert ws.world.events(TAG) == []


# -- who may click -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("clicker", "reason"),
    [
        (ALICE, "That confirmation code was issued to hugo"),
        (EVE, "Only a release manager of 3.14 (hugo, alice) can publish 3.14.1"),
        (STEVE, "Only a release manager of 3.14"),
        ("U0STRANGER", "You are not on the release team (slack user U0STRANGER)"),
    ],
)
async def test_a_click_by_anyone_but_the_rm_who_asked_is_refused_and_nothing_moves(
    workspace: Workspace, clicker: str, reason: str
) -> None:
    ws = workspace
    ws.world.stage(TAG)
    await ws.ready_all(TAG)
    value = publish_button(await ws.answer(await ws.command(HUGO, "/publish", TAG)))["value"]

    refused = await ws.answer(await ws.click(clicker, value))

    assert refused["text"].startswith(reason)
    assert refused["blocks"][0]["text"]["text"].startswith("❌")
    assert ws.world.public_files() == set()
    assert ws.world.events(TAG, EventKind.CONFIRMED) == []
    assert not any("is published" in c.body.get("text", "") for c in ws.mock.calls)

    # The plan still stands for the RM who asked.
    done = await ws.answer(await ws.click(HUGO, value))
    assert done["text"].startswith(f"Published {TAG}")


async def test_a_button_that_carries_no_plan_is_refused(workspace: Workspace) -> None:
    ws = workspace
    answer = await ws.answer(await ws.click(HUGO, "not json"))
    assert answer["response_type"] == "ephemeral"
    assert "carries no publish plan" in answer["text"]


# -- Slack's delivery rules ------------------------------------------------------------------------


async def test_a_rate_limited_post_is_retried_after_retry_after(workspace: Workspace) -> None:
    ws = workspace
    ws.world.stage(TAG)
    ws.mock.rate_limit("chat.postMessage", times=1)

    answer = await ws.answer(await ws.command(HUGO, "/ready", f"source {TAG}"))

    assert answer["text"].startswith(f"source is ready for {TAG}")
    posts = [(c.status, c.error) for c in ws.mock.calls if c.method == "chat.postMessage"]
    assert posts == [(429, "ratelimited"), (200, None)]
    assert len(summaries(ws)) == 1


async def test_a_redelivered_slash_command_acts_once(workspace: Workspace) -> None:
    ws = workspace
    ws.world.stage(TAG)

    first = await ws.command(STEVE, "/hold", f"{TAG} signing key rotation", trigger_id="77.1.a")
    again = await ws.command(
        STEVE, "/hold", f"{TAG} signing key rotation", trigger_id="77.1.a", retry=1
    )
    await ws.platform.drain()

    assert (first.status, again.status) == (200, 200)
    assert ws.world.events(TAG) == ["held"]
    assert len(ws.mock.responses(first.name)) == 1
    assert ws.mock.responses(again.name) == []


async def test_a_redelivered_click_publishes_once(workspace: Workspace) -> None:
    ws = workspace
    ws.world.stage(TAG)
    await ws.ready_all(TAG)
    value = publish_button(await ws.answer(await ws.command(HUGO, "/publish", TAG)))["value"]

    first = await ws.click(HUGO, value, trigger_id="88.1.b")
    again = await ws.click(HUGO, value, trigger_id="88.1.b", retry=1)
    await ws.platform.drain()

    assert (first.status, again.status) == (200, 200)
    assert ws.mock.responses(first.name)[-1]["text"].startswith(f"Published {TAG}")
    assert ws.mock.responses(again.name) == []
    assert ws.world.events(TAG, EventKind.CONFIRMED) == ["confirmed"]
    assert ws.world.events(TAG, EventKind.REFUSED) == []


def test_seen_deliveries_forget_the_oldest_past_their_size() -> None:
    seen = SeenDeliveries(size=2)
    assert [seen.first_time(d) for d in ("a", "b", "a", "c", "a", "b")] == [
        True,
        True,
        False,
        True,
        False,  # "a" was just seen again, so "b" was the oldest and is forgotten
        True,
    ]


async def test_the_summary_is_posted_once_then_edited_in_place(workspace: Workspace) -> None:
    ws = workspace
    ws.world.stage(TAG)
    await ws.ready_all(TAG)
    await ws.answer(await ws.command(NED, "/hold", TAG))
    await ws.answer(await ws.command(NED, "/unhold", TAG))

    (summary,) = summaries(ws)
    posted_ts = next(
        c for c in ws.mock.calls if c.method == "chat.postMessage" and c.body.get("blocks")
    )
    updates = ws.mock.ok("chat.update")
    assert len(updates) >= 5  # three more claims, the hold, its lifting
    ts = {u.body["ts"] for u in updates}
    assert len(ts) == 1 and ws.mock.messages[ts.pop()]["blocks"][0]["type"] == "header"
    assert posted_ts.body is summary
    notices = [c.body["text"] for c in ws.mock.ok("chat.postMessage") if not c.body.get("blocks")]
    publishable = (
        f"<@{HUGO}> <@{ALICE}> {TAG} is publishable: every role is ready. RM: /publish {TAG}"
    )
    assert notices == [
        publishable,  # the last /ready: the RMs are called
        f"ned put {TAG} on hold. /unhold {TAG} lifts it.",
        f"ned lifted the hold on {TAG}.",
        publishable,  # publishable again once the hold is lifted
    ]


async def test_messages_stay_within_block_kit_limits_for_a_60_file_release(
    workspace: Workspace,
) -> None:
    ws = workspace
    msi = [f"amd64/{'a' * 70}_component_{i:02d}_with_debug_symbols.msi" for i in range(41)]
    ws.world.stage(TAG)
    for path in msi:
        ws.world.write(TAG, path, b"")  # empty: every one of them is a problem
    for i in range(30):
        ws.world.write(TAG, f"leftover-{'b' * 80}-{i:02d}.bin", "stray")
    assert len(ws.world.staged_files(TAG)) == 19 + 41 + 30

    incomplete = await ws.answer(await ws.command(STEVE, "/ready", f"windows {TAG}"))
    await ws.answer(await ws.command(HUGO, "/ready", f"source {TAG}"))
    status = await ws.answer(await ws.command(EVE, "/status", TAG))
    (summary,) = summaries(ws)

    assert incomplete["response_type"] == "ephemeral"
    assert "…and" in block_texts(summary)
    assert "🚫 *Unexpected in staging*" in block_texts(summary)
    assert status["response_type"] == "ephemeral"

    for path in msi:
        ws.world.write(TAG, path, f"{path}\n")
    for i in range(30):
        (ws.world.staging / TAG / f"leftover-{'b' * 80}-{i:02d}.bin").unlink()
    await ws.ready_all(TAG)
    plan = await ws.answer(await ws.command(HUGO, "/publish", TAG))
    assert "60 files" in plan["blocks"][0]["text"]["text"]
    done = await ws.answer(await ws.click(HUGO, publish_button(plan)["value"]))
    assert done["text"].startswith(f"Published {TAG}: 60 files are public.")

    # Every message relbot sent was accepted, and each is within Slack's limits.
    rejected = [(c.path, c.error) for c in ws.mock.calls if not c.accepted]
    assert rejected == []
    for call in ws.mock.calls:
        assert block_problem(call.body.get("blocks")) is None
        assert len(call.blocks) <= MAX_BLOCKS
        for block in call.blocks:
            if block["type"] == "section":
                assert len(block["text"]["text"]) <= MAX_SECTION


async def test_an_unknown_slack_user_is_told_they_are_not_on_the_team_with_their_id(
    workspace: Workspace,
) -> None:
    ws = workspace
    ws.world.stage(TAG)

    answer = await ws.answer(await ws.command("U0STRANGER", "/ready", f"source {TAG}"))

    assert answer["response_type"] == "ephemeral"
    assert answer["text"].startswith(
        "You are not on the release team (slack user U0STRANGER); ask an admin"
    )
    assert ws.world.events(TAG, EventKind.CLAIMED) == []


async def test_help_is_answered_to_whoever_asked_naming_relbot_help(
    workspace: Workspace,
) -> None:
    answer = await workspace.answer(await workspace.command("U0STRANGER", "/relbot-help"))
    assert answer["response_type"] == "ephemeral"
    assert "/ready ROLE TAG" in block_texts(answer)
    assert "/relbot-help" in block_texts(answer)
    assert " /help" not in block_texts(answer)


async def test_text_is_unescaped_coming_in_and_escaped_going_out(workspace: Workspace) -> None:
    ws = workspace
    ws.world.stage(TAG)
    # Slack escapes &, < and > in a command's text; the reason is recorded as typed.
    await ws.answer(await ws.command(NED, "/hold", f"{TAG} notarize &lt;pkg&gt; &amp; retry"))

    hold = ws.world.store.release(ReleaseTag.parse(TAG)).holds["ned"]
    assert hold.reason == "notarize <pkg> & retry"
    notices = [c.body["text"] for c in ws.mock.ok("chat.postMessage") if not c.body.get("blocks")]
    assert notices == [
        f"ned put {TAG} on hold: notarize &lt;pkg&gt; &amp; retry. /unhold {TAG} lifts it."
    ]
    (summary,) = summaries(ws)
    assert "notarize &lt;pkg&gt; &amp; retry" in block_texts(summary)


# -- configuration --------------------------------------------------------------------------------


def slack_config(tmp_path: Path, table: str) -> Path:
    path = tmp_path / "relbot.toml"
    path.write_text(
        textwrap.dedent(
            f"""
            [slack]
            channel = "{CHANNEL}"
            bot_token_env = "RELBOT_TEST_SLACK_BOT"
            app_token_env = "RELBOT_TEST_SLACK_APP"
            signing_secret_env = "RELBOT_TEST_SLACK_SECRET"
            """
        )
        + textwrap.dedent(table),
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize(
    ("table", "env", "key"),
    [
        ("", {"RELBOT_TEST_SLACK_APP": "xapp-1"}, "slack.bot_token_env"),
        ("", {"RELBOT_TEST_SLACK_BOT": BOT_TOKEN}, "slack.app_token_env"),
        ('mode = "http"', {"RELBOT_TEST_SLACK_BOT": BOT_TOKEN}, "slack.signing_secret_env"),
    ],
)
def test_from_config_with_a_missing_env_var_names_the_key(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    table: str,
    env: dict[str, str],
    key: str,
) -> None:
    for name in ("RELBOT_TEST_SLACK_BOT", "RELBOT_TEST_SLACK_APP", "RELBOT_TEST_SLACK_SECRET"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    config = load_config(slack_config(tmp_path, table))

    with pytest.raises(ConfigError, match=rf"^{key}: the environment variable RELBOT_TEST_"):
        SlackPlatform.from_config(config)


def test_from_config_builds_socket_mode_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RELBOT_TEST_SLACK_BOT", BOT_TOKEN)
    monkeypatch.setenv("RELBOT_TEST_SLACK_APP", "xapp-1-test")
    platform = SlackPlatform.from_config(load_config(slack_config(tmp_path, "")))
    assert (platform.name, platform.mode) == ("slack", "socket")


async def test_check_reports_a_refused_bot_token(mock_slack: MockSlack) -> None:
    good = SlackPlatform(
        bot_token=BOT_TOKEN,
        channel=CHANNEL,
        mode="http",
        signing_secret=SIGNING_SECRET,
        api_url=mock_slack.api_url,
    )
    bad = SlackPlatform(
        bot_token="xoxp-a-user-token",
        channel=CHANNEL,
        mode="http",
        signing_secret=SIGNING_SECRET,
        api_url=mock_slack.api_url,
    )
    assert await asyncio.to_thread(good.check) == []
    (problem,) = await asyncio.to_thread(bad.check)
    assert problem.startswith("slack.bot_token_env: Slack refused the bot token (not_authed)")
    assert "xoxp-a-user-token" not in problem


def test_the_app_manifest_declares_exactly_the_commands_relbot_answers() -> None:
    manifest = Path(__file__).parents[2] / "deploy" / "slack-app-manifest.yml"
    text = manifest.read_text(encoding="utf-8")
    declared = re.findall(r"^\s*- command: (\S+)$", text, flags=re.MULTILINE)
    assert declared == list(COMMANDS)
    assert re.search(r"^\s*socket_mode_enabled: true$", text, flags=re.MULTILINE)
    assert re.search(r"^\s*is_enabled: true\b", text, flags=re.MULTILINE)
    scopes = re.findall(r"^\s*- ([a-z.]+:?[a-z.]*)\s+#", text, flags=re.MULTILINE)
    assert scopes == [
        "commands",
        "chat:write",
        "channels:read",
        "groups:read",
        "users:read",
        "channels:history",
        "groups:history",
    ]


async def test_no_secret_is_logged_or_sent(
    workspace: Workspace, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    ws = workspace
    ws.world.stage(TAG)
    await ws.ready_all(TAG)
    value = publish_button(await ws.answer(await ws.command(HUGO, "/publish", TAG)))["value"]
    await ws.answer(await ws.click(HUGO, value))

    assert caplog.text  # bolt and slack-sdk did log, at debug level
    sent = json.dumps([c.body for c in ws.mock.calls])
    for secret in (BOT_TOKEN, SIGNING_SECRET):
        assert secret not in caplog.text
        assert secret not in sent


async def test_socket_mode_acknowledges_each_envelope_and_acts_once_on_a_redelivery(
    tmp_path: Path, mock_slack: MockSlack
) -> None:
    platform = SlackPlatform(
        bot_token=BOT_TOKEN,
        channel=CHANNEL,
        app_token="xapp-1-A0RELBOT-test",
        api_url=mock_slack.api_url,
    )
    world = SlackWorld(tmp_path, platform.chat)
    ws = Workspace(mock_slack, platform, world)
    world.stage(TAG)
    await platform.start(world.gate)
    try:
        name, fields = ws.command_fields(STEVE, "/hold", f"{TAG} signing key rotation")
        await mock_slack.send_envelope("slash_commands", fields, "env-1")
        await mock_slack.wait_for(lambda mock: mock.responses(name) != [])
        # Slack did not see the acknowledgement in time and delivers the envelope again.
        await mock_slack.send_envelope("slash_commands", fields, "env-2", retry_attempt=1)
        # Each envelope is acknowledged once; under load the two acks may cross on the wire.
        await mock_slack.wait_for(lambda mock: sorted(mock.acks()) == ["env-1", "env-2"])
        await platform.drain()
        assert world.events(TAG) == ["held"]
    finally:
        await platform.stop()
        world.store.close()

    (answer,) = mock_slack.responses(name)
    assert answer["text"] == f"{TAG} is on hold; nothing is published until /unhold {TAG}."
    # The SDK found the socket itself, through apps.connections.open at api_url (after
    # relbot's own first call, which waits for Slack with backoff).
    assert [c.method for c in mock_slack.calls[:2]] == ["apps.connections.open"] * 2
    notices = [
        c.body["text"] for c in mock_slack.ok("chat.postMessage") if not c.body.get("blocks")
    ]
    assert notices == [f"steve put {TAG} on hold: signing key rotation. /unhold {TAG} lifts it."]
