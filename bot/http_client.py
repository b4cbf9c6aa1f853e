"""One small blocking HTTP client with retries, shared by the python.org registry and the CDN
purger.

It retries rate limiting (429), server trouble (5xx) and transport errors, honouring
``Retry-After`` up to the policy's ``max_wait`` (a longer one is given up at once: waiting less
than asked would only be refused again); a request that is not safe to send twice (a POST) is
retried after a 429 only, which the server answers before doing anything; it never follows a
redirect; and a client given an ``origin`` (the one that
carries an API key) refuses any URL on another scheme, host or port, so the key never leaves
for another site, whatever a server's answer points to.

A client given a :class:`RequestBudget` (python.org's API v1: 600 requests an hour per user)
sends no request, first attempt or retry, over that budget: it waits for a slot to free, and
the budget is shared by every thread that sends through the client.
"""

from __future__ import annotations

import email.utils
import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final, Self

import httpx

_log = logging.getLogger(__name__)

# Statuses worth another try: rate limiting and server-side trouble.
RETRY_STATUSES: Final = frozenset({429, 500, 502, 503, 504})
# Requests that may do their work twice when sent again (a PATCH that sets fields may not).
UNSAFE_METHODS: Final = frozenset({"POST"})


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry 429, 5xx and connection errors.

    The n-th wait is ``backoff * 2 ** (n - 1)`` seconds (at most ``max_backoff``), or the
    server's ``Retry-After`` when it is at most ``max_wait``; a longer ``Retry-After`` is not
    waited for (:meth:`wait` gives None). ``sleep`` is injectable so tests need not wait.
    """

    attempts: int = 4
    backoff: float = 1.0
    max_wait: float = 900.0
    max_backoff: float = 60.0
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)

    def wait(self, attempt: int, response: httpx.Response | None) -> float | None:
        """Seconds to wait after failed ``attempt`` (1-based); None when the server asks
        for longer than ``max_wait``."""
        hinted = retry_after(response) if response is not None else None
        if hinted is None:
            return max(0.0, min(self.backoff * 2.0 ** (attempt - 1), self.max_backoff))
        return max(0.0, hinted) if hinted <= self.max_wait else None


class BudgetSpent(Exception):
    """A request that its :class:`RequestBudget` would let go only after more than the
    policy's ``max_wait``; nothing was sent. ``wait``: the seconds it would have waited."""

    def __init__(self, wait: float, limit: int, window: float) -> None:
        super().__init__(f"{limit} requests in {window:.0f} s spent; the next in {wait:.0f} s")
        self.wait, self.limit, self.window = wait, limit, window


