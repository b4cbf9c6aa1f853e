"""``relbot wait``'s judgement and loop, and what a look at the state file costs: the judgement
on board JSON as the board serves it, the loop on a scripted source and a test clock, and the
state-file source on a real gate's SQLite file and folders, counting every listing and hash."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from bot.domain.files import StagedFile
from bot.domain.tags import ReleaseTag
from bot.errors import StateFileError
from bot.journal.reader import LogReader
from bot.storage.local import LocalStorage
from bot.wait.judge import LookFailed, Outcome, Release, Until, judge, wait
from bot.wait.sources import StateFileSource
from bot.web.board import release_view
from tests.conftest import World
from tests.windows_index_data import LIVE_VERSIONS, catalog_bytes, index_bytes, manifest_bytes

TAG = "3.14.1"


def release(**fields: Any) -> dict[str, Any]:
    """Board JSON with the fields the judgement reads; ``fields`` override them."""
    roles = {r: {"state": "ready"} for r in ("source", "docs", "windows", "macos")}
    base: dict[str, Any] = {
        "tag": TAG,
        "published": False,
        "publishable": False,
        "publishing": False,
        "blockers": ["macos: python-3.14.1-macos11.pkg (missing)"],
        "roles": roles,
        "holds": [],
        "ready": True,
        "listed": True,
        "last_event": 10,
        "aborted": None,
    }
    return {**base, **fields}


# -- the judgement -----------------------------------------------------------------------------


def test_ready_means_every_role_ready_or_waived() -> None:
    roles = {"source": {"state": "ready"}, "macos": {"state": "waived"}}
    del_ready = {k: v for k, v in release(roles=roles).items() if k != "ready"}  # older board
    assert judge(del_ready, TAG, Until.READY, 0).outcome is Outcome.REACHED
    roles["windows"] = {"state": "complete"}
    waiting = judge(release(roles=roles, ready=False), TAG, Until.READY, 0)
    assert waiting.outcome is None and waiting.sentence == "not ready: windows (complete)"


def test_a_release_past_the_state_waited_for_has_reached_it() -> None:
    publishing = release(publishing=True, publishable=False, blockers=["being published"])
    published = release(published=True, publishable=False)
    for until in (Until.READY, Until.PUBLISHABLE):
        assert judge(publishing, TAG, until, 0).outcome is Outcome.REACHED
        assert judge(published, TAG, until, 0).outcome is Outcome.REACHED
    assert judge(publishing, TAG, Until.PUBLISHED, 0).outcome is None
    assert judge(published, TAG, Until.PUBLISHED, 0).outcome is Outcome.REACHED


def test_a_hold_stops_a_wait_that_has_not_reached_its_state() -> None:
    held = release(
        ready=False,
        holds=[{"by": "ned", "reason": "notarization failed", "at": "2026-12-02T17:18:09Z"}],
    )
    verdict = judge(held, TAG, Until.PUBLISHED, 0)
    assert verdict.outcome is Outcome.HELD
    assert verdict.sentence == (
        "3.14.1 is held by ned: notarization failed; wait again once someone says /unhold 3.14.1"
    )
    assert judge({**held, "ready": True}, TAG, Until.READY, 0).outcome is Outcome.REACHED


def test_only_an_abort_recorded_after_the_wait_began_stops_a_wait_for_published() -> None:
    aborted = {"event": 12, "by": "hugo", "reason": "aborted by hugo with /abort", "at": ""}
    after = release(aborted=aborted, last_event=12)
    verdict = judge(after, TAG, Until.PUBLISHED, since=10)
    assert verdict.outcome is Outcome.ABORTED and "aborted by hugo with /abort" in verdict.sentence
    assert judge(after, TAG, Until.PUBLISHED, since=12).outcome is None  # before the wait
    again = release(aborted=aborted, publishing=True)  # confirmed again since
    assert judge(again, TAG, Until.PUBLISHED, since=10).outcome is None
    assert judge(after, TAG, Until.PUBLISHABLE, since=10).outcome is None


def test_what_a_wait_for_published_says_it_waits_for() -> None:
    def said(**fields: Any) -> str:
        return judge(release(**fields), TAG, Until.PUBLISHED, 0).sentence

    assert said(ready=False, roles={"macos": {"state": "incomplete"}}) == (
        "not ready: macos (incomplete)"
    )
    assert said(listed=False, ready=False, roles={"macos": {"state": "incomplete"}}) == (
        "waiting for /ready from macos"
    )
    assert said() == "not publishable: macos: python-3.14.1-macos11.pkg (missing)"
    assert said(listed=False, blockers=["staging has not been listed yet"]) == (
        "every role is ready; waiting for /publish 3.14.1 and its confirmation"
    )
    assert said(publishable=True, blockers=[]) == (
        "publishable; waiting for the release manager to confirm /publish 3.14.1"
    )
    assert said(publishing=True) == "being published now"
    assert said(blockers=["a", "b", "c", "d", "e"]) == "not publishable: a; b; c; and 2 more"
    assert judge(None, TAG, Until.READY, 0).sentence == "nothing is recorded for 3.14.1 yet"


# -- the loop ----------------------------------------------------------------------------------


class Script:
    """A source that answers the looks it is given, in order (the last one from then on);
    an exception in the script is raised by that look."""

    def __init__(self, answers: Sequence[Release | Exception | None]) -> None:
        self.answers = list(answers)
        self.looks = 0

    async def look(self) -> Release | None:
        self.looks += 1
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def close(self) -> None:
        return None


class LoopClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


async def test_the_wait_looks_every_interval_until_the_state_is_reached() -> None:
    late = release(ready=False, roles={"macos": {"state": "incomplete"}})
    source = Script([None, late, late, release()])
    clock = LoopClock()
    lines: list[str] = []
    result = await wait(
        source,
        TAG,
        Until.READY,
        timeout=None,
        interval=2,
        say=lines.append,
        clock=clock,
        sleep=clock.sleep,
    )
    assert result.verdict.outcome is Outcome.REACHED and result.release == release()
    assert source.looks == 4 and clock.now == 6
    assert lines == [
        "3.14.1: nothing is recorded for 3.14.1 yet",
        "3.14.1: not ready: macos (incomplete)",
    ]


async def test_the_wait_gives_up_at_the_timeout_saying_what_is_missing() -> None:
    source = Script([release(ready=False, roles={"macos": {"state": "incomplete"}})])
    clock = LoopClock()
    result = await wait(
        source, TAG, Until.READY, timeout=5, interval=2, clock=clock, sleep=clock.sleep
    )
    assert result.verdict.outcome is Outcome.TIMEOUT
    assert result.verdict.sentence == "3.14.1 is not ready after 5 s: not ready: macos (incomplete)"
    assert clock.now == 5 and source.looks == 4  # at 0, 2, 4 and 5 s: never past the deadline
    once = Script([release(ready=False)])
    result = await wait(once, TAG, Until.READY, timeout=0, clock=clock, sleep=clock.sleep)
    assert result.verdict.outcome is Outcome.TIMEOUT and once.looks == 1


async def test_a_failing_first_look_is_an_error_and_later_failures_are_waited_out() -> None:
    with pytest.raises(LookFailed, match="cannot be reached"):
        await wait(
            Script([LookFailed("The board cannot be reached.")]), TAG, Until.READY, timeout=9
        )
    down = LookFailed("The board cannot be reached.")
    source = Script([release(ready=False), down, down, release()])
    clock = LoopClock()
    lines: list[str] = []
    result = await wait(
        source,
        TAG,
        Until.READY,
        timeout=None,
        interval=1,
        say=lines.append,
        clock=clock,
        sleep=clock.sleep,
    )
    assert result.verdict.outcome is Outcome.REACHED
    assert lines[1:] == ["The board cannot be reached. Still waiting.", "Answering again."]


# -- the state file, read-only, and what each look costs ------------------------------------------


class CountingStorage(LocalStorage):
    """Local folders that count listings of staging and the files hashed."""

    def __init__(self, staging: Path, public: Path) -> None:
        super().__init__(staging, public)
        self.listings = 0
        self.hashed: list[str] = []

    def list_staging(self, tag: ReleaseTag) -> dict[str, StagedFile] | None:
        self.listings += 1
        return super().list_staging(tag)

    def digest(
        self, tag: ReleaseTag, paths: Sequence[str], *, fresh: bool = False
    ) -> dict[str, str]:
        self.hashed += paths
        return super().digest(tag, paths, fresh=fresh)


def source(world: World, until: Until) -> tuple[StateFileSource, CountingStorage]:
    counting = CountingStorage(world.staging, world.public)
    return StateFileSource(world.config, ReleaseTag.parse(TAG), until, storage=counting,
                           clock=world.clock), counting  # fmt: skip


async def test_a_wait_for_published_reads_only_the_log(world: World) -> None:
    world.stage(TAG)
    await world.ready_all(TAG)
    waiting, counting = source(world, Until.PUBLISHED)
    before = await waiting.look()
    assert before is not None and before["ready"] and not before["published"]
    await world.say("hugo", await world.plan(TAG))
    after = await waiting.look()
    assert after is not None and after["published"] and after["published_by"] == "hugo"
    assert counting.listings == 0 and counting.hashed == []
    staged = {f["path"]: f["sha256"] for f in after["files"]}
    assert (
        staged["Python-3.14.1.tgz"]
        == hashlib.sha256((world.public / "3.14.1" / "Python-3.14.1.tgz").read_bytes()).hexdigest()
    )


async def test_a_wait_for_ready_lists_staging_only_once_every_role_has_claimed(
    world: World,
) -> None:
    world.stage(TAG)
    waiting, counting = source(world, Until.READY)
    assert await waiting.look() is None  # nothing recorded yet
    for person, role in [("hugo", "source"), ("hugo", "docs"), ("steve", "windows")]:
        await world.say(person, f"/ready {role} {TAG}")
        seen = await waiting.look()
        assert seen is not None and not seen["ready"] and not seen["listed"]
    assert counting.listings == 0
    await world.say("ned", f"/ready macos {TAG}")
    seen = await waiting.look()
    assert seen is not None and seen["ready"] and seen["listed"] and seen["publishable"]
    assert counting.listings == 1
    await waiting.look()
    assert counting.listings == 1  # the log has not changed, the listing is fresh
    world.clock.advance(world.config.model.poll_interval)
    await waiting.look()
    assert counting.listings == 2  # a poll interval later, as the bot's scan
    await world.say("ned", f"/hold {TAG} checking")
    seen = await waiting.look()
    assert counting.listings == 3 and seen is not None and seen["holds"][0]["by"] == "ned"
    assert counting.hashed == []


async def test_a_touched_file_is_hashed_once_and_its_claim_still_counts(world: World) -> None:
    world.stage(TAG)
    await world.ready_all(TAG)
    touched = world.staging / TAG / "python-3.14.1.exe"
    stat = touched.stat()
    os.utime(touched, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    waiting, counting = source(world, Until.PUBLISHABLE)
    seen = await waiting.look()
    assert seen is not None
    assert seen["publishable"], seen["blockers"]
    world.clock.advance(world.config.model.poll_interval)
    await waiting.look()
    assert counting.listings == 2 and counting.hashed == ["python-3.14.1.exe"]
    touched.write_bytes(b"another build")  # now the content differs: the claim is stale
    world.clock.advance(world.config.model.poll_interval)
    seen = await waiting.look()
    assert seen is not None and not seen["publishable"]
    assert "windows: python-3.14.1.exe changed after /ready" in seen["blockers"]


async def test_the_state_file_is_read_while_the_bot_holds_its_write_lock(world: World) -> None:
    world.stage(TAG)
    await world.ready_all(TAG)
    # A second writer in the middle of a write transaction, as the bot is while it appends.
    writer = sqlite3.connect(world.config.state_path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    try:
        events, state = LogReader(world.config.state_path).look(ReleaseTag.parse(TAG))
        assert len(state.claims) == 4 and len(events) == 4
        # ... and the reader holds nothing that would keep the bot from writing.
        writer.execute("INSERT OR REPLACE INTO summaries (tag, ref) VALUES ('3.14.1', 'x')")
        writer.execute("COMMIT")
    finally:
        writer.close()


def test_a_missing_or_foreign_state_file_is_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(StateFileError, match="there is no state file at"):
        LogReader(tmp_path / "state.db")
    (tmp_path / "other.db").write_bytes(b"")
    with pytest.raises(StateFileError, match="is not a relbot state file"):
        LogReader(tmp_path / "other.db")


# -- what the board adds for a wait ------------------------------------------------------------


async def test_the_board_json_says_ready_and_the_last_abort(world: World) -> None:
    world.stage("3.14.0rc1")
    tag = ReleaseTag.parse("3.14.0rc1")
    await world.ready_all("3.14.0rc1")
    line = await world.plan("3.14.0rc1")
    # A different file already public under a planned name: the bot stops the publish
    # before anything moves, and records the abort.
    conflict = world.public / "3.14.0" / "python-3.14.0rc1-macos11.pkg"
    conflict.parent.mkdir(parents=True)
    conflict.write_text("an older, different build")
    await world.say("hugo", line)
    view = release_view(
        world.profile, tag, await world.gate.observed(tag), world.store.events(tag), now=0
    )
    data = view.to_json()
    events = world.store.events(tag)
    assert data["ready"] is True and data["last_event"] == events[-1].id
    abort = next(e for e in reversed(events) if e.kind.value == "aborted")
    assert data["aborted"]["event"] == abort.id and data["aborted"]["by"] == "relbot"
    assert "python-3.14.0rc1-macos11.pkg" in data["aborted"]["reason"]
    await world.say("hugo", "/waive 3.14.0rc1 macos not this time")
    await world.say("ned", "/unready macos 3.14.0rc1")
    await world.gate.scan()
    data = release_view(
        world.profile, tag, await world.gate.observed(tag), world.store.events(tag), now=0
    ).to_json()
    assert data["roles"]["macos"]["state"] == "waived" and data["ready"] is True


async def test_a_wait_judges_a_shared_install_index_with_the_other_release(world: World) -> None:
    """The index staged for 3.15.1 also lists 3.14.2's installs (the same bytes are staged
    for both): publishable to the wait as to the bot, which lists 3.14.2 for it."""
    shared = index_bytes("3.15.1", "3.14.2", *LIVE_VERSIONS)
    (world.public).mkdir(parents=True, exist_ok=True)
    (world.public / "index-windows.json").write_bytes(index_bytes(*LIVE_VERSIONS))
    for tag in ("3.15.1", "3.14.2"):
        world.stage(tag)
        world.write(tag, f"windows-{tag}.json", manifest_bytes(tag))
        world.write(tag, "index-windows.json", shared)
        world.write(tag, "index-windows.json.cat", catalog_bytes(shared))
        await world.ready_all(tag)
    counting = CountingStorage(world.staging, world.public)
    waiting = StateFileSource(
        world.config,
        ReleaseTag.parse("3.15.1"),
        Until.PUBLISHABLE,
        storage=counting,
        clock=world.clock,
    )
    seen = await waiting.look()
    assert seen is not None
    assert seen["publishable"], seen["blockers"]
    log = LogReader(world.config.state_path)
    assert log.tags() == [ReleaseTag.parse("3.14.2"), ReleaseTag.parse("3.15.1")]
    log.close()
    # Without 3.14.2's copy, the index lists installs of a release that does not stage it.
    (world.staging / "3.14.2" / "index-windows.json").unlink()
    world.clock.advance(world.config.model.poll_interval)
    await world.say("eve", "/status 3.15.1")
    seen = await waiting.look()
    assert seen is not None and not seen["publishable"]
    assert any("3.14.2's staging holds another index" in b for b in seen["blockers"]), seen
