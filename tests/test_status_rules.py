"""``/status``: what it shows of each release (publishing now, published, refused, one
release's storage trouble, a summary with its readiness), in which words and as which kind of
message, for one release or every open one; and that it looks once, under the release's lock."""

from __future__ import annotations

import asyncio
import shutil

import pytest

from bot.domain.files import StagedFile
from bot.domain.tags import ReleaseTag
from bot.errors import StagingUnreachable, StorageError
from bot.ports.messages import ChannelKind, ChannelMessage, Tone
from bot.storage.local import LocalStorage
from tests.conftest import World
from tests.slack.conftest import GatedStorage
from tests.test_pinning import PKG, KilledAtTheFreeze, stuck_publish

TAG = "3.14.1"
OTHER = "3.14.2"


async def confirmed_then_killed(world: World) -> None:
    """A publish of TAG confirmed and journaled, the process gone before it did anything;
    the bot restarted (it has told nothing of any trouble: there was none)."""
    world.stage(TAG)
    await world.ready_all(TAG)
    line = await world.plan(TAG)
    world.start(KilledAtTheFreeze(world.staging, world.public))
    with pytest.raises(KeyboardInterrupt):
        await world.say("hugo", line)
    world.start()


async def published(world: World) -> None:
    world.stage(TAG)
    await world.ready_all(TAG)
    done = await world.say("hugo", await world.plan(TAG))
    assert done.text.startswith(f"Published {TAG}"), done.text


class OneFolderFails(LocalStorage):
    """Staging whose listing of TAG fails with ``error`` (a server refusing one folder, or
    gone altogether); every other release lists as usual."""

    error: StorageError

    def list_staging(self, tag: ReleaseTag) -> dict[str, StagedFile] | None:
        if str(tag) == TAG:
            raise self.error
        return super().list_staging(tag)


def failing(world: World, error: StorageError) -> None:
    storage = OneFolderFails(world.staging, world.public)
    storage.error = error
    world.start(storage)


# -- a publish under way -----------------------------------------------------------------------


async def test_a_publish_under_way_without_trouble_is_one_plain_notice(world: World) -> None:
    await confirmed_then_killed(world)

    reply = await world.say("eve", f"/status {TAG}")

    text = f"{TAG}: publishing now (confirmed by hugo)."
    assert reply.text == text
    assert reply.summaries == (ChannelMessage(ChannelKind.NOTICE, TAG, text),)


async def test_a_stuck_publish_shows_its_trouble_after_one_space(world: World) -> None:
    await stuck_publish(world)
    trouble = world.chat.texts(ChannelKind.NOTICE)[-1]
    assert "stopped at promote" in trouble

    reply = await world.say("eve", f"/status {TAG}")

    text = f"{TAG}: publishing now (confirmed by hugo). {trouble}"
    assert reply.text == text
    assert reply.summaries == (ChannelMessage(ChannelKind.NOTICE, TAG, text),)


async def test_every_open_release_is_a_line_after_one_publishing_now(world: World) -> None:
    await confirmed_then_killed(world)
    world.stage(OTHER)

    reply = await world.say("eve", "/status")

    assert reply.summaries == ()  # a line each: no platform renders a summary per release
    assert reply.text.splitlines() == [
        "2 open releases, newest first (/status TAG shows one in full):",
        f"{OTHER}  collecting   waits for source, docs (hugo), windows (steve), macos (ned)",
        f"{TAG}  publishing   confirmed by hugo",
    ]


# -- a published release -----------------------------------------------------------------------


async def test_a_published_release_without_late_files_is_its_published_summary(
    world: World,
) -> None:
    await published(world)

    reply = await world.say("eve", f"/status {TAG}")

    assert reply.text.startswith(f"{TAG}: published by hugo at ")
    assert reply.summaries == (ChannelMessage(ChannelKind.SUMMARY, TAG, reply.text),)


async def test_a_published_release_with_an_empty_staging_folder_is_a_line_with_the_others(
    world: World,
) -> None:
    await published(world)
    (world.staging / TAG).mkdir()  # left behind, empty: no late files
    world.stage(OTHER)

    reply = await world.say("eve", "/status")

    _, other, first = reply.text.splitlines()
    assert other.startswith(f"{OTHER}  collecting   waits for source, docs (hugo)")
    assert first.startswith(f"{TAG}  published    by hugo at ")
    assert "late files" not in first


# -- nothing staged, or staging in trouble -----------------------------------------------------


