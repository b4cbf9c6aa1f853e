"""The Discord platform as a release team meets it: slash commands and the Publish button go
through the real discord.py client, over loopback, to a mock of Discord's API and gateway."""

from __future__ import annotations

import asyncio
import time
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest

from adapters.discord.errors import DiscordError
from adapters.discord.platform import DiscordPlatform
from adapters.platform import FanoutChat
from bot.domain.tags import ReleaseTag
from bot.errors import ConfigError
from bot.ports.messages import ChannelKind
from tests.conftest import RecordingChat
from tests.discord.conftest import (
    ALICE,
    CHANNEL,
    GUILD,
    HOLDERS,
    HUGO,
    NED,
    SLACK_STEVE,
    STEVE,
    STRANGER,
    TOKEN,
    TOKEN_ENV,
    DiscordWorld,
)
from tests.discord.mock_discord import APP_ID, EPHEMERAL, WAIT, MockDiscord, Sent

TAG = "3.14.1"
CHANNEL_MESSAGES = f"/channels/{CHANNEL}/messages"
SLACK_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"  # a made-up signing secret


async def say(mock: MockDiscord, name: str, user: str, **options: str) -> dict[str, Any]:
    """Run a slash command as ``user``; the bot's reply message."""
    return await mock.reply(await mock.command(name, user=user, **options))


async def ready_all(mock: MockDiscord, tag: str = TAG) -> None:
    for role, user in HOLDERS.items():
        reply = await say(mock, "ready", user, role=role, tag=tag)
        assert f"{role} is ready for {tag}" in reply["content"], reply["content"]


def publish_button(plan: dict[str, Any]) -> dict[str, Any]:
    [row] = plan["components"]
    [button] = row["components"]
    return dict(button)


def summary_posts(mock: MockDiscord) -> list[dict[str, Any]]:
    return [c.body for c in mock.calls_to("POST", CHANNEL_MESSAGES) if c.body.get("embeds")]


async def click_publish(mock: MockDiscord, plan: dict[str, Any], user: str) -> Sent:
    """Publish on the plan, then "Yes, publish" on the question it asks: the click that
    publishes (or that the gate refuses)."""
    ask = await mock.click(publish_button(plan)["custom_id"], user=user, message=plan)
    question = await mock.reply(ask)
    [row] = question["components"]
    yes = row["components"][0]
    return await mock.click(yes["custom_id"], user=user, message=question)


def plain_posts(mock: MockDiscord) -> list[str]:
    return [
        c.body["content"]
        for c in mock.calls_to("POST", CHANNEL_MESSAGES)
        if not c.body.get("embeds")
    ]


def only_summary(mock: MockDiscord) -> dict[str, Any]:
    """The one summary message of the channel, as it stands after every edit."""
    [summary] = [m for m in mock.channel_messages.values() if m["embeds"]]
    return summary


def private(reply: dict[str, Any]) -> bool:
    return bool(reply["flags"] & EPHEMERAL)


# -- the whole release -----------------------------------------------------------------------


async def test_full_release_through_slash_commands_and_the_publish_button(
    bot: DiscordPlatform, mock_discord: MockDiscord, dworld: DiscordWorld
) -> None:
    staged = dworld.stage(TAG)
    await ready_all(mock_discord)

    summary = only_summary(mock_discord)
    [embed] = summary["embeds"]
    assert embed["title"] == f"{TAG}: all 4 roles ready; publishable (RM: /publish {TAG})"
    assert [f["name"] for f in embed["fields"]] == [
        "source: ready",
        "docs: ready",
        "windows: ready",
        "macos: ready",
    ]

    plan = await say(mock_discord, "publish", HUGO, tag=TAG)
    assert private(plan)
    assert f"/publish {TAG} confirm CODE0001" in plan["content"]
    button = publish_button(plan)
    assert button["label"] == f"Publish {TAG}"
    assert button["custom_id"] == f"relbot:publish:{TAG}:CODE0001"
    assert dworld.public_files() == set()

    click = await click_publish(mock_discord, plan, HUGO)
    done = await mock_discord.reply(click)
    assert private(done)
    assert done["content"].startswith(f"Published {TAG}:")
    edited = mock_discord.originals_edited(click)
    assert [e["components"] for e in edited] == [[]]  # the button is gone: no second click
    assert len(dworld.public_files()) == len(staged)

    [announcement] = [t for t in plain_posts(mock_discord) if "is published" in t]
    assert announcement.startswith(f"{TAG} is published: {len(staged)} files")
    assert len(summary_posts(mock_discord)) == 1  # posted once, then edited in place
    edits = mock_discord.calls_to("PATCH", f"{CHANNEL_MESSAGES}/{summary['id']}")
    assert len(edits) >= 4
    [final] = only_summary(mock_discord)["embeds"]
    assert final["title"].startswith(f"{TAG}: published by hugo at ")
    assert "fields" not in final


