"""A confirmed publish is pinned to its plan: the bot's copies made at the confirmation, the
checks around promotion, /abort, and what a stuck publish still allows (local storage on
real folders)."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from bot.domain.history import EventKind
from bot.domain.plan import PublishPlan
from bot.domain.tags import ReleaseTag
from bot.ports import PromotionReport
from bot.ports.messages import ChannelKind
from bot.storage.local import LocalStorage
from tests.conftest import World

PKG = "python-3.14.1-macos11.pkg"


def copy_of(world: World, path: str, tag: str = "3.14.1") -> Path:
    """Where the bot's copy of a staged file waits until it is public."""
    version = ReleaseTag.parse(tag).version
    return world.storage.work / "frozen" / tag / "tree" / version / path


def block_public(world: World, version: str = "3.14.1") -> Path:
    """A regular file where the public folder should be: every promotion fails."""
    world.public.mkdir(parents=True, exist_ok=True)
    blocker = world.public / version
    blocker.write_text("not a folder")
    return blocker


async def stuck_publish(world: World, tag: str = "3.14.1") -> list[str]:
    """Confirm a publish whose promotion cannot run; returns the staged paths."""
    staged = world.stage(tag)
    await world.ready_all(tag)
    line = await world.plan(tag)
    block_public(world, ReleaseTag.parse(tag).version)
    reply = await world.say("hugo", line)
    assert reply.private and "did not finish" in reply.text, reply.text
    return staged


async def test_a_file_overwritten_in_staging_while_stuck_is_never_published(
    world: World,
) -> None:
    staged = await stuck_publish(world)
    confirmed = copy_of(world, PKG).read_bytes()
    world.write("3.14.1", PKG, b"replaced after the confirmation")

    (world.public / "3.14.1").unlink()  # the cause is gone
    world.start()  # and the bot restarted
    await world.gate.scan()

    assert world.events("3.14.1", EventKind.PUBLISHED) == ["published"]
    assert (world.public / "3.14.1" / PKG).read_bytes() == confirmed
    assert len(world.public_files()) == len(staged)
    # The upload after the confirmation stays where it was put, unpublished, and is named;
    # the unchanged originals are gone from staging.
    assert world.staged_files("3.14.1") == {PKG}
    assert (world.staging / "3.14.1" / PKG).read_bytes() == b"replaced after the confirmation"
    notices = world.chat.texts(ChannelKind.NOTICE)
    left = "staging/3.14.1: 1 file left for their uploaders to remove: "
    assert sum(f"{left}{PKG} (changed since" in n for n in notices) == 1, notices


async def test_a_copy_changed_before_a_resume_stops_once_and_abort_is_the_way_out(
    world: World,
) -> None:
    staged = await stuck_publish(world)
    copy = copy_of(world, PKG)
    copy.chmod(0o644)
    copy.write_bytes(b"tampered")  # only root could
    (world.public / "3.14.1").unlink()
    world.start()
    for _ in range(4):
        await world.gate.scan()

    assert world.public_files() == set()
    assert world.events("3.14.1", EventKind.PUBLISHED) == []
    assert world.events("3.14.1", EventKind.STOPPED) == ["stopped"]  # no retry loop
    told = [n for n in world.chat.texts(ChannelKind.NOTICE) if "stopped at promote" in n]
    assert len(told) == 2, told  # the blocked folder (waiting), then this stop, once
    assert f"the bot's copy of {PKG} changed" in told[1] and "/abort 3.14.1" in told[1]
    refused = await world.say("steve", "/unready windows 3.14.1")
    assert refused.private and refused.text == told[1]  # the same words everywhere
    status = await world.say("eve", "/status 3.14.1")
    assert told[1] in status.text

    aborted = await world.say("hugo", "/abort 3.14.1")
    assert not aborted.private, aborted.text
    assert world.staged_files("3.14.1") == set(staged)
    assert not copy.exists()


async def test_a_same_size_rewrite_at_confirmation_withdraws_its_claim_and_never_loops(
    world: World,
) -> None:
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    pkg = world.staging / "3.14.1" / PKG
    st = pkg.stat()
    pkg.write_bytes(b"X" * st.st_size)  # same size, same mtime: the listing cannot tell
    os.utime(pkg, ns=(st.st_atime_ns, st.st_mtime_ns))
    reply = await world.say("hugo", line)
    assert reply.private and f"{PKG} changed" in reply.text
    assert world.public_files() == set()
    assert pkg.read_bytes() == b"X" * st.st_size  # staging as it was: never touched
    assert not copy_of(world, PKG).exists()
    state = world.store.release(ReleaseTag.parse("3.14.1"))
    assert "macos" not in state.claims and "found at the confirmation" in str(
        state.withdrawals["macos"].reason
    )
    again = await world.say("hugo", "/publish 3.14.1")
    assert again.private and "macos" in again.text  # not the same stale plan again

    await world.ready_all("3.14.1")  # the role claims what staging holds now
    done = await world.say("hugo", await world.plan("3.14.1"))
    assert "Published 3.14.1" in done.text, done.text
    assert (world.public / "3.14.1" / PKG).read_bytes() == b"X" * st.st_size


