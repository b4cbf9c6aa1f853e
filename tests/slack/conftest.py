"""The Slack platform on loopback: the real Bolt app in HTTP mode, a mock of Slack's servers,
and a workspace that sends slash commands and button clicks signed as Slack signs them."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest
from slack_sdk.signature import SignatureVerifier

from adapters.slack.blocks import PUBLISH_ACTION
from adapters.slack.platform import SlackPlatform
from bot.domain.files import StagedFile
from bot.domain.tags import ReleaseTag
from bot.ports import Chat
from bot.storage.local import LocalStorage
from tests.conftest import BaseWorld
from tests.slack.mock_web_api import TEAM, MockSlack

SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"  # a made-up secret, as in Slack's docs
BOT_TOKEN = "xoxb-0000000000-relbot-test"
CHANNEL = "C0RELEASE"
HUGO, ALICE, STEVE, NED, EVE = "U0HUGO", "U0ALICE", "U0STEVE", "U0NED", "U0EVE"

SLACK_TEAM_TOML = f"""
    profile = "cpython"
    state = "data/state.db"
    confirm_timeout = 600

    [storage]
    kind = "local"
    staging = "data/staging"
    public = "data/public"

    [slack]
    channel = "{CHANNEL}"
    mode = "http"

    [people.hugo]
    rm = ["3.14", "3.15"]
    roles = ["source", "docs"]
    slack = "{HUGO}"

    [people.alice]
    rm = ["3.14"]
    slack = "{ALICE}"

    [people.steve]
    roles = ["windows"]
    slack = "{STEVE}"

    [people.ned]
    roles = ["macos"]
    slack = "{NED}"

    [people.eve]
    slack = "{EVE}"
"""


class GatedStorage(LocalStorage):
    """Local storage whose next staging listing, once ``hold_next_listing`` is called, waits
    until the test opens the gate: slow storage, made deterministic."""

    def __init__(self, staging: Path, public: Path) -> None:
        super().__init__(staging, public)
        self.entered = threading.Event()
        self.release = threading.Event()
        self._hold = False

    def hold_next_listing(self) -> None:
        self._hold = True

    def list_staging(self, tag: ReleaseTag) -> dict[str, StagedFile] | None:
        if self._hold:
            self._hold = False
            self.entered.set()
            if not self.release.wait(timeout=30):
                raise AssertionError("the test never released the listing")
        return super().list_staging(tag)


class SlackWorld(BaseWorld[Chat]):
    """World's team and folders, with Slack IDs and the Slack channel as the release channel."""

    storage: GatedStorage

    def __init__(self, root: Path, chat: Chat, extra_toml: str = "") -> None:
        super().__init__(root, extra_toml, team_toml=SLACK_TEAM_TOML, chat=chat)

    def make_storage(self) -> GatedStorage:
        return GatedStorage(self.staging, self.public)


@dataclass(frozen=True)
class Sent:
    """A request as delivered to relbot: the HTTP status it got, and the name of the
    ``response_url`` where its answer arrives."""

    status: int
    name: str
    body: str