async def test_commands_are_synced_to_the_configured_guild_with_the_profiles_roles(
    bot: DiscordPlatform, mock_discord: MockDiscord, dworld: DiscordWorld
) -> None:
    [sync] = mock_discord.calls_to("PUT", f"/applications/{APP_ID}/guilds/")
    assert sync.path.endswith(f"/guilds/{mock_discord.guild}/commands")
    commands = {c["name"]: c for c in sync.body}
    assert sorted(commands) == sorted(
        [
            "ready",
            "unready",
            "status",
            "hold",
            "unhold",
            "publish",
            "respin",
            "waive",
            "unwaive",
            "abort",
            "announce",
            "help",
        ]
    )
    role = next(o for o in commands["ready"]["options"] if o["name"] == "role")
    assert [c["value"] for c in role["choices"]] == list(dworld.profile.roles)
    assert all(c.get("default_member_permissions") is None for c in sync.body)
    assert mock_discord.identifies[0]["intents"] == 1  # guilds only: nothing privileged


async def test_tag_autocomplete_offers_open_releases(
    bot: DiscordPlatform, mock_discord: MockDiscord, dworld: DiscordWorld
) -> None:
    dworld.stage("3.14.1", roles=["source"])
    dworld.stage("3.13.5", roles=["source"])
    sent = await mock_discord.autocomplete(
        "ready", user=STRANGER, focused="tag", role="source", tag="3.14"
    )
    answer = await mock_discord.wait_for(lambda: mock_discord.callback(sent))
    assert answer["type"] == 8
    assert answer["data"]["choices"] == [{"name": "3.14.1", "value": "3.14.1"}]


async def test_a_hold_is_a_notice_and_turns_the_summary_red_with_the_reason(
    bot: DiscordPlatform, mock_discord: MockDiscord, dworld: DiscordWorld
) -> None:
    dworld.stage(TAG)
    reply = await say(mock_discord, "hold", NED, tag=TAG, reason="@everyone the pkg fails")
    assert reply["content"] == f"{TAG} is on hold; nothing is published until /unhold {TAG}."
    [notice] = plain_posts(mock_discord)
    assert notice.startswith(f"ned put {TAG} on hold: @everyone the pkg fails.")
    posted = mock_discord.calls_to("POST", CHANNEL_MESSAGES)
    assert all(c.body["allowed_mentions"] == {"parse": []} for c in posted)  # nobody pinged
    [embed] = only_summary(mock_discord)["embeds"]
    assert embed["color"] == 0xE74C3C  # red
    assert "on hold by ned: @everyone the pkg fails" in embed["description"]


# -- refusals --------------------------------------------------------------------------------


async def test_an_unknown_user_is_refused_privately_and_nothing_changes(
    bot: DiscordPlatform, mock_discord: MockDiscord, dworld: DiscordWorld
) -> None:
    dworld.stage(TAG)
    reply = await say(mock_discord, "ready", STRANGER, role="source", tag=TAG)
    assert private(reply)
    assert "not on the release team" in reply["content"]
    assert STRANGER in reply["content"]
    assert dworld.store.release(ReleaseTag.parse(TAG)).claims == {}
    assert mock_discord.calls_to("POST", CHANNEL_MESSAGES) == []


async def test_a_role_holder_cannot_publish_and_another_rm_cannot_click_the_button(
    bot: DiscordPlatform, mock_discord: MockDiscord, dworld: DiscordWorld
) -> None:
    dworld.stage(TAG)
    await ready_all(mock_discord)
    refused = await say(mock_discord, "publish", STEVE, tag=TAG)
    assert private(refused) and "Only a release manager of 3.14" in refused["content"]
    assert refused["components"] == []

    plan = await say(mock_discord, "publish", HUGO, tag=TAG)
    assert publish_button(plan)["label"] == f"Publish {TAG}"
    reasons = {
        ALICE: "That confirmation code was issued to hugo",  # another RM of 3.14
        STEVE: "Only a release manager of 3.14",
        STRANGER: "You are not on the release team",
    }
    for intruder, reason in reasons.items():
        click = await click_publish(mock_discord, plan, intruder)
        answer = await mock_discord.reply(click)
        assert private(answer)
        assert answer["content"].startswith(reason), answer["content"]
        assert mock_discord.originals_edited(click) == []  # the button stays for hugo
    assert dworld.public_files() == set()
    click = await click_publish(mock_discord, plan, HUGO)
    assert (await mock_discord.reply(click))["content"].startswith(f"Published {TAG}:")


