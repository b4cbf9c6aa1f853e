"""``/status`` with no tag, the day at a glance: one line per open release saying where it
stands (collecting, ready, publishable, publishing, published, held, aborted), what blocks it
and who must act, newest release first, and within the room the platform's message holds,
with a last line counting the releases that did not fit. From what the bot last saw: it
hashes nothing, and lists only what a scan would."""

from __future__ import annotations

import time
from collections.abc import Sequence

import pytest

from bot.domain.files import StagedFile
from bot.domain.history import Aborted, ReleaseState
from bot.domain.tags import ReleaseTag
from bot.service.glance import LINE_LIMIT, Look, glance_text, where
from bot.service.observed import Observed
from bot.storage.local import LocalStorage
from tests.conftest import World
from tests.test_pinning import stuck_publish
from tests.test_status_rules import confirmed_then_killed

TAG = "3.14.1"


def head(n: int) -> str:
    return f"{n} open releases, newest first (/status TAG shows one in full):"


async def glance(world: World, room: int | None = None) -> list[str]:
    reply = await world.gate.handle("console", "eve", "/status", room=room)
    assert not reply.private and reply.summaries == (), reply.text
    return reply.text.splitlines()


# -- where each release stands -----------------------------------------------------------------


async def test_collecting_names_each_role_waited_for_with_its_holders_and_what_is_wrong(
    world: World,
) -> None:
    world.stage(TAG, skip=["python-3.14.1-macos11.pkg"])
    world.stage("3.15.0a2", roles=["source"])
    world.stage("3.13.9", roles=["source"])  # no RM is configured for 3.13
    await world.say("steve", f"/ready windows {TAG}")
    await world.gate.scan()

    assert await glance(world) == [
        head(3),
        "3.15.0a2  collecting   waits for source (hugo), windows (steve: 7 files missing), "
        "macos (ned: 1 file missing)",
        "3.14.1    collecting   waits for source, docs (hugo), macos (ned: 1 file missing)",
        "3.13.9    collecting   waits for source (hugo), docs (hugo: 7 files missing); "
        "no release manager is configured for 3.13",
    ]


async def test_a_withdrawn_claim_says_to_say_ready_again(world: World) -> None:
    world.stage(TAG)
    await world.ready_all(TAG)
    world.write(TAG, "python-3.14.1-macos11.pkg", "rebuilt after /ready")
    await world.gate.scan()  # withdrawn: the file changed (and is growing, as far as it knows)
    await world.gate.scan()  # settled

    [_, line] = await glance(world)

    assert line == f"{TAG}  collecting   waits for macos (ned: claim withdrawn; /ready again)"


async def test_ready_but_blocked_names_the_first_blocker_and_the_rm(world: World) -> None:
    world.stage(TAG)
    world.write(TAG, "notes.txt", "left over")
    world.write(TAG, "more-notes.txt", "left over")
    await world.ready_all(TAG)

    [_, line] = await glance(world)

    assert line == (
        f"{TAG}  ready        blocked by staging: more-notes.txt (unexpected) (and 1 more); "
        "RM: hugo or alice"
    )


async def test_publishable_says_who_may_publish_then_whose_plan_waits(world: World) -> None:
    world.stage(TAG)
    await world.ready_all(TAG)

    [_, before] = await glance(world)
    await world.plan(TAG, "alice")
    [_, offered] = await glance(world)
    world.clock.advance(601)  # the code expired
    [_, expired] = await glance(world)

    assert before == f"{TAG}  publishable  hugo or alice may /publish {TAG}"
    until = time.strftime("%H:%M UTC", time.gmtime(world.clock.now + 600 - 601))
    assert offered == f"{TAG}  publishable  plan shown to alice, who may confirm it until {until}"
    assert expired == before


async def test_held_names_the_holder_the_reason_and_who_may_unhold(world: World) -> None:
    world.stage(TAG)
    await world.ready_all(TAG)
    await world.say("ned", f"/hold {TAG} notarization failed")
    await world.say("steve", f"/hold {TAG}")

    [_, line] = await glance(world)

    assert line == (
        f"{TAG}  held         by ned: notarization failed (and 1 more hold); "
        f"ned or hugo or alice may /unhold {TAG}"
    )


