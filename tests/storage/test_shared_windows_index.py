"""One install index for two bugfix releases of a day, through the whole gate, on local folders
and over SFTP (a real sshd): built once and staged for both, it goes live with the last of
them, never before both are public; an index that another publish makes stale is told to the
Windows expert at once."""

from __future__ import annotations

import os
from pathlib import Path

from bot.domain.history import EventKind
from bot.domain.tags import ReleaseTag
from bot.ports import Journal
from bot.ports.messages import ChannelKind
from bot.web.board import release_view
from tests.conftest import World
from tests.storage.test_windows_index_gate import (
    StorageFactory,
    live,
    make_storage,
    publish_live,
    world_on,
)
from tests.windows_index_data import (
    LIVE_VERSIONS,
    catalog_bytes,
    index_bytes,
    manifest_bytes,
    stage_windows_index,
)

__all__ = ["make_storage"]  # the fixture: local folders, then a real sshd

FIRST, LAST = "3.15.1", "3.14.2"


def stage_shared(world_staging: Path) -> bytes:
    """One index of both releases' installs and the live ones, with its catalog, staged for
    each of them (built once, uploaded twice), beside each one's manifest."""
    shared = index_bytes(FIRST, LAST, *LIVE_VERSIONS)
    for tag in (FIRST, LAST):
        folder = world_staging / tag
        (folder / f"windows-{tag}.json").write_bytes(manifest_bytes(tag))
        (folder / "index-windows.json").write_bytes(shared)
        (folder / "index-windows.json.cat").write_bytes(catalog_bytes(shared))
    return shared


def uploaded_later(folder: Path) -> None:
    """Date the index files a few seconds on, as an upload a while later would be: a
    same-size rewrite within one second of the first is not seen over SFTP (whole-second
    times) until the confirmation hashes afresh, which this test is not about."""
    for name in ("index-windows.json", "index-windows.json.cat"):
        stamp = (folder / name).stat().st_mtime + 5
        os.utime(folder / name, (stamp, stamp))


async def ready_sharing(world: World) -> tuple[bytes, bytes]:
    """Both releases staged with one shared index, every role ready; returns the live index
    and the shared one."""
    before = publish_live(world, *LIVE_VERSIONS)
    for tag in (FIRST, LAST):
        world.stage(tag)
    shared = stage_shared(world.staging)
    for tag in (FIRST, LAST):
        await world.ready_all(tag)
    return before, shared


def index_step(store: Journal, tag: str) -> str:
    return store.release(ReleaseTag.parse(tag)).steps_done["index"]


async def test_a_shared_index_goes_live_with_the_last_of_its_releases(
    tmp_path: Path, make_storage: StorageFactory
) -> None:
    world = world_on(tmp_path, make_storage)
    before, shared = await ready_sharing(world)

    status = await world.say("eve", f"/status {FIRST}")
    assert f"shared with {LAST}: it goes live with the last of them to publish" in status.text
    reply = await world.say("hugo", f"/publish {FIRST}")
    assert reply.plan is not None and reply.confirm is not None, reply.text
    assert reply.plan.index_shared_with == (LAST,)
    assert f"The index also lists {LAST}: it goes live with the last of them" in reply.text

    done = await world.say("hugo", reply.confirm.line)
    assert not done.private, done.text
    assert live(world)[0] == before  # FIRST is public; LAST is not: the index waits
    assert f"{FIRST}/windows-{FIRST}.json" in world.public_files()
    assert f"{LAST}/windows-{LAST}.json" not in world.public_files()
    assert index_step(world.store, FIRST).startswith(f"waits for {LAST}: index-windows.json")
    assert done.text.endswith(
        f"The install index waits for {LAST}: index-windows.json and index-windows.json.cat "
        "go live with the last of them, which they also list."
    ), done.text
    shipped = len(world.public_files()) - 2  # beside the live index and its catalog
    assert done.text.startswith(f"Published {FIRST}: {shipped} files are public. "), done.text
    observed = await world.gate.observed(ReleaseTag.parse(FIRST))
    view = release_view(world.profile, ReleaseTag.parse(FIRST), observed, (), now=0.0)
    assert len(view.files) == shipped  # the board lists no index among its public files

    last = await world.say("hugo", await world.plan(LAST))
    assert not last.private, last.text
    assert live(world) == (shared, catalog_bytes(shared))
    assert index_step(world.store, LAST) == "index-windows.json, index-windows.json.cat replaced"


