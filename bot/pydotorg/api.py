"""What the clients of python.org's API share: every URL on the API's own origin (the key is
never sent anywhere else), a request whose transport failure is one sentence, and the reason
python.org gave for a refusal, in one line."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping

import httpx

from bot.errors import RegistryError
from bot.http_client import BudgetSpent, HttpService, OtherOrigin, RequestBudget
from bot.pydotorg.rate_limit import RateLimitNotice, SyncNotices, budget_refusal

_log = logging.getLogger(__name__)


class PydotorgApi(HttpService):
    """A client of python.org's API over one HTTP client (``self._http``); each wait for
    python.org's rate limit is told to :meth:`_waits`, when it gives a notice."""

    # Who is told the waits python.org's rate limit asks for (None: they are logged only).
    _notices: SyncNotices | None = None

    def _waits(self) -> RateLimitNotice | None:
        """The notice of this thread's requests: one client serves concurrent publishes,
        each in its own worker thread, and a wait is told to the release whose request waits."""
        return None if self._notices is None else self._notices.current()

    @property
    def budget(self) -> RequestBudget | None:
        """The budget every request of this client takes a slot of, if any."""
        return self._http.budget

    def _url(self, reference: str) -> httpx.URL:
        """``reference`` (relative to the API, or an absolute path from the API) as a URL on
        the API's own origin: the key is never sent anywhere else."""
        try:
            return self._http.join(reference)
        except OtherOrigin as err:
            raise RegistryError(
                f"python.org pointed to another site ({err.url.scheme}://{err.url.host}); refusing."
            ) from None

    def _send(
        self,
        method: str,
        url: httpx.URL,
        *,
        what: str,
        body: Mapping[str, object] | None = None,
    ) -> tuple[httpx.Response, int]:
        """The answer to one request (retried as the client's policy says) and how many
        attempts it took. Raises :class:`RegistryError` when python.org cannot be reached,
        :class:`~bot.pydotorg.rate_limit.BudgetRefusal` when the client's request budget
        would hold it longer than the policy's ``max_wait`` (it was not sent)."""
        waits = self._waits()
        try:
            response, attempts = self._http.send(
                method,
                url,
                content=None if body is None else json.dumps(body).encode(),
                headers={} if body is None else {"Content-Type": "application/json"},
                on_rate_limit=waits,
                on_budget_wait=None if waits is None else waits.budget_spent,
            )
        except BudgetSpent as spent:
            raise budget_refusal(spent, self._http.retry, what) from None
        except httpx.TransportError as err:
            tries = "once" if method == "POST" else f"after {self._http.retry.attempts} attempts"
            raise RegistryError(
                f"python.org could not be reached to {what} ({type(err).__name__} {tries}); "
                "try again later."
            ) from err
        _log.debug("%s %s → %s", method, url, response.status_code)
        return response, attempts


def server_message(response: httpx.Response, redact: Callable[[str], str]) -> str:
    """The reason the server gave, in one line (Tastypie's ``error_message``, field errors),
    ``redact``-ed before it is cut: a cut through an echoed key would leave part of it."""
    try:
        body = response.json()
    except ValueError:
        text = redact(" ".join(response.text.split()))
        return text[:300] or response.reason_phrase or "no reason given"
    if isinstance(body, dict):
        for key in ("error_message", "error", "detail"):
            if isinstance(body.get(key), str):
                return redact(str(body[key]))[:300]
        # tastypie's validation errors: {"downloads/release_file": {"url": ["..."]}}
        if len(body) == 1 and isinstance(errors := next(iter(body.values())), dict):
            said = [
                f"{field}: {' '.join(str(m) for m in messages)}"
                for field, messages in errors.items()
                if isinstance(messages, list)
            ]
            if said and len(said) == len(errors):
                return redact("; ".join(said))[:300]
    return redact(json.dumps(body))[:300]