async def test_a_bad_tag_gets_the_gates_sentence_privately(
    bot: DiscordPlatform, mock_discord: MockDiscord, dworld: DiscordWorld
) -> None:
    reply = await say(mock_discord, "ready", NED, role="macos", tag="3.14")
    assert private(reply)
    assert reply["content"] == "'3.14' is not a release tag; write it like 3.14.1 or 3.14.0rc2."
    assert mock_discord.calls_to("POST", CHANNEL_MESSAGES) == []


# -- restarts --------------------------------------------------------------------------------


async def plan_then_restart(
    dworld: DiscordWorld, mock: MockDiscord
) -> tuple[dict[str, Any], DiscordPlatform]:
    """Stage, ready and plan with one bot process, stop it and start another on the same
    state; returns the plan message and the running second platform."""
    first = dworld.platform()
    dworld.chat = first.chat
    await first.start(dworld.start())
    dworld.stage(TAG)
    await ready_all(mock)
    plan = await say(mock, "publish", HUGO, tag=TAG)
    await first.stop()
    assert mock.connected == 0

    second = dworld.platform()
    dworld.chat = second.chat
    await second.start(dworld.start())
    return plan, second


async def test_the_publish_button_still_works_after_a_restart(
    dworld: DiscordWorld, mock_discord: MockDiscord
) -> None:
    plan, second = await plan_then_restart(dworld, mock_discord)
    try:
        click = await click_publish(mock_discord, plan, HUGO)
        done = await mock_discord.reply(click)
        assert done["content"].startswith(f"Published {TAG}:")
        assert dworld.public_files()
        assert len(summary_posts(mock_discord)) == 1  # the restarted bot edits the same one
    finally:
        await second.stop()


async def test_the_publish_button_says_expired_after_the_confirm_timeout(
    dworld: DiscordWorld, mock_discord: MockDiscord
) -> None:
    plan, second = await plan_then_restart(dworld, mock_discord)
    try:
        dworld.clock.advance(dworld.config.model.confirm_timeout + 1)
        click = await click_publish(mock_discord, plan, HUGO)
        answer = await mock_discord.reply(click)
        assert private(answer)
        assert "expired" in answer["content"]
        assert f"type /publish {TAG} for a new plan" in answer["content"]
        assert dworld.public_files() == set()
    finally:
        await second.stop()


# -- one state, several platforms ------------------------------------------------------------


async def test_a_claim_made_on_slack_shows_in_the_discord_summary_and_back(
    dworld: DiscordWorld, mock_discord: MockDiscord
) -> None:
    # Imported here: Slack's adapter and its mock are another module's; if they break, this
    # test fails and the rest of the Discord suite still runs.
    from adapters.slack.platform import SlackPlatform
    from tests.slack.conftest import release_workspace

    mock_slack = release_workspace()
    await mock_slack.start()
    slack = SlackPlatform(
        bot_token="xoxb-relbot-test",
        channel="C0RELEASE",
        mode="http",
        signing_secret=SLACK_SECRET,
        port=0,
        api_url=mock_slack.api_url,
    )
    discord = dworld.platform()
    dworld.chat = FanoutChat([("slack", slack.chat), ("discord", discord.chat)])
    gate = dworld.start()
    await slack.start(gate)
    await discord.start(gate)
    try:
        dworld.stage(TAG)
        answer = await slack_command(slack, mock_slack, SLACK_STEVE, "/ready", f"windows {TAG}")
        assert answer["text"].startswith(f"windows is ready for {TAG}"), answer
        [embed] = only_summary(mock_discord)["embeds"]
        assert embed["title"] == f"{TAG}: 1 of 4 roles ready; not publishable yet"
        windows = embed["fields"][2]
        assert windows["name"] == "windows: ready"
        assert windows["value"].startswith("steve, ")

        await say(mock_discord, "ready", NED, role="macos", tag=TAG)
        [update] = [c.body for c in mock_slack.ok("chat.update")][-1:]
        assert update["text"].startswith(f"{TAG}: 2 of 4 roles ready")
    finally:
        await discord.stop()
        await slack.stop()
        await mock_slack.stop()


async def test_a_claim_shows_in_the_discord_summary_next_to_another_channel(
    dworld: DiscordWorld, mock_discord: MockDiscord
) -> None:
    platform = dworld.platform()
    other = RecordingChat()
    dworld.chat = FanoutChat([("discord", platform.chat), ("other", other)])
    gate = dworld.start()
    await platform.start(gate)
    try:
        dworld.stage(TAG)
        reply = await gate.handle("console", "steve", f"/ready windows {TAG}")
        assert not reply.private, reply.text
        [embed] = only_summary(mock_discord)["embeds"]
        assert embed["title"] == f"{TAG}: 1 of 4 roles ready; not publishable yet"
        [summary] = other.posts
        assert summary.kind is ChannelKind.SUMMARY and summary.text.startswith(embed["title"])

        await say(mock_discord, "ready", NED, role="macos", tag=TAG)
        [embed] = only_summary(mock_discord)["embeds"]
        assert embed["title"] == f"{TAG}: 2 of 4 roles ready; not publishable yet"
        assert other.updates[-1][1].text.startswith(f"{TAG}: 2 of 4 roles ready")
    finally:
        await platform.stop()


