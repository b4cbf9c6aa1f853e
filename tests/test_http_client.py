"""The HTTP client the registry and the CDN purger share, against a real server on loopback:
what it retries and how long it waits, and where it refuses to go."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from bot.http_client import HttpClient, OtherOrigin, RetryPolicy


class Script:
    """A loopback server answering each request with the next (status, headers) of a script,
    then 200; it remembers each request's method, path and Authorization header."""

    def __init__(self, *answers: tuple[int, dict[str, str]]) -> None:
        self.answers = list(answers)
        self.seen: list[tuple[str, str, str | None]] = []
        script = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _answer(self) -> None:
                script.seen.append((self.command, self.path, self.headers.get("Authorization")))
                status, headers = script.answers.pop(0) if script.answers else (200, {})
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = do_PURGE = _answer

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/api/"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


@pytest.fixture
def waits() -> list[float]:
    return []


def client(waits: list[float], **kwargs: Any) -> HttpClient:
    kwargs.setdefault("timeout", 5.0)
    return HttpClient(retry=RetryPolicy(attempts=3, sleep=waits.append), **kwargs)


@pytest.fixture
def server() -> Iterator[Script]:
    script = Script()
    yield script
    script.stop()


def test_a_rate_limit_is_retried_after_the_time_the_server_asks(
    server: Script, waits: list[float]
) -> None:
    server.answers = [(429, {"Retry-After": "7"}), (503, {})]
    with client(waits) as http:
        response, attempts = http.send("GET", server.url + "x")
    assert (response.status_code, attempts) == (200, 3)
    assert waits == [7.0, 2.0]  # the hint, then the backoff's second step
    assert [method for method, _, _ in server.seen] == ["GET"] * 3


def test_the_last_answer_is_returned_when_every_attempt_fails(
    server: Script, waits: list[float]
) -> None:
    server.answers = [(500, {})] * 3
    with client(waits) as http:
        response, attempts = http.send("PURGE", server.url + "x")
    assert (response.status_code, attempts) == (500, 3)
    assert len(waits) == 2


def test_a_refusal_is_not_retried(server: Script, waits: list[float]) -> None:
    server.answers = [(403, {})]
    with client(waits) as http:
        response, attempts = http.send("POST", server.url + "x", content=b"{}")
    assert (response.status_code, attempts, waits) == (403, 1, [])


def test_a_redirect_is_not_followed(server: Script, waits: list[float]) -> None:
    server.answers = [(302, {"Location": "http://127.0.0.2:9/steal"})]
    with client(waits) as http:
        response, _ = http.send("GET", server.url + "x")
    assert response.status_code == 302
    assert len(server.seen) == 1


def test_a_client_with_an_origin_sends_nothing_elsewhere(
    server: Script, waits: list[float]
) -> None:
    headers = {"Authorization": "ApiKey rm:secret"}
    with client(waits, origin=server.url, headers=headers) as http:
        assert http.join("downloads/os/") == httpx.URL(server.url + "downloads/os/")
        with pytest.raises(OtherOrigin):
            http.join("http://127.0.0.2/api/downloads/os/")
        other_port = server.url.replace("/api/", "").rsplit(":", 1)[0] + ":9/api/"
        with pytest.raises(OtherOrigin):
            http.send("GET", other_port)
        http.send("GET", http.join("/api/downloads/os/"))
    assert server.seen == [("GET", "/api/downloads/os/", "ApiKey rm:secret")]


def test_credentials_without_an_origin_are_refused() -> None:
    with pytest.raises(ValueError, match="needs an origin"):
        HttpClient(headers={"Authorization": "ApiKey rm:secret"}, timeout=5.0)


def test_a_transport_error_is_retried_then_raised(waits: list[float]) -> None:
    script = Script()
    url = script.url
    script.stop()  # nothing listens there any more
    with client(waits) as http, pytest.raises(httpx.ConnectError):
        http.send("GET", url)
    assert waits == [1.0, 2.0]


@pytest.mark.parametrize(
    ("origin", "link"),
    [
        ("https://api.example.org/v1/", "http://api.example.org/v1/downloads/"),
        ("https://127.0.0.1:{port}/api/", "http://127.0.0.1:{port}/api/downloads/"),
    ],
    ids=["default-ports", "same-port"],
)
def test_a_link_to_plain_http_on_the_same_host_is_another_origin(
    server: Script, waits: list[float], origin: str, link: str
) -> None:
    """The key must not leave in clear text because a server's answer said http://."""
    port = httpx.URL(server.url).port
    headers = {"Authorization": "ApiKey rm:secret"}
    with client(waits, origin=origin.format(port=port), headers=headers) as http:
        with pytest.raises(OtherOrigin):
            http.join(link.format(port=port))
        with pytest.raises(OtherOrigin):
            http.send("GET", link.format(port=port))
    assert server.seen == []  # nothing was sent, least of all the key
