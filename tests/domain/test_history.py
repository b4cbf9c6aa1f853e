"""The event log and its fold: current state is re-derived from what happened, in order.

Events are written to a real SQLite file and read back, so the fold is tested on exactly what
the log stores (JSON round-trip included)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from bot.domain.files import SnapshotFile
from bot.domain.history import Event, EventKind, ReleaseState, fold, plan_to_json
from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.tags import ReleaseTag
from bot.journal.store import StateStore

TAG = ReleaseTag.parse("3.14.1")
SNAPSHOT = (SnapshotFile("python-3.14.1-macos11.pkg", 47, 1_700_000_000.5, "ab" * 32),)


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        self.now += 1
        return self.now


class Log:
    """One release's event log on a real SQLite file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.store = StateStore(path, clock=Clock())

    def add(self, actor: str, kind: EventKind, **data: Any) -> Event:
        return self.store.append(TAG, actor, kind, **data)

    def state(self) -> ReleaseState:
        return self.store.release(TAG)

    def claim(self, role: str, person: str) -> None:
        self.add(person, EventKind.CLAIMED, role=role, snapshot=[f.to_json() for f in SNAPSHOT])

    def plan(self, person: str, code: str, size: int = 47) -> PublishPlan:
        plan = PublishPlan(
            TAG,
            (
                PlanFile(
                    "python-3.14.1-macos11.pkg",
                    "3.14.1/python-3.14.1-macos11.pkg",
                    "macos",
                    size,
                    "ab" * 32,
                ),
            ),
        )
        self.add(
            person,
            EventKind.PLANNED,
            code_hash=code_hash(code),
            expires_at=1_800_000_600.0,
            plan=plan_to_json(plan),
        )
        return plan

    def confirm(self, person: str, code: str, plan: PublishPlan) -> None:
        self.add(person, EventKind.CONFIRMED, code_hash=code_hash(code), digest=plan.digest)


