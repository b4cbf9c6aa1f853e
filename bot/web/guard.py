"""The health and board server defends itself against its clients.

- Every connection must send a whole request within ``IDLE_SECONDS`` of connecting or of
  its last answer, and a request must be answered within ``BUSY_SECONDS``; else it is cut.
  A client that opens connections and sends half a request (``GET / HTTP/1.1`` and no blank
  line) holds nothing for long.
- At most ``connection_limit()`` connections at once, well below the process's file limit,
  so the bot's own files, sockets and scans never run out of descriptors. A connection over
  the limit takes the place of the longest idle one: ``/healthz``, asked on a fresh
  connection, gets through whatever the load.
- Failures are logged once per kind (the first one, then how many more, at most every ten
  minutes), never once per request: a flood cannot fill the disk with tracebacks.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from collections.abc import Awaitable, Callable

from aiohttp import web

log = logging.getLogger(__name__)

IDLE_SECONDS = 10.0  # from connecting, or the last answer, to a whole request
BUSY_SECONDS = 60.0  # from a whole request to its answer written
LOG_WINDOW = 600.0  # a kind of failure is logged at most once in this many seconds
MOST_CONNECTIONS = 1024
# The loggers whose records a client can cause: asyncio's (accept failing with EMFILE) and
# aiohttp's (a malformed request, a client gone mid-answer).
NOISY_LOGGERS = ("asyncio", "aiohttp.server", "aiohttp.web", "aiohttp.access")


def connection_limit() -> int:
    """A quarter of the process's file limit (``ulimit -n``, ``LimitNOFILE=``), between 8
    and ``MOST_CONNECTIONS``: the rest is for the state file, SSH, chat and scans."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MOST_CONNECTIONS
    return max(8, min(MOST_CONNECTIONS, soft // 4))


class OncePerKind(logging.Filter):
    """Lets one record of each kind through per ``window`` seconds, as one line (an
    exception becomes its type and text, no traceback), saying how many were held back."""

    def __init__(self, window: float = LOG_WINDOW, kinds: int = 256) -> None:
        super().__init__()
        self._window = window
        self._kinds = kinds
        self._seen: dict[tuple[str, str, str], tuple[float, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        first = str(record.msg).partition("\n")[0][:120]
        kind = (record.name, first, type(exc).__name__ if exc is not None else "")
        now = time.monotonic()
        last, held = self._seen.get(kind, (-self._window, 0))
        if now - last < self._window:
            self._seen[kind] = (last, held + 1)
            return False
        if len(self._seen) >= self._kinds:
            self._seen.clear()
        self._seen[kind] = (now, 0)
        text = record.getMessage().partition("\n")[0]
        if exc is not None:
            text += f": {type(exc).__name__}: {str(exc).partition(chr(10))[0]}"
        if held:
            text += f" ({held} more like it in the last {self._window / 60:g} minutes)"
        record.msg, record.args = text, ()
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        return True


class _Connection(asyncio.Protocol):
    """aiohttp's protocol for one connection, watched: when it opened, whether a request is
    being answered, since when it is idle."""

    def __init__(self, inner: asyncio.Protocol, guard: ConnectionGuard) -> None:
        self.inner = inner
        self.guard = guard
        self.transport: asyncio.Transport | None = None
        self.busy = 0  # requests being answered
        self.since = time.monotonic()  # idle since, or busy since
        self._made = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if self.guard.admit(self):
            self._made = True
            self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self.guard.forget(self)
        if self._made:
            self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    def cut(self) -> None:
        if self.transport is not None:
            self.transport.abort()


class ConnectionGuard:
    """Counts, limits and times the server's connections (see the module's docstring)."""

    def __init__(
        self,
        limit: int | None = None,
        *,
        idle: float = IDLE_SECONDS,
        busy: float = BUSY_SECONDS,
        window: float = LOG_WINDOW,
    ) -> None:
        self.limit = limit if limit is not None else connection_limit()
        self.idle = idle
        self.busy = busy
        self.cuts: dict[str, int] = {}  # why → connections cut (for tests and the bench)
        self._open: dict[asyncio.BaseTransport, _Connection] = {}
        self._once = OncePerKind(window)
        self._sweeper: asyncio.Task[None] | None = None

    def wrap(self, factory: Callable[[], asyncio.Protocol]) -> Callable[[], asyncio.Protocol]:
        return lambda: _Connection(factory(), self)

    @property
    def open(self) -> int:
        return len(self._open)

    def admit(self, conn: _Connection) -> bool:
        """Take ``conn`` in, making room by cutting the longest idle connection; refuse it
        when every connection is busy answering."""
        assert conn.transport is not None
        if len(self._open) >= self.limit:
            idle = [c for c in self._open.values() if not c.busy]
            if not idle:
                self._cut(conn, "limit", "every one answering a request: refused a new one")
                return False
            self._cut(
                min(idle, key=lambda c: c.since), "limit", "cut the longest idle one for a new one"
            )
        self._open[conn.transport] = conn
        return True

    def forget(self, conn: _Connection) -> None:
        if conn.transport is not None:
            self._open.pop(conn.transport, None)

    @web.middleware
    async def middleware(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        """Marks the connection busy while its request is answered."""
        conn = self._open.get(request.transport) if request.transport is not None else None
        if conn is None:
            return await handler(request)
        conn.busy += 1
        conn.since = time.monotonic()
        try:
            return await handler(request)
        finally:
            conn.busy -= 1
            conn.since = time.monotonic()  # the answer is written after this: it is idle

    def start(self) -> None:
        self._sweeper = asyncio.create_task(self._sweep())
        for name in (*NOISY_LOGGERS, log.name):
            logging.getLogger(name).addFilter(self._once)

    async def stop(self) -> None:
        for name in (*NOISY_LOGGERS, log.name):
            logging.getLogger(name).removeFilter(self._once)
        if self._sweeper is not None:
            self._sweeper.cancel()
            await asyncio.gather(self._sweeper, return_exceptions=True)

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(min(1.0, self.idle / 4))
            self.sweep(time.monotonic())

    def sweep(self, now: float) -> None:
        """Cut the connections idle or busy for too long."""
        for conn in list(self._open.values()):
            if conn.busy and now - conn.since > self.busy:
                self._cut(conn, "busy")
            elif not conn.busy and now - conn.since > self.idle:
                self._cut(conn, "idle")

    def _cut(self, conn: _Connection, why: str, detail: str = "") -> None:
        self.forget(conn)
        conn.cut()
        self.cuts[why] = self.cuts.get(why, 0) + 1
        # One template per kind: the log says each kind once per window (OncePerKind).
        if why == "limit":
            log.warning("health server: at its limit of %d connections, %s", self.limit, detail)
        elif why == "busy":
            log.warning("health server: cut a connection whose answer took over %g s", self.busy)
        else:
            log.warning("health server: cut a connection with no whole request in %g s", self.idle)


class GuardedSite(web.TCPSite):
    """``TCPSite`` whose connections go through a :class:`ConnectionGuard`."""

    def __init__(self, runner: web.BaseRunner, host: str, port: int, guard: ConnectionGuard):
        super().__init__(runner, host, port)
        self._guard = guard

    async def start(self) -> None:
        await web.BaseSite.start(self)  # registers the site with its runner
        server = self._runner.server
        assert server is not None
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            self._guard.wrap(server), self._host, self._port, backlog=self._backlog
        )
        self._bound_port = self._server.sockets[0].getsockname()[1]
