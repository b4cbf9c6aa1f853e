"""One HTTP server on a free port of 127.0.0.1, serving in a thread: what every double runs."""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer
from typing import Any


class LoopbackServer:
    """Serves ``handler`` until :meth:`stop`; :attr:`url` is ``http://127.0.0.1:PORT/``."""

    def __init__(self, handler: Any) -> None:
        # ``handler``: a BaseHTTPRequestHandler class, or a partial building one
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


__all__ = ["LoopbackServer"]
