"""What ``/ready`` tells the person who typed it, and what a published release answers to any
change: the whole sentence, since each part of it is what the uploader acts on."""

from __future__ import annotations

import time

from bot.domain.tags import ReleaseTag
from bot.ports.messages import Tone
from tests.conftest import World

TAG = "3.14.1"


async def test_a_claim_says_how_many_files_and_bytes_were_recorded_as_a_success(
    world: World,
) -> None:
    paths = world.stage(TAG, roles=["windows"])
    size = sum(len(f"{p} built for {TAG}\n") for p in paths)
    assert len(paths) > 1 and size < 1000  # "N files", counted in bytes

    reply = await world.say("steve", f"/ready windows {TAG}")

    assert reply.text == (
        f"windows is ready for {TAG}: {len(paths)} files ({size} bytes) recorded. "
        "1 of 4 roles ready."
    )
    assert reply.tone is Tone.SUCCESS and not reply.private


async def test_a_role_with_a_missing_file_is_told_where_to_fix_it(world: World) -> None:
    paths = world.stage(TAG, roles=["macos"])
    (world.staging / TAG / paths[0]).unlink()

    reply = await world.say("ned", f"/ready macos {TAG}")

    assert reply.private
    assert reply.text.startswith(f"macos is not ready for {TAG}: "), reply.text
    assert reply.text.endswith(
        f"; fix them in {world.staging / TAG}/ and say /ready macos {TAG} again."
    ), reply.text


async def test_a_role_outside_the_kind_of_release_is_refused_with_the_reason(
    world: World,
) -> None:
    world.stage("3.14.0b3")

    reply = await world.say("hugo", "/ready docs 3.14.0b3")

    assert reply.private
    assert reply.text == (
        "docs is not part of 3.14.0b3 (the cpython profile has it for other kinds of release only)."
    )


async def test_a_published_release_refuses_a_claim_naming_when_it_was_published(
    world: World,
) -> None:
    world.stage(TAG)
    await world.ready_all(TAG)
    done = await world.say("hugo", await world.plan(TAG))
    assert not done.private, done.text
    published_at = world.store.release(ReleaseTag.parse(TAG)).published_at
    assert published_at is not None
    world.clock.advance(3 * 3600)  # the refusal names the publish's time, not the present

    reply = await world.say("steve", f"/ready windows {TAG}")

    at = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(published_at))
    assert reply.private
    assert reply.text == f"{TAG} is already published (by hugo at {at}); nothing to change."
