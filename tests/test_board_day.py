"""The board's index as the day on one page: each open release says where it stands and who
must act, in the words of ``/status`` without a tag; each release published lately says how
many of its files are public and where. Served by the real health server; nothing listed."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from bot.web.board_routes import BoardRoutes
from bot.web.health import HealthServer
from tests.test_board import BoardWorld, CountingStorage, free_port


@pytest.fixture
def world(tmp_path: Path) -> BoardWorld:
    return BoardWorld(tmp_path)  # its storage counts listings


@pytest.fixture
async def board(world: BoardWorld) -> AsyncIterator[httpx.AsyncClient]:
    port = free_port()
    server = HealthServer(world.gate.metrics, 30, port)
    server.serve_board(BoardRoutes(world.gate))
    await server.start()
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            yield client
    finally:
        await server.stop()


def row(page: str, tag: str) -> str:
    """The table row of ``tag`` on the index, tags stripped, spaces collapsed."""
    found = re.search(rf'<tr><th scope="row"><a href="/releases/{re.escape(tag)}">.*?</tr>', page)
    assert found is not None, page
    return " ".join(re.sub(r"<[^>]+>", " ", found.group(0)).split())


async def test_the_index_says_who_must_act_on_each_open_release(
    world: BoardWorld, board: httpx.AsyncClient
) -> None:
    world.stage("3.14.1")
    world.stage("3.14.2")
    world.stage("3.15.0a2", roles=["source"])
    await world.ready_all("3.14.1")
    await world.say("ned", "/hold 3.14.2 notarization failed")
    await world.gate.scan()
    glance = (await world.say("eve", "/status")).text
    storage = world.storage
    assert isinstance(storage, CountingStorage)
    listings = storage.listings

    page = (await board.get("/")).text

    assert "Who must act" in page
    assert "publishable hugo or alice may /publish 3.14.1" in row(page, "3.14.1")
    assert "held by ned: notarization failed; ned or hugo or alice may /unhold 3.14.2" in row(
        page, "3.14.2"
    )
    waits = "collecting waits for source (hugo), windows (steve: 7 files missing)"
    assert waits in row(page, "3.15.0a2")
    for line in glance.splitlines()[1:]:  # the same words as /status
        tag, word, detail = line.split(maxsplit=2)
        assert f"{word} {detail}" in row(page, tag)
    assert storage.listings == listings


async def test_a_release_published_lately_says_how_many_files_are_public(
    world: BoardWorld, board: httpx.AsyncClient
) -> None:
    staged = world.stage("3.14.1")
    await world.ready_all("3.14.1")
    await world.say("hugo", await world.plan("3.14.1"))

    page = (await board.get("/")).text

    published = page.split("Recently published")[-1]
    assert "where they are public" in published
    assert f"{len(staged)} files" in row(published, "3.14.1")
