"""The board's view model and HTML, without a server: offers, waivers, escaping, and the JSON
schema that docs/board.md documents for the release automation."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

from bot.board import NoteView, ReleaseView, release_view
from bot.board_html import release_body
from bot.domain.tags import ReleaseTag
from tests.conftest import World

DOCS = Path(__file__).resolve().parents[1] / "docs" / "board.md"


async def offered(world: World) -> ReleaseView:
    world.stage("3.14.1")
    await world.gate.scan()
    await world.ready_all("3.14.1")
    await world.plan("3.14.1")
    tag = ReleaseTag.parse("3.14.1")
    observed = await world.gate.observed(tag)
    events = world.store.events(tag)
    return release_view(world.profile, tag, observed, events, now=world.clock())


async def test_an_offer_shows_who_and_until_when_and_expires(world: World) -> None:
    view = await offered(world)
    assert view.plan is not None and view.plan.stage == "offered" and view.plan.by == "hugo"
    assert view.plan.files == 19 and view.plan.expires_at == world.clock() + 600
    tag = ReleaseTag.parse("3.14.1")
    observed = await world.gate.observed(tag)
    later = release_view(
        world.profile, tag, observed, world.store.events(tag), now=world.clock() + 601
    )
    assert later.plan is not None and later.plan.stage == "expired"
    assert "its confirmation has expired" in release_body(later)


async def test_waivers_are_shown_escaped_when_the_state_has_them(world: World) -> None:
    view = await offered(world)
    assert view.waivers == () and "No waivers." in release_body(view)
    waived = dataclasses.replace(
        view,
        waivers=(NoteView("hugo", "<b>not this time</b>", world.clock(), subject="macos"),),
    )
    body = release_body(waived)
    assert '<th scope="row">macos</th><td>hugo</td>' in body
    assert "&lt;b&gt;not this time&lt;/b&gt;" in body
    assert waived.to_json()["waivers"][0]["subject"] == "macos"


async def test_the_documented_json_example_has_exactly_the_fields_served(world: World) -> None:
    example = re.search(r"```json\n(.*?)```", DOCS.read_text(), re.DOTALL)
    assert example is not None
    documented = json.loads(example.group(1))
    view = await offered(world)
    served = view.to_json()
    served["holds"] = [{"by": "", "reason": "", "at": ""}]
    served["waivers"] = [{"subject": "", "by": "", "reason": "", "at": ""}]
    assert served.keys() == documented.keys()
    assert served["roles"]["source"].keys() == documented["roles"]["source"].keys()
    assert served["files"][0].keys() == documented["files"][0].keys()
    assert served["timeline"][0].keys() == documented["timeline"][0].keys()
    assert served["plan"].keys() == {
        "stage", "by", "files", "size", "digest", "folders", "expires_at", "steps_done",
    }  # fmt: skip
    table = DOCS.read_text().split("## The JSON")[1]
    for name in served:  # every field served is in the documented table
        assert f"`{name}`" in table, name