class Workspace:
    """Slack's side of the conversation: signed deliveries to relbot's ``/slack/events``."""

    def __init__(self, mock: MockSlack, platform: SlackPlatform, world: SlackWorld) -> None:
        self.mock = mock
        self.platform = platform
        self.world = world
        self._ids = itertools.count(1)

    @property
    def events_url(self) -> str:
        return f"http://127.0.0.1:{self.platform.port}/slack/events"

    async def command(
        self,
        user: str,
        command: str,
        text: str = "",
        *,
        trigger_id: str | None = None,
        retry: int | None = None,
        secret: str = SIGNING_SECRET,
    ) -> Sent:
        """A slash command, form-encoded with the fields Slack sends."""
        name, fields = self.command_fields(user, command, text, trigger_id=trigger_id)
        return await self.deliver(urlencode(fields), name, retry=retry, secret=secret)

    def command_fields(
        self, user: str, command: str, text: str = "", *, trigger_id: str | None = None
    ) -> tuple[str, dict[str, str]]:
        """The name of a new response URL, and the fields Slack sends with a slash command."""
        n = next(self._ids)
        name = f"command-{n}"
        return name, {
            "token": "legacy-verification-token",
            "team_id": TEAM,
            "team_domain": "python-release",
            "channel_id": CHANNEL,
            "channel_name": "release",
            "user_id": user,
            "user_name": user.lower(),
            "command": command,
            "text": text,
            "api_app_id": "A0RELBOT",
            "is_enterprise_install": "false",
            "response_url": self.mock.response_url(name),
            "trigger_id": trigger_id or f"{n}.{n * 7}.trigger",
        }

    async def click(
        self,
        user: str,
        value: str,
        *,
        trigger_id: str | None = None,
        retry: int | None = None,
    ) -> Sent:
        """A click on the Publish button of an ephemeral message (``block_actions``)."""
        n = next(self._ids)
        name = f"click-{n}"
        trigger_id = trigger_id or f"{n}.{n * 7}.trigger"
        self.mock.triggers.add(trigger_id)  # Slack lets the app open one view with it
        payload: dict[str, Any] = {
            "type": "block_actions",
            "user": {"id": user, "username": user.lower(), "team_id": TEAM},
            "api_app_id": "A0RELBOT",
            "token": "legacy-verification-token",
            "container": {
                "type": "message",
                "message_ts": "1800000000.999999",
                "channel_id": CHANNEL,
                "is_ephemeral": True,
            },
            "trigger_id": trigger_id,
            "team": {"id": TEAM, "domain": "python-release"},
            "channel": {"id": CHANNEL, "name": "release"},
            "response_url": self.mock.response_url(name),
            "actions": [
                {
                    "action_id": PUBLISH_ACTION,
                    "block_id": PUBLISH_ACTION,
                    "text": {"type": "plain_text", "text": "Publish"},
                    "value": value,
                    "type": "button",
                    "action_ts": f"1800000{n:03d}.000100",
                }
            ],
        }
        body = urlencode({"payload": json.dumps(payload)})
        return await self.deliver(body, name, retry=retry)

    async def submit(self, user: str, view: dict[str, Any], values: dict[str, str]) -> Sent:
        """The user submits a modal the app opened (``view_submission``), with ``values``
        typed in its inputs (block_id = action_id = the key)."""
        n = next(self._ids)
        state = {
            key: {key: {"type": "plain_text_input", "value": value}}
            for key, value in values.items()
        }
        payload: dict[str, Any] = {
            "type": "view_submission",
            "team": {"id": TEAM, "domain": "python-release"},
            "user": {"id": user, "username": user.lower(), "team_id": TEAM},
            "api_app_id": "A0RELBOT",
            "token": "legacy-verification-token",
            "trigger_id": f"{n}.{n * 7}.submit",
            "view": {
                **view,
                "id": f"V{n:04d}",
                "team_id": TEAM,
                "state": {"values": state},
                "hash": f"{n}.hash",
            },
            "response_urls": [],
        }
        body = urlencode({"payload": json.dumps(payload)})
        return await self.deliver(body, f"submit-{n}")

    async def deliver(
        self, body: str, name: str, *, retry: int | None = None, secret: str = SIGNING_SECRET
    ) -> Sent:
        """POST ``body`` signed as Slack signs it (v0 HMAC of timestamp and body)."""
        timestamp = str(int(time.time()))
        signature = SignatureVerifier(secret).generate_signature(timestamp=timestamp, body=body)
        assert signature is not None
        headers: dict[str, str] = {
            "Content-Type": "application/x-www-form-urlencoded",
            "X-Slack-Request-Timestamp": timestamp,
            "X-Slack-Signature": signature,
        }
        if retry is not None:
            headers["X-Slack-Retry-Num"] = str(retry)
            headers["X-Slack-Retry-Reason"] = "http_timeout"
        timeout = aiohttp.ClientTimeout(total=30)
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.post(self.events_url, data=body.encode(), headers=headers) as response,
        ):
            return Sent(response.status, name, await response.text())

    async def answer(self, sent: Sent) -> dict[str, Any]:
        """The last answer relbot gave to ``sent`` (after everything under way finished)."""
        await self.platform.drain()
        answers = self.mock.responses(sent.name)
        assert answers, f"no answer to {sent.name}"
        return answers[-1]

    async def ready_all(self, tag: str) -> None:
        holders = {"source": HUGO, "docs": HUGO, "windows": STEVE, "macos": NED}
        for role in self.world.profile.roles_for(ReleaseTag.parse(tag)):
            answer = await self.answer(await self.command(holders[role], "/ready", f"{role} {tag}"))
            assert answer["response_type"] == "in_channel", answer["text"]


def release_workspace() -> MockSlack:
    """Slack's side of the team: the release channel with the bot in it, and each person."""
    mock = MockSlack()
    mock.add_channel(CHANNEL, "release")
    mock.add_users(HUGO, ALICE, STEVE, NED, EVE)
    return mock


@pytest.fixture
async def mock_slack() -> AsyncIterator[MockSlack]:
    mock = release_workspace()
    await mock.start()
    yield mock
    await mock.stop()


@pytest.fixture
async def workspace(tmp_path: Path, mock_slack: MockSlack) -> AsyncIterator[Workspace]:
    platform = SlackPlatform(
        bot_token=BOT_TOKEN,
        channel=CHANNEL,
        mode="http",
        signing_secret=SIGNING_SECRET,
        port=0,
        host="127.0.0.1",
        api_url=mock_slack.api_url,
        people={"hugo": HUGO, "alice": ALICE, "steve": STEVE, "ned": NED, "eve": EVE},
    )
    world = SlackWorld(tmp_path, platform.chat)
    await platform.start(world.gate)
    yield Workspace(mock_slack, platform, world)
    world.storage.release.set()  # never leave a listing blocked behind a failed test
    await platform.stop()
    world.store.close()
