"""The release board's routes on the ``[health]`` server: ``GET /``, ``GET /releases/TAG`` and
``GET /api/releases/TAG``. Read-only: every request reads what the gate last observed and the
event log; none lists staging or hashes a file."""

from __future__ import annotations

import hashlib
import json
import time

from aiohttp import web

from bot.board import ReleaseView, release_view
from bot.board_html import (
    CONTENT_SECURITY_POLICY,
    index_body,
    not_found_body,
    page,
    release_body,
)
from bot.domain.tags import ReleaseTag, quote_input
from bot.errors import RelbotError
from bot.gate import Gate

RECENTLY_PUBLISHED = 10  # releases the index lists below the open ones
SAFE_HEADERS = {
    "Cache-Control": "no-cache",  # always revalidated: the ETag makes that cheap
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


class BoardRoutes:
    """Serves the board from ``gate``; an open page checks for changes every ``refresh``
    seconds (at most 5, at least every scan)."""

    def __init__(self, gate: Gate) -> None:
        self._gate = gate
        self.refresh = max(1, min(5, gate.config.model.poll_interval))

    def register(self, router: web.UrlDispatcher) -> None:
        router.add_get("/", self._index)
        router.add_get("/releases/{tag}", self._release_page)
        router.add_get("/api/releases/{tag}", self._release_json)

    async def view(self, name: str) -> ReleaseView | None:
        """The board's view of release ``name``; None for a tag the bot has never seen."""
        try:
            tag = ReleaseTag.parse(name)
        except RelbotError:
            return None
        if tag not in self._gate.store.tags() and tag not in self._gate.listed_tags():
            return None
        return await self._view(tag)

    async def _view(self, tag: ReleaseTag) -> ReleaseView:
        gate = self._gate
        observed = await gate.observed(tag)
        return release_view(
            gate.profile,
            tag,
            observed,
            gate.store.events(tag),
            now=time.time(),
            signatures_required=gate.config.requires_signatures(tag),
        )

    async def _index(self, request: web.Request) -> web.Response:
        gate = self._gate
        open_tags = set(gate.store.open_tags()) | set(gate.listed_tags())
        open_views = [await self._view(tag) for tag in sorted(open_tags)]
        published = []
        for tag in set(gate.store.tags()) - open_tags:
            view = await self._view(tag)
            if view.published:
                published.append(view)
        published.sort(key=lambda v: v.published_at or 0, reverse=True)
        body = index_body(
            [v for v in open_views if not v.published],
            published[:RECENTLY_PUBLISHED],
            gate.profile.roles,
        )
        return self._html(
            request,
            page(
                "Release board",
                "index",
                "Releases",
                body,
                self.refresh,
                gate.metrics.last_successful_scan,
            ),
        )

    async def _release_page(self, request: web.Request) -> web.Response:
        name = request.match_info["tag"]
        view = await self.view(name)
        scanned = self._gate.metrics.last_successful_scan
        if view is None:
            text = f"The bot has never seen a release {quote_input(name)}: nothing staged or said."
            html = page(
                "Release not found",
                "missing",
                "Release not found",
                not_found_body(text),
                self.refresh,
                scanned,
            )
            return self._html(request, html, status=404)
        html = page(
            f"{view.tag}: {view.headline}",
            "release",
            f"Release {view.tag}",
            release_body(view),
            self.refresh,
            scanned,
        )
        return self._html(request, html)

    async def _release_json(self, request: web.Request) -> web.Response:
        name = request.match_info["tag"]
        view = await self.view(name)
        if view is None:
            body = {"error": f"The bot has never seen a release {quote_input(name)}."}
            return web.json_response(body, status=404, headers=SAFE_HEADERS)
        return web.json_response(view.to_json(), headers=SAFE_HEADERS, dumps=_dumps)

    @staticmethod
    def _html(request: web.Request, text: str, status: int = 200) -> web.Response:
        etag = '"' + hashlib.sha256(text.encode()).hexdigest()[:32] + '"'
        headers = {**SAFE_HEADERS, "Content-Security-Policy": CONTENT_SECURITY_POLICY, "ETag": etag}
        if status == 200 and request.headers.get("If-None-Match") == etag:
            return web.Response(status=304, headers=headers)
        return web.Response(
            status=status, text=text, content_type="text/html", charset="utf-8", headers=headers
        )


def _dumps(data: object) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False)
