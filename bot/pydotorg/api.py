"""What the clients of python.org's API share: every URL on the API's own origin (the key is
never sent anywhere else), and a request whose transport failure is one sentence."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping

import httpx

from bot.errors import RegistryError
from bot.http_client import HttpService, OtherOrigin

_log = logging.getLogger(__name__)


class PydotorgApi(HttpService):
    """A client of python.org's API over one HTTP client (``self._http``)."""

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
        on_rate_limit: Callable[[float], None] | None = None,
    ) -> tuple[httpx.Response, int]:
        """The answer to one request (retried as the client's policy says) and how many
        attempts it took. Raises :class:`RegistryError` when python.org cannot be reached."""
        try:
            response, attempts = self._http.send(
                method,
                url,
                content=None if body is None else json.dumps(body).encode(),
                headers={} if body is None else {"Content-Type": "application/json"},
                on_rate_limit=on_rate_limit,
            )
        except httpx.TransportError as err:
            tries = "once" if method == "POST" else f"after {self._http.retry.attempts} attempts"
            raise RegistryError(
                f"python.org could not be reached to {what} ({type(err).__name__} {tries}); "
                "try again later."
            ) from err
        _log.debug("%s %s → %s", method, url, response.status_code)
        return response, attempts