async def test_a_release_with_nothing_staged_is_a_notice_and_a_line_with_the_others(
    world: World,
) -> None:
    world.stage(TAG)
    await world.say("hugo", f"/ready source {TAG}")  # recorded: it stays an open release
    shutil.rmtree(world.staging / TAG)
    world.stage(OTHER)

    alone = await world.say("eve", f"/status {TAG}")
    seen = await world.say("eve", "/status")
    world.start()  # restarted: nothing seen yet, so /status lists each release once
    both = await world.say("eve", "/status")
    await world.gate.scan()  # the scan withdraws the claim: nothing left to watch
    again = await world.say("eve", "/status")

    refused = alone.text
    assert refused.startswith(f"{TAG}: Nothing is staged for {TAG} yet; upload the files to ")
    assert alone.summaries == (ChannelMessage(ChannelKind.NOTICE, TAG, refused),)
    # Without a tag, as last seen (by /ready here) until the scan looks again.
    waits = "waits for docs (hugo), windows (steve), macos (ned)"
    assert seen.text.splitlines()[2] == f"{TAG}  collecting   {waits}"
    assert both.text.splitlines()[2] == f"{TAG}  collecting   nothing staged yet; {waits}"
    assert both.text.splitlines()[1].startswith(f"{OTHER}  collecting   waits for source")
    assert again.text.splitlines()[1:] == [both.text.splitlines()[1]]


async def test_one_release_storage_cannot_list_is_a_line_and_the_others_are_shown(
    world: World,
) -> None:
    world.stage(TAG)
    world.stage(OTHER)
    failing(world, StorageError(f"Cannot list {TAG}: the server refused."))

    reply = await world.say("eve", "/status")

    assert not reply.private
    assert reply.text.splitlines()[1:] == [
        f"{OTHER}  collecting   waits for source, docs (hugo), windows (steve), macos (ned)",
        f"{TAG}  collecting   staging cannot be listed (Cannot list {TAG}: the server "
        "refused); waits for source, docs (hugo), windows (steve), macos (ned)",
    ]


async def test_staging_out_of_reach_refuses_the_whole_status(world: World) -> None:
    world.stage(TAG)
    world.stage(OTHER)
    failing(world, StagingUnreachable("Cannot reach staging: connection refused."))

    reply = await world.say("eve", "/status")

    assert reply.private and reply.tone is Tone.REFUSAL
    assert reply.text == "Cannot reach staging: connection refused. Try /status again shortly."
    assert reply.summaries == ()


# -- a release being prepared ------------------------------------------------------------------


async def test_a_summary_carries_the_readiness_it_shows(world: World) -> None:
    world.stage(TAG)
    await world.say("hugo", f"/ready source {TAG}")

    reply = await world.say("eve", f"/status {TAG}")

    assert reply.text.startswith(f"{TAG}: 1 of 4 roles ready")
    (summary,) = reply.summaries
    assert (summary.kind, summary.tag, summary.text) == (ChannelKind.SUMMARY, TAG, reply.text)
    assert summary.readiness is not None
    assert summary.readiness.tag == ReleaseTag.parse(TAG)
    assert [r.role for r in summary.readiness.roles if r.claim is not None] == ["source"]


async def test_status_answers_from_one_listing_without_waiting_for_staging_to_settle(
    world: World,
) -> None:
    world.stage(TAG, skip=[PKG])
    # Were /status to wait for a changing folder to settle, the upload would land meanwhile.
    world.during_settle.append(lambda: world.stage(TAG))

    reply = await world.say("eve", f"/status {TAG}")

    assert f"{PKG}" in reply.text and "1 of 1 files not ready" in reply.text, reply.text
    assert len(world.during_settle) == 1  # it never waited


async def test_status_holds_the_lock_of_the_release_it_looks_at_and_no_other(
    world: World,
) -> None:
    world.stage(TAG)
    gated = GatedStorage(world.staging, world.public)
    world.start(gated)
    gated.hold_next_listing()

    looking = asyncio.create_task(world.say("eve", f"/status {TAG}"))
    try:
        assert await asyncio.to_thread(gated.entered.wait, 20)
        # Listing staging: the release is held (a command on it waits), nothing else is.
        assert world.gate.retained_tags() == {TAG}
    finally:
        gated.release.set()
        reply = await looking
    assert reply.text.startswith(f"{TAG}: 0 of 4 roles ready")