async def test_abort_drops_the_copies_leaves_staging_and_publish_works_again(
    world: World,
) -> None:
    staged = await stuck_publish(world)
    state = world.store.release(ReleaseTag.parse("3.14.1"))
    claims = {role: claim.snapshot for role, claim in state.claims.items()}

    refused = await world.say("steve", "/abort 3.14.1")
    assert refused.private and "release manager" in refused.text
    reply = await world.say("hugo", "/abort 3.14.1")

    assert not reply.private, reply.text
    assert "nothing was made public" in reply.text and "back in staging" not in reply.text
    assert world.staged_files("3.14.1") == set(staged)
    assert not copy_of(world, PKG).exists()
    state = world.store.release(ReleaseTag.parse("3.14.1"))
    assert state.publishing is None
    assert {role: claim.snapshot for role, claim in state.claims.items()} == claims
    (world.public / "3.14.1").unlink()
    line = await world.plan("3.14.1")
    done = await world.say("hugo", line)
    assert "Published 3.14.1" in done.text, done.text
    assert len(world.public_files()) == len(staged)


async def test_abort_keeps_a_newer_upload_in_staging_as_it_is(world: World) -> None:
    await stuck_publish(world)
    world.write("3.14.1", PKG, b"a newer build")
    reply = await world.say("hugo", "/abort 3.14.1")
    assert not reply.private, reply.text
    assert (world.staging / "3.14.1" / PKG).read_bytes() == b"a newer build"
    assert not copy_of(world, PKG).exists()


class AppendedAfterTheMove(LocalStorage):
    """Root appends to a file just after it went public (no uploader can: it is the bot's,
    read-only)."""

    def _rename(self, source: Path, target: Path) -> None:
        super()._rename(source, target)
        if target == self.public / "3.14.1":
            with (target / PKG).open("ab") as f:
                f.write(b"appended")


async def test_public_files_are_verified_after_the_move_and_abort_is_then_refused(
    world: World,
) -> None:
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    world.start(AppendedAfterTheMove(world.staging, world.public))
    reply = await world.say("hugo", line)

    assert reply.private and "did not finish" in reply.text
    notices = world.chat.texts(ChannelKind.NOTICE)
    assert any(f"3.14.1/{PKG} is not the bot's copy" in n for n in notices), notices
    assert world.gate.metrics.public_mismatches == 1
    assert b"relbot_public_mismatches_total 1.0" in world.gate.metrics.prometheus()
    assert world.chat.texts(ChannelKind.ANNOUNCEMENT) == []
    refused = await world.say("hugo", "/abort 3.14.1")
    assert refused.private and "public already" in refused.text
    assert f"/publish 3.14.1 offers to finish without {PKG}" in refused.text


async def test_a_publish_stopped_with_files_public_is_finished_without_the_changed_one(
    world: World,
) -> None:
    staged = world.stage("3.14.1")
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    world.start(AppendedAfterTheMove(world.staging, world.public))
    await world.say("hugo", line)
    world.start()
    held = await world.say("steve", "/ready windows 3.14.1")
    assert held.private and "/publish 3.14.1 offers to finish without" in held.text

    offer = await world.say("hugo", "/publish 3.14.1")
    assert offer.confirm is not None, offer.text
    assert f"To finish without {PKG}" in offer.text
    done = await world.say("hugo", offer.confirm.line)

    assert "Published 3.14.1" in done.text, done.text
    state = world.store.release(ReleaseTag.parse("3.14.1"))
    assert {f.path for f in state.public_files} == set(staged) - {PKG}
    (announced,) = world.chat.texts(ChannelKind.ANNOUNCEMENT)
    assert f"{len(staged) - 1} files" in announced
    confirmed = [e for e in world.store.events(state.tag) if e.kind is EventKind.CONFIRMED]
    assert confirmed[-1].actor == "hugo" and confirmed[-1].data["left_out"] == [PKG]
    assert world.staged_files("3.14.1") == {PKG}  # left out: still staged, for a late publish


