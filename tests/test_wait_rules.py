"""``relbot wait``'s rules that its mutation suite found untested (bench/mutation_score.py
``wait``): a release past the state waited for has reached it whatever its roles say; the
sentences name every role, blocker, hold and abort as the board gives them (an older board,
without ``listed`` or ``last_event``, included); an abort before the wait began never ends
it; a source that keeps failing is told once, and its recovery once; the last pause ends at
the deadline."""

from __future__ import annotations

from typing import Any

from bot.wait.judge import LookFailed, Outcome, Until, judge, wait
from tests.test_wait import TAG, LoopClock, Script, release

HOLD = {"by": "ned", "at": "2026-12-02T17:18:09Z"}
ABORTED = {"event": 10, "by": "hugo", "reason": "aborted by hugo with /abort.", "at": ""}


def old_board(**fields: Any) -> dict[str, Any]:
    """A board from before ``listed`` (its roles and blockers come from a listing)."""
    return {k: v for k, v in release(**fields).items() if k != "listed"}


def test_a_release_published_or_publishable_has_reached_the_states_before_it() -> None:
    roles = {"source": {"state": "published"}, "macos": {"state": "published"}}
    published = release(published=True, ready=False, roles=roles)
    assert judge(published, TAG, Until.READY, 0).outcome is Outcome.REACHED
    publishable = release(publishable=True, blockers=[])
    verdict = judge(publishable, TAG, Until.PUBLISHABLE, 0)
    assert (verdict.outcome, verdict.sentence) == (Outcome.REACHED, "3.14.1 is publishable")


def test_the_sentences_name_every_late_role_and_count_only_blockers_left_unnamed() -> None:
    late = {"windows": {"state": "complete"}, "macos": {"state": "incomplete"}}
    waiting = release(ready=False, roles=late)
    assert judge(waiting, TAG, Until.READY, 0).sentence == (
        "not ready: windows (complete), macos (incomplete)"
    )
    assert judge({**waiting, "listed": False}, TAG, Until.READY, 0).sentence == (
        "waiting for /ready from windows, macos"
    )
    assert judge(old_board(ready=False, roles=late), TAG, Until.READY, 0).sentence == (
        "not ready: windows (complete), macos (incomplete)"
    )
    assert judge(old_board(), TAG, Until.PUBLISHED, 0).sentence == (
        "not publishable: macos: python-3.14.1-macos11.pkg (missing)"
    )
    three, four = ["a", "b", "c"], ["a", "b", "c", "d"]
    assert judge(release(blockers=three), TAG, Until.PUBLISHABLE, 0).sentence == (
        "not publishable: a; b; c"
    )
    assert judge(release(blockers=four), TAG, Until.PUBLISHABLE, 0).sentence == (
        "not publishable: a; b; c; and 1 more"
    )


def test_a_hold_and_an_abort_are_told_with_their_reason_without_its_full_stop() -> None:
    def said(**fields: Any) -> str:
        return judge(release(ready=False, **fields), TAG, Until.PUBLISHED, 0).sentence

    assert said(holds=[HOLD]) == (
        "3.14.1 is held by ned; wait again once someone says /unhold 3.14.1"
    )
    assert said(holds=[{**HOLD, "reason": "notarization failed for macOS X."}]) == (
        "3.14.1 is held by ned: notarization failed for macOS X; wait again once someone says "
        "/unhold 3.14.1"
    )
    assert said(aborted={**ABORTED, "reason": "aborted by hugo with /abort X."}) == (
        "the publish of 3.14.1 was aborted (aborted by hugo with /abort X); nothing was made "
        "public, and the release manager can say /publish 3.14.1 again"
    )


async def test_an_abort_recorded_before_the_wait_began_never_ends_it() -> None:
    before = release(aborted=ABORTED, last_event=10)
    source = Script([before, before, release(published=True, aborted=ABORTED, last_event=14)])
    clock = LoopClock()

    result = await wait(
        source, TAG, Until.PUBLISHED, timeout=None, interval=1, clock=clock, sleep=clock.sleep
    )

    assert result.verdict.outcome is Outcome.REACHED and source.looks == 3


async def test_a_failing_source_is_told_once_and_its_recovery_once_each_time() -> None:
    down = LookFailed("The board cannot be reached.")
    waiting = release(ready=False)
    source = Script([waiting, down, down, down, waiting, waiting, down, waiting, release()])
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
    assert lines[1:] == [
        "The board cannot be reached. Still waiting.",
        "Answering again.",
        "The board cannot be reached. Still waiting.",
        "Answering again.",
    ]


async def test_the_last_pause_ends_at_the_deadline_and_the_last_look_is_returned() -> None:
    last = release(ready=False, roles={"macos": {"state": "incomplete"}}, last_event=11)
    source = Script([release(ready=False), last])
    clock = LoopClock()

    result = await wait(
        source, TAG, Until.READY, timeout=0.5, interval=2, clock=clock, sleep=clock.sleep
    )

    assert result.verdict.outcome is Outcome.TIMEOUT and result.release == last
    assert clock.now == 0.5 and source.looks == 2


async def test_a_board_from_before_last_event_is_waited_on_all_the_same() -> None:
    older = {k: v for k, v in release(ready=False).items() if k not in ("last_event", "aborted")}
    source = Script([older, {**older, "ready": True}])
    clock = LoopClock()

    result = await wait(
        source, TAG, Until.READY, timeout=None, interval=1, clock=clock, sleep=clock.sleep
    )

    assert result.verdict.outcome is Outcome.REACHED and source.looks == 2
