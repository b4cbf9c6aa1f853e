"""One announcement in the Slack channel, whatever moment the bot dies: a bot that dies at any
step of the publish (or between the announcement's post and its journal) and is started again
on the same state leaves exactly one announcement in the channel, found by the mark in its
metadata, and tells the RM ``Published TAG`` as a confirmation does."""

from __future__ import annotations

import logging

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.channel import SlackChat
from bot.ports.messages import ChannelKind, ChannelMessage, Once
from tests.announcing.dying_bot import MOMENTS, Died, died, dying
from tests.slack.conftest import CHANNEL, HUGO, Workspace
from tests.slack.mock_web_api import MockSlack
from tests.slack.test_slack_check import check, platform_on

TAG = "3.14.1"


def announcements(mock: MockSlack) -> list[str]:
    return [
        str(call.body["text"])
        for call in mock.ok("chat.postMessage")
        if str(call.body.get("text", "")).startswith(f"{TAG} is published: ")
    ]


async def restart_after_death(ws: Workspace, when: str, step: str) -> int:
    """The team confirms the publish; the bot dies at ``when`` of ``step``; a new bot on
    the same state file, folders and Slack resumes it. Returns how many files it publishes."""
    world = ws.world
    staged = world.stage(TAG)
    await world.ready_all(TAG)
    confirm = await world.plan(TAG)
    world.store.append = dying(world.store.append, when, step, died)  # type: ignore[method-assign]
    with pytest.raises(Died):
        await world.say("hugo", confirm)
    world.store.close()  # what the dead process held, the kernel lets go

    await world.start().resume()
    return len(staged)


@pytest.mark.parametrize(("when", "step"), MOMENTS)
async def test_a_bot_dead_at_any_moment_of_the_publish_announces_once_on_slack(
    workspace: Workspace, when: str, step: str
) -> None:
    files = await restart_after_death(workspace, when, step)

    mock = workspace.mock
    assert len(announcements(mock)) == 1, announcements(mock)
    marked = [m for m in mock.metadata.values() if m["event_type"] == "relbot_announcement"]
    assert len(marked) == 1 and marked[0]["event_payload"]["tag"] == TAG
    texts = [str(c.body.get("text")) for c in mock.ok("chat.postMessage")]
    told = [t for t in texts if f"Published {TAG}: " in t]
    assert told == [f"<@{HUGO}> Published {TAG}: {files} files are public."]
    assert texts.index(told[0]) > texts.index(announcements(mock)[0])
    assert workspace.world.events(TAG).count("published") == 1


async def test_without_the_history_scope_the_bot_still_announces_and_says_what_to_add(
    mock_slack: MockSlack, caplog: pytest.LogCaptureFixture
) -> None:
    mock_slack.scopes -= {"channels:history"}
    chat = SlackChat(AsyncWebClient(token="xoxb-test", base_url=mock_slack.api_url), CHANNEL)
    once = Once("relbot_announcement", TAG, "0123456789abcdef")
    message = ChannelMessage(ChannelKind.ANNOUNCEMENT, TAG, f"{TAG} is published: …", once=once)

    with caplog.at_level(logging.WARNING):
        await chat.post(message)

    assert len(announcements(mock_slack)) == 1
    assert "the app lacks the scope channels:history" in caplog.text


async def test_slack_shows_a_message_s_metadata_in_its_history_only_when_asked(
    mock_slack: MockSlack,
) -> None:
    """The double as Slack: conversations.history leaves metadata out without
    include_all_metadata."""
    client = AsyncWebClient(token="xoxb-test", base_url=mock_slack.api_url)
    metadata = {"event_type": "relbot_announcement", "event_payload": {"tag": TAG}}
    await client.chat_postMessage(channel=CHANNEL, text="posted", metadata=metadata)

    plain = await client.conversations_history(channel=CHANNEL, limit=10)
    asked = await client.conversations_history(channel=CHANNEL, limit=10, include_all_metadata=True)

    assert [m.get("metadata") for m in plain["messages"]] == [None]
    assert [m.get("metadata") for m in asked["messages"]] == [metadata]


@pytest.mark.parametrize(
    ("private", "scope"), [(False, "channels:history"), (True, "groups:history")]
)
async def test_check_names_the_history_scope_of_the_channel_s_kind(
    mock_slack: MockSlack, private: bool, scope: str
) -> None:
    mock_slack.channels[CHANNEL].private = private
    mock_slack.scopes -= {"channels:history", "groups:history"}

    assert await check(platform_on(mock_slack, hugo=HUGO)) == [
        f"slack: the app lacks the scope {scope}; add it under OAuth & Permissions (or "
        "recreate the app from `relbot slack-manifest`) and reinstall the app."
    ]
