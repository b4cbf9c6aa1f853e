"""Signing at the confirmation on Discord: the plan ends with the Sigstore login link, its
Publish button opens a modal whose one text input is the code the login page shows, and
submitting it is the RM's one confirmation. The real discord.py client against the mock of
Discord, and the private Sigstore instance with the real sigstore-python signer."""

from __future__ import annotations

import re
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.domain.history import EventKind
from tests.discord.conftest import ALICE, HOLDERS, HUGO, TOKEN, TOKEN_ENV, DiscordWorld
from tests.discord.mock_discord import EPHEMERAL, MockDiscord
from tests.signing_fixtures import RM, SIGNED_WITH_INSTANCE, sigstore_instance
from tests.sigstore_instance import SigstoreInstance

__all__ = ["sigstore_instance"]

TAG = "3.14.1"


@pytest.fixture
async def signing_bot(
    tmp_path: Path,
    mock_discord: MockDiscord,
    sigstore_instance: SigstoreInstance,
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[DiscordWorld]:
    """A Discord bot that requires signatures, signed with the private instance."""
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    sigstore_instance.login_as = RM
    (tmp_path / "trust").mkdir()
    sigstore_instance.write_trust_config(tmp_path / "trust" / "instance.json")
    extra = SIGNED_WITH_INSTANCE.format(require="true", trust_file="instance.json")
    world = DiscordWorld(tmp_path, mock_discord.api_url, extra)
    platform = world.platform()
    world.chat = platform.chat
    await platform.start(world.start())
    yield world
    await platform.stop()


async def plan(mock: MockDiscord, world: DiscordWorld) -> dict[str, Any]:
    world.stage(TAG)
    for role, user in HOLDERS.items():
        await mock.reply(await mock.command("ready", user=user, role=role, tag=TAG))
    return await mock.reply(await mock.command("publish", user=HUGO, tag=TAG))


def log_in(message: dict[str, Any]) -> str:
    """The RM follows the link at the end of the plan and reads the code the page shows."""
    link = re.search(r"Log in to sign: (\S+)$", message["content"])
    assert link is not None, message["content"]
    with urllib.request.urlopen(link.group(1), timeout=10) as page:
        return str(page.read().decode()).strip()


async def test_the_login_modal_is_the_one_confirmation_that_signs_and_publishes(
    signing_bot: DiscordWorld, mock_discord: MockDiscord
) -> None:
    message = await plan(mock_discord, signing_bot)
    assert message["flags"] & EPHEMERAL
    assert message["content"].rstrip().split("\n")[-1].startswith("Log in to sign: http")
    [button] = [b for row in message["components"] for b in row["components"]]
    assert button["label"] == f"Publish {TAG}"

    opened = await mock_discord.click(button["custom_id"], user=HUGO, message=message)
    modal = await mock_discord.wait_for(lambda: mock_discord.modal(opened))
    assert modal["title"] == f"Publish {TAG}?"
    [label] = modal["components"]
    assert label["label"] == "Code from the Sigstore login page"
    login = log_in(message)
    field = label["component"]["custom_id"]

    submitted = await mock_discord.submit_modal(
        modal, user=HUGO, message=message, values={field: login}
    )
    done = await mock_discord.reply(submitted)

    assert done["content"].startswith(f"Published {TAG}:"), done["content"]
    assert mock_discord.callback(submitted) == {"type": 6}  # acknowledged, the plan unchanged
    assert mock_discord.originals_edited(submitted)[-1]["components"] == []  # no second click
    public = signing_bot.public_files()
    assert {f"{TAG}/Python-3.14.1.tgz{s}" for s in ("", ".sig", ".crt", ".sigstore")} <= public
    assert signing_bot.events(TAG, EventKind.SIGNED) == ["signed"]


async def test_a_modal_submitted_by_another_rm_is_refused_and_nothing_moves(
    signing_bot: DiscordWorld, mock_discord: MockDiscord
) -> None:
    message = await plan(mock_discord, signing_bot)
    [button] = [b for row in message["components"] for b in row["components"]]
    opened = await mock_discord.click(button["custom_id"], user=ALICE, message=message)
    modal = await mock_discord.wait_for(lambda: mock_discord.modal(opened))
    field = modal["components"][0]["component"]["custom_id"]

    submitted = await mock_discord.submit_modal(
        modal, user=ALICE, message=message, values={field: log_in(message)}
    )
    refused = await mock_discord.reply(submitted)

    assert "issued to hugo" in refused["content"]
    assert signing_bot.public_files() == set()
    assert "confirmed" not in signing_bot.events(TAG)


async def test_the_slash_command_takes_the_login_as_an_option(
    signing_bot: DiscordWorld, mock_discord: MockDiscord
) -> None:
    message = await plan(mock_discord, signing_bot)
    code = re.search(rf"/publish {re.escape(TAG)} confirm ([A-Z0-9]+) <login>", message["content"])
    assert code is not None

    sent = await mock_discord.command(
        "publish", user=HUGO, tag=TAG, confirm=code.group(1), login=log_in(message)
    )
    done = await mock_discord.reply(sent)

    assert done["content"].startswith(f"Published {TAG}:"), done["content"]
