"""The release board's routes on the ``[health]`` server: ``GET /``, ``GET /releases/TAG`` and
``GET /api/releases/TAG``. Read-only: every request reads what the gate last observed and the
event log; none lists staging or hashes a file.

A page is rendered once (in a worker thread, one at a time) and served from memory until the
log gets an event, the bot looks at staging again, or a poll interval passes (python.org is
asked again at most that often); an offered plan's page also until its code expires. So any
number of open boards costs one rendering per change, and never blocks ``/healthz``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from aiohttp import web

from bot.domain.history import Event
from bot.domain.tags import ReleaseTag, quote_input
from bot.errors import RelbotError
from bot.service.gate import Gate, Observed
from bot.web.board import ReleaseView, release_view
from bot.web.board_html import (
    CONTENT_SECURITY_POLICY,
    index_body,
    not_found_body,
    page,
    release_body,
)

RECENTLY_PUBLISHED = 10  # releases the index lists below the open ones
PAGES_KEPT = 64  # rendered pages kept in memory (the index, and the releases asked for)
SAFE_HEADERS = {
    "Cache-Control": "no-cache",  # always revalidated: the ETag makes that cheap
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}
HTML = "text/html; charset=utf-8"
JSON = "application/json; charset=utf-8"


@dataclass(frozen=True)
class Rendered:
    """One rendered answer, and what it was rendered from."""

    status: int
    body: bytes
    content_type: str
    etag: str
    basis: tuple[object, ...]  # the log's last event, the last scan, the gate's looks
    until: float  # time.monotonic() after which it is rendered again

    @classmethod
    def of(cls, status: int, text: str, content_type: str, until: float) -> Rendered:
        body = text.encode()
        etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        return cls(status, body, content_type, etag, (), until)


class BoardRoutes:
    """Serves the board from ``gate``; an open page checks for changes every ``refresh``
    seconds (at most 5, at least every scan)."""

    def __init__(self, gate: Gate) -> None:
        self._gate = gate
        self.refresh = max(1, min(5, gate.config.model.poll_interval))
        self.renderings = 0  # pages rendered (for tests and the bench)
        self._pages: OrderedDict[str, Rendered] = OrderedDict()
        self._rendering = asyncio.Lock()

    def register(self, router: web.UrlDispatcher) -> None:
        router.add_get("/", self._index)
        router.add_get("/releases/{tag}", self._release_page)
        router.add_get("/api/releases/{tag}", self._release_json)

    def _known(self, name: str) -> ReleaseTag | None:
        try:
            tag = ReleaseTag.parse(name)
        except RelbotError:
            return None
        if tag not in self._gate.store.tags() and tag not in self._gate.listed_tags():
            return None
        return tag

    def _release_view(
        self, tag: ReleaseTag, observed: Observed, events: Sequence[Event]
    ) -> ReleaseView:
        gate = self._gate
        return release_view(
            gate.profile,
            tag,
            observed,
            events,
            now=time.time(),
            signatures_required=gate.config.requires_signatures(tag),
        )

    # -- the cache -------------------------------------------------------------------------

    def _basis(self) -> tuple[object, ...]:
        gate = self._gate
        return (gate.store.last_id(), gate.metrics.last_successful_scan, *gate.looks())

    async def _cached(self, key: str, render: Callable[[], Awaitable[Rendered]]) -> Rendered:
        """The page ``key`` as last rendered, or rendered afresh when what it shows changed."""
        basis = self._basis()
        if (fresh := self._fresh(key, basis)) is not None:
            return fresh
        async with self._rendering:  # one rendering at a time; the others wait for it
            basis = self._basis()
            if (fresh := self._fresh(key, basis)) is not None:
                return fresh
            rendered = await render()
            rendered = Rendered(
                rendered.status,
                rendered.body,
                rendered.content_type,
                rendered.etag,
                basis,
                min(rendered.until, time.monotonic() + self._gate.config.model.poll_interval),
            )
            self.renderings += 1
            self._pages[key] = rendered
            self._pages.move_to_end(key)
            while len(self._pages) > PAGES_KEPT:
                self._pages.popitem(last=False)
            return rendered

    def _fresh(self, key: str, basis: tuple[object, ...]) -> Rendered | None:
        kept = self._pages.get(key)
        if kept is None or time.monotonic() >= kept.until or len(kept.basis) != len(basis):
            return None
        # The gate's looks are compared as objects: a new look is a new object.
        if all(a is b or a == b for a, b in zip(kept.basis, basis, strict=True)):
            return kept
        return None

    # -- the routes ------------------------------------------------------------------------

    async def _index(self, request: web.Request) -> web.Response:
        return self._answer(request, await self._cached("/", self._render_index))

    async def _render_index(self) -> Rendered:
        gate = self._gate
        open_tags = sorted(set(gate.recorded_open_tags()) | set(gate.listed_tags()))
        seen = [(tag, await gate.observed(tag)) for tag in open_tags]
        published = sorted(
            (
                (state.published_at or 0.0, tag)
                for tag in set(gate.store.tags()) - set(open_tags)
                if (state := gate.store.release(tag)).is_published
            ),
            reverse=True,
        )[:RECENTLY_PUBLISHED]
        seen_published = [(tag, await gate.observed(tag)) for _, tag in published]
        acting = gate.at_a_glance(seen)  # /status's words: where each stands, who must act
        scanned = gate.metrics.last_successful_scan

        def render() -> Rendered:
            # The index shows no timeline: no events are read for it.
            views = [self._release_view(tag, observed, ()) for tag, observed in seen]
            done = [self._release_view(tag, observed, ()) for tag, observed in seen_published]
            body = index_body(
                [v for v in views if not v.published], done, gate.profile.roles, acting=acting
            )
            html = page("Release board", "index", "Releases", body, self.refresh, scanned)
            return Rendered.of(200, html, HTML, float("inf"))

        return await asyncio.to_thread(render)

    async def _release_page(self, request: web.Request) -> web.Response:
        name = request.match_info["tag"]
        return self._answer(request, await self._cached(f"page {name}", lambda: self._page(name)))

    async def _page(self, name: str) -> Rendered:
        tag = self._known(name)
        scanned = self._gate.metrics.last_successful_scan
        if tag is None:
            text = f"The bot has never seen a release {quote_input(name)}: nothing staged or said."
            heading = "Release not found"
            body = not_found_body(text)
            html = page(heading, "missing", heading, body, self.refresh, scanned)
            return Rendered.of(404, html, HTML, float("inf"))
        observed = await self._gate.observed(tag)
        events = self._gate.store.events(tag)

        def render() -> Rendered:
            view = self._release_view(tag, observed, events)
            html = page(
                f"{view.tag}: {view.headline}",
                "release",
                f"Release {view.tag}",
                release_body(view),
                self.refresh,
                scanned,
            )
            return Rendered.of(200, html, HTML, _until(view))

        return await asyncio.to_thread(render)

    async def _release_json(self, request: web.Request) -> web.Response:
        name = request.match_info["tag"]
        return self._answer(request, await self._cached(f"json {name}", lambda: self._json(name)))

    async def _json(self, name: str) -> Rendered:
        tag = self._known(name)
        if tag is None:
            body = {"error": f"The bot has never seen a release {quote_input(name)}."}
            return Rendered.of(404, _dumps(body), JSON, float("inf"))
        observed = await self._gate.observed(tag)
        events = self._gate.store.events(tag)

        def render() -> Rendered:
            view = self._release_view(tag, observed, events)
            return Rendered.of(200, _dumps(view.to_json()), JSON, _until(view))

        return await asyncio.to_thread(render)

    @staticmethod
    def _answer(request: web.Request, rendered: Rendered) -> web.Response:
        headers = {**SAFE_HEADERS, "ETag": rendered.etag}
        if rendered.content_type == HTML:
            headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
        if rendered.status == 200 and request.headers.get("If-None-Match") == rendered.etag:
            return web.Response(status=304, headers=headers)
        headers["Content-Type"] = rendered.content_type
        return web.Response(status=rendered.status, body=rendered.body, headers=headers)


def _until(view: ReleaseView) -> float:
    """When a page of ``view`` turns false by itself: its offered plan's code expires."""
    plan = view.plan
    if plan is None or plan.stage != "offered" or plan.expires_at is None:
        return float("inf")
    return time.monotonic() + max(0.0, plan.expires_at - time.time())


def _dumps(data: object) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False)
