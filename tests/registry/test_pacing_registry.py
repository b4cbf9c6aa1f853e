"""Release day on the one registry of the process: several publishes sync at once, in worker
threads, against python.org's double (through the proxy that can hold a request). Each release
manager is told the waits of their own release only."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from bot.domain.profile import Profile
from bot.domain.records import PydotorgSettings
from bot.errors import RegistryError
from bot.http_client import BudgetSpent, RetryPolicy
from bot.ports import RegistryReport
from bot.pydotorg.rate_limit import API_V1_MARGIN, api_v1_budget
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


def spent(limit: int, wait: str) -> str:
    return (
        f"python.org allows API user 'rm' {limit} requests an hour and the bot has sent them "
        f"(every release being published shares them): the registration waits {wait} for the "
        "next, then goes on as they free up."
    )


def test_concurrent_syncs_share_one_budget_and_each_release_hears_of_its_own_wait(
    double: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    """Two releases sync at once through the one registry, whose budget is 8 requests an
    hour (python.org's 600, made small): 8 requests go at once, whoever sends them, and each
    further 8 one window later. Each sync needs more than 8, so each waits and its release
    manager is told so once, in their own channel; python.org never answers 429."""
    waits = Sleeps()  # the budget's: on a clock that never moves, a wait is when it may go
    registry = PydotorgRegistry(
        double.url,
        f"rm:{KEY}",
        profile,
        retry=RetryPolicy(max_wait=24 * 3600, sleep=sleeps),  # the budget's waits too
        budget=api_v1_budget(limit=8, clock=lambda: 0.0, sleep=waits),
    )
    told: dict[str, list[str]] = {"3.14.2": [], "3.13.11": []}
    start = threading.Barrier(2)

    def sync(tag: str) -> RegistryReport:
        start.wait(HOLD)
        return registry.sync(make_plan(profile, tag, {}), notice=told[tag].append)

    with ThreadPoolExecutor(2) as pool:
        a, b = pool.submit(sync, "3.14.2"), pool.submit(sync, "3.13.11")
        assert a.result(HOLD * 3) == RegistryReport(created=12)
        assert b.result(HOLD * 3) == RegistryReport(created=10)

    window = 3600 + API_V1_MARGIN
    sent = len(double.requests)
    assert sorted(waits) == [window * (n // 8) for n in range(8, sent)]
    # Each is told its first wait (an hour, or two when the other sync took the next 8 too)
    waited = re.compile(re.escape(spent(8, "MIN")).replace("MIN", "(60|120) min"))
    assert [len(told["3.14.2"]), len(told["3.13.11"])] == [1, 1]
    assert all(waited.fullmatch(text) for texts in told.values() for text in texts), told
    assert sleeps == [] and all(r.status != 429 for r in double.requests)


def test_a_request_the_budget_would_hold_past_max_wait_is_not_sent(
    double: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    """The budget is spent by the look-ups; the first create would wait an hour, longer than
    [pydotorg] max_wait: the sync stops with one sentence before sending it (a POST refused
    unsent is not looked for on python.org either)."""
    lookups = 1 + len(PydotorgSettings.from_profile(profile).os_slugs) + 1  # release, OSes, files
    told: list[str] = []
    registry = PydotorgRegistry(
        double.url,
        f"rm:{KEY}",
        profile,
        retry=RetryPolicy(max_wait=900, sleep=sleeps),
        budget=api_v1_budget(limit=lookups, clock=lambda: 0.0, sleep=sleeps),
    )

    with pytest.raises(RegistryError) as caught:
        registry.sync(make_plan(profile, "3.14.2", {}), notice=told.append)

    message = str(caught.value)
    assert message.startswith("python.org could not create the record ")
    assert message.endswith(
        f": the {lookups} requests an hour python.org allows its API user are spent and the "
        "next may go in 60 min, more than [pydotorg] max_wait allows (15 min); publish again "
        "later, what is registered stays."
    )
    assert len(double.requests) == lookups and double.writes == []
    assert sleeps == [] and told == []


def test_a_429_from_python_org_is_still_waited_for_within_the_budget(
    double: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    """Another client on the same API user spent python.org's hour: python.org answers 429
    though the bot's budget has room. The wait python.org asks for is waited and told, and
    the request sent again takes a slot of the budget like any other."""
    # the release, each OS, the page of files, 12 creates, and the look-up sent again
    attempts = 1 + len(PydotorgSettings.from_profile(profile).os_slugs) + 1 + 12 + 1
    waits = Sleeps()
    budget = api_v1_budget(limit=attempts, clock=lambda: 0.0, sleep=waits)
    registry = PydotorgRegistry(
        double.url, f"rm:{KEY}", profile, retry=RetryPolicy(sleep=sleeps), budget=budget
    )
    double.fail("list", nth=1, status=429, retry_after=42)
    told: list[str] = []

    assert registry.sync(make_plan(profile, "3.14.2", {}), notice=told.append).created == 12

    assert told == [
        "python.org is rate limiting API user 'rm': the registration waits 42 s as "
        "python.org asks, then goes on."
    ]
    assert sleeps == [42.0] and waits == [] and len(double.requests) == attempts
    with pytest.raises(BudgetSpent):  # every attempt took its slot, the 429's too
        budget.take(max_wait=0)