async def test_a_stuck_publish_accepts_hold_and_abort_and_logs_its_step_once(
    world: World,
) -> None:
    await stuck_publish(world)
    for _ in range(4):
        await world.gate.scan()
    events = world.store.events(ReleaseTag.parse("3.14.1"))
    started = [e.data["step"] for e in events if e.kind is EventKind.STEP_STARTED]
    assert started == ["freeze", "promote"]  # each once, however many retries

    status = await world.say("eve", "/status 3.14.1")
    assert "publishing now" in status.text and "stopped at promote" in status.text, status.text
    ready = await world.say("steve", "/unready windows 3.14.1")
    assert ready.private and "being published" in ready.text and "/abort 3.14.1" in ready.text
    held = await world.say("alice", "/hold 3.14.1 wait")
    assert not held.private, held.text
    (world.public / "3.14.1").unlink()  # the cause is gone, but the hold keeps it paused
    await world.gate.scan()
    assert world.public_files() == set()
    unheld = await world.say("alice", "/unhold 3.14.1")
    assert not unheld.private, unheld.text
    await world.gate.scan()
    assert world.events("3.14.1", EventKind.PUBLISHED) == ["published"]


class Crowded(LocalStorage):
    """Records how many promotions run at once (each takes a moment)."""

    guard = threading.Lock()
    running = 0
    most = 0

    def promote(
        self, plan: PublishPlan, *, public_before: Sequence[str] = (), recheck: bool = False
    ) -> PromotionReport:
        with Crowded.guard:
            Crowded.running += 1
            Crowded.most = max(Crowded.most, Crowded.running)
        try:
            time.sleep(0.2)
            return super().promote(plan, public_before=public_before, recheck=recheck)
        finally:
            with Crowded.guard:
                Crowded.running -= 1


async def test_two_tags_sharing_a_public_folder_never_promote_at_once(world: World) -> None:
    for tag in ("3.14.0rc1", "3.14.0rc2"):
        world.stage(tag)
        await world.ready_all(tag)
    lines = [await world.plan(tag) for tag in ("3.14.0rc1", "3.14.0rc2")]
    world.start(Crowded(world.staging, world.public))
    replies = await asyncio.gather(*(world.say("hugo", line) for line in lines))
    assert all("Published" in r.text for r in replies), [r.text for r in replies]
    assert Crowded.most == 1


class Intruded(LocalStorage):
    """A different file appears at the second link's target, after the first went public."""

    links = 0

    def _link(self, source: Path, target: Path) -> None:
        self.links += 1
        if self.links == 2:
            target.write_text("someone else's")
        super()._link(source, target)


async def test_a_conflict_after_files_moved_is_reported_as_such(world: World) -> None:
    (world.public / "3.14.0").mkdir(parents=True)  # rc1 shares it: files move one by one
    (world.public / "3.14.0" / "python-3.14.0b3.exe").write_text("b3")
    world.stage("3.14.0rc1")
    await world.ready_all("3.14.0rc1")
    line = await world.plan("3.14.0rc1")
    world.start(Intruded(world.staging, world.public))
    reply = await world.say("hugo", line)
    assert reply.private
    notices = world.chat.texts(ChannelKind.NOTICE)
    (told,) = [n for n in notices if "appeared in public" in n]
    assert "cannot be aborted" in told and "/publish 3.14.0rc1 offers to finish without" in told
    assert not any("before anything moved" in n for n in notices)
    state = world.store.release(ReleaseTag.parse("3.14.0rc1"))
    assert state.publishing is not None  # still pinned: nothing is undone or re-planned


class KilledAtTheFreeze(LocalStorage):
    """The process dies right after the confirmation was journaled."""

    def freeze(self, plan: PublishPlan, *, fresh: bool = True) -> list[str]:
        raise KeyboardInterrupt  # not an error the gate handles: the process is gone


async def test_killed_before_the_copy_with_a_staged_file_deleted_aborts_itself_once(
    world: World,
) -> None:
    staged = world.stage("3.14.1")
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    world.start(KilledAtTheFreeze(world.staging, world.public))
    with pytest.raises(KeyboardInterrupt):
        await world.say("hugo", line)
    (world.staging / "3.14.1" / PKG).unlink()
    world.start()
    for _ in range(3):
        await world.gate.scan()

    # The confirmed bytes of PKG cannot be had: nothing is public, the publish undid itself.
    assert world.public_files() == set()
    assert world.events("3.14.1", EventKind.ABORTED) == ["aborted"]
    notices = world.chat.texts(ChannelKind.NOTICE)
    assert sum(f"{PKG} is missing" in n for n in notices) == 1, notices
    assert world.staged_files("3.14.1") == set(staged) - {PKG}
    reply = await world.say("hugo", "/abort 3.14.1")
    assert reply.private and "no confirmed publish" in reply.text
    again = await world.say("hugo", "/publish 3.14.1")
    assert again.private and "cannot be published yet" in again.text  # the file is missing
