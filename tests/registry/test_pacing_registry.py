"""Release day on the one registry of the process: several publishes sync at once, in worker
threads, against python.org's double (through the proxy that can hold a request). Each release
manager is told the waits of their own release only."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from bot.domain.profile import Profile
from bot.http_client import RetryPolicy
from bot.ports import RegistryReport
from bot.pydotorg.registry import PydotorgRegistry
from tests.doubles.pydotorg import PydotorgDouble
from tests.registry.answer_dropper import AnswerDropper
from tests.registry.test_registry import Sleeps, make_plan

KEY = "pacing-k3y-0123456789abcdef"
HOLD = 10.0  # seconds a held request waits for the other thread at most (never in a pass)


@pytest.fixture
def double() -> Iterator[PydotorgDouble]:
    with PydotorgDouble(users={"rm": (KEY, True)}) as api:
        api.add_release("Python 3.14.2")
        api.add_release("Python 3.13.11")
        yield api


@pytest.fixture
def proxy(double: PydotorgDouble) -> Iterator[AnswerDropper]:
    with AnswerDropper(double.base_url) as held:
        yield held


def test_a_rate_limit_wait_is_told_to_the_release_whose_request_waits(
    double: PydotorgDouble, proxy: AnswerDropper, profile: Profile, sleeps: Sleeps
) -> None:
    """A's sync starts; B's starts while A's first request is on its way; python.org asks
    A's next request (only) to wait. Only A's channel hears of it (B's used to: the notice
    was the one of the sync that started last)."""
    registry = PydotorgRegistry(
        proxy.base_url + "api/v1/", f"rm:{KEY}", profile, retry=RetryPolicy(sleep=sleeps)
    )
    told_a: list[str] = []
    told_b: list[str] = []
    b_on_its_way, a_answered = threading.Event(), threading.Event()
    syncs: list[Future[RegistryReport]] = []
    pool = ThreadPoolExecutor(1)

    def start_b() -> None:  # A's first request waits in the proxy until B's is on its way
        plan_b = make_plan(profile, "3.13.11", {})
        syncs.append(pool.submit(registry.sync, plan_b, notice=told_b.append))
        assert b_on_its_way.wait(HOLD)

    def hold_b() -> None:  # B's first request waits until python.org answered A's 429
        b_on_its_way.set()
        assert a_answered.wait(HOLD)

    proxy.before("GET", nth=1, act=start_b)  # A: the release's look-up
    proxy.before("GET", nth=2, act=hold_b)  # B: the release's look-up
    # A's second request (an OS's look-up, sent once B's sync had begun) is answered 429;
    # its fourth GET is that request again, after the wait
    double.fail("list", nth=2, status=429, retry_after=7)
    proxy.before("GET", nth=4, act=a_answered.set)

    plan_a = make_plan(profile, "3.14.2", {})
    report_a = registry.sync(plan_a, notice=told_a.append)
    (sync_b,) = syncs
    report_b = sync_b.result(timeout=HOLD * 3)
    pool.shutdown()

    assert report_a == RegistryReport(created=12)  # a bugfix release
    assert report_b == RegistryReport(created=10)  # a security release: no installers
    assert told_a == [
        "python.org is rate limiting API user 'rm': the registration waits 7 s as "
        "python.org asks, then goes on."
    ]
    assert told_b == []
    assert sleeps == [7.0]
    assert [r.status for r in double.requests].count(429) == 1
