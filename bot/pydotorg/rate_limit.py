"""python.org's rate limit (API v1: 600 requests an hour per user, then a 429 whose
``Retry-After`` may ask for up to an hour): the wait told once, and the sentence when it is not
waited out."""

from __future__ import annotations

import logging
from collections.abc import Callable

import httpx

from bot.errors import RegistryError
from bot.http_client import RetryPolicy, retry_after

_log = logging.getLogger(__name__)


class RateLimitNotice:
    """Called with each wait python.org's rate limit asks for; tells the first one only."""

    def __init__(self, user: str, notice: Callable[[str], None] | None) -> None:
        self._user, self._notice, self._told = user, notice, False

    def __call__(self, seconds: float) -> None:
        if self._told:
            return
        self._told = True
        _log.warning("python.org rate limits API user %r: waiting %.0f s", self._user, seconds)
        if self._notice is not None:
            self._notice(
                f"python.org is rate limiting API user {self._user!r}: the registration waits "
                f"{_duration(seconds)} as python.org asks, then goes on."
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
