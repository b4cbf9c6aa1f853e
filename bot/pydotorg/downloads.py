"""Checking the published files as a user would (PEP 101: "download them and check them"):
each file of the plan is fetched from the public site (``https://www.python.org/ftp/python/``
+ its public path, after the CDN purge) and its status, size and SHA-256 are compared with
the plan. ``.sigstore`` bundles are files of the plan too, checked the same way.

:class:`DownloadsCheck` implements :class:`bot.ports.PublicDownloads`. Bodies are streamed
and hashed as they arrive, never held in memory; a few files are fetched at a time.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import logging
from typing import Final

import httpx

from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.text import listing
from bot.errors import DownloadsError
from bot.http_client import HttpClient, HttpService, RetryPolicy
from bot.ports import DownloadsReport

_log = logging.getLogger(__name__)

BUNDLE_SUFFIX: Final = ".sigstore"
_CHUNK: Final = 1 << 20


class DownloadsCheck(HttpService):
    """Fetches the published files from ``base_url`` (the public folder's URL, ending in
    ``/``). Blocking: run it in a worker thread."""

    def __init__(
        self,
        base_url: str,
        *,
        workers: int = 4,
        transport: httpx.BaseTransport | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.base_url = base_url if base_url.endswith("/") else base_url + "/"
        self._workers = max(1, workers)
        # No credentials: a plain GET, as anyone downloading the release sends it.
        self._http = HttpClient(
            origin=self.base_url, transport=transport, timeout=timeout, retry=retry
        )

    def __repr__(self) -> str:
        return f"DownloadsCheck({self.base_url!r})"

    def check(self) -> list[str]:
        """For ``relbot check``: whether the public folder's URL answers (one GET)."""
        try:
            response, _ = self._http.send("GET", self.base_url, stream=True)
        except httpx.TransportError as err:
            return [f"downloads.url: {self.base_url} could not be reached ({type(err).__name__})."]
        response.close()
        if response.status_code >= 400:
            return [f"downloads.url: {self.base_url} answered HTTP {response.status_code}."]
        return []

    def url(self, target: str) -> str:
        """The public URL of a file published at ``target`` (``3.14.1/Python-3.14.1.tgz``)."""
        return self.base_url + target

    def verify(self, plan: PublishPlan) -> DownloadsReport:
        """Fetch every file of ``plan``; raises :class:`DownloadsError` naming each one whose
        public copy differs from the plan or could not be fetched."""
        with concurrent.futures.ThreadPoolExecutor(self._workers) as pool:
            problems = [p for p in pool.map(self._problem, plan.files) if p]
        if problems:
            raise DownloadsError(
                f"The public copies of {plan.tag} differ from the confirmed plan "
                f"({listing(problems)}); the release page and the announcement wait until "
                "the public files are right."
            )
        bundles = sum(1 for f in plan.files if f.target.endswith(BUNDLE_SUFFIX))
        _log.info("public copies of %s: %d files match the plan", plan.tag, len(plan.files))
        return DownloadsReport(len(plan.files), bundles, plan.total_size)

    def _problem(self, planned: PlanFile) -> str:
        """What is wrong with the public copy of ``planned`` ("" when it is exact)."""
        url = self.url(planned.target)
        try:
            response, _ = self._http.send("GET", url, stream=True)
        except httpx.TransportError as err:
            return f"{planned.target} could not be fetched ({type(err).__name__})"
        try:
            if response.status_code != 200:
                return f"{planned.target} answered HTTP {response.status_code}"
            digest, size = hashlib.sha256(), 0
            for chunk in response.iter_bytes(_CHUNK):
                digest.update(chunk)
                size += len(chunk)
        except httpx.TransportError as err:
            return f"{planned.target} could not be read to the end ({type(err).__name__})"
        finally:
            response.close()
        if size != planned.size:
            return f"{planned.target} is {size:,} bytes, not {planned.size:,}"
        if digest.hexdigest() != planned.sha256:
            return f"{planned.target} has other bytes (SHA-256 {digest.hexdigest()[:12]}…)"
        return ""
