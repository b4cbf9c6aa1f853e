"""What would fail on release day, found before it: `relbot check` asks Slack whether the
channel exists and holds the bot and whether each person's ID is a user of the workspace; at
run time a channel that refuses posts is one log line and a degraded /healthz, until fixed."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import textwrap
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from adapters.platform import FanoutChat
from adapters.slack.platform import SlackPlatform
from bot.web.health import HealthServer
from tests.slack.conftest import (
    BOT_TOKEN,
    CHANNEL,
    HUGO,
    NED,
    SIGNING_SECRET,
    STEVE,
    SlackWorld,
    Workspace,
)
from tests.slack.mock_web_api import BOT_USER, MockSlack
from tests.sshd import free_port

TAG = "3.14.1"
RELBOT = Path(sys.executable).with_name("relbot")


def platform_on(mock: MockSlack, **people: str) -> SlackPlatform:
    return SlackPlatform(
        bot_token=BOT_TOKEN,
        channel=CHANNEL,
        mode="http",
        signing_secret=SIGNING_SECRET,
        port=0,
        api_url=mock.api_url,
        people=people or {"hugo": HUGO, "steve": STEVE},
    )


async def check(platform: SlackPlatform) -> list[str]:
    return await asyncio.to_thread(platform.check)


async def test_check_passes_when_the_bot_is_in_the_channel_and_everyone_exists(
    mock_slack: MockSlack,
) -> None:
    assert await check(platform_on(mock_slack)) == []
    asked = [c.method for c in mock_slack.calls]
    assert asked == ["auth.test", "conversations.info", "users.info", "users.info"]


async def test_check_reports_a_channel_the_bot_is_not_in(mock_slack: MockSlack) -> None:
    mock_slack.channels[CHANNEL].members.discard(BOT_USER)

    assert await check(platform_on(mock_slack)) == [
        f"slack.channel: the bot is not a member of channel #release ({CHANNEL}); invite it "
        "(type /invite @relbot in that channel)."
    ]


async def test_check_reports_a_private_channel_the_bot_cannot_see_and_an_unknown_one(
    mock_slack: MockSlack,
) -> None:
    mock_slack.add_channel(CHANNEL, "release", bot_member=False, private=True)
    (hidden,) = await check(platform_on(mock_slack))
    del mock_slack.channels[CHANNEL]
    (unknown,) = await check(platform_on(mock_slack))

    assert hidden == unknown
    assert hidden.startswith(f"slack.channel: Slack shows the bot no channel {CHANNEL}; ")
    assert "invite the bot if the channel is private" in hidden


async def test_check_reports_a_person_whose_id_is_no_user_of_the_workspace(
    mock_slack: MockSlack,
) -> None:
    mock_slack.users[NED]["deleted"] = True
    problems = await check(platform_on(mock_slack, hugo="hugo", steve=STEVE, ned=NED))

    assert problems == [
        "people.hugo.slack: Slack has no user hugo in this workspace; copy the member ID "
        "from their profile (⋮, Copy member ID).",
        f"people.ned.slack: Slack user {NED} is deactivated; remove or replace it.",
    ]


async def test_check_names_a_missing_scope_once_with_the_fix(mock_slack: MockSlack) -> None:
    mock_slack.scopes -= {"users:read", "chat:write"}
    problems = await check(platform_on(mock_slack, hugo=HUGO, steve=STEVE, ned=NED))

    assert problems == [
        "slack: the app lacks the scope chat:write; add it under OAuth & Permissions (or "
        "recreate the app from `relbot slack-manifest`) and reinstall the app.",
        "slack: the app lacks the scope users:read; add it under OAuth & Permissions (or "
        "recreate the app from `relbot slack-manifest`) and reinstall the app.",
    ]


async def test_relbot_check_reports_the_channel_and_the_person_against_the_double(
    tmp_path: Path, mock_slack: MockSlack
) -> None:
    mock_slack.channels[CHANNEL].members.discard(BOT_USER)
    for folder in ("staging", "public"):
        (tmp_path / folder).mkdir()
    config = tmp_path / "relbot.toml"
    config.write_text(
        textwrap.dedent(f"""
            profile = "cpython"
            state = "state.db"
            release_cycle = "{Path(__file__).parents[1] / "data" / "release-cycle.json"}"
            [storage]
            kind = "local"
            staging = "staging"
            public = "public"
            [slack]
            channel = "{CHANNEL}"
            mode = "http"
            api_url = "{mock_slack.api_url}"
            [people.hugo]
            rm = ["3.14"]
            roles = ["source", "docs"]
            slack = "{HUGO}"
            [people.steve]
            roles = ["windows"]
            slack = "U0NOBODY"
        """),
        encoding="utf-8",
    )
    env = {
        **os.environ,
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_SIGNING_SECRET": SIGNING_SECRET,
    }
    process = await asyncio.create_subprocess_exec(
        str(RELBOT),
        "check",
        "--config",
        str(config),
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(process.communicate(), timeout=120)

    assert process.returncode == 1
    reported = err.decode().splitlines()
    assert (
        f"relbot check: slack.channel: the bot is not a member of channel #release ({CHANNEL}); "
        "invite it (type /invite @relbot in that channel)."
    ) in reported
    assert (
        "relbot check: people.steve.slack: Slack has no user U0NOBODY in this workspace; copy "
        "the member ID from their profile (⋮, Copy member ID)."
    ) in reported
    assert not any(HUGO in line for line in reported)


def metrics(port: int) -> list[str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        return str(answer.read().decode()).splitlines()


def healthz(port: int) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


async def test_a_channel_without_the_bot_is_one_log_line_and_a_degraded_healthz_until_invited(
    tmp_path: Path, mock_slack: MockSlack, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    mock_slack.channels[CHANNEL].members.discard(BOT_USER)
    platform = platform_on(mock_slack)
    chat = FanoutChat([("slack", platform.chat)])
    world = SlackWorld(tmp_path, chat)
    world.storage.release.set()
    world.gate.metrics.channels = chat.health
    port = free_port()
    server = HealthServer(world.gate.metrics, 30, port)
    await server.start()
    await platform.start(world.gate)
    ws = Workspace(mock_slack, platform, world)
    try:
        world.stage(TAG)
        for text in (f"{TAG} first", TAG, f"{TAG} second"):  # three notices, all refused
            verb = "/unhold" if text == TAG else "/hold"
            await ws.answer(await ws.command(STEVE, verb, text))
        status, body = await asyncio.to_thread(healthz, port)
        refused = [c for c in mock_slack.calls if c.error == "not_in_channel"]
        gauge = "relbot_channel_refusing"
        while_refused = [
            line for line in await asyncio.to_thread(metrics, port) if line.startswith(gauge)
        ]

        mock_slack.channels[CHANNEL].members.add(BOT_USER)  # someone typed /invite @relbot
        await ws.answer(await ws.command(STEVE, "/unhold", TAG))
        healed_status, healed = await asyncio.to_thread(healthz, port)
        once_fixed = [
            line for line in await asyncio.to_thread(metrics, port) if line.startswith(gauge)
        ]
    finally:
        await platform.stop()
        await server.stop()
        world.store.close()

    notices = [c.body["text"] for c in refused if not c.blocks]
    assert len(notices) == 3 and len(refused) > 3  # the summary was refused too
    assert status == 503
    assert body["status"] == "degraded"
    assert body["channels"] == {
        "slack": f"slack.channel: the bot is not a member of channel {CHANNEL}; invite it "
        "(type /invite @relbot in that channel)."
    }
    lines = [r for r in caplog.records if r.name == "adapters.platform" and r.levelno >= 30]
    assert [(r.levelname, r.exc_info) for r in lines] == [("ERROR", None), ("WARNING", None)]
    assert "refuses the bot's posts: slack.channel: the bot is not a member" in lines[0].message
    assert lines[1].message == "slack: the release channel takes the bot's posts again"
    assert (healed_status, healed["status"], "channels" in healed) == (200, "ok", False)
    assert while_refused == ['relbot_channel_refusing{platform="slack"} 1.0']
    assert once_fixed == ['relbot_channel_refusing{platform="slack"} 0.0']
    assert mock_slack.ok("chat.postMessage"), "the notice after the invitation was posted"


async def test_a_channel_fixed_shows_as_fixed_in_healthz_before_the_next_post(
    tmp_path: Path, mock_slack: MockSlack
) -> None:
    mock_slack.channels[CHANNEL].members.discard(BOT_USER)
    platform = platform_on(mock_slack)
    chat = FanoutChat([("slack", platform.chat)])
    chat.health.recheck_after = 0  # every /healthz asks Slack again
    world = SlackWorld(tmp_path, chat)
    world.storage.release.set()
    world.gate.metrics.channels = chat.health
    port = free_port()
    server = HealthServer(world.gate.metrics, 30, port)
    await server.start()
    await platform.start(world.gate)
    ws = Workspace(mock_slack, platform, world)
    try:
        world.stage(TAG)
        await ws.answer(await ws.command(STEVE, "/hold", TAG))
        degraded = await asyncio.to_thread(healthz, port)
        posts = len(mock_slack.calls)

        mock_slack.channels[CHANNEL].members.add(BOT_USER)
        fixed = await asyncio.to_thread(healthz, port)
    finally:
        await platform.stop()
        await server.stop()
        world.store.close()

    assert degraded[0] == 503 and "slack" in degraded[1]["channels"]
    assert fixed == (200, {**fixed[1], "status": "ok"}) and "channels" not in fixed[1]
    asked = [c.method for c in mock_slack.calls[posts:]]
    assert asked == ["conversations.info"], "only a probe, no post, since the invitation"
