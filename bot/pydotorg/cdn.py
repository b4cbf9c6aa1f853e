"""Purging the CDN (Fastly) in front of python.org once a release's files are registered.

The URLs are templates from the profile's ``[pydotorg] purge`` list (the ones run_release.py
purges today). A purge that fails is retried, then reported in the :class:`PurgeReport`: it is
never raised, since the files are already public and nothing should undo that.

The process has one purger, shared by every publish. Releases confirmed together purge one at
a time, never interleaved: a URL that another publish's purge sent after this purge was asked
for (so after this release's change: the purge step runs after it) is not sent again, and one
sent before is always sent again (skipping it would leave a stale page). Fastly does not rate
limit URL purges; the ordering is the bot's own.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import httpx

from bot.domain.profile import Profile, expand
from bot.domain.records import PydotorgSettings
from bot.domain.tags import ReleaseTag
from bot.http_client import HttpClient, HttpService, RetryPolicy

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PurgeFailure:
    """A URL the CDN did not purge, and why (``HTTP 403``, ``ConnectError``)."""

    url: str
    reason: str

    def __str__(self) -> str:
        return f"{self.url}: {self.reason}"


@dataclass(frozen=True)
class PurgeReport:
    """What a purge did: the URLs purged, those that failed after retries, and those
    ``already`` purged by another publish since this purge was asked for (not sent again)."""

    purged: tuple[str, ...] = ()
    failed: tuple[PurgeFailure, ...] = ()
    already: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.failed


class CdnPurger(HttpService):
    """Sends HTTP ``PURGE`` to each URL template expanded for a tag.

    Placeholders: ``{tag}`` (3.14.0rc2), ``{version}`` (3.14.0), ``{branch}`` (3.14) and
    ``{tag_nodots}`` (3140rc2). Blocking: run it in a worker thread; concurrent purges wait
    for each other (one publish's URLs at a time).
    """

    def __init__(
        self,
        templates: Sequence[str],
        *,
        files_url: str | None = None,
        transport: httpx.BaseTransport | None = None,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.templates = tuple(templates)
        # Where public paths are served (https://www.python.org/ftp/python/): files that a
        # publish replaced (the install index) are purged there, with their folder.
        self.files_url = files_url
        self._http = HttpClient(transport=transport, timeout=timeout, retry=retry)
        self._turn = threading.Lock()  # one publish's purge at a time
        self._purging: ReleaseTag | None = None  # whose purge holds the turn
        # A number for each purge asked for and each URL sent, in order: a URL sent after a
        # purge was asked for has a greater one.
        self._numbers = itertools.count()
        self._numbering = threading.Lock()
        self._sent: dict[str, int] = {}  # URL → the number of its last purge that worked

    @classmethod
    def from_profile(
        cls,
        profile: Profile,
        *,
        transport: httpx.BaseTransport | None = None,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
    ) -> CdnPurger:
        """A purger for the profile's ``[pydotorg] purge`` templates (ConfigError if invalid)."""
        settings = PydotorgSettings.from_profile(profile)
        return cls(
            settings.purge,
            files_url=settings.files_url,
            transport=transport,
            timeout=timeout,
            retry=retry,
        )

    def __repr__(self) -> str:
        return f"CdnPurger({len(self.templates)} URL templates)"

    def urls(self, tag: ReleaseTag, replaced: Sequence[str] = ()) -> list[str]:
        """The URLs purged for ``tag``, in order, without duplicates; then, for each public
        path in ``replaced`` (``index-windows.json``), its URL and its folder's."""
        urls = [expand(template, tag) for template in self.templates]
        if self.files_url is not None:
            for path in replaced:
                folder = path.rsplit("/", 1)[0] + "/" if "/" in path else ""
                urls += [self.files_url + path, self.files_url + folder]
        return list(dict.fromkeys(urls))

    def ask(self) -> int:
        """A mark of now: a purge given it as ``since`` does not send again a URL that
        another publish's purge sent after it (the caller asks once its change is made)."""
        return self._number()

    def purge(
        self, tag: ReleaseTag, replaced: Sequence[str] = (), *, since: int | None = None
    ) -> PurgeReport:
        """PURGE every URL of ``tag`` and of the ``replaced`` public paths; failures are
        retried, then reported, never raised. Waits for another publish's purge to end; a URL
        that one sent after ``since`` (default: this call) is not sent again."""
        asked = self.ask() if since is None else since
        purged: list[str] = []
        failed: list[PurgeFailure] = []
        already: list[str] = []
        with self._turn_of(tag):
            for url in self.urls(tag, replaced):
                if self._sent.get(url, -1) > asked:
                    already.append(url)
                    continue
                sent = self._number()
                reason = self._purge_one(url)
                if reason is None:
                    self._sent[url] = sent
                    purged.append(url)
                else:
                    _log.warning("CDN purge of %s failed: %s", url, reason)
                    failed.append(PurgeFailure(url, reason))
        if already:
            _log.info(
                "CDN purge of %s: %d URLs already purged by another publish since it was asked for",
                tag,
                len(already),
            )
        return PurgeReport(tuple(purged), tuple(failed), tuple(already))

    @contextmanager
    def _turn_of(self, tag: ReleaseTag) -> Iterator[None]:
        """Hold the purger for ``tag``'s purge, after any other publish's purge."""
        if not self._turn.acquire(blocking=False):
            holder = self._purging  # read without the lock: for the log only
            _log.info("CDN purge of %s waits for the purge of %s", tag, holder or "another")
            self._turn.acquire()
        try:
            self._purging = tag
            yield
        finally:
            self._purging = None
            self._turn.release()

    def _number(self) -> int:
        with self._numbering:
            return next(self._numbers)

    def _purge_one(self, url: str) -> str | None:
        try:
            response, _ = self._http.send("PURGE", url)
        except httpx.InvalidURL as err:
            return f"invalid URL ({err})"
        except httpx.TransportError as err:
            return f"{type(err).__name__} after {self._http.retry.attempts} attempts"
        if response.is_success:
            return None
        return f"HTTP {response.status_code}"
