"""An HTTP proxy on loopback in front of python.org (the real app or the double) that can lose
the answer of a request after python.org carried it out, or let another writer act just
before a request goes on: the faults a client meets on the internet, for a server we cannot
make fail ourselves.

    with AnswerDropper(upstream="http://127.0.0.1:8000/") as proxy:
        proxy.drop_answer("POST", nth=3)   # the 3rd POST is done, its answer never arrives
        proxy.before("POST", nth=2, act=other_writer)
        ...  # point a client at proxy.url
        proxy.seen  # [(method, path, status or None when dropped)]
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import httpx

from tests.doubles.server import LoopbackServer

_HOP_BY_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length"})


class AnswerDropper:
    """The proxy; a context manager serving on a free port of 127.0.0.1."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.seen: list[tuple[str, str, int | None]] = []
        self._drops: dict[tuple[str, int], bool] = {}
        self._before: dict[tuple[str, int], Callable[[], None]] = {}
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._client = httpx.Client(timeout=60)
        self._server: LoopbackServer | None = None

    def __enter__(self) -> AnswerDropper:
        proxy = self

        class Handler(_Handler):
            owner = proxy

        self._server = LoopbackServer(Handler)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._server is not None
        self._server.stop()
        self._client.close()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "use the proxy as a context manager"
        return self._server.url

    def drop_answer(self, method: str, *, nth: int) -> None:
        """Carry out the ``nth`` request of ``method`` (1-based, counted from now), then close
        the connection without answering."""
        with self._lock:
            self._drops[(method, self._counts.get(method, 0) + nth)] = True

    def before(self, method: str, *, nth: int, act: Callable[[], None]) -> None:
        """Run ``act`` just before the ``nth`` request of ``method`` goes on."""
        with self._lock:
            self._before[(method, self._counts.get(method, 0) + nth)] = act

    def writes(self) -> list[tuple[str, str, int | None]]:
        return [s for s in self.seen if s[0] in ("POST", "PUT", "PATCH", "DELETE")]

    def _forward(self, handler: _Handler) -> None:
        method = handler.command
        with self._lock:
            self._counts[method] = count = self._counts.get(method, 0) + 1
            drop = self._drops.pop((method, count), False)
            act = self._before.pop((method, count), None)
        if act is not None:
            act()
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        # Host kept, as a reverse proxy does: python.org builds its links from it
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in _HOP_BY_HOP}
        answer = self._client.request(
            method, self.upstream + handler.path, content=body, headers=headers
        )
        path = urlsplit(handler.path).path
        if drop:
            with self._lock:
                self.seen.append((method, path, None))
            handler.close_connection = True
            handler.connection.close()  # done upstream; the answer is lost on the way
            return
        with self._lock:
            self.seen.append((method, path, answer.status_code))
        handler.send_response(answer.status_code)
        for name, value in answer.headers.items():
            if name.lower() not in _HOP_BY_HOP and name.lower() not in ("server", "date"):
                handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(answer.content)))
        handler.end_headers()
        handler.wfile.write(answer.content)


class _Handler(BaseHTTPRequestHandler):
    owner: AnswerDropper
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet in tests
        pass

    def do_GET(self) -> None:
        self.owner._forward(self)

    def do_POST(self) -> None:
        self.owner._forward(self)

    def do_DELETE(self) -> None:
        self.owner._forward(self)

    def do_PUT(self) -> None:
        self.owner._forward(self)

    def do_PATCH(self) -> None:
        self.owner._forward(self)
