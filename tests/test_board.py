"""The release board served by the real health server on 127.0.0.1, in front of a gate on real
folders and a real SQLite file: the JSON agrees with /publish at every step, the pages escape
hostile names, show no code, and list nothing per request."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import re
import shutil
import socket
from collections.abc import AsyncIterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx
import pytest

from bot.domain.files import StagedFile
from bot.domain.tags import ReleaseTag
from bot.http_client import RetryPolicy
from bot.pydotorg.registry import PydotorgRegistry
from bot.service.gate import PREFLIGHT_EVERY
from bot.service.pipeline.steps import PIPELINE
from bot.storage.local import LocalStorage
from bot.web.board_routes import BoardRoutes
from bot.web.health import HealthServer
from tests.conftest import World
from tests.doubles.pydotorg import PydotorgDouble

HOSTILE = '"><img src=x onerror=alert(1)>.tgz'


class CountingStorage(LocalStorage):
    """Local folders that count how often staging is listed."""

    listings = 0

    def list_staging(self, tag: ReleaseTag) -> dict[str, StagedFile] | None:
        self.listings += 1
        return super().list_staging(tag)

    def staged_tags(self) -> list[str]:
        self.listings += 1
        return super().staged_tags()


class BoardWorld(World):
    def make_storage(self) -> LocalStorage:
        return CountingStorage(self.staging, self.public)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def world(tmp_path: Path) -> BoardWorld:
    return BoardWorld(tmp_path)


@pytest.fixture
async def board(world: World) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client on the health server of ``world``'s gate, board included."""
    port = free_port()
    server = HealthServer(world.gate.metrics, 30, port)
    server.serve_board(BoardRoutes(world.gate))
    await server.start()
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            yield client
    finally:
        await server.stop()


async def release_json(board: httpx.AsyncClient, tag: str) -> dict[str, Any]:
    response = await board.get(f"/api/releases/{tag}")
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


async def publish_offers_a_plan(world: World, tag: str) -> bool:
    reply = await world.say("hugo", f"/publish {tag}")
    return reply.confirm is not None


async def assert_board_agrees_with_publish(
    world: World, board: httpx.AsyncClient, tag: str, expected: bool
) -> dict[str, Any]:
    data = await release_json(board, tag)
    assert data["publishable"] is expected, data["blockers"]
    assert (data["blockers"] == []) is expected
    assert await publish_offers_a_plan(world, tag) is expected
    return data


async def test_publishable_is_true_exactly_when_publish_offers_a_plan(
    world: World, board: httpx.AsyncClient
) -> None:
    world.stage("3.14.1", roles=["source"])
    await world.gate.scan()
    data = await assert_board_agrees_with_publish(world, board, "3.14.1", False)
    assert data["tag"] == "3.14.1" and data["published"] is False
    assert data["roles"]["source"] == {
        "state": "complete",
        "by": None,
        "at": None,
        "detail": data["roles"]["source"]["detail"],
    }
    assert data["roles"]["windows"]["state"] == "incomplete"

    world.stage("3.14.1")
    await world.gate.scan()
    for person, role in [("hugo", "source"), ("hugo", "docs"), ("steve", "windows")]:
        assert not (await world.say(person, f"/ready {role} 3.14.1")).private
        await assert_board_agrees_with_publish(world, board, "3.14.1", False)
    assert not (await world.say("ned", "/ready macos 3.14.1")).private
    data = await assert_board_agrees_with_publish(world, board, "3.14.1", True)
    assert {r: v["state"] for r, v in data["roles"].items()} == dict.fromkeys(
        ["source", "docs", "windows", "macos"], "ready"
    )
    assert data["roles"]["windows"]["by"] == "steve"

    await world.say("ned", "/hold 3.14.1 the macOS installer crashes on 15.2")
    data = await assert_board_agrees_with_publish(world, board, "3.14.1", False)
    assert data["blockers"] == ["held by ned: the macOS installer crashes on 15.2"]
    assert data["holds"][0]["by"] == "ned"
    await world.say("ned", "/unhold 3.14.1")
    await assert_board_agrees_with_publish(world, board, "3.14.1", True)

    world.write("3.14.1", "notes.txt", "stray\n")
    await world.gate.scan()
    assert (await release_json(board, "3.14.1"))["blockers"] == ["staging: notes.txt (uploading)"]
    await world.gate.scan()  # settled: no longer growing, still not anyone's
    data = await assert_board_agrees_with_publish(world, board, "3.14.1", False)
    assert data["blockers"] == ["staging: notes.txt (unexpected)"]
    (world.staging / "3.14.1" / "notes.txt").unlink()
    await world.gate.scan()
    await assert_board_agrees_with_publish(world, board, "3.14.1", True)

    world.write("3.14.1", "python-3.14.1-macos11.pkg", "rebuilt\n")
    await world.gate.scan()  # the scan withdraws the macos claim; the file is uploading
    data = await release_json(board, "3.14.1")
    assert data["roles"]["macos"]["state"] == "incomplete" and not data["publishable"]
    await world.gate.scan()
    data = await assert_board_agrees_with_publish(world, board, "3.14.1", False)
    assert data["roles"]["macos"]["state"] == "withdrawn"
    assert data["roles"]["macos"]["by"] == "relbot"
    await world.say("ned", "/ready macos 3.14.1")
    await assert_board_agrees_with_publish(world, board, "3.14.1", True)

    reply = await world.say("hugo", await world.plan("3.14.1"))
    assert not reply.private, reply.text
    data = await release_json(board, "3.14.1")
    assert data["published"] is True and data["publishable"] is False
    assert data["published_by"] == "hugo"
    assert data["plan"]["stage"] == "published"
    assert data["plan"]["steps_done"] == list(PIPELINE)
    assert all(f["status"] == "published" for f in data["files"])
    assert not await publish_offers_a_plan(world, "3.14.1")


