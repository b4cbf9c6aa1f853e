"""``GET /healthz`` and ``GET /metrics`` on a local port, whatever the chat platforms."""

from __future__ import annotations

import json
import time

from aiohttp import web

from bot.metrics import CONTENT_TYPE, Metrics


class HealthServer:
    """Healthy while scans succeed: the last one read staging within three poll intervals
    (or the bot is still within its first three)."""

    def __init__(self, metrics: Metrics, poll_interval: float, port: int, host: str = "127.0.0.1"):
        self._metrics = metrics
        self._stale_after = 3 * poll_interval
        self._host, self._port = host, port
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/metrics", self._metrics_text)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, self._host, self._port).start()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _healthz(self, request: web.Request) -> web.Response:
        now, m = time.time(), self._metrics
        since = now - (m.last_successful_scan or m.started)
        healthy = since <= self._stale_after
        body = {
            "status": "ok" if healthy else "stale",
            "seconds_since_successful_scan": round(since, 1),
            "scans": m.scans,
            "publishes": m.publishes,
        }
        return web.Response(
            status=200 if healthy else 503,
            text=json.dumps(body),
            content_type="application/json",
        )

    async def _metrics_text(self, request: web.Request) -> web.Response:
        return web.Response(body=self._metrics.prometheus(), headers={"Content-Type": CONTENT_TYPE})
