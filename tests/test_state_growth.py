"""Outsiders cannot grow the state: their refusals are logged, not written into a release's
history; the gate keeps locks and caches only for releases that are open; the folded state
of a release is cached by its last event and stays exactly what a fresh fold gives."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bot.journal.store
from bot.domain.files import SnapshotFile
from bot.domain.history import EventKind, ReleaseState, fold, plan_to_json
from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.tags import ReleaseTag
from bot.journal.store import StateStore
from bot.service.release_locks import ReleaseLocks
from tests.conftest import World
from tests.test_gate_signatures import ARTIFACT, sign_all, signed_world

TAG = ReleaseTag.parse("3.14.1")
ROOT = Path(__file__).resolve().parents[1]


# -- refusals ----------------------------------------------------------------------------------


async def test_an_outsiders_refusal_is_one_log_line_and_no_event(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    world.stage("3.14.1")
    await world.say("ned", "/ready macos 3.14.1")
    before = world.store.events(TAG)
    caplog.set_level(logging.DEBUG, logger="bot")

    reply = await world.gate.handle("slack", "U0STRANGER", "/publish 3.14.1 confirm K7Q2XFAB")

    assert reply.private and "not on the release team" in reply.text
    assert world.store.events(TAG) == before
    lines = [r.getMessage() for r in caplog.records if "not on the team" in r.getMessage()]
    assert len(lines) == 1 and "\n" not in lines[0], lines
    assert "U0STRANGER" in lines[0] and "slack" in lines[0]
    assert "K7Q2XFAB" not in caplog.text  # never a code (nor anything else typed)


async def test_an_outsider_cannot_open_a_release(world: World) -> None:
    for line in ("/hold 3.14.9 mine now", "/ready macos 3.14.9", "/respin 3.14.9"):
        reply = await world.gate.handle("discord", "42", line)
        assert reply.private
    assert world.store.tags() == []
    assert world.gate.metrics.refusals == {"not_on_team": 3}


async def test_a_team_members_refusal_is_one_log_line_and_no_event(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    world.stage("3.14.1")
    await world.say("ned", "/ready macos 3.14.1")
    before = world.store.events(TAG)
    caplog.set_level(logging.INFO, logger="bot")

    reply = await world.say("steve", "/publish 3.14.1 confirm K7Q2XFAB")

    assert reply.private
    assert world.store.events(TAG) == before
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("refused")]
    assert len(lines) == 1 and "\n" not in lines[0], lines
    assert "steve" in lines[0] and "/publish 3.14.1 confirm <code>" in lines[0]
    assert "K7Q2XFAB" not in caplog.text


# -- what the gate keeps in memory -------------------------------------------------------------


async def test_commands_about_releases_that_do_not_exist_leave_nothing_in_memory(
    world: World,
) -> None:
    world.stage("3.14.1")
    await world.say("ned", "/ready macos 3.14.1")
    kept = world.gate.retained_tags()
    assert kept == {"3.14.1"}
    for n in range(40):
        await world.gate.handle("slack", f"U{n}", f"/ready macos 3.14.{100 + n}")
        await world.gate.handle("slack", f"U{n}", f"/status 3.15.{n}")
        await world.say("ned", f"/ready macos 3.13.{n}")  # no RM for 3.13: refused at once
        await world.say("ned", f"/ready macos 3.14.{200 + n}")  # nothing staged
        await world.say("steve", f"/publish 3.14.{300 + n}")  # not an RM
        await world.say("eve", f"/status 3.14.{400 + n}")
    assert world.gate.retained_tags() == kept


async def test_a_published_release_leaves_nothing_in_memory(world: World) -> None:
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    assert "3.14.1" in world.gate.retained_tags()

    reply = await world.say("hugo", line)

    assert not reply.private, reply.text
    assert "3.14.1" not in world.gate.retained_tags()
    status = await world.say("eve", "/status 3.14.1")  # asking about it keeps nothing either
    assert "published" in status.text
    assert "3.14.1" not in world.gate.retained_tags()


async def test_after_a_respin_every_file_and_bundle_is_read_afresh(tmp_path: Path) -> None:
    world = signed_world(tmp_path)
    paths = world.stage("3.14.1", content=ARTIFACT)
    sign_all(world, "3.14.1", paths)
    await world.ready_all("3.14.1")
    reads = count_reads(world)
    await world.say("eve", "/status 3.14.1")
    assert reads == {"digest": 0, "read": 0}  # cached while nothing changes

    reply = await world.say("hugo", "/respin 3.14.1")
    assert not reply.private, reply.text
    await world.say("eve", "/status 3.14.1")

    tag = ReleaseTag.parse("3.14.1")
    signed = [p for p in paths if world.gate.profile.needs_signature(tag, p)]
    assert signed
    assert reads == {"digest": len(signed), "read": len(signed)}


def count_reads(world: World) -> dict[str, int]:
    """Count the files the gate hashes and the bundles it reads from now on."""
    calls = {"digest": 0, "read": 0}
    storage = world.storage
    digest, read = storage.digest, storage.read

    def counting_digest(
        tag: ReleaseTag, paths: Sequence[str], *, fresh: bool = False
    ) -> dict[str, str]:
        calls["digest"] += len(paths)
        return digest(tag, paths, fresh=fresh)

    def counting_read(tag: ReleaseTag, path: str, limit: int) -> bytes:
        calls["read"] += 1
        return read(tag, path, limit)

    storage.digest = counting_digest  # type: ignore[method-assign]
    storage.read = counting_read  # type: ignore[method-assign]
    return calls


async def test_a_release_lock_serializes_and_is_gone_once_nobody_uses_it() -> None:
    locks = ReleaseLocks()
    order: list[str] = []
    inside = asyncio.Event()

    async def first() -> None:
        async with locks.hold("3.14.1"):
            order.append("first in")
            inside.set()
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            order.append("first out")

    async def second() -> None:
        await inside.wait()
        async with locks.hold("3.14.1"):
            order.append("second")

    async def cancelled() -> None:
        await inside.wait()
        async with locks.hold("3.14.1"):
            order.append("never")

    waiter = asyncio.create_task(cancelled())
    both = asyncio.gather(first(), second())
    await inside.wait()
    await asyncio.sleep(0)
    assert locks.keys() == {"3.14.1"}
    waiter.cancel()
    await both
    with contextlib.suppress(asyncio.CancelledError):
        await waiter
    assert order == ["first in", "first out", "second"]
    assert locks.keys() == set()


# -- the fold cache ----------------------------------------------------------------------------

SNAPSHOT = [SnapshotFile("python-3.14.1-macos11.pkg", 47, 1_700_000_000.5, "ab" * 32).to_json()]
PEOPLE = st.sampled_from(["hugo", "ned", "steve", "relbot"])
ROLES = st.sampled_from(["source", "macos", "windows"])
STEPS = st.sampled_from(["promote", "register", "purge", "announce"])
CODES = st.sampled_from(["K7Q2XF", "ABCDEF12", "ZZZZZZ"])


def code_hash(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


def a_plan(size: int) -> dict[str, Any]:
    plan = PublishPlan(
        TAG,
        (PlanFile("Python-3.14.1.tgz", "3.14.1/Python-3.14.1.tgz", "source", size, "cd" * 32),),
    )
    return plan_to_json(plan)


# What each kind of event carries, as the gate writes it.
EVENT_DATA: dict[EventKind, st.SearchStrategy[dict[str, Any]]] = {
    EventKind.CLAIMED: st.builds(lambda r: {"role": r, "snapshot": SNAPSHOT}, ROLES),
    EventKind.WITHDRAWN: st.builds(lambda r: {"role": r, "reason": "changed"}, ROLES),
    EventKind.HELD: st.builds(lambda t: {"reason": t}, st.sampled_from(["", "notarization"])),
    EventKind.UNHELD: st.builds(lambda p: {"holder": p}, PEOPLE),
    EventKind.PLANNED: st.builds(
        lambda c, n, status: {
            "code_hash": code_hash(c),
            "expires_at": 1.8e9,
            "plan": a_plan(n),
            "status": status,
            "sign": [f["path"] for f in a_plan(n)["files"]][: n - 1],
        },
        CODES,
        st.integers(1, 3),
        st.sampled_from([None, "bugfix", "security"]),
    ),
    EventKind.PLAN_DROPPED: st.just({"reason": "withdrawn by a re-spin"}),
    EventKind.CONFIRMED: st.builds(
        lambda c, f: (
            {"code_hash": code_hash(c), "digest": "x"} | ({"finishing": True} if f else {})
        ),
        CODES,
        st.booleans(),
    ),
    EventKind.STEP_STARTED: st.builds(lambda s: {"step": s}, STEPS),
    EventKind.STEP_DONE: st.builds(lambda s: {"step": s, "detail": "done"}, STEPS),
    EventKind.PUBLISHED: st.just({"files": 1, "size": 2}),
    EventKind.ABORTED: st.just({"reason": "a conflict"}),
    EventKind.ABORTING: st.just({"reason": "aborted by hugo with /abort"}),
    EventKind.STOPPED: st.builds(
        lambda s, p: {"step": s, "reason": "a copy changed", "public": p, "files": ["a.tgz"]},
        STEPS,
        st.booleans(),
    ),
    EventKind.REFUSED: st.just({"command": "/publish 3.14.1", "reason": "not an RM"}),
    EventKind.WAIVED: st.builds(
        lambda t: {"target": t, "role": t == "macos", "reason": "not this time"},
        st.sampled_from(["macos", "python-3.14.1-macos11.pkg"]),
    ),
    EventKind.SIGNED: st.builds(
        lambda n: {"identity": "hugo@python.org", "signed": n, "plan": a_plan(n)},
        st.integers(1, 3),
    ),
    EventKind.UNWAIVED: st.builds(
        lambda t: {"target": t}, st.sampled_from(["macos", "python-3.14.1-macos11.pkg"])
    ),
    EventKind.ANNOUNCEMENT_WORDS: st.builds(
        lambda w: {"words": w}, st.sampled_from(["The first bugfix release.", "Highlights."])
    ),
}
EVENTS = st.lists(
    st.tuples(
        st.sampled_from(list(EVENT_DATA)).flatmap(
            lambda kind: st.tuples(st.just(kind), EVENT_DATA[kind])
        ),
        PEOPLE,
        st.booleans(),  # read the state after this event?
    ),
    min_size=1,
    max_size=25,
)


def test_the_fold_cache_property_covers_every_kind_of_event() -> None:
    assert set(EVENT_DATA) == set(EventKind), "add the new kinds to EVENT_DATA"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=EVENTS)
def test_the_cached_fold_is_the_fresh_fold_after_every_event(
    events: list[tuple[tuple[EventKind, dict[str, Any]], str, bool]],
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "state.db"
        writer, reader = StateStore(path), StateStore(path)  # the bot and a CLI, say
        other = ReleaseTag.parse("3.14.0rc1")
        for (kind, data), actor, read in events:
            writer.append(TAG, actor, kind, **data)
            writer.append(other, actor, EventKind.HELD, reason="noise in another release")
            fresh = fold(TAG, writer.events(TAG))
            assert writer.release(TAG) == fresh, kind
            assert writer.open_tags() == open_tags(writer), kind
            if read:
                assert reader.release(TAG) == fresh, kind
                assert reader.open_tags() == open_tags(writer), kind
        assert reader.release(TAG) == fold(TAG, reader.events(TAG))
        writer.close()
        reader.close()


def open_tags(store: StateStore) -> list[ReleaseTag]:
    """The definition: tags with an event other than a refusal, and no publish since the
    last confirmation (late files reopen a published release until they are published)."""
    found = []
    for tag in store.tags():
        events = store.events(tag)
        last = {e.kind: e.id for e in events}  # the last id of each kind
        acted = any(e.kind != EventKind.REFUSED for e in events)
        published = last.get(EventKind.PUBLISHED, -1) > last.get(EventKind.CONFIRMED, -1)
        if acted and not published:
            found.append(tag)
    return found


def test_a_read_decodes_only_the_events_appended_since_the_last_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = StateStore(tmp_path / "state.db")
    for n in range(50):
        store.append(TAG, "ned", EventKind.HELD, reason=f"hold {n}")
        store.append(TAG, "ned", EventKind.UNHELD, holder="ned")
    store.release(TAG)
    decoded = counting(monkeypatch)

    store.release(TAG)
    assert decoded == []
    store.append(TAG, "steve", EventKind.HELD, reason="signing")
    for _ in range(200):
        store.append(TAG, "eve", EventKind.REFUSED, command="/publish 3.14.1", reason="no")
    assert list(store.release(TAG).holds) == ["steve"]
    assert decoded == [EventKind.HELD.value]  # refusals are read past, never decoded


def counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    decoded: list[str] = []
    event: Callable[..., Any] = bot.journal.store._event

    def counted(row: tuple[int, float, str, str, str, str]) -> Any:
        decoded.append(row[4])
        return event(row)

    monkeypatch.setattr(bot.journal.store, "_event", counted)
    return decoded


def test_a_state_handed_out_is_the_callers_own(tmp_path: Path) -> None:
    store = StateStore(tmp_path / "state.db")
    store.append(TAG, "ned", EventKind.HELD, reason="notarization")
    mine = store.release(TAG)
    mine.holds.clear()
    mine.steps_done["promote"] = "pretend"
    again = store.release(TAG)
    assert list(again.holds) == ["ned"] and again.steps_done == {}


def test_a_read_sees_what_another_process_appended(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = StateStore(path)
    store.append(TAG, "ned", EventKind.HELD, reason="notarization")
    assert list(store.release(TAG).holds) == ["ned"]  # cached now
    script = (
        "import sys; from pathlib import Path; from bot.journal.store import StateStore; "
        "from bot.domain.history import EventKind; from bot.domain.tags import ReleaseTag; "
        "s = StateStore(Path(sys.argv[1])); "
        "s.append(ReleaseTag.parse('3.14.1'), 'hugo', EventKind.UNHELD, holder='ned')"
    )
    subprocess.run([sys.executable, "-c", script, str(path)], check=True, cwd=ROOT, timeout=60)
    assert store.release(TAG).holds == {}
    assert store.release(TAG) == fold(TAG, store.events(TAG))


def test_a_tag_nobody_acted_on_is_not_cached(tmp_path: Path) -> None:
    store = StateStore(tmp_path / "state.db")
    for n in range(100):
        assert store.release(ReleaseTag.parse(f"3.14.{n}")) == ReleaseState(
            ReleaseTag.parse(f"3.14.{n}")
        )
    assert store._folded == {}


def test_folding_more_events_leaves_the_earlier_state_as_it_was(tmp_path: Path) -> None:
    store = StateStore(tmp_path / "state.db")
    store.append(TAG, "ned", EventKind.CLAIMED, role="macos", snapshot=SNAPSHOT)
    earlier = fold(TAG, store.events(TAG))
    kept = earlier.copy()
    store.append(TAG, "relbot", EventKind.WITHDRAWN, role="macos", reason="changed")
    store.append(TAG, "ned", EventKind.HELD, reason="notarization")

    later = fold(TAG, store.events(TAG)[1:], start=earlier)

    assert earlier == kept and "macos" in earlier.claims
    assert later == fold(TAG, store.events(TAG))


# -- refused commands and releases with nothing left to watch ---------------------------------


async def test_5000_refused_commands_on_distinct_tags_keep_nothing(world: World) -> None:
    world.stage("3.14.1")
    await world.say("ned", "/ready macos 3.14.1")
    await world.gate.scan()
    before = (
        world.store.last_id(),
        world.store.tags(),
        await world.gate.open_tags(),
        world.gate.recorded_open_tags(),
        world.gate.retained_tags(),
    )

    for n in range(5000):
        tag = f"3.{20 + n // 1000}.{n % 1000}"
        line = (f"/hold {tag} typo", f"/ready macos {tag}", f"/unready macos {tag}")[n % 3]
        person = ("ned", "steve")[n % 2]
        reply = await world.say(person, line)
        assert reply.private, reply.text

    after = (
        world.store.last_id(),
        world.store.tags(),
        await world.gate.open_tags(),
        world.gate.recorded_open_tags(),
        world.gate.retained_tags(),
    )
    assert after == before
    assert (
        world.gate.metrics.refusals["rule"] + world.gate.metrics.refusals.get("not_allowed", 0)
        == 5000
    )


async def test_a_release_with_nothing_staged_public_held_or_claimed_is_pruned(
    world: World,
) -> None:
    world.stage("3.14.1")
    world.stage("3.14.5")
    assert not (await world.say("eve", "/hold 3.14.5 wait")).private
    assert not (await world.say("eve", "/unhold 3.14.5")).private
    assert not (await world.say("hugo", "/waive 3.14.5 macos not this time")).private
    assert "3.14.5" in (await world.say("eve", "/status")).text
    shutil.rmtree(world.staging / "3.14.5")  # the upload was a mistake

    await world.gate.scan()

    tag = ReleaseTag.parse("3.14.5")
    assert tag not in await world.gate.open_tags()
    assert tag not in world.gate.recorded_open_tags()
    assert "3.14.5" not in (await world.say("eve", "/status")).text
    assert tag in world.store.open_tags()  # its history is kept, and shown when asked
    assert "3.14.5" in (await world.say("eve", "/status 3.14.5")).text
    world.stage("3.14.5")  # staged again: watched again, its waiver still in force
    assert tag in await world.gate.open_tags()
    assert "waived" in (await world.say("eve", "/status 3.14.5")).text


async def test_a_waiver_on_a_release_nobody_staged_is_refused_and_records_nothing(
    world: World,
) -> None:
    reply = await world.say("hugo", "/waive 3.14.77 macos not this time")

    assert reply.private and "No release 3.14.77 is known" in reply.text
    assert world.store.tags() == []