async def test_files_carry_size_hash_signature_and_target(
    world: World, board: httpx.AsyncClient
) -> None:
    world.stage("3.14.1")
    world.write("3.14.1", "Python-3.14.1.tgz.sigstore", "{}")
    await world.gate.scan()
    await world.say("hugo", "/ready source 3.14.1")
    files = {f["path"]: f for f in (await release_json(board, "3.14.1"))["files"]}
    tgz = files["Python-3.14.1.tgz"]
    content = (world.staging / "3.14.1" / "Python-3.14.1.tgz").read_bytes()
    assert tgz["size"] == len(content)
    assert tgz["sha256"] == hashlib.sha256(content).hexdigest()
    assert tgz["role"] == "source" and tgz["required"] is True and tgz["status"] == "present"
    assert tgz["target"] == "3.14.1/Python-3.14.1.tgz"
    assert tgz["signature"] == "invalid"  # "{}" is no bundle
    assert files["Python-3.14.1.tgz.sigstore"]["required"] is False
    docs = next(f for f in files.values() if f["role"] == "docs")
    assert docs["target"].startswith("doc/3.14.1/")
    windows = next(f for f in files.values() if f["role"] == "windows")
    assert windows["sha256"] is None  # nobody asked for it yet: never hashed on a request
    assert windows["signature"] == "missing"


@contextlib.asynccontextmanager
async def ready_with_python_org(
    tmp_path: Path,
) -> AsyncIterator[tuple[World, PydotorgDouble, httpx.AsyncClient]]:
    """3.14.1 staged, scanned and ready, python.org's double behind the registry, and a
    client of the board."""
    with PydotorgDouble(users={"rm": ("key", True)}) as api:
        world = BoardWorld(tmp_path)
        world.conn.registry = PydotorgRegistry(
            api.url, "rm:key", world.profile, auth_source="PYDOTORG_AUTH",
            retry=RetryPolicy(attempts=1, backoff=0.0, sleep=lambda _: None),
        )  # fmt: skip
        port = free_port()
        server = HealthServer(world.gate.metrics, 30, port)
        server.serve_board(BoardRoutes(world.gate))
        await server.start()
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as board:
                world.stage("3.14.1")
                await world.gate.scan()
                await world.ready_all("3.14.1")
                yield world, api, board
        finally:
            await server.stop()


