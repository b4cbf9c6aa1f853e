"""Purging the CDN (Fastly) in front of python.org once a release's files are registered.

The URLs are templates from the profile's ``[pydotorg] purge`` list (the ones run_release.py
purges today). A purge that fails is retried, then reported in the :class:`PurgeReport`: it is
never raised, since the files are already public and nothing should undo that.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
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
    """What a purge did: the URLs purged and those that failed after retries."""

    purged: tuple[str, ...] = ()
    failed: tuple[PurgeFailure, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.failed


class CdnPurger(HttpService):
    """Sends HTTP ``PURGE`` to each URL template expanded for a tag.

    Placeholders: ``{tag}`` (3.14.0rc2), ``{version}`` (3.14.0), ``{branch}`` (3.14) and
    ``{tag_nodots}`` (3140rc2). Blocking: run it in a worker thread.
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

    def purge(self, tag: ReleaseTag, replaced: Sequence[str] = ()) -> PurgeReport:
        """PURGE every URL of ``tag`` and of the ``replaced`` public paths; failures are
        retried, then reported, never raised."""
        purged: list[str] = []
        failed: list[PurgeFailure] = []
        for url in self.urls(tag, replaced):
            reason = self._purge_one(url)
            if reason is None:
                purged.append(url)
            else:
                _log.warning("CDN purge of %s failed: %s", url, reason)
                failed.append(PurgeFailure(url, reason))
        return PurgeReport(tuple(purged), tuple(failed))

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
