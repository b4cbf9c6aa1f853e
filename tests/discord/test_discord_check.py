"""What would fail on release day, found before it: `relbot check` asks Discord whether the bot
is in the server, may see and post in the channel, and whether each person is a member; at run
time a channel that refuses posts is one log line and a degraded /healthz, until fixed."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from adapters.discord.platform import DiscordPlatform
from adapters.platform import FanoutChat
from bot.web.health import HealthServer
from tests.discord.conftest import CHANNEL, GUILD, HUGO, NED, STEVE, TOKEN, TOKEN_ENV, DiscordWorld
from tests.discord.mock_discord import (
    APP_ID,
    EMBED_LINKS,
    SEND_MESSAGES,
    VIEW_CHANNEL,
    MockDiscord,
)
from tests.sshd import free_port
from tests.waiting import wait_until

TAG = "3.14.1"
RELBOT = Path(sys.executable).with_name("relbot")
NOT_ALLOWED = (
    "give its role View Channel, Send Messages, Embed Links and Read Message History there "
    "(docs/discord.md)."
)


async def check(dworld: DiscordWorld) -> list[str]:
    return await asyncio.to_thread(DiscordPlatform.from_config(dworld.config).check)


async def test_check_reports_a_channel_the_bot_may_not_post_in(
    dworld: DiscordWorld, mock_discord: MockDiscord
) -> None:
    mock_discord.deny_in_channel(SEND_MESSAGES | EMBED_LINKS)

    assert await check(dworld) == [
        f"discord.channel: Discord does not let the bot post in channel {CHANNEL} (it lacks "
        f"Send Messages, Embed Links); {NOT_ALLOWED}"
    ]


async def test_check_reports_a_channel_the_bot_cannot_see(
    dworld: DiscordWorld, mock_discord: MockDiscord
) -> None:
    mock_discord.deny_in_channel(VIEW_CHANNEL)

    assert await check(dworld) == [
        f"discord.channel: Discord does not let the bot post in channel {CHANNEL} (it cannot "
        f"see the channel); {NOT_ALLOWED}"
    ]


async def test_a_role_of_the_bot_can_grant_what_everyone_is_denied(
    dworld: DiscordWorld, mock_discord: MockDiscord
) -> None:
    mock_discord.deny_in_channel(VIEW_CHANNEL | SEND_MESSAGES)
    mock_discord.roles["800"] = 0
    mock_discord.members[str(APP_ID)] = ["800"]
    allowed = str(VIEW_CHANNEL | SEND_MESSAGES)
    mock_discord.overwrites.append({"id": "800", "type": 0, "allow": allowed, "deny": "0"})

    assert await check(dworld) == []


async def test_check_reports_a_bot_that_is_not_in_the_server(
    dworld: DiscordWorld, mock_discord: MockDiscord
) -> None:
    del mock_discord.members[str(APP_ID)]

    assert await check(dworld) == [
        f"discord.guild: the bot is not in server {GUILD}; invite it with the scopes bot and "
        "applications.commands (docs/discord.md)."
    ]


async def test_check_reports_a_person_who_is_not_a_member_of_the_server(
    dworld: DiscordWorld, mock_discord: MockDiscord
) -> None:
    del mock_discord.members[NED]

    assert await check(dworld) == [
        f"people.ned.discord: user {NED} is not a member of server {GUILD}; copy their ID "
        "(Developer Mode, right-click them, Copy User ID), or invite them to the server."
    ]


async def test_relbot_check_reports_the_channel_and_the_person_against_the_double(
    dworld: DiscordWorld, mock_discord: MockDiscord
) -> None:
    mock_discord.deny_in_channel(VIEW_CHANNEL)
    del mock_discord.members[STEVE]
    config = dworld.root / "relbot.toml"
    assert config.exists()
    process = await asyncio.create_subprocess_exec(
        str(RELBOT),
        "check",
        "--config",
        str(config),
        env={**os.environ, TOKEN_ENV: TOKEN},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(process.communicate(), timeout=120)

    assert process.returncode == 1
    reported = err.decode().splitlines()
    assert (
        f"relbot check: discord.channel: Discord does not let the bot post in channel "
        f"{CHANNEL} (it cannot see the channel); {NOT_ALLOWED}"
    ) in reported
    assert any(
        line.startswith(f"relbot check: people.steve.discord: user {STEVE} is not")
        for line in reported
    )
    assert not any(HUGO in line for line in reported)


def healthz(port: int) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


async def test_a_channel_the_bot_may_not_post_in_is_one_log_line_and_a_degraded_healthz(
    dworld: DiscordWorld, mock_discord: MockDiscord, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    mock_discord.deny_in_channel(SEND_MESSAGES)
    platform = dworld.platform()
    chat = FanoutChat([("discord", platform.chat)])
    dworld.chat = chat
    gate = dworld.start()
    gate.metrics.channels = chat.health
    port = free_port()
    server = HealthServer(gate.metrics, 30, port)
    await server.start()
    await platform.start(gate)
    try:
        dworld.stage(TAG)
        for line in (f"/hold {TAG} first", f"/unhold {TAG}", f"/hold {TAG} second"):
            await gate.handle("discord", STEVE, line)
        status, body = await asyncio.to_thread(healthz, port)

        mock_discord.overwrites.clear()  # the operator fixed the channel's permissions
        await gate.handle("discord", STEVE, f"/unhold {TAG}")
        healed_status, healed = await asyncio.to_thread(healthz, port)
    finally:
        await platform.stop()
        await server.stop()

    assert (status, body["status"]) == (503, "degraded")
    # The post was refused with "Missing Permissions"; /healthz asked which ones.
    assert body["channels"] == {
        "discord": f"discord.channel: Discord does not let the bot post in channel {CHANNEL} "
        f"(it lacks Send Messages, Embed Links); {NOT_ALLOWED}"
    }
    lines = [r for r in caplog.records if r.name == "adapters.platform" and r.levelno >= 30]
    assert [(r.levelname, r.exc_info) for r in lines] == [("ERROR", None), ("WARNING", None)]
    assert (healed_status, healed["status"]) == (200, "ok")
    posted = [m["content"] for m in mock_discord.channel_messages.values()]
    assert f"steve lifted the hold on {TAG}." in posted


async def test_permissions_fixed_show_as_fixed_in_healthz_before_the_next_post(
    dworld: DiscordWorld, mock_discord: MockDiscord
) -> None:
    mock_discord.deny_in_channel(VIEW_CHANNEL)
    platform = dworld.platform()
    chat = FanoutChat([("discord", platform.chat)])
    chat.health.recheck_after = 0  # every /healthz looks again
    dworld.chat = chat
    gate = dworld.start()
    gate.metrics.channels = chat.health
    port = free_port()
    server = HealthServer(gate.metrics, 30, port)
    await server.start()
    await platform.start(gate)
    try:
        dworld.stage(TAG)
        await gate.handle("discord", STEVE, f"/hold {TAG}")
        status, body = await asyncio.to_thread(healthz, port)
        posted = len(mock_discord.calls_to("POST", f"/channels/{CHANNEL}/messages"))

        mock_discord.overwrites.clear()  # the operator let the bot see the channel again
        await mock_discord.channel_updated()
        await asyncio.to_thread(
            wait_until, "/healthz to answer 200", lambda: healthz(port)[0] == 200
        )
    finally:
        await platform.stop()
        await server.stop()

    assert (status, body["status"]) == (503, "degraded")
    assert "it lacks View Channel" in body["channels"]["discord"]
    assert len(mock_discord.calls_to("POST", f"/channels/{CHANNEL}/messages")) == posted