async def test_python_org_objection_makes_it_unpublishable_as_publish_says(
    tmp_path: Path,
) -> None:
    async with ready_with_python_org(tmp_path) as (world, api, board):
        data = await assert_board_agrees_with_publish(world, board, "3.14.1", False)
        assert len(data["blockers"]) == 1
        assert data["blockers"][0].startswith("python.org: ")
        api.add_release("Python 3.14.1")
        world.clock.advance(PREFLIGHT_EVERY)  # python.org is asked again after it
        await assert_board_agrees_with_publish(world, board, "3.14.1", True)


async def test_the_board_never_waits_for_a_command_holding_the_release(tmp_path: Path) -> None:
    """A confirmation holds its release while it publishes (seconds, for 1.5 GB): the board
    must not wait to ask python.org meanwhile. It says what it last knew, and asks once the
    release is free."""
    async with ready_with_python_org(tmp_path) as (world, api, board):
        api.add_release("Python 3.14.1")
        tag = ReleaseTag.parse("3.14.1")
        seen = world.gate._services.observer.seen(tag)
        assert seen is not None and seen.preflight is None  # never asked yet
        async with world.gate._services.lock(tag):
            data = await asyncio.wait_for(release_json(board, "3.14.1"), 5)
            assert data["publishable"] and seen.preflight is None  # not asked
        observed = await world.gate.observed(tag)  # what the next page is made of
        assert not observed.blockers and seen.preflight is not None  # asked now


async def test_a_tag_never_seen_is_404(world: World, board: httpx.AsyncClient) -> None:
    world.stage("3.14.1")
    await world.gate.scan()
    for path in ["/api/releases/3.14.2", "/api/releases/latest", "/releases/3.14.2"]:
        response = await board.get(path)
        assert response.status_code == 404, path
    assert "never seen" in (await board.get("/api/releases/3.14.2")).json()["error"]
    assert (await board.get("/api/releases/3.14.1")).status_code == 200
    refused = await world.say("hugo", "/hold 3.15.0 not yet")  # nobody staged it
    assert refused.private
    assert (await board.get("/api/releases/3.15.0")).status_code == 404
    world.stage("3.15.0")
    assert not (await world.say("hugo", "/hold 3.15.0 not yet")).private
    shutil.rmtree(world.staging / "3.15.0")  # known from the log alone
    assert (await board.get("/api/releases/3.15.0")).status_code == 200


