"""A stand-in for the public download site (``https://www.python.org/ftp/python/``): a real
HTTP server on loopback serving what is really in the public folder, byte for byte, at the
moment it is asked. A byte changed on disk is a byte changed on the site.

    with PublicSite(world.public) as site:
        ...  # [downloads] url = site.url
        site.paths  # every path asked for, in order
        site.before_serving = lambda path: ...  # runs as a file is asked for, before reading it
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from http.server import SimpleHTTPRequestHandler
from pathlib import Path
from types import TracebackType
from typing import Any

from tests.doubles.server import LoopbackServer


class PublicSite:
    """Serves ``root`` over HTTP on 127.0.0.1 (a context manager)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.paths: list[str] = []
        self.before_serving: Callable[[str], None] | None = None
        self._lock = threading.Lock()
        self._server: LoopbackServer | None = None

    def __enter__(self) -> PublicSite:
        site = self

        class Handler(SimpleHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def send_head(self) -> Any:
                path = self.path.split("?", 1)[0]
                with site._lock:
                    site.paths.append(path)
                if site.before_serving is not None:
                    site.before_serving(path)
                return super().send_head()

        self._server = LoopbackServer(functools.partial(Handler, directory=str(self.root)))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._server is not None
        self._server.stop()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT/``: stands in for ``https://www.python.org/ftp/python/``."""
        assert self._server is not None, "use the site as a context manager"
        return self._server.url
