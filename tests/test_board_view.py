"""The board's view model and HTML, without a server: offers, waivers, escaping, a published
release and its links, what reads at a glance, and the JSON schema that docs/board.md documents
for the release automation."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

from bot.domain.tags import ReleaseTag
from bot.web.board import NoteView, ReleaseView, release_view
from bot.web.board_html import ago, release_body
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


async def published(world: World) -> ReleaseView:
    await world.say("hugo", await world.plan("3.14.1"))
    tag = ReleaseTag.parse("3.14.1")
    observed = await world.gate.observed(tag)
    return release_view(world.profile, tag, observed, world.store.events(tag), now=world.clock())


async def test_a_published_release_has_no_blockers_and_links_to_python_org(world: World) -> None:
    await offered(world)
    view = await published(world)

    assert view.published and not view.publishable and view.blockers == ()
    data = view.to_json()
    assert data["blockers"] == [] and data["publishable"] is False
    assert data["links"] == {
        "release page": "https://www.python.org/downloads/release/python-3141/",
        "files": "https://www.python.org/ftp/python/3.14.1/",
    }
    urls = {f["target"]: f["url"] for f in data["files"]}
    assert urls["3.14.1/Python-3.14.1.tgz"] == (
        "https://www.python.org/ftp/python/3.14.1/Python-3.14.1.tgz"
    )
    assert urls["doc/3.14.1/python-3.14.1-docs.epub"] == (
        "https://www.python.org/ftp/python/doc/3.14.1/python-3.14.1-docs.epub"
    )
    body = release_body(view, now=world.clock())
    assert 'href="https://www.python.org/downloads/release/python-3141/"' in body
    assert '<th scope="col">Signature</th>' not in body  # nothing checked: no such column
    assert "1 file claimed" in body and "1 files" not in body


async def test_an_open_release_links_nothing_yet(world: World) -> None:
    view = await offered(world)

    assert view.links == () and all(f.url is None for f in view.files)
    assert '<a href="https://' not in release_body(view, now=world.clock())


async def test_unsigned_files_say_not_required_when_signatures_are_not(world: World) -> None:
    view = await offered(world)

    body = release_body(view, now=world.clock())

    assert ">not required</span>" in body and ">missing</span>" not in body
    required = dataclasses.replace(view, signatures_required=True)
    assert ">missing</span>" in release_body(required, now=world.clock())


async def test_the_roles_detail_leaves_who_to_the_by_column(world: World) -> None:
    view = await offered(world)
    assert view.roles[0].detail.startswith("hugo, ")  # the channel summary's words

    body = release_body(view, now=world.clock() + 720)

    row = body.split('<th scope="row">source</th>')[1].split("</tr>")[0]
    assert "<td>hugo</td>" in row and "hugo," not in row
    assert "(12 minutes ago)" in row


def test_times_read_as_how_long_ago_or_how_soon() -> None:
    now = 1_800_000_000.0
    assert ago(now - 5, now) == "just now"
    assert ago(now - 60, now) == "1 minute ago"
    assert ago(now - 12 * 60 - 59, now) == "12 minutes ago"
    assert ago(now - 3 * 3600, now) == "3 hours ago"
    assert ago(now - 3 * 86400, now) == "3 days ago"
    assert ago(now + 7 * 60, now) == "in 7 minutes"
    assert ago(now + 30, now) == "in less than a minute"