class Elements(HTMLParser):
    """The tags and attributes a browser would build from a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


async def test_pages_escape_hostile_names_and_reasons(
    world: World, board: httpx.AsyncClient
) -> None:
    world.stage("3.14.1")
    world.write("3.14.1", HOSTILE, "x")
    await world.gate.scan()
    await world.say("hugo", "/hold 3.14.1 <script>alert('held')</script> & more")
    for path in ["/releases/3.14.1", "/"]:
        response = await board.get(path)
        page = response.text
        assert "&lt;img src=x onerror=alert(1)&gt;.tgz" in page
        parser = Elements()
        parser.feed(page)
        assert not [t for t in parser.tags if t[0] == "img"]
        assert [t for t in parser.tags if t[0] == "script"] == [("script", {})]  # ours only
        assert not any(k.startswith("on") for _, attrs in parser.tags for k in attrs)
        assert "script-src 'sha256-" in response.headers["Content-Security-Policy"]
        assert response.headers["X-Content-Type-Options"] == "nosniff"
    page = (await board.get("/releases/3.14.1")).text
    assert "&lt;script&gt;alert(&#x27;held&#x27;)&lt;/script&gt; &amp; more" in page


async def test_pages_never_show_a_confirmation_code(world: World, board: httpx.AsyncClient) -> None:
    world.stage("3.14.1")
    await world.gate.scan()
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")
    code = line.split()[-1]
    await world.say("hugo", "/publish 3.14.1 confirm WRONG1")
    data = await release_json(board, "3.14.1")
    assert data["plan"]["stage"] == "offered" and data["plan"]["by"] == "hugo"
    page = (await board.get("/releases/3.14.1")).text
    assert "Offered to hugo" in page
    for text in (page, str(data), (await board.get("/")).text):
        assert code not in text
        assert "WRONG1" not in text  # the refused command is shown redacted
        assert not re.search(r"confirm [A-Z0-9]{6,12}", text)


async def test_requests_list_nothing_and_show_each_step_after_a_scan(
    world: World, board: httpx.AsyncClient
) -> None:
    storage = world.storage
    assert isinstance(storage, CountingStorage)
    world.stage("3.14.1", roles=["source", "docs"])
    await world.gate.scan()
    listed = storage.listings
    for _ in range(5):
        assert (await board.get("/")).status_code == 200
        assert (await board.get("/releases/3.14.1")).status_code == 200
        await release_json(board, "3.14.1")
    assert storage.listings == listed
    assert (await release_json(board, "3.14.1"))["roles"]["windows"]["state"] == "incomplete"
    world.stage("3.14.1", roles=["windows"])  # the board learns of it at the next scan
    assert (await release_json(board, "3.14.1"))["roles"]["windows"]["state"] == "incomplete"
    await world.gate.scan()  # the scan that sees them appear shows them uploading
    data = await release_json(board, "3.14.1")
    windows = [f["status"] for f in data["files"] if f["role"] == "windows"]
    assert set(windows) == {"uploading"}
    await world.gate.scan()  # the next one sees them settled, as the gate does
    assert (await release_json(board, "3.14.1"))["roles"]["windows"]["state"] == "complete"


async def test_index_shows_open_and_recently_published_releases(
    world: World, board: httpx.AsyncClient
) -> None:
    world.stage("3.14.1")
    world.stage("3.15.0a1", roles=["source"])
    await world.gate.scan()
    await world.ready_all("3.14.1")
    page = (await board.get("/")).text
    assert 'href="/releases/3.14.1"' in page and 'href="/releases/3.15.0a1"' in page
    assert "Publishable: the release manager can say /publish 3.14.1." in page
    assert "Nothing published yet." in page
    await world.say("hugo", await world.plan("3.14.1"))
    page = (await board.get("/")).text
    published = page.split("Recently published")[-1]
    assert 'href="/releases/3.14.1"' in published and "hugo" in published
    assert 'href="/releases/3.15.0a1"' in page.split("Recently published")[0]


async def test_an_unchanged_page_is_revalidated_with_its_etag(
    world: World, board: httpx.AsyncClient
) -> None:
    world.stage("3.14.1")
    await world.gate.scan()
    first = await board.get("/releases/3.14.1")
    etag = first.headers["ETag"]
    again = await board.get("/releases/3.14.1", headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""
    await world.say("hugo", "/ready source 3.14.1")
    changed = await board.get("/releases/3.14.1", headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["ETag"] != etag


class Tables(HTMLParser):
    """For each table: its caption, its column headers' scopes, and each body row's first
    cell (a row header, or not)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[dict[str, Any]] = []
        self._in: list[str] = []
        self._first_cell = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append({"caption": False, "col_scopes": [], "row_heads": []})
        elif tag == "caption":
            self.tables[-1]["caption"] = True
        elif tag == "tr" and "tbody" in self._in:
            self._first_cell = True
        elif tag in ("th", "td"):
            if "thead" in self._in:
                self.tables[-1]["col_scopes"].append(dict(attrs).get("scope"))
            elif self._first_cell:
                self.tables[-1]["row_heads"].append(dict(attrs).get("scope") == "row")
                self._first_cell = False
        self._in.append(tag)

    def handle_endtag(self, tag: str) -> None:
        while self._in and self._in.pop() != tag:
            pass


async def test_every_table_has_a_caption_column_headers_and_row_headers(
    world: World, board: httpx.AsyncClient
) -> None:
    world.stage("3.14.1")
    await world.gate.scan()
    await world.ready_all("3.14.1")
    await world.say("ned", "/hold 3.14.1 wait")
    for path in ["/", "/releases/3.14.1"]:
        parser = Tables()
        parser.feed((await board.get(path)).text)
        assert parser.tables, path
        for table in parser.tables:
            assert table["caption"], table
            assert table["col_scopes"] and set(table["col_scopes"]) == {"col"}, table
            assert table["row_heads"] and all(table["row_heads"]), table
    page = (await board.get("/releases/3.14.1")).text
    for word in ("ready", "present", "held by ned: wait"):  # states in words, not only colour
        assert word in page
