"""Guards of the python.org client that a one-line slip would remove without any other test
noticing: the API key goes to the configured API's origin only, a refused first create is a
refusal, and one OS never gets two download buttons."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from bot.domain.profile import Profile
from bot.domain.records import PydotorgSettings, planned_records
from bot.errors import RegistryError
from bot.http_client import RetryPolicy
from bot.pydotorg.registry import PydotorgRegistry
from tests.doubles.pydotorg import API, PydotorgDouble
from tests.registry.test_registry import KEY, Sleeps, make_plan, registry


class Elsewhere:
    """Another host (127.0.0.2) that answers every request as python.org's API would, so a
    client that goes there succeeds silently; it remembers each request and its headers."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        elsewhere = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                elsewhere.requests.append((self.command, self.path, dict(self.headers)))
                body = json.dumps({"meta": {"next": None}, "objects": []}).encode()
                self.send_response(200 if self.command == "GET" else 204)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body) if self.command == "GET" else 0))
                self.end_headers()
                if self.command == "GET":
                    self.wfile.write(body)

            do_GET = do_POST = do_DELETE = _answer

        self._server = ThreadingHTTPServer(("127.0.0.2", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def origin(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> Elsewhere:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def saw_the_key(self) -> bool:
        return any(KEY in str(headers) for _, _, headers in self.requests)


@pytest.fixture
def api() -> Iterator[PydotorgDouble]:
    with PydotorgDouble(users={"rm": (KEY, True)}) as double:
        yield double


@pytest.fixture
def elsewhere() -> Iterator[Elsewhere]:
    with Elsewhere() as server:
        yield server


# -- the key stays on the API's origin ---------------------------------------------------------


def test_a_next_page_on_another_host_is_refused_before_anything_is_sent_there(
    api: PydotorgDouble, elsewhere: Elsewhere, profile: Profile, sleeps: Sleeps
) -> None:
    pk = api.add_release("Python 3.14.1")
    for n in range(130):  # two pages of records
        api.add_file(
            name=f"old {n}", slug=f"old-{n}", url=f"https://www.python.org/old/{n}",
            os=f"{API}downloads/os/1/", release=f"{API}downloads/release/{pk}/",
        )  # fmt: skip
    api.link_origin = elsewhere.origin

    with pytest.raises(RegistryError, match="another site"):
        registry(api, profile, sleeps).sync(make_plan(profile, "3.14.1", {}))

    assert elsewhere.requests == [] and not elsewhere.saw_the_key()


def test_a_record_whose_address_is_on_another_host_is_not_deleted_there(
    api: PydotorgDouble, elsewhere: Elsewhere, profile: Profile, sleeps: Sleeps
) -> None:
    pk = api.add_release("Python 3.14.1")
    stale = api.add_file(
        name="old", slug="old", url="https://www.python.org/old.exe",
        os=f"{API}downloads/os/2/", release=f"{API}downloads/release/{pk}/",
    )  # fmt: skip
    api.release_files[stale]["resource_uri"] = f"{elsewhere.origin}{API}downloads/release_file/9/"

    with pytest.raises(RegistryError, match="another site"):
        registry(api, profile, sleeps).sync(make_plan(profile, "3.14.1", {}))

    assert elsewhere.requests == [] and not elsewhere.saw_the_key()


@pytest.mark.parametrize(("op", "status"), [("list", 302), ("create", 307), ("create", 308)])
def test_a_redirect_to_another_host_is_not_followed(
    api: PydotorgDouble,
    elsewhere: Elsewhere,
    profile: Profile,
    sleeps: Sleeps,
    op: str,
    status: int,
) -> None:
    api.add_release("Python 3.14.1")
    target = f"{elsewhere.origin}{API}downloads/release_file/"
    api.fail(op, status=status, location=target, times=100)  # type: ignore[arg-type]

    with pytest.raises(RegistryError, match=f"HTTP {status}"):
        registry(api, profile, sleeps).sync(make_plan(profile, "3.14.1", {}))

    assert elsewhere.requests == [] and not elsewhere.saw_the_key()


def test_where_python_org_says_it_put_a_record_is_never_visited(
    api: PydotorgDouble, elsewhere: Elsewhere, profile: Profile, sleeps: Sleeps
) -> None:
    api.add_release("Python 3.14.1")
    api.link_origin = elsewhere.origin  # every create answers with a Location elsewhere

    registry(api, profile, sleeps).sync(make_plan(profile, "3.14.1", {}))

    assert len(api.files("Python 3.14.1")) == 12
    assert elsewhere.requests == []


def test_an_api_url_with_another_port_is_another_site(profile: Profile, sleeps: Sleeps) -> None:
    with PydotorgDouble(users={"rm": (KEY, True)}) as api, PydotorgDouble() as other:
        pk = api.add_release("Python 3.14.1")
        api.link_origin = other.base_url.rstrip("/")  # same host, another port
        for n in range(130):
            api.add_file(
                name=f"old {n}", slug=f"old-{n}", url=f"https://www.python.org/old/{n}",
                os=f"{API}downloads/os/1/", release=f"{API}downloads/release/{pk}/",
            )  # fmt: skip
        with pytest.raises(RegistryError, match="another site"):
            registry(api, profile, sleeps).sync(make_plan(profile, "3.14.1", {}))
        assert other.requests == []


# -- a first create refused ---------------------------------------------------------------------


def test_a_400_on_a_first_create_is_a_refusal_even_if_the_record_is_there_by_then(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    api.add_release("Python 3.14.1")
    # The first create is answered 400 while an equal record now exists: someone else made it
    # (the double carries the create out, then refuses). Only a retry may take that as done.
    api.fail("create", status=400, commit=True)

    with pytest.raises(RegistryError) as caught:
        registry(api, profile, sleeps).sync(make_plan(profile, "3.14.1", {}))

    assert "HTTP 400" in str(caught.value) and "refused to create the record" in str(caught.value)
    assert sleeps == []  # a 400 is not retried
    assert [r.method for r in api.writes] == ["POST"]


# -- one download button per OS ----------------------------------------------------------------


def with_two_windows_buttons(profile: Profile) -> Profile:
    table = dict(profile.spec.pydotorg)
    table["rules"] = [
        {**rule, "download_button": True} if rule["name"] == "Windows installer (ARM64)" else rule
        for rule in table["rules"]
    ]
    return Profile(profile.spec.model_copy(update={"pydotorg": table}))


def test_two_download_buttons_for_one_os_are_refused_before_any_write(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    api.add_release("Python 3.14.1")
    both = with_two_windows_buttons(profile)
    reg = PydotorgRegistry(api.url, f"rm:{KEY}", both, retry=RetryPolicy(sleep=sleeps))

    with pytest.raises(RegistryError) as caught:
        reg.sync(make_plan(both, "3.14.1", {}))

    message = str(caught.value)
    assert "python-3.14.1-arm64.exe" in message and "python-3.14.1-amd64.exe" in message
    assert "download button of OS 'windows'" in message
    assert api.writes == []


def test_the_cpython_profile_gives_each_os_at_most_one_download_button(profile: Profile) -> None:
    settings = PydotorgSettings.from_profile(profile)
    for text in ("3.14.1", "3.14.0rc2", "3.15.0a1", "3.13.9", "3.9.20"):
        records = planned_records(settings, profile, make_plan(profile, text, {}))
        buttons = [record.os for record in records if record.download_button]
        assert sorted(buttons) == sorted(set(buttons)), (text, buttons)
        assert buttons, text  # the download page has a button to show


# -- a server that echoes the key never makes it shown ----------------------------------------


class EchoingRefusal:
    """A loopback API that refuses every request with 401 and, as some servers do, echoes the
    Authorization header it got at the end of a long body (plain text, or JSON)."""

    def __init__(self, as_json: bool) -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                # The key starts at character 272: a cut at 300 goes through it.
                text = "Unauthorized. " * 18 + f"you sent: {self.headers['Authorization']}"
                body = json.dumps({"detail": text}) if as_json else text
                data = body.encode()
                self.send_response(401)
                self.send_header("Content-Type", "application/json" if as_json else "text/plain")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/api/v1/"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_refusal_that_echoes_the_key_shows_no_part_of_it(
    profile: Profile, sleeps: Sleeps, as_json: bool
) -> None:
    key = "K3yS3cretV" + "0123456789abcdef" * 3
    server = EchoingRefusal(as_json)
    try:
        reg = PydotorgRegistry(
            server.url, f"rm:{key}", profile, retry=RetryPolicy(attempts=1, sleep=sleeps)
        )
        problems = reg.check()
    finally:
        server.stop()

    (problem,) = problems
    assert "HTTP 401" in problem and "you sent: ApiKey rm:***" in problem
    assert not any(key[i : i + 8] in problem for i in range(len(key) - 7)), problem
