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
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any


class PublicSite:
    """Serves ``root`` over HTTP on 127.0.0.1 (a context manager)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.paths: list[str] = []
        self.before_serving: Callable[[str], None] | None = None
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

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

        handler = functools.partial(Handler, directory=str(self.root))
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT/``: stands in for ``https://www.python.org/ftp/python/``."""
        assert self._server is not None, "use the site as a context manager"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/"
