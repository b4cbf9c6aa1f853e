"""``GET /healthz`` and ``GET /metrics`` on a local port, whatever the chat platforms."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

from aiohttp import web

from bot.metrics import CONTENT_TYPE, Metrics
from bot.web.guard import ConnectionGuard, GuardedSite

if TYPE_CHECKING:
    from bot.web.board_routes import BoardRoutes


class HealthServer:
    """Healthy while scans succeed: the last one read staging within three poll intervals
    (or the bot is still within its first three); degraded while a platform's release
    channel refuses the bot's posts for a reason the operator must fix."""

    _board: BoardRoutes | None = None  # the release board, once serve_board() asked for it

    def __init__(self, metrics: Metrics, poll_interval: float, port: int, host: str = "127.0.0.1"):
        self._metrics = metrics
        self._stale_after = 3 * poll_interval
        self._host, self._port = host, port
        self._runner: web.AppRunner | None = None
        self.guard = ConnectionGuard()

    async def start(self) -> None:
        guard = self.guard
        app = web.Application(middlewares=[guard.middleware])
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/metrics", self._metrics_text)
        if self._board is not None:  # the release board: /, /releases/TAG, /api/releases/TAG
            self._board.register(app.router)
        # Header and idle timeouts, a connection limit, one log line per kind of failure:
        # bot/web/guard.py. aiohttp's own keep-alive timeout is only a backstop behind it.
        # A request whose connection was cut is cancelled: nobody waits for its answer.
        self._runner = web.AppRunner(
            app, access_log=None, keepalive_timeout=2 * guard.idle, handler_cancellation=True
        )
        await self._runner.setup()
        guard.start()
        try:
            await GuardedSite(self._runner, self._host, self._port, guard).start()
        except OSError:
            await self.stop()
            raise

    @property
    def port(self) -> int:
        """The port it listens on, once started: the one the system chose for port 0."""
        addresses = self._runner.addresses if self._runner is not None else []
        return int(addresses[0][1]) if addresses else self._port

    def serve_board(self, board: BoardRoutes) -> None:
        """Serve the release board too (call before :meth:`start`)."""
        self._board = board

    async def stop(self) -> None:
        await self.guard.stop()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _healthz(self, request: web.Request) -> web.Response:
        now, m = time.time(), self._metrics
        since = now - (m.last_successful_scan or m.started)
        fresh = since <= self._stale_after
        await m.channels.recheck()  # a channel fixed since shows as fixed
        refused = m.channels.problems
        healthy = fresh and not refused
        body: dict[str, object] = {
            "status": "ok" if healthy else "stale" if not fresh else "degraded",
            "seconds_since_successful_scan": round(since, 1),
            "scans": m.scans,
            "publishes": m.publishes,
        }
        if refused:  # platform → the sentence with the fix
            body["channels"] = refused
        return web.Response(
            status=200 if healthy else 503,
            text=json.dumps(body),
            content_type="application/json",
        )

    async def _metrics_text(self, request: web.Request) -> web.Response:
        return web.Response(body=self._metrics.prometheus(), headers={"Content-Type": CONTENT_TYPE})
