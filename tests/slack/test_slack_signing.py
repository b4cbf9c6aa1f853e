"""Signing at the confirmation on Slack: the plan links the Sigstore login, its Publish button
opens a dialog whose one field is the code the login page shows, and submitting it is the RM's
one confirmation. The real Bolt app, the mock of Slack's servers, and the private Sigstore
instance with the real sigstore-python signer and verifier."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from adapters.slack.blocks import LOGIN_INPUT, LOGIN_VIEW
from adapters.slack.platform import SlackPlatform
from bot.domain.history import EventKind
from tests.signing_fixtures import RM, SIGNED_WITH_INSTANCE, sigstore_instance
from tests.sigstore_instance import SigstoreInstance
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
from tests.slack.mock_web_api import MockSlack

__all__ = ["sigstore_instance"]

TAG = "3.14.1"


@pytest.fixture
async def signing(
    tmp_path: Path, mock_slack: MockSlack, sigstore_instance: SigstoreInstance
) -> AsyncIterator[Workspace]:
    """A Slack workspace whose bot requires signatures, signed with the private instance."""
    sigstore_instance.login_as = RM
    (tmp_path / "trust").mkdir()
    sigstore_instance.write_trust_config(tmp_path / "trust" / "instance.json")
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
    extra = SIGNED_WITH_INSTANCE.format(require="true", trust_file="instance.json")
    world = SlackWorld(tmp_path, platform.chat, extra)
    await platform.start(world.gate)
    yield Workspace(mock_slack, platform, world)
    world.storage.release.set()
    await platform.stop()
    world.store.close()


def publish_button(plan: dict[str, Any]) -> dict[str, Any]:
    actions = next(b for b in plan["blocks"] if b["type"] == "actions")
    return dict(actions["elements"][0])


def log_in(plan: dict[str, Any]) -> str:
    """The RM follows the plan's login link and reads the code the page shows."""
    section = next(
        b for b in plan["blocks"] if "Log in to Sigstore" in b.get("text", {}).get("text", "")
    )
    link = section["text"]["text"].split("<", 1)[1].split("|", 1)[0]
    with urllib.request.urlopen(link, timeout=10) as page:
        return str(page.read().decode()).strip()


async def test_the_login_dialog_is_the_one_confirmation_that_signs_and_publishes(
    signing: Workspace,
) -> None:
    ws = signing
    ws.world.stage(TAG)
    await ws.ready_all(TAG)
    plan = await ws.answer(await ws.command(HUGO, "/publish", TAG))
    button = publish_button(plan)
    assert "confirm" not in button  # the dialog asks instead, with the login field
    assert json.loads(button["value"])["login"] == "1"

    click = await ws.click(HUGO, button["value"])
    await ws.platform.drain()
    [view] = ws.mock.views
    assert view["callback_id"] == LOGIN_VIEW and view["title"]["text"] == f"Publish {TAG}?"
    login = log_in(plan)
    submitted = await ws.submit(HUGO, view, {LOGIN_INPUT: login})
    assert submitted.status == 200 and submitted.body == ""  # acknowledged: the dialog closes
    await ws.platform.drain()

    progress, result = ws.mock.responses(click.name)
    assert "signing and checking" in progress["text"]
    assert result["text"].startswith(f"Published {TAG}:"), result["text"]
    public = ws.world.public_files()
    assert {f"{TAG}/Python-3.14.1.tgz{s}" for s in ("", ".sig", ".crt", ".sigstore")} <= public
    assert ws.world.events(TAG, EventKind.SIGNED) == ["signed"]
    assert not any(login in json.dumps(c.body) for c in ws.mock.calls)  # never echoed


async def test_a_login_of_someone_else_is_refused_in_the_plan_s_place_and_nothing_moves(
    signing: Workspace, sigstore_instance: SigstoreInstance
) -> None:
    ws = signing
    ws.world.stage(TAG)
    await ws.ready_all(TAG)
    plan = await ws.answer(await ws.command(HUGO, "/publish", TAG))
    click = await ws.click(HUGO, publish_button(plan)["value"])
    await ws.platform.drain()
    sigstore_instance.login_as = ("mallory@example.org", "https://github.com/login/oauth")
    try:
        await ws.submit(HUGO, ws.mock.views[-1], {LOGIN_INPUT: log_in(plan)})
        await ws.platform.drain()
    finally:
        sigstore_instance.login_as = RM

    result = ws.mock.responses(click.name)[-1]
    assert result["text"].startswith("That login is mallory@example.org"), result["text"]
    assert ws.world.public_files() == set()
    assert "confirmed" not in ws.world.events(TAG)


async def test_a_click_by_another_rm_opens_the_dialog_but_the_gate_refuses_it(
    signing: Workspace,
) -> None:
    ws = signing
    ws.world.stage(TAG)
    await ws.ready_all(TAG)
    plan = await ws.answer(await ws.command(HUGO, "/publish", TAG))
    click = await ws.click(ALICE, publish_button(plan)["value"])
    await ws.platform.drain()

    await ws.submit(ALICE, ws.mock.views[-1], {LOGIN_INPUT: log_in(plan)})
    await ws.platform.drain()

    result = ws.mock.responses(click.name)[-1]
    assert "issued to hugo" in result["text"]
    assert ws.world.public_files() == set()
