"""Slash command names are global in a Slack workspace: `[slack] command_prefix` renames every
command, relbot answers under those names and says them, and the app manifest is written from
the same table, so what Slack offers cannot drift from what relbot answers."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adapters.slack.commands import COMMANDS, Renamer, command_names, manifest
from adapters.slack.platform import SlackPlatform
from bot.config import load_config
from bot.domain.commands import USAGE
from bot.errors import ConfigError
from tests.slack.conftest import (
    BOT_TOKEN,
    CHANNEL,
    HUGO,
    SIGNING_SECRET,
    STEVE,
    SlackWorld,
    Workspace,
)
from tests.slack.mock_web_api import MockSlack

ROOT = Path(__file__).parents[2]
RELBOT = Path(sys.executable).with_name("relbot")
TAG = "3.14.1"


@pytest.fixture
async def prefixed(tmp_path: Path, mock_slack: MockSlack) -> AsyncIterator[Workspace]:
    platform = SlackPlatform(
        bot_token=BOT_TOKEN,
        channel=CHANNEL,
        mode="http",
        signing_secret=SIGNING_SECRET,
        port=0,
        api_url=mock_slack.api_url,
        people={"hugo": HUGO, "steve": STEVE},
        command_prefix="rb-",
    )
    world = SlackWorld(tmp_path, platform.chat)
    world.storage.release.set()
    await platform.start(world.gate)
    yield Workspace(mock_slack, platform, world)
    await platform.stop()
    world.store.close()


def test_without_a_prefix_the_commands_are_the_contracts_and_help_is_relbot_help() -> None:
    assert list(COMMANDS.values()) == [f"/{verb}" for verb in USAGE]
    assert list(COMMANDS) == [f"/{verb}" for verb in USAGE if verb != "help"] + ["/relbot-help"]


def test_a_prefix_names_every_command_of_the_code_table() -> None:
    assert list(command_names("rb-")) == [f"/rb-{verb}" for verb in USAGE]


async def test_a_prefixed_command_is_answered_and_the_answers_say_the_prefixed_names(
    prefixed: Workspace,
) -> None:
    ws = prefixed
    ws.world.stage(TAG)
    held = await ws.answer(await ws.command(STEVE, "/rb-hold", f"{TAG} notarization"))
    helped = await ws.answer(await ws.command(STEVE, "/rb-help", "unhold"))

    assert held["text"] == f"{TAG} is on hold; nothing is published until /rb-unhold {TAG}."
    assert "/rb-unhold TAG" in helped["text"] and "/unhold" not in helped["text"]
    (notice,) = [c.body["text"] for c in ws.mock.ok("chat.postMessage") if not c.blocks]
    assert notice == f"steve put {TAG} on hold: notarization. /rb-unhold {TAG} lifts it."
    assert ws.world.events(TAG) == ["held"]


async def test_the_unprefixed_name_is_not_answered_once_a_prefix_is_set(
    prefixed: Workspace,
) -> None:
    sent = await prefixed.command(STEVE, "/hold", f"{TAG} notarization")

    assert sent.status == 404  # bolt: no listener for that command
    assert prefixed.world.events(TAG) == []


def test_only_commands_are_renamed_not_paths_or_longer_words() -> None:
    rename = Renamer("rb-")
    text = "type /publish 3.14.1; docs/ready and /readyz and /srv/status stay; (/help)"

    assert rename.text(text) == (
        "type /rb-publish 3.14.1; docs/ready and /readyz and /srv/status stay; (/rb-help)"
    )
    assert Renamer().text("/help and /hold") == "/relbot-help and /hold"


def test_the_committed_manifest_is_what_relbot_slack_manifest_writes_by_default(
    tmp_path: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "RELBOT_CONFIG"}
    result = subprocess.run(
        [str(RELBOT), "slack-manifest"], cwd=tmp_path, env=env, capture_output=True, text=True
    )

    assert result.returncode == 0, result.stderr
    committed = (ROOT / "deploy" / "slack-app-manifest.yml").read_text(encoding="utf-8")
    assert result.stdout == committed, "run `relbot slack-manifest > deploy/slack-app-manifest.yml`"


def test_the_manifest_follows_the_prefix_and_http_mode_of_the_config(tmp_path: Path) -> None:
    config = tmp_path / "relbot.toml"
    config.write_text(
        textwrap.dedent(f"""
            [slack]
            channel = "{CHANNEL}"
            mode = "http"
            command_prefix = "rb-"
            [people.hugo]
            rm = ["3.14"]
        """),
        encoding="utf-8",
    )
    url = "https://relbot.example.org/slack/events"
    result = subprocess.run(
        [str(RELBOT), "slack-manifest", "--config", str(config), "--url", url],
        capture_output=True,
        text=True,
    )

    assert result.returncode == 0, result.stderr
    text = result.stdout
    declared = re.findall(r"^\s*- command: (\S+)$", text, flags=re.MULTILINE)
    assert declared == [f"/rb-{verb}" for verb in USAGE]
    assert len(re.findall(rf'^\s+url: "{url}"$', text, flags=re.MULTILINE)) == len(USAGE)
    assert f'request_url: "{url}"' in text
    assert re.search(r"^\s*socket_mode_enabled: false$", text, flags=re.MULTILINE)
    assert '"Block publishing a release until /rb-unhold"' in text
    assert "/relbot-help" not in text and " /ready " not in text


def test_the_default_manifest_is_socket_mode_without_urls() -> None:
    text = manifest()
    assert "url:" not in text
    assert re.search(r"^\s*socket_mode_enabled: true$", text, flags=re.MULTILINE)


@pytest.mark.parametrize("prefix", ["RB-", "rb ", "-rb", "r/b-", "x" * 21])
def test_a_prefix_slack_would_refuse_is_a_config_error_naming_the_key(
    tmp_path: Path, prefix: str
) -> None:
    config = tmp_path / "relbot.toml"
    config.write_text(
        f'[slack]\nchannel = "{CHANNEL}"\ncommand_prefix = "{prefix}"\n[people.hugo]\nrm = []\n',
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match=r"slack\.command_prefix"):
        load_config(config)
