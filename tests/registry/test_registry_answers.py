"""What the python.org client makes of answers python.org should not give (not JSON, no
'objects', pages without end, a create without its Location), of the reasons a refusal
carries, and how long it waits for an answer. Each problem is a sentence for the channel."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import httpx
import pytest

from bot.domain.profile import Profile
from bot.domain.tags import ReleaseTag
from bot.errors import RegistryError
from bot.http_client import RetryPolicy
from bot.ports import RegistryReport
from bot.pydotorg.registry import PydotorgRegistry
from tests.doubles.pydotorg import API, PydotorgDouble
from tests.doubles.server import LoopbackServer
from tests.registry.test_registry import KEY, Sleeps, make_plan

TAG = ReleaseTag.parse("3.14.1")


@pytest.fixture
def api() -> Iterator[PydotorgDouble]:
    with PydotorgDouble(users={"rm": (KEY, True)}) as double:
        double.add_release("Python 3.14.1")
        yield double


# -- a server that gives one answer to everything -----------------------------------------------


def problem_of_check(
    profile: Profile, status: int, body: bytes, *, content_type: str, reason: str | None = None
) -> str:
    """The one problem ``check`` reports against a server answering every request so."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(status, reason)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = LoopbackServer(Handler)
    try:
        reg = PydotorgRegistry(
            server.url + API.lstrip("/"), f"rm:{KEY}", profile, retry=RetryPolicy(attempts=1)
        )
        (problem,) = reg.check()
    finally:
        server.stop()
    assert KEY not in problem
    return problem


def as_json(value: object) -> bytes:
    return json.dumps(value).encode()


def test_a_look_up_answered_with_html_is_a_problem(profile: Profile) -> None:
    problem = problem_of_check(profile, 200, b"<html>Maintenance</html>", content_type="text/html")
    assert problem == (
        "pydotorg: python.org answered the look-up of the operating systems with something that "
        "is not JSON."
    )


def test_a_look_up_answered_with_a_json_list_is_a_problem(profile: Profile) -> None:
    problem = problem_of_check(profile, 200, as_json([]), content_type="application/json")
    assert problem.endswith(
        ": python.org answered the look-up of the operating systems unexpectedly."
    )


@pytest.mark.parametrize(
    "page",
    [{"meta": {}}, {"objects": None}, {"objects": [{"slug": "source"}, "windows"]}],
    ids=["no objects", "objects null", "not every object a dict"],
)
def test_a_look_up_without_a_list_of_objects_is_a_problem(
    profile: Profile, page: dict[str, object]
) -> None:
    problem = problem_of_check(profile, 200, as_json(page), content_type="application/json")
    assert problem == (
        "pydotorg: python.org answered a look-up without the expected 'objects' list."
    )


@pytest.mark.parametrize("key", ["error_message", "error", "detail"])
def test_a_refusal_shows_the_servers_message_by_itself(profile: Profile, key: str) -> None:
    body = as_json({key: "Sorry, the API is read-only today.", "code": 7})
    problem = problem_of_check(profile, 400, body, content_type="application/json")
    assert "(HTTP 400: Sorry, the API is read-only today.)." in problem


def test_a_refusal_without_a_known_message_field_shows_the_whole_answer(profile: Profile) -> None:
    body = as_json({"release_file": {"slug": "Enter a valid slug."}})
    problem = problem_of_check(profile, 400, body, content_type="application/json")
    assert '(HTTP 400: {"release_file": {"slug": "Enter a valid slug."}}).' in problem


def test_a_refusal_of_fields_quotes_each_field_and_its_messages(profile: Profile) -> None:
    # python.org's ReleaseFile.clean() refusals, as tastypie shows them
    errors = {"url": ["Must begin with 'https://www.python.org/'."], "slug": ["Bad.", "Taken."]}
    body = as_json({"downloads/release_file": errors})
    problem = problem_of_check(profile, 400, body, content_type="application/json")
    assert problem.endswith(
        "(HTTP 400: url: Must begin with 'https://www.python.org/'.; slug: Bad. Taken.)."
    )


def test_a_refusal_without_a_body_shows_the_status_reason(profile: Profile) -> None:
    problem = problem_of_check(profile, 400, b"", content_type="text/plain")
    assert "(HTTP 400: Bad Request)." in problem


def test_a_refusal_without_a_body_or_reason_says_no_reason_was_given(profile: Profile) -> None:
    problem = problem_of_check(profile, 400, b"", content_type="text/plain", reason="")
    assert "(HTTP 400: no reason given)." in problem


@pytest.mark.parametrize(
    "answer",
    [
        lambda text: text.encode(),
        lambda text: as_json({"error_message": text}),
        lambda text: as_json([text]),
    ],
    ids=["text", "error_message", "other json"],
)
def test_the_servers_reason_is_cut_after_300_characters(
    profile: Profile, answer: Callable[[str], bytes]
) -> None:
    problem = problem_of_check(profile, 400, answer("x" * 400), content_type="text/plain")
    shown = problem[problem.index("HTTP 400: ") + len("HTTP 400: ") : problem.rindex(").")]
    assert len(shown) == 300 and shown.endswith("x" * 290)