def code_hash(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


@pytest.fixture
def log(tmp_path: Path) -> Log:
    return Log(tmp_path / "state.db")


def test_a_new_release_has_no_state(log: Log) -> None:
    state = log.state()

    assert state.claims == {} and state.holds == {} and state.offer is None
    assert not state.is_published


def test_a_claim_records_who_when_and_the_exact_files(log: Log) -> None:
    log.claim("macos", "ned")

    claim = log.state().claims["macos"]
    assert claim.person == "ned"
    assert claim.snapshot == SNAPSHOT
    assert claim.at > 0


def test_a_withdrawal_removes_the_claim_and_says_why(log: Log) -> None:
    log.claim("macos", "ned")
    log.add("relbot", EventKind.WITHDRAWN, role="macos", reason="python-3.14.1-macos11.pkg changed")

    state = log.state()
    assert "macos" not in state.claims
    assert state.withdrawals["macos"].reason == "python-3.14.1-macos11.pkg changed"
    assert state.withdrawals["macos"].by == "relbot"


def test_withdrawing_an_unclaimed_role_leaves_no_withdrawal(log: Log) -> None:
    log.add("hugo", EventKind.WITHDRAWN, role="windows", reason="re-spin")

    assert log.state().withdrawals == {}


def test_a_new_claim_clears_the_withdrawal(log: Log) -> None:
    log.claim("macos", "ned")
    log.add("ned", EventKind.WITHDRAWN, role="macos", reason="rebuilding")
    log.claim("macos", "ned")

    state = log.state()
    assert "macos" in state.claims
    assert "macos" not in state.withdrawals


def test_holds_are_per_person_and_lifted_by_holder(log: Log) -> None:
    log.add("ned", EventKind.HELD, reason="notarization pending")
    log.add("steve", EventKind.HELD, reason="")
    log.add("hugo", EventKind.UNHELD, holder="steve")

    state = log.state()
    assert list(state.holds) == ["ned"]
    assert state.holds["ned"].reason == "notarization pending"


def test_a_plan_is_an_offer_to_the_rm_who_asked(log: Log) -> None:
    plan = log.plan("hugo", "K7Q2XF")

    offer = log.state().offer
    assert offer is not None
    assert offer.person == "hugo"
    assert offer.code_hash == code_hash("K7Q2XF")
    assert offer.expires_at == 1_800_000_600.0
    assert offer.plan == plan
    assert offer.plan.digest == plan.digest


def test_a_new_plan_supersedes_the_old_code(log: Log) -> None:
    log.plan("hugo", "AAAAAA")
    log.plan("hugo", "BBBBBB", size=48)

    state = log.state()
    assert state.offer is not None
    assert state.offer.code_hash == code_hash("BBBBBB")
    assert state.offer.plan.files[0].size == 48
    assert state.spent_codes == {code_hash("AAAAAA"): "replaced by a newer plan"}


def test_a_dropped_plan_spends_its_code_with_the_reason(log: Log) -> None:
    log.plan("hugo", "AAAAAA")
    log.add("hugo", EventKind.PLAN_DROPPED, reason="withdrawn by a re-spin")

    state = log.state()
    assert state.offer is None
    assert state.spent_codes == {code_hash("AAAAAA"): "withdrawn by a re-spin"}


def test_confirming_starts_publishing_and_marks_the_code_already_used(log: Log) -> None:
    plan = log.plan("hugo", "K7Q2XF")
    log.confirm("hugo", "K7Q2XF", plan)

    state = log.state()
    assert state.offer is None
    assert state.publishing == plan
    assert state.publisher == "hugo"
    assert state.spent_codes[code_hash("K7Q2XF")] == "already used"
    assert not state.is_published


def test_publish_steps_are_remembered_so_a_restart_resumes(log: Log) -> None:
    plan = log.plan("hugo", "K7Q2XF")
    log.confirm("hugo", "K7Q2XF", plan)
    log.add("relbot", EventKind.STEP_STARTED, step="promote")
    log.add("relbot", EventKind.STEP_DONE, step="promote", detail="1 file")
    log.add("relbot", EventKind.STEP_STARTED, step="register")

    state = log.state()
    assert state.steps_done == {"promote": "1 file"}
    assert state.publishing == plan


def test_published_is_credited_to_the_rm_who_confirmed(log: Log) -> None:
    plan = log.plan("hugo", "K7Q2XF")
    log.confirm("hugo", "K7Q2XF", plan)
    log.add("relbot", EventKind.STEP_DONE, step="promote", detail="")
    published = log.add("relbot", EventKind.PUBLISHED, files=1, size=47)

    state = log.state()
    assert state.is_published
    assert state.published_by == "hugo"
    assert state.published_at == published.at


def test_an_abort_drops_the_publish_in_progress(log: Log) -> None:
    plan = log.plan("hugo", "K7Q2XF")
    log.confirm("hugo", "K7Q2XF", plan)
    log.add("relbot", EventKind.STEP_DONE, step="preflight", detail="ok")
    log.add("relbot", EventKind.ABORTED, reason="python.org: no Release 'Python 3.14.1'")

    state = log.state()
    assert state.publishing is None
    assert state.publisher is None
    assert state.steps_done == {}
    assert not state.is_published
    assert state.spent_codes[code_hash("K7Q2XF")] == "already used"


def test_refusals_are_recorded_but_change_nothing(log: Log) -> None:
    log.claim("macos", "ned")
    before = log.state()
    log.add("eve", EventKind.REFUSED, command="/publish 3.14.1", reason="not an RM")

    after = log.state()
    assert after.claims == before.claims
    assert after.offer is None and after.holds == {}
    assert [e.kind for e in log.store.events(TAG)] == [EventKind.CLAIMED, EventKind.REFUSED]


def test_the_log_survives_a_restart(log: Log) -> None:
    log.claim("macos", "ned")
    log.add("ned", EventKind.HELD, reason="wait")
    log.store.close()

    reopened = Log(log.path)

    state = reopened.state()
    assert state.claims["macos"].snapshot == SNAPSHOT
    assert "ned" in state.holds


def test_events_come_back_oldest_first_and_only_for_their_tag(log: Log) -> None:
    log.claim("source", "hugo")
    log.store.append(ReleaseTag.parse("3.13.9"), "hugo", EventKind.HELD, reason="other")
    log.claim("macos", "ned")

    events = log.store.events(TAG)
    assert [e.data["role"] for e in events] == ["source", "macos"]
    assert events[0].at < events[1].at
    assert events[0].id < events[1].id
    assert [str(t) for t in log.store.tags()] == ["3.13.9", "3.14.1"]


def test_fold_is_a_pure_replay_of_events_in_order() -> None:
    events = [
        Event(1, 1.0, "3.14.1", "ned", EventKind.HELD, {"reason": "a"}),
        Event(2, 2.0, "3.14.1", "ned", EventKind.UNHELD, {"holder": "ned"}),
        Event(3, 3.0, "3.14.1", "ned", EventKind.HELD, {"reason": "b"}),
    ]

    assert fold(TAG, events).holds["ned"].reason == "b"
    assert fold(TAG, events[:2]).holds == {}