async def slack_command(
    platform: Any, mock_slack: Any, user: str, command: str, text: str
) -> dict[str, Any]:
    """A slash command delivered to Slack's adapter as Slack delivers it (form-encoded, signed
    with the app's signing secret); the answer it sent to the command's response_url."""
    from slack_sdk.signature import SignatureVerifier

    name = f"{command.strip('/')}-{user}"
    body = urlencode(
        {
            "team_id": "T0TEAM",
            "channel_id": "C0RELEASE",
            "user_id": user,
            "command": command,
            "text": text,
            "api_app_id": "A0RELBOT",
            "response_url": mock_slack.response_url(name),
            "trigger_id": "1.7.trigger",
        }
    )
    stamp = str(int(time.time()))  # Slack's signatures carry the time they were made
    signature = SignatureVerifier(SLACK_SECRET).generate_signature(timestamp=stamp, body=body)
    assert signature is not None
    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": signature,
    }
    url = f"http://127.0.0.1:{platform.port}/slack/events"
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=WAIT)) as session,
        session.post(url, data=body.encode(), headers=headers) as response,
    ):
        assert response.status == 200, await response.text()
    async with asyncio.timeout(WAIT):
        await platform.drain()
    [*_, answer] = mock_slack.responses(name)
    return dict(answer)


# -- configuration ---------------------------------------------------------------------------


def test_from_config_without_the_token_names_the_key(
    dworld: DiscordWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TOKEN_ENV)
    with pytest.raises(ConfigError) as raised:
        DiscordPlatform.from_config(dworld.config)
    assert "discord.token_env" in str(raised.value)
    assert TOKEN_ENV in str(raised.value)


async def test_check_passes_with_the_configured_token_and_channel(
    dworld: DiscordWorld, mock_discord: MockDiscord
) -> None:
    platform = DiscordPlatform.from_config(dworld.config)
    assert await asyncio.to_thread(platform.check) == []
    assert [c.path for c in mock_discord.calls] == [
        "/users/@me",
        f"/guilds/{GUILD}",
        f"/guilds/{GUILD}/members/{APP_ID}",
        f"/channels/{CHANNEL}",
        *(f"/guilds/{GUILD}/members/{person}" for person in (HUGO, ALICE, STEVE, NED)),
    ]


async def test_check_names_the_key_of_a_refused_token_without_printing_it(
    dworld: DiscordWorld, mock_discord: MockDiscord, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, "a-revoked-token")
    platform = DiscordPlatform.from_config(dworld.config)
    [problem] = await asyncio.to_thread(platform.check)
    assert problem.startswith("discord.token_env: Discord refused the token in " + TOKEN_ENV)
    assert "a-revoked-token" not in problem


async def test_check_says_when_the_channel_does_not_exist(
    dworld: DiscordWorld, mock_discord: MockDiscord
) -> None:
    settings = dworld.config.model.discord
    assert settings is not None
    elsewhere = settings.model_copy(update={"channel": 123})
    platform = DiscordPlatform(TOKEN, elsewhere, dworld.profile.roles)
    [problem] = await asyncio.to_thread(platform.check)
    assert problem.startswith("discord.channel: Discord has no channel 123; copy its ID again")


async def test_start_with_a_refused_token_names_the_key(
    dworld: DiscordWorld, mock_discord: MockDiscord
) -> None:
    settings = dworld.config.model.discord
    assert settings is not None
    platform = DiscordPlatform("a-revoked-token", settings, dworld.profile.roles)
    with pytest.raises(DiscordError, match=r"^discord\.token_env: Discord refused the token"):
        await platform.start(dworld.gate)
    assert mock_discord.identifies == []


async def test_start_in_a_server_the_bot_is_not_in_names_the_guild_key(
    dworld: DiscordWorld, mock_discord: MockDiscord
) -> None:
    settings = dworld.config.model.discord
    assert settings is not None
    elsewhere = settings.model_copy(update={"guild": 123})
    platform = DiscordPlatform(TOKEN, elsewhere, dworld.profile.roles)
    with pytest.raises(DiscordError, match=r"^discord\.guild: .* server 123"):
        await platform.start(dworld.gate)
    assert mock_discord.identifies == []