async def test_publishing_names_who_confirmed_and_why_it_stopped(world: World) -> None:
    await stuck_publish(world)

    [_, line] = await glance(world)

    assert line.startswith(f"{TAG}  publishing   confirmed by hugo; stopped: ")
    assert "stopped at promote" in line and len(line) <= LINE_LIMIT


async def test_aborted_says_who_aborted_and_where_the_release_stands_now(world: World) -> None:
    await confirmed_then_killed(world)
    await world.say("hugo", f"/abort {TAG}")

    [_, line] = await glance(world)
    await world.say("hugo", await world.plan(TAG))  # confirmed again: published
    world.stage(TAG, roles=["windows"])  # a late file: the release is open again
    await world.gate.scan()
    [_, late] = await glance(world)

    assert line == f"{TAG}  aborted      by hugo; now publishable: hugo or alice may /publish {TAG}"
    assert late.startswith(f"{TAG}  published    by hugo at ")
    assert late.endswith(f"; late files staged (/status {TAG})")


# -- the order, and the room ------------------------------------------------------------------


async def test_newest_release_first_whatever_order_they_came_in(world: World) -> None:
    for tag in ["3.9.23", "3.14.0rc2", "3.13.4", "3.14.0", "3.15.0a2", "3.10.18", "3.14.1"]:
        world.stage(tag, roles=["source"])

    lines = await glance(world)

    assert [line.split()[0] for line in lines[1:]] == [
        "3.15.0a2",
        "3.14.1",
        "3.14.0",
        "3.14.0rc2",
        "3.13.4",
        "3.10.18",
        "3.9.23",
    ]


async def test_what_does_not_fit_the_room_is_counted_in_a_last_line(world: World) -> None:
    tags = [f"3.14.{patch}" for patch in range(1, 11)]
    for tag in tags:
        world.stage(tag)
    whole = await glance(world)
    line = len(whole[1]) + 1
    room = len(whole[0]) + 3 * line + len("\n…and 7 more releases: /status TAG shows one in full.")

    fitted = await glance(world, room)
    tighter = await glance(world, room - 1)
    console = await glance(world, None)

    assert len("\n".join(fitted)) == room
    assert fitted == [*whole[:4], "…and 7 more releases: /status TAG shows one in full."]
    assert tighter == [*whole[:3], "…and 8 more releases: /status TAG shows one in full."]
    assert console == whole and len(whole) == 11  # the console has no limit


async def test_the_answer_is_built_from_what_was_seen_without_hashing(world: World) -> None:
    """Before any look, one listing of staging and one per release, as a scan's; once staging
    was listed, nothing at all (a publish may hold the connection to staging for seconds);
    never a hash."""
    calls: list[str] = []

    class Counting(LocalStorage):
        def staged_tags(self) -> list[str]:
            calls.append("staged_tags")
            return super().staged_tags()

        def list_staging(self, tag: ReleaseTag) -> dict[str, StagedFile] | None:
            calls.append(f"list {tag}")
            return super().list_staging(tag)

        def digest(
            self, tag: ReleaseTag, paths: Sequence[str], *, fresh: bool = False
        ) -> dict[str, str]:
            calls.append(f"digest {tag}")
            return super().digest(tag, paths, fresh=fresh)

    for tag in ("3.14.1", "3.14.2", "3.15.0a2"):
        world.stage(tag)
    world.start(Counting(world.staging, world.public))

    await glance(world)
    first = list(calls)
    calls.clear()
    await glance(world)

    assert sorted(first) == ["list 3.14.1", "list 3.14.2", "list 3.15.0a2", "staged_tags"]
    assert calls == []


def test_a_long_reason_is_cut_so_one_release_cannot_crowd_out_the_others() -> None:
    tag = ReleaseTag.parse(TAG)
    state = ReleaseState(tag, aborted=Aborted("hugo", "x" * 500, 0.0))
    look = Look(tag, Observed(state, None, {}, ()), ["hugo"], {}, ["source"], note="nothing")

    text = glance_text([look], 0.0, None)

    assert len(text.splitlines()[1]) == LINE_LIMIT and text.endswith("…")
    assert where(look, 0.0)[0] == "aborted"


@pytest.mark.parametrize("room", [None, 2000])
async def test_no_open_release_is_one_sentence(world: World, room: int | None) -> None:
    reply = await world.gate.handle("console", "eve", "/status", room=room)
    assert reply.text == "No open releases; stage files to start one (see /help)."
