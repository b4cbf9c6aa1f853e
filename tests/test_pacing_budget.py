"""The request budget that keeps the bot within python.org's API v1 limit (600 requests an hour
per API user) whatever number of publishes send at once: its sliding window, counted across
threads, on a clock the tests move (nothing here really waits); and the HTTP client that takes
one of its slots for every attempt, against a real server on loopback."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.app import build_registry
from bot.http_client import BudgetSpent, HttpClient, RequestBudget, RetryPolicy
from bot.pydotorg.rate_limit import API_V1_MARGIN, API_V1_REQUESTS, API_V1_WINDOW
from bot.pydotorg.registry import PydotorgRegistry
from tests.conftest import World
from tests.test_http_client import Script


class Hour:
    """A monotonic clock that moves only when a test sleeps on it."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def at_most(limit: int, window: float, times: list[float]) -> bool:
    """Whether every ``window`` seconds (a half-open interval) hold at most ``limit`` of
    ``times``."""
    return all(sum(t - window < u <= t for u in times) <= limit for t in times)


def test_the_limit_goes_at_once_then_each_request_waits_for_the_slot_that_frees_first() -> None:
    hour = Hour()
    budget = RequestBudget(3, 10.0, clock=hour, sleep=hour.sleep)
    sent: list[float] = []
    for _ in range(3):
        budget.take()
        sent.append(hour.now)
    hour.now = 4.0
    for _ in range(4):
        budget.take()
        sent.append(hour.now)

    assert sent == [0.0, 0.0, 0.0, 10.0, 10.0, 10.0, 20.0]
    assert hour.slept == [6.0, 10.0]  # the first three leave at 10, the next three at 20
    assert at_most(3, 10.0, sent) and not at_most(3, 10.1, sent)  # no slot left unused


def test_a_slot_comes_back_a_margin_after_the_window() -> None:
    hour = Hour()
    budget = RequestBudget(1, 10.0, margin=2.0, clock=hour, sleep=hour.sleep)
    assert (budget.take(), budget.take(), budget.take()) == (0.0, 12.0, 12.0)
    assert hour.now == 24.0


def test_threads_share_one_budget_and_each_slot_is_given_once() -> None:
    """Eight threads take 50 slots each of a budget of 100 an hour, on a clock that never
    moves: 100 go at once, and each further hundred one window later, whoever asks."""
    budget = RequestBudget(100, 3600.0, clock=lambda: 0.0, sleep=lambda _: None)
    start = threading.Barrier(8)
    due: list[float] = []

    def sender() -> None:
        start.wait()
        for _ in range(50):
            due.append(budget.take())  # the clock is 0: the wait is when it may go

    threads = [threading.Thread(target=sender) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(due) == [0.0] * 100 + [3600.0] * 100 + [7200.0] * 100 + [10800.0] * 100
    assert at_most(100, 3600.0, due)


def test_a_wait_is_told_before_it_starts() -> None:
    events: list[str] = []
    budget = RequestBudget(
        1, 60.0, clock=lambda: 0.0, sleep=lambda s: events.append(f"sleeps {s:.0f}")
    )
    budget.take(on_wait=lambda s: events.append(f"told {s:.0f}"))
    budget.take(on_wait=lambda s: events.append(f"told {s:.0f}"))
    assert events == ["told 60", "sleeps 60"]  # the first request did not wait


def test_a_wait_longer_than_allowed_takes_nothing() -> None:
    hour = Hour()
    budget = RequestBudget(1, 60.0, clock=hour, sleep=hour.sleep)
    budget.take()
    with pytest.raises(BudgetSpent) as caught:
        budget.take(max_wait=59.0)
    assert (caught.value.wait, caught.value.limit) == (60.0, 1)
    assert budget.take() == 60.0  # not 120: the refused request reserved no slot


def test_a_budget_needs_a_limit_and_a_window() -> None:
    for limit, window in ((0, 60.0), (1, 0.0)):
        with pytest.raises(ValueError):
            RequestBudget(limit, window)


# -- the HTTP client -------------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[Script]:
    script = Script()
    yield script
    script.stop()


def test_every_attempt_takes_a_slot_and_its_wait_is_told(server: Script) -> None:
    hour, backoffs, told = Hour(), list[float](), list[float]()
    budget = RequestBudget(1, 60.0, clock=hour, sleep=hour.sleep)
    server.answers = [(503, {})]
    policy = RetryPolicy(attempts=3, sleep=backoffs.append)
    with HttpClient(timeout=5.0, retry=policy, budget=budget) as http:
        response, attempts = http.send("GET", server.url + "x", on_budget_wait=told.append)

    assert (response.status_code, attempts) == (200, 2)
    assert backoffs == [1.0]  # the 503's backoff, then the retry waits for its slot
    assert told == hour.slept == [60.0]
    assert len(server.seen) == 2


def test_a_request_the_budget_holds_too_long_is_not_sent(server: Script) -> None:
    budget = RequestBudget(1, 3600.0, clock=lambda: 0.0, sleep=lambda _: None)
    with HttpClient(timeout=5.0, retry=RetryPolicy(max_wait=900), budget=budget) as http:
        http.send("GET", server.url + "x")
        with pytest.raises(BudgetSpent):
            http.send("POST", server.url + "x")
    assert [method for method, _, _ in server.seen] == ["GET"]


# -- the process's one registry ----------------------------------------------------------------


def test_the_bots_registry_keeps_to_python_orgs_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYDOTORG_AUTH", "rm:k3y")
    world = World(tmp_path, '\n[pydotorg]\nkind = "api"\n')
    registry = build_registry(world.config)

    assert isinstance(registry, PydotorgRegistry) and registry.budget is not None
    budget = registry.budget
    assert (budget.limit, budget.window) == (API_V1_REQUESTS, API_V1_WINDOW) == (600, 3600.0)
    assert budget.margin == API_V1_MARGIN
