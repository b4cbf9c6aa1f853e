"""The HTTP client the registry and the CDN purger share, against a real server on loopback:
what it retries and how long it waits, and where it refuses to go."""

from __future__ import annotations

import contextlib
import email.utils
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from typing import Any

import httpx
import pytest

from bot.http_client import HttpClient, OtherOrigin, RetryPolicy
from tests.doubles.server import LoopbackServer


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

        self._server = LoopbackServer(Handler)
        self.url = self._server.url + "api/"

    def stop(self) -> None:
        self._server.stop()


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


def test_a_post_that_failed_on_the_server_is_not_sent_again(
    server: Script, waits: list[float]
) -> None:
    # It may have been carried out: the caller must look before it sends it again.
    server.answers = [(500, {}), (502, {})]
    with client(waits) as http:
        response, attempts = http.send("POST", server.url + "x", content=b"{}")
    assert (response.status_code, attempts, waits) == (500, 1, [])
    assert [method for method, _, _ in server.seen] == ["POST"]


def test_a_post_refused_by_the_rate_limit_is_sent_again_after_the_wait(
    server: Script, waits: list[float]
) -> None:
    told: list[float] = []
    server.answers = [(429, {"Retry-After": "3"})]
    with client(waits) as http:
        # no body: the script's server does not read one
        response, attempts = http.send("POST", server.url + "x", on_rate_limit=told.append)
    assert (response.status_code, attempts, waits, told) == (200, 2, [3.0], [3.0])


def test_a_retry_after_longer_than_max_wait_is_given_up_at_once(
    server: Script, waits: list[float]
) -> None:
    server.answers = [(429, {"Retry-After": "901"})]
    with HttpClient(timeout=5.0, retry=RetryPolicy(max_wait=900, sleep=waits.append)) as http:
        response, attempts = http.send("GET", server.url + "x")
    assert (response.status_code, attempts, waits) == (429, 1, [])


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
        with pytest.raises(OtherOrigin, match=r"^127\.0\.0\.2 is not this client's origin$"):
            http.join("http://127.0.0.2/api/downloads/os/")
        other_port = server.url.replace("/api/", "").rsplit(":", 1)[0] + ":9/api/"
        with pytest.raises(OtherOrigin):
            http.send("GET", other_port)
        http.send("GET", http.join("/api/downloads/os/"))
    assert server.seen == [("GET", "/api/downloads/os/", "ApiKey rm:secret")]


def test_credentials_without_an_origin_are_refused() -> None:
    with pytest.raises(ValueError, match=r"^a client that sends credentials needs an origin$"):
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


def test_a_client_without_an_origin_takes_any_absolute_url(waits: list[float]) -> None:
    """The CDN purger has no key and no origin: every site is its own."""
    with client(waits) as http:
        url = http.join("https://www.python.org/ftp/python/3.14.0/")
    assert (url.host, url.path) == ("www.python.org", "/ftp/python/3.14.0/")


def test_requests_go_through_the_transport_the_client_is_given(
    server: Script, waits: list[float]
) -> None:
    through: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        through.append(str(request.url))
        return httpx.Response(204)

    with client(waits, transport=httpx.MockTransport(answer)) as http:
        http.send("GET", server.url + "x")
    assert through == [server.url + "x"]
    assert server.seen == []  # nothing went over the network


@pytest.mark.parametrize(
    "zone", [" GMT", " -0000", ""], ids=["gmt", "utc-of-unknown-place", "no-zone"]
)
def test_a_retry_after_date_is_waited_until(server: Script, waits: list[float], zone: str) -> None:
    """An HTTP date in Retry-After is a moment to wait for; one without a zone is in UTC."""
    in_half_a_minute = datetime.now(UTC) + timedelta(seconds=30)
    date = email.utils.format_datetime(in_half_a_minute, usegmt=True).removesuffix(" GMT")
    server.answers = [(503, {"Retry-After": date + zone})]
    with client(waits) as http:
        response, attempts = http.send("GET", server.url + "x")
    assert (response.status_code, attempts) == (200, 2)
    assert len(waits) == 1 and 28.0 <= waits[0] <= 30.0


@pytest.mark.parametrize("ago", [None, timedelta(hours=1)], ids=["zero-seconds", "a-past-date"])
def test_a_retry_after_that_has_passed_is_retried_at_once(
    server: Script, waits: list[float], ago: timedelta | None
) -> None:
    when = "0" if ago is None else email.utils.format_datetime(datetime.now(UTC) - ago, True)
    server.answers = [(429, {"Retry-After": when})]
    with client(waits) as http:
        response, _ = http.send("GET", server.url + "x")
    assert (response.status_code, waits) == (200, [0.0])


HOLD = 2.0  # seconds a slow server holds back; more than the clients' timeouts below


class SlowServer:
    """A loopback server whose answer (on /silent) or the second half of whose body (on any
    other path) comes only once :attr:`released` is set, or after ``HOLD`` seconds."""

    BODY = b"0123456789" * 10

    def __init__(self) -> None:
        self.released = threading.Event()
        released, body = self.released, self.BODY

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path == "/silent":
                    released.wait(HOLD)
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body[:50])
                released.wait(HOLD)
                self.wfile.write(body[50:])

            def handle(self) -> None:
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    super().handle()  # unless the client gave up waiting

        self._server = LoopbackServer(Handler)
        self.url = self._server.url

    def stop(self) -> None:
        self.released.set()
        self._server.stop()


@pytest.fixture
def slow_server() -> Iterator[SlowServer]:
    slow = SlowServer()
    yield slow
    slow.stop()


def test_a_server_that_does_not_answer_in_time_is_retried_then_given_up(
    slow_server: SlowServer, waits: list[float]
) -> None:
    with client(waits, timeout=0.2) as http, pytest.raises(httpx.ReadTimeout):
        http.send("GET", slow_server.url + "silent")
    assert waits == [1.0, 2.0]


def test_a_streamed_answer_is_handed_over_before_its_whole_body_has_arrived(
    slow_server: SlowServer, waits: list[float]
) -> None:
    """A large file is read as it comes, never held in memory whole."""
    with client(waits, timeout=1.0) as http:
        response, _ = http.send("GET", slow_server.url + "file", stream=True)
        slow_server.released.set()  # only now does the rest of the body leave the server
        try:
            assert b"".join(response.iter_bytes()) == SlowServer.BODY
        finally:
            response.close()