class RequestBudget:
    """At most ``limit`` requests in any ``window`` seconds, counted across every thread that
    takes a slot (a server's rate limit per user, kept by the client before the server has to).

    A request over the budget waits for the first slot to free, in the order the requests
    asked: each reserves its slot at once, then sleeps until it is due. A slot stays taken
    ``window + margin`` seconds from when its request may go; ``margin`` covers a server that
    counts whole seconds, or from when the request reaches it. ``clock`` (monotonic seconds)
    and ``sleep`` are injectable, so tests need not wait.
    """

    def __init__(
        self,
        limit: int,
        window: float,
        *,
        margin: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if limit < 1 or window <= 0 or margin < 0:
            raise ValueError("a budget needs a limit of at least 1 and a positive window")
        self.limit, self.window, self.margin = limit, window, margin
        self._clock, self._sleep = clock, sleep
        self._lock = threading.Lock()
        # When each request counted may go (or went), oldest first; one entry per request.
        self._starts: deque[float] = deque()

    def __repr__(self) -> str:
        return f"RequestBudget({self.limit} requests in {self.window:.0f} s)"

    def take(
        self, *, max_wait: float = math.inf, on_wait: Callable[[float], None] | None = None
    ) -> float:
        """Take a slot for one request, waiting until it is due; returns the seconds waited.
        ``on_wait`` is told a wait (seconds) before it starts. Raises :class:`BudgetSpent`,
        taking nothing, when the wait would be longer than ``max_wait``."""
        with self._lock:
            now, span, starts = self._clock(), self.window + self.margin, self._starts
            while starts and starts[0] <= now - span:
                starts.popleft()
            # The new request and the limit - 1 newest are within one window; the one before
            # them must have left it.
            due = now if len(starts) < self.limit else max(now, starts[-self.limit] + span)
            wait = due - now
            if wait > max_wait:
                raise BudgetSpent(wait, self.limit, self.window)
            starts.append(due)
        if wait > 0:
            _log.debug("%r spent: the next request waits %.1f s", self, wait)
            if on_wait is not None:
                on_wait(wait)
            self._sleep(wait)
        return wait


class OtherOrigin(ValueError):
    """A URL on another site than the client's origin; ``url`` is that URL."""

    def __init__(self, url: httpx.URL) -> None:
        super().__init__(f"{url.host} is not this client's origin")
        self.url = url


class HttpClient:
    """An ``httpx.Client`` that retries, never follows redirects and, given an ``origin``,
    sends nothing anywhere else. Closed by :meth:`close` or a ``with`` block.

    ``headers`` go with every request (an ``Authorization`` header needs an ``origin``);
    ``timeout`` (seconds, per connect, read or write) is each service's own choice; with a
    ``budget``, each attempt takes a slot of it first.
    """

    def __init__(
        self,
        *,
        origin: str | None = None,
        headers: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
        timeout: float,
        retry: RetryPolicy | None = None,
        budget: RequestBudget | None = None,
    ) -> None:
        if origin is None and headers and "Authorization" in headers:
            raise ValueError("a client that sends credentials needs an origin")
        self.origin = None if origin is None else httpx.URL(origin)
        self.retry = retry or RetryPolicy()
        self.budget = budget
        self._client = httpx.Client(
            headers=dict(headers or {}),
            transport=transport,
            timeout=timeout,
            follow_redirects=False,  # a redirect could carry the key elsewhere
        )

    def join(self, reference: str) -> httpx.URL:
        """``reference`` (relative to the origin, or absolute) as a URL; raises
        :class:`OtherOrigin` when it is on another scheme, host or port than the origin."""
        url = httpx.URL(reference) if self.origin is None else self.origin.join(reference)
        self._check_origin(url)
        return url

    def send(
        self,
        method: str,
        url: httpx.URL | str,
        *,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        stream: bool = False,
        on_rate_limit: Callable[[float], None] | None = None,
        on_budget_wait: Callable[[float], None] | None = None,
    ) -> tuple[httpx.Response, int]:
        """Send, retrying 429, 5xx and transport errors; returns (response, attempts).

        A POST is retried after a 429 only: any other failure may have come after
        the server did the work, so the caller must look before sending it again. Each wait
        for a 429's ``Retry-After`` is told to ``on_rate_limit`` (seconds) before it starts,
        each wait for a slot of the client's budget to ``on_budget_wait``.
        The last response is returned whatever its status; with ``stream`` its body is not
        read yet (iterate it, then close it: large files are never held in memory). Raises
        :class:`OtherOrigin` for a URL off the origin, :class:`httpx.InvalidURL` for a
        malformed one, :class:`BudgetSpent` when the budget's wait for an attempt would be
        longer than the policy's ``max_wait``, and the last :class:`httpx.TransportError`
        when every attempt failed to get a response (at once for a POST).
        """
        request = self._client.build_request(method, url, content=content, headers=headers)
        self._check_origin(request.url)
        policy = self.retry
        replayable = method.upper() not in UNSAFE_METHODS
        attempt = 1
        while True:  # the last attempt returns or raises
            if self.budget is not None:  # every attempt is a request the server counts
                self.budget.take(max_wait=policy.max_wait, on_wait=on_budget_wait)
            response: httpx.Response | None
            try:
                response = self._client.send(request, stream=stream)
            except httpx.TransportError as err:
                if attempt >= policy.attempts or not replayable:
                    raise
                reason = type(err).__name__
                response = None
            else:
                status = response.status_code
                if (
                    status not in RETRY_STATUSES
                    or attempt >= policy.attempts
                    or (status != 429 and not replayable)
                ):
                    return response, attempt
                reason = f"HTTP {status}"
            wait = policy.wait(attempt, response)
            if response is not None:
                if wait is None:  # asked to wait longer than the operator allows
                    return response, attempt
                response.close()
                if response.status_code == 429 and on_rate_limit is not None:
                    on_rate_limit(wait)
            assert wait is not None  # only a Retry-After can be too long
            _log.warning(
                "%s %s failed (%s); retrying in %.1f s", request.method, request.url, reason, wait
            )
            policy.sleep(wait)
            attempt += 1

    def close(self) -> None:
        """Close the HTTP connections."""
        self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _check_origin(self, url: httpx.URL) -> None:
        origin = self.origin
        if origin is not None and (url.scheme, url.host, url.port) != (
            origin.scheme,
            origin.host,
            origin.port,
        ):
            raise OtherOrigin(url)


def retry_after(response: httpx.Response) -> float | None:
    """The seconds a response's ``Retry-After`` asks to wait (a number or an HTTP date),
    or None."""
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (when - datetime.now(UTC)).total_seconds()


class HttpService:
    """A client of one outside service over one :class:`HttpClient` (``self._http``):
    closed once, usable in a ``with`` block."""

    _http: HttpClient

    def close(self) -> None:
        """Close the HTTP connections."""
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
