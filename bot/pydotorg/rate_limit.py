"""python.org's rate limit (API v1: 600 requests an hour per user, then a 429 whose
``Retry-After`` may ask for up to an hour): the bot's own budget that keeps every publish of
the process within it, each wait told once to the release whose request waits, and the
sentence when it is not waited out."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Final

import httpx

from bot.errors import RegistryError
from bot.http_client import BudgetSpent, RequestBudget, RetryPolicy, retry_after

_log = logging.getLogger(__name__)

# API v1's throttle per API user (tastypie's CacheThrottle on python.org): the timestamps of
# the last hour's requests; the 601st is answered 429. Its counters are python.org's: they
# survive a restart of the bot, which then meets them as a 429 (handled as before).
API_V1_REQUESTS: Final = 600
API_V1_WINDOW: Final = 3600.0
# python.org counts whole seconds, from when a request reaches it: a slot is taken back two
# seconds after python.org's hour.
API_V1_MARGIN: Final = 2.0


def api_v1_budget(
    *,
    limit: int = API_V1_REQUESTS,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> RequestBudget:
    """The request budget of one API v1 user, for the one registry of the process: every
    publish syncing at once, and every read, counts against it."""
    return RequestBudget(limit, API_V1_WINDOW, margin=API_V1_MARGIN, clock=clock, sleep=sleep)


class RateLimitNotice:
    """Told each wait for python.org's rate limit (one sync's: one release's): the first
    wait python.org asks for (a 429), and the first wait for the bot's budget of requests
    (``limit`` an hour), each told once to ``notice`` and logged."""

    def __init__(
        self, user: str, notice: Callable[[str], None] | None, *, limit: int = API_V1_REQUESTS
    ) -> None:
        self._user, self._notice, self._limit = user, notice, limit
        self._told_asked = self._told_spent = False

    def __call__(self, seconds: float) -> None:
        """python.org answered 429 and asks to wait ``seconds``."""
        if self._told_asked:
            return
        self._told_asked = True
        _log.warning("python.org rate limits API user %r: waiting %.0f s", self._user, seconds)
        self._tell(
            f"python.org is rate limiting API user {self._user!r}: the registration waits "
            f"{_duration(seconds)} as python.org asks, then goes on."
        )

    def budget_spent(self, seconds: float) -> None:
        """The bot's budget for the user is spent: the next request waits ``seconds``."""
        if self._told_spent:
            return
        self._told_spent = True
        _log.warning(
            "python.org API user %r: %d requests sent in the last hour; waiting %.0f s",
            self._user,
            self._limit,
            seconds,
        )
        self._tell(
            f"python.org allows API user {self._user!r} {self._limit} requests an hour and the "
            "bot has sent them (every release being published shares them): the registration "
            f"waits {_duration(max(1.0, seconds))} for the next, then goes on as they free up."
        )

    def _tell(self, text: str) -> None:
        if self._notice is not None:
            self._notice(text)


class _ThisThread(threading.local):
    """The notice of the sync running in this thread, if one is."""

    notice: RateLimitNotice | None = None


class SyncNotices:
    """Who is told the waits of a client's requests: the notice of the sync that runs in the
    thread whose request waits (one client serves every publish at once, each syncing in a
    worker thread of its own), else the client's own ``notice``, told once for its lifetime."""

    def __init__(
        self, user: str, notice: Callable[[str], None] | None, budget: RequestBudget | None
    ) -> None:
        limit = API_V1_REQUESTS if budget is None else budget.limit
        self._user, self._notice, self._limit = user, notice, limit
        self._outside_syncs = RateLimitNotice(user, notice, limit=limit)
        self._this_thread = _ThisThread()

    def current(self) -> RateLimitNotice:
        """The notice of this thread's sync, or the client's."""
        return self._this_thread.notice or self._outside_syncs

    @contextlib.contextmanager
    def sync(self, notice: Callable[[str], None] | None) -> Iterator[None]:
        """Within the block, this thread's waits are told to ``notice`` (default: the
        client's), each kind once."""
        told = notice or self._notice
        self._this_thread.notice = RateLimitNotice(self._user, told, limit=self._limit)
        try:
            yield
        finally:
            self._this_thread.notice = None


class BudgetRefusal(RegistryError):
    """A request not sent: the bot's budget for the API user would have it wait longer than
    ``[pydotorg] max_wait``."""


def budget_refusal(spent: BudgetSpent, policy: RetryPolicy, what: str) -> BudgetRefusal:
    """The sentence for a request the budget would hold longer than ``max_wait``."""
    return BudgetRefusal(
        f"python.org could not {what}: the {spent.limit} requests an hour python.org allows "
        f"its API user are spent and the next may go in {_duration(spent.wait)}, more than "
        f"[pydotorg] max_wait allows ({_duration(policy.max_wait)}); publish again later, "
        "what is registered stays."
    )


def rate_limit_refusal(
    response: httpx.Response, user: str, policy: RetryPolicy, what: str
) -> RegistryError:
    """The sentence for a 429 that was not waited out: too long a wait, or still refused."""
    asked = retry_after(response)
    why = (
        f"asks to wait {_duration(asked)}, more than [pydotorg] max_wait allows "
        f"({_duration(policy.max_wait)})"
        if asked is not None and asked > policy.max_wait
        else f"still refused after {policy.attempts} attempts"
    )
    return RegistryError(
        f"python.org could not {what}: its rate limit for API user {user!r} {why}; publish "
        "again later, what is registered stays."
    )


def _duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min"