async def test_a_shared_index_restaged_without_the_waiting_installs_is_refused(
    tmp_path: Path, make_storage: StorageFactory
) -> None:
    world = world_on(tmp_path, make_storage)
    before, _ = await ready_sharing(world)
    await world.say("hugo", await world.plan(FIRST))
    assert live(world)[0] == before

    # The Windows expert rebuilds LAST's index from the live one: FIRST's installs, which
    # wait for the shared index, would never go live.
    stage_windows_index(world.staging / LAST, LAST, *LIVE_VERSIONS)
    uploaded_later(world.staging / LAST)
    await world.gate.scan()
    await world.ready_all(LAST)
    refused = await world.say("hugo", f"/publish {LAST}")
    assert refused.private and refused.confirm is None
    assert f"index-windows.json lacks {FIRST}'s installs (pythoncore-3.15-64 {FIRST}" in (
        refused.text
    )
    assert live(world)[0] == before


async def test_an_index_made_stale_by_another_publish_is_told_at_once_with_the_way_out(
    tmp_path: Path, make_storage: StorageFactory
) -> None:
    world = world_on(tmp_path, make_storage)
    publish_live(world, *LIVE_VERSIONS)
    for tag in (FIRST, LAST):
        world.stage(tag)
        stage_windows_index(world.staging / tag, tag, *LIVE_VERSIONS)  # each its own
    for tag in (FIRST, LAST):
        await world.ready_all(tag)
    await world.gate.scan()
    assert not [n for n in world.chat.texts(ChannelKind.NOTICE) if "refused now" in n]

    await world.say("hugo", await world.plan(FIRST))  # a new live index
    await world.gate.follow_ups.finish()  # the look it started at once: no scan needed
    (told,) = [n for n in world.chat.texts(ChannelKind.NOTICE) if "refused now" in n]
    assert told.startswith(
        f"The install index staged for {LAST} is refused now: index-windows.json was built "
        f"before {FIRST} was published: rebuild it"
    )
    assert told.endswith(
        f"Only index-windows.json and index-windows.json.cat need staging again (then /ready "
        f"windows {LAST}); the other files of {LAST} need nothing."
    )
    (message,) = [m for m in world.chat.posts if m.text == told]
    assert message.mentions == ("steve",)  # the one who must act
    await world.gate.scan()  # told once
    assert len([n for n in world.chat.texts(ChannelKind.NOTICE) if "refused now" in n]) == 1

    stage_windows_index(world.staging / LAST, LAST, FIRST, *LIVE_VERSIONS)  # rebuilt
    uploaded_later(world.staging / LAST)
    await world.gate.scan()
    await world.say("steve", f"/ready windows {LAST}")
    done = await world.say("hugo", await world.plan(LAST))
    assert not done.private, done.text
    assert world.events(LAST, EventKind.PUBLISHED) == ["published"]


async def test_a_plan_made_before_its_sibling_published_is_confirmed_and_makes_it_live(
    tmp_path: Path, make_storage: StorageFactory
) -> None:
    """Both RMs ask for their plans first; FIRST publishes; LAST's plan said the index
    waits for FIRST, which is public by now: LAST's code is still good, and its publish
    makes the index live."""
    world = world_on(tmp_path, make_storage)
    _, shared = await ready_sharing(world)
    offers = {tag: await world.say("hugo", f"/publish {tag}") for tag in (FIRST, LAST)}
    planned = offers[LAST].plan
    assert planned is not None and planned.index_shared_with == (FIRST,)

    first = offers[FIRST].confirm
    assert first is not None
    assert not (await world.say("hugo", first.line)).private
    last = offers[LAST].confirm
    assert last is not None
    done = await world.say("hugo", last.line)
    assert not done.private, done.text
    assert live(world) == (shared, catalog_bytes(shared))
    assert index_step(world.store, LAST) == "index-windows.json, index-windows.json.cat replaced"
