"""The doubles' check against the services' API descriptions can fail: a request with a wrong
field name, or in the wrong place, is reported by operation and field."""

from __future__ import annotations

import json
import urllib.request

import aiohttp
import pytest

from tests.discord.mock_discord import API, MockDiscord
from tests.doubles.discourse import DiscourseDouble
from tests.slack.mock_web_api import MockSlack


async def test_a_wrong_field_sent_to_the_slack_double_is_reported() -> None:
    mock = MockSlack()
    mock.add_channel("C0RELEASE", "release")
    await mock.start()
    async with aiohttp.ClientSession() as session:
        await session.post(
            mock.api_url + "chat.postMessage",
            json={"channel": "C0RELEASE", "text": "hello", "txet": "typo"},
            headers={"Authorization": "Bearer xoxb-test"},
        )
    with pytest.raises(AssertionError, match=r"chat\.postMessage: json\.txet: no such argument"):
        await mock.stop()


async def test_a_wrong_field_sent_to_the_discord_double_is_reported() -> None:
    with pytest.raises(AssertionError, match=r"create_message: body\.contnet: not in the desc"):
        async with (
            MockDiscord(guild=1, channel=2, token="t") as mock,
            aiohttp.ClientSession() as session,
        ):
            await session.post(
                f"http://127.0.0.1:{mock.port}{API}/channels/2/messages",
                json={"contnet": "typo"},
                headers={"Authorization": "Bot t"},
            )


async def test_a_query_parameter_the_discord_description_lacks_is_reported() -> None:
    with pytest.raises(AssertionError, match=r"list_messages: query\.count: no such query"):
        async with (
            MockDiscord(guild=1, channel=2, token="t") as mock,
            aiohttp.ClientSession() as session,
        ):
            await session.get(
                f"http://127.0.0.1:{mock.port}{API}/channels/2/messages?count=5",
                headers={"Authorization": "Bot t"},
            )


def test_a_wrong_field_sent_to_the_discourse_double_is_reported() -> None:
    body = {"title": "Python 3.14.1 is out", "raw": "x" * 40, "category": 23, "titel": "typo"}
    with (
        pytest.raises(AssertionError, match=r"createTopicPostPM: body\.titel: not in the desc"),
        DiscourseDouble(users={"hugo": "key"}) as forum,
    ):
        request = urllib.request.Request(
            forum.url + "posts.json",
            data=json.dumps(body).encode(),
            headers={
                "Api-Key": "key",
                "Api-Username": "hugo",
                "Content-Type": "application/json",
            },
        )
        urllib.request.urlopen(request).close()
