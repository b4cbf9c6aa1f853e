"""The fold, event by event: what each journaled event leaves in the release's state, and
what an event that leaves out an optional field means. Events are built in memory (the
SQLite round-trip is tested in test_history.py)."""

from __future__ import annotations

import hashlib
from typing import Any

from bot.domain.files import SnapshotFile
from bot.domain.history import Event, EventKind, ReleaseState, fold, plan_to_json
from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.tags import ReleaseTag

TAG = ReleaseTag.parse("3.14.1")
SNAPSHOT = (SnapshotFile("python-3.14.1-macos11.pkg", 47, 1_700_000_000.5, "ab" * 32),)
PKG = PlanFile(
    "python-3.14.1-macos11.pkg", "3.14.1/python-3.14.1-macos11.pkg", "macos", 47, "ab" * 32
)
SIG = PlanFile(
    "python-3.14.1-macos11.pkg.sigstore",
    "3.14.1/python-3.14.1-macos11.pkg.sigstore",
    "macos",
    9,
    "cd" * 32,
)
LATE = PlanFile("python-3.14.1.exe", "3.14.1/python-3.14.1.exe", "windows", 80, "ef" * 32)


class Journal:
    """One release's events, numbered and timed in order (event n happens at n * 10.0)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def add(self, actor: str, kind: EventKind, **data: Any) -> float:
        at = (len(self.events) + 1) * 10.0
        self.events.append(Event(len(self.events) + 1, at, str(TAG), actor, kind, data))
        return at

    def state(self) -> ReleaseState:
        return fold(TAG, self.events)

    def plan(self, person: str, code: str, *files: PlanFile, **extra: Any) -> PublishPlan:
        plan = PublishPlan(TAG, files or (PKG,))
        self.add(
            person,
            EventKind.PLANNED,
            code_hash=code_hash(code),
            expires_at=1_000.0,
            plan=plan_to_json(plan),
            **extra,
        )
        return plan

    def confirm(self, person: str, code: str, **extra: Any) -> None:
        self.add(person, EventKind.CONFIRMED, code_hash=code_hash(code), **extra)


def code_hash(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


def test_folding_on_from_a_state_leaves_that_state_as_it_was() -> None:
    log = Journal()
    log.add("ned", EventKind.CLAIMED, role="macos", snapshot=[f.to_json() for f in SNAPSHOT])
    before = log.state()

    after = fold(
        TAG,
        [Event(9, 90.0, str(TAG), "ned", EventKind.WITHDRAWN, {"role": "macos", "reason": "x"})],
        start=before,
    )

    assert "macos" in before.claims and before.withdrawals == {}
    assert "macos" not in after.claims and "macos" in after.withdrawals


def test_a_claim_and_its_withdrawal_name_the_role_and_when() -> None:
    log = Journal()
    log.add("ned", EventKind.CLAIMED, role="macos", snapshot=[f.to_json() for f in SNAPSHOT])
    assert log.state().claims["macos"].role == "macos"

    at = log.add("ned", EventKind.WITHDRAWN, role="macos", reason="wrong build")

    withdrawal = log.state().withdrawals["macos"]
    assert (withdrawal.role, withdrawal.reason, withdrawal.at) == ("macos", "wrong build", at)


def test_a_hold_without_a_reason_has_an_empty_one_and_says_when() -> None:
    log = Journal()
    at = log.add("ned", EventKind.HELD)

    hold = log.state().holds["ned"]
    assert (hold.reason, hold.at) == ("", at)


def test_lifting_a_hold_nobody_has_changes_nothing() -> None:
    log = Journal()
    log.add("ned", EventKind.HELD, reason="wait")
    log.add("hugo", EventKind.UNHELD, holder="steve")

    assert list(log.state().holds) == ["ned"]

    log.add("ned", EventKind.UNHELD, holder="ned")
    assert log.state().holds == {}


def test_a_dropped_plan_without_a_reason_spends_its_code_as_withdrawn() -> None:
    log = Journal()
    log.plan("hugo", "1234")
    log.add("hugo", EventKind.PLAN_DROPPED)

    assert log.state().spent_codes[code_hash("1234")] == "withdrawn"


def test_the_confirmed_plan_signs_its_files_under_its_branch_status() -> None:
    log = Journal()
    log.plan("hugo", "1234", sign=[PKG.path], status="bugfix")
    log.confirm("hugo", "1234")

    state = log.state()
    assert state.to_sign == (PKG.path,)
    assert state.publishing_status == "bugfix"


def test_a_plan_that_says_nothing_of_signing_or_status_has_neither() -> None:
    log = Journal()
    log.plan("hugo", "1234")
    log.confirm("hugo", "1234")

    state = log.state()
    assert state.to_sign == () and state.publishing_status is None


def test_the_first_publish_fixes_the_branch_status_late_files_keep_it() -> None:
    log = Journal()
    log.plan("hugo", "1234", status="bugfix")
    log.confirm("hugo", "1234")
    log.add("relbot", EventKind.PUBLISHED)
    assert log.state().branch_status == "bugfix"

    log.plan("hugo", "5678", LATE, status="security")
    log.confirm("hugo", "5678")
    log.add("relbot", EventKind.PUBLISHED)

    state = log.state()
    assert state.branch_status == "bugfix"
    assert state.public_files == (PKG, LATE)


def test_a_confirmation_with_no_plan_on_offer_changes_nothing_even_mid_publish() -> None:
    log = Journal()
    plan = log.plan("hugo", "1234")
    log.confirm("hugo", "1234")
    log.add("relbot", EventKind.STEP_DONE, step="copy", detail="1 file")
    log.confirm("thomas", "1234")

    state = log.state()
    assert state.publishing == plan and state.publisher == "hugo"
    assert state.steps_done == {"copy": "1 file"}


def test_a_finishing_confirmation_credits_the_rm_who_gave_it() -> None:
    log = Journal()
    log.plan("hugo", "1234")
    log.confirm("hugo", "1234")
    log.add("relbot", EventKind.STOPPED, step="promote", reason="disk full", public=False)
    log.plan("thomas", "5678")
    log.confirm("thomas", "5678", finishing=True)
    log.add("relbot", EventKind.PUBLISHED)

    state = log.state()
    assert state.published_by == "thomas"
    assert state.stopped is None


def test_a_stop_that_leaves_out_whether_anything_is_public_means_nothing_is() -> None:
    log = Journal()
    log.plan("hugo", "1234")
    log.confirm("hugo", "1234")
    log.add("relbot", EventKind.STOPPED, step="promote", reason="disk full")

    stop = log.state().stopped
    assert stop is not None
    assert (stop.public, stop.files) == (False, ())


def test_a_publish_after_a_stop_is_no_longer_stopped() -> None:
    log = Journal()
    log.plan("hugo", "1234")
    log.confirm("hugo", "1234")
    log.add("relbot", EventKind.STOPPED, step="announce", reason="forum down", public=True)
    log.add("relbot", EventKind.PUBLISHED)

    assert log.state().stopped is None


def test_a_step_done_without_detail_is_done_with_an_empty_one() -> None:
    log = Journal()
    log.plan("hugo", "1234")
    log.confirm("hugo", "1234")
    log.add("relbot", EventKind.STEP_STARTED, step="copy")
    log.add("relbot", EventKind.STEP_DONE, step="copy")

    assert log.state().steps_done == {"copy": ""}


def test_an_abort_journaled_before_it_acts_keeps_its_reason() -> None:
    log = Journal()
    log.plan("hugo", "1234")
    log.confirm("hugo", "1234")
    log.add("hugo", EventKind.ABORTING, reason="wrong tag")

    assert log.state().aborting == "wrong tag"


def test_an_abort_without_a_reason_is_still_under_way() -> None:
    log = Journal()
    log.plan("hugo", "1234")
    log.confirm("hugo", "1234")
    log.add("hugo", EventKind.ABORTING)

    assert log.state().aborting == ""


def test_signatures_join_the_plan_being_published() -> None:
    log = Journal()
    log.plan("hugo", "1234")
    log.confirm("hugo", "1234")
    signed = PublishPlan(TAG, (PKG, SIG))
    log.add("relbot", EventKind.SIGNED, identity="hugo@python.org", plan=plan_to_json(signed))

    assert log.state().publishing == signed


def test_signatures_after_the_publish_ended_start_nothing() -> None:
    log = Journal()
    log.plan("hugo", "1234")
    log.confirm("hugo", "1234")
    log.add("hugo", EventKind.ABORTED, reason="wrong tag")
    log.add("relbot", EventKind.SIGNED, plan=plan_to_json(PublishPlan(TAG, (PKG, SIG))))

    assert log.state().publishing is None


def test_a_waiver_without_a_reason_has_an_empty_one_and_says_when() -> None:
    log = Journal()
    at = log.add("hugo", EventKind.WAIVED, target="docs", role=True)

    waiver = log.state().waivers["docs"]
    assert (waiver.reason, waiver.at) == ("", at)


def test_lifting_a_waiver_nobody_gave_changes_nothing() -> None:
    log = Journal()
    log.add("hugo", EventKind.WAIVED, target="docs", role=True, reason="no docs")
    log.add("hugo", EventKind.UNWAIVED, target="windows")

    assert list(log.state().waivers) == ["docs"]


# -- every field each ending of a publish leaves (the extra mutants of the domain suite) ------


def claimed(log: Journal, role: str = "macos") -> None:
    log.add("ned", EventKind.CLAIMED, role=role, snapshot=[f.to_json() for f in SNAPSHOT])


def test_a_publish_spends_the_claims_and_resets_everything_of_the_publish() -> None:
    log = Journal()
    claimed(log)
    log.add("ned", EventKind.CLAIMED, role="windows", snapshot=[])
    log.add("ned", EventKind.WITHDRAWN, role="windows", reason="changed")
    log.plan("hugo", "1234", sign=["python-3.14.1-macos11.pkg"], status="bugfix")
    log.confirm("hugo", "1234")
    log.add("relbot", EventKind.STEP_STARTED, step="promote")
    log.add("relbot", EventKind.STEP_DONE, step="promote", detail="1 file moved")
    before = log.state()
    assert before.to_sign and before.publishing_status == "bugfix"
    assert before.step_started is None  # done: no longer the step under way

    at = log.add("relbot", EventKind.PUBLISHED)

    state = log.state()
    assert (state.published_at, state.published_by) == (at, "hugo")
    assert state.public_files == (PKG,)
    assert state.publishing is None and state.publisher is None
    assert (state.to_sign, state.publishing_status) == ((), None)
    assert set(state.delivered) == {"macos"} and state.claims == {}
    assert state.withdrawals == {}
    assert state.steps_done == {"promote": "1 file moved"}  # kept: what the publish did


def test_later_publishes_keep_the_first_publishs_time_and_rm() -> None:
    log = Journal()
    log.plan("hugo", "1234")
    log.confirm("hugo", "1234")
    first = log.add("relbot", EventKind.PUBLISHED)
    log.plan("thomas", "5678", LATE)
    log.confirm("thomas", "5678")
    log.add("relbot", EventKind.PUBLISHED)

    state = log.state()
    assert (state.published_at, state.published_by) == (first, "hugo")
    assert state.public_files == (PKG, LATE)


def test_a_published_event_with_nothing_confirmed_adds_no_file_and_credits_its_actor() -> None:
    log = Journal()
    at = log.add("relbot", EventKind.PUBLISHED)

    state = log.state()
    assert (state.published_at, state.published_by, state.public_files) == (at, "relbot", ())


def test_an_abort_resets_the_publish_and_says_who_why_and_when() -> None:
    log = Journal()
    log.plan("hugo", "1234", sign=["python-3.14.1-macos11.pkg"], status="bugfix")
    log.confirm("hugo", "1234", public_before=["3.14.1/x"])
    log.add("relbot", EventKind.STEP_DONE, step="freeze", detail="copied")
    log.add("relbot", EventKind.STEP_STARTED, step="promote")
    log.add("relbot", EventKind.STOPPED, step="promote", reason="disk full")
    log.add("hugo", EventKind.ABORTING, reason="wrong files")
    at = log.add("hugo", EventKind.ABORTED, reason="wrong files")

    state = log.state()
    assert state.publishing is None and state.publisher is None
    assert (state.to_sign, state.publishing_status) == ((), None)
    assert state.steps_done == {} and state.step_started is None
    assert state.public_before == ()
    assert state.stopped is None and state.aborting is None
    assert state.aborted is not None
    assert (state.aborted.by, state.aborted.reason, state.aborted.at) == ("hugo", "wrong files", at)


def test_a_new_confirmation_clears_the_last_abort_and_any_stop() -> None:
    log = Journal()
    log.plan("hugo", "1234")
    log.confirm("hugo", "1234")
    log.add("hugo", EventKind.ABORTED, reason="wrong files")
    log.plan("hugo", "5678")
    log.confirm("hugo", "5678")

    state = log.state()
    assert state.aborted is None and state.stopped is None and state.aborting is None
    assert state.publishing is not None


def test_a_finishing_confirmation_without_a_publish_under_way_starts_a_new_one() -> None:
    """``finishing`` means "the same publish goes on" only while one is under way."""
    log = Journal()
    log.plan("hugo", "1234")
    log.add("relbot", EventKind.STEP_DONE, step="freeze", detail="stale")  # from before
    log.confirm("hugo", "1234", finishing=True, public_before=["3.14.1/x"])

    state = log.state()
    assert state.publishing is not None and state.publisher == "hugo"
    assert state.steps_done == {} and state.public_before == ("3.14.1/x",)


def test_a_finishing_confirmation_goes_on_from_the_steps_done() -> None:
    log = Journal()
    log.plan("hugo", "1234")
    log.confirm("hugo", "1234")
    log.add("relbot", EventKind.STEP_DONE, step="promote", detail="1 file moved")
    log.add("relbot", EventKind.STOPPED, step="index", reason="raced", public=True)
    finishing = log.plan("thomas", "5678", PKG, SIG)
    log.confirm("thomas", "5678", finishing=True)

    state = log.state()
    assert state.publishing == finishing and state.publisher == "thomas"
    assert state.steps_done == {"promote": "1 file moved"} and state.stopped is None


def test_installs_waiting_for_a_shared_index_keep_waiting_past_late_files() -> None:
    """Only an index step that made an index live ends the wait; a late publish without
    one runs no index step, and its confirmation clears the steps done."""
    log = Journal()
    log.plan("hugo", "1234")
    log.confirm("hugo", "1234")
    waits = "waits for 3.13.11: index-windows.json and index-windows.json.cat go live …"
    log.add("relbot", EventKind.STEP_DONE, step="index", detail=waits)
    log.add("relbot", EventKind.PUBLISHED)
    assert log.state().index_waits

    log.plan("hugo", "5678", LATE)
    log.confirm("hugo", "5678")
    log.add("relbot", EventKind.PUBLISHED)
    assert log.state().index_waits and "index" not in log.state().steps_done

    log.plan("hugo", "9012", LATE)
    log.confirm("hugo", "9012")
    replaced = "index-windows.json, index-windows.json.cat replaced"
    log.add("relbot", EventKind.STEP_DONE, step="index", detail=replaced)
    assert not log.state().index_waits


def test_a_finishing_confirmation_with_no_plan_on_offer_changes_nothing() -> None:
    log = Journal()
    plan = log.plan("hugo", "1234")
    log.confirm("hugo", "1234")
    log.add("relbot", EventKind.STEP_DONE, step="promote", detail="1 file moved")
    log.confirm("thomas", "1234", finishing=True)  # its code is spent: no offer left

    state = log.state()
    assert state.publishing == plan and state.publisher == "hugo"


def test_a_confirmation_that_is_not_finishing_starts_afresh_even_mid_publish() -> None:
    """Only a finishing confirmation goes on from the steps done; any other starts the
    pipeline again, stop and pending abort cleared."""
    log = Journal()
    log.plan("hugo", "1234")
    log.confirm("hugo", "1234")
    log.add("relbot", EventKind.STEP_DONE, step="promote", detail="1 file moved")
    log.add("relbot", EventKind.STOPPED, step="index", reason="raced", public=True)
    log.add("hugo", EventKind.ABORTING, reason="wrong files")
    again = log.plan("thomas", "5678", PKG, SIG)
    log.confirm("thomas", "5678", public_before=["3.14.1/x"])

    state = log.state()
    assert state.publishing == again and state.publisher == "thomas"
    assert state.steps_done == {} and state.public_before == ("3.14.1/x",)
    assert state.stopped is None and state.aborting is None