# -- python.org through a proxy that can change its answers -------------------------------------


class Proxy(httpx.BaseTransport):
    """Sends each request to the double over loopback, remembering the timeout it carries;
    ``change`` may replace the double's answer (python.org misbehaving), ``refuse`` makes
    the requests of a method fail to connect."""

    def __init__(self) -> None:
        self._real = httpx.HTTPTransport()
        self.timeouts: list[dict[str, float | None]] = []
        self.change: Callable[[httpx.Request, httpx.Response], httpx.Response] | None = None
        self.refuse = ""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.timeouts.append(request.extensions["timeout"])
        if request.method == self.refuse:
            raise httpx.ConnectError("connection refused", request=request)
        response = self._real.handle_request(request)
        if self.change is None:
            return response
        response.read()
        return self.change(request, response)


def is_files_list(request: httpx.Request) -> bool:
    return request.method == "GET" and request.url.path == f"{API}downloads/release_file/"


def through(
    api: PydotorgDouble, profile: Profile, proxy: Proxy, sleeps: Sleeps, **options: Any
) -> PydotorgRegistry:
    return PydotorgRegistry(
        api.url,
        f"rm:{KEY}",
        profile,
        transport=proxy,
        retry=RetryPolicy(attempts=2, sleep=sleeps),
        **options,
    )


def test_each_request_waits_30_seconds_for_python_org_by_default(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    proxy = Proxy()
    through(api, profile, proxy, sleeps).preflight(TAG)
    assert proxy.timeouts and all(
        t == {"connect": 30.0, "read": 30.0, "write": 30.0, "pool": 30.0} for t in proxy.timeouts
    )


def test_a_timeout_given_is_the_one_each_request_waits(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    proxy = Proxy()
    through(api, profile, proxy, sleeps, timeout=5.0).preflight(TAG)
    assert proxy.timeouts and all(t["read"] == 5.0 for t in proxy.timeouts)


@pytest.mark.parametrize(
    ("method", "words"),
    [
        ("POST", "could not be reached to create the record 'Gzipped source tarball' ("),
        ("DELETE", "could not be reached to delete the record 'Old installer' (https://www."),
    ],
)
def test_a_write_that_cannot_reach_python_org_names_the_record(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps, method: str, words: str
) -> None:
    plan = make_plan(profile, "3.14.1", {})
    if method == "DELETE":
        through(api, profile, Proxy(), sleeps).sync(plan)
        release = api.files("Python 3.14.1")[0]["release"]
        api.add_file(
            name="Old installer", slug="3141-old", url="https://www.python.org/old.exe",
            os=f"{API}downloads/os/2/", release=release,
        )  # fmt: skip
    proxy = Proxy()
    proxy.refuse = method

    with pytest.raises(RegistryError) as caught:
        through(api, profile, proxy, sleeps).sync(plan)

    assert words in str(caught.value) and "try again later" in str(caught.value)


def test_a_create_answered_without_its_location_is_an_error(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    def without_location(request: httpx.Request, response: httpx.Response) -> httpx.Response:
        headers = {k: v for k, v in response.headers.items() if k.lower() != "location"}
        return httpx.Response(response.status_code, headers=headers, content=response.content)

    proxy = Proxy()
    proxy.change = without_location

    with pytest.raises(RegistryError) as caught:
        through(api, profile, proxy, sleeps).sync(make_plan(profile, "3.14.1", {}))

    message = str(caught.value)
    assert "python.org did not say where it put the record" in message
    assert "(create the record 'Gzipped source tarball' (" in message


def test_a_list_of_files_without_pagination_is_one_page(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    def without_meta(request: httpx.Request, response: httpx.Response) -> httpx.Response:
        if not is_files_list(request):
            return response
        page = response.json()
        del page["meta"]
        return httpx.Response(200, json=page)

    proxy = Proxy()
    proxy.change = without_meta

    report = through(api, profile, proxy, sleeps).sync(make_plan(profile, "3.14.1", {}))

    assert report == RegistryReport(created=12)


def test_pages_of_files_without_end_are_an_error(
    api: PydotorgDouble, profile: Profile, sleeps: Sleeps
) -> None:
    def next_is_itself(request: httpx.Request, response: httpx.Response) -> httpx.Response:
        if not is_files_list(request):
            return response
        page = response.json()
        page["meta"]["next"] = str(request.url)
        return httpx.Response(200, json=page)

    proxy = Proxy()
    proxy.change = next_is_itself
    api.throttle_at = 2000  # python.org would say 429 after 600 requests an hour

    with pytest.raises(RegistryError) as caught:
        through(api, profile, proxy, sleeps).sync(make_plan(profile, "3.14.1", {}))

    assert str(caught.value) == "python.org listed more pages of release files than expected."
    assert sum(r.path == f"{API}downloads/release_file/" for r in api.requests) == 1000
    assert api.writes == []
