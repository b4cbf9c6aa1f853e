"""``relbot wait --board URL``, in this process, against the real board (the health server in
front of a gate on real folders): the release's JSON is what the wait judges, a release the
board has never seen is waited for, and what is not the board (another server, nobody, a URL
that is no board's) is one sentence."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from bot.domain.tags import ReleaseTag
from bot.errors import RelbotError
from bot.wait.judge import LookFailed, Outcome, Until, wait
from bot.wait.sources import BoardSource, StateFileSource, source_for
from bot.web.board_routes import BoardRoutes
from bot.web.health import HealthServer
from tests.conftest import World

TAG = "3.14.1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def served(world: World, *, board: bool = True) -> tuple[HealthServer, str]:
    """The health server of ``world``'s gate (with its board, or without) and its URL."""
    port = free_port()
    server = HealthServer(world.gate.metrics, 30, port)
    if board:
        server.serve_board(BoardRoutes(world.gate))
    await server.start()
    return server, f"http://127.0.0.1:{port}/"


@pytest.fixture
async def board(world: World) -> AsyncIterator[str]:
    server, url = await served(world)
    try:
        yield url
    finally:
        await server.stop()


def acting(*steps: Callable[[], Awaitable[object]]) -> Callable[[float], Awaitable[None]]:
    """A pause between looks in which the team does the next of ``steps``."""
    left = list(steps)

    async def pause(seconds: float) -> None:
        if left:
            await left.pop(0)()

    return pause


async def test_a_wait_on_the_board_sees_the_release_appear_and_become_ready(
    world: World, board: str
) -> None:
    async def stage() -> None:
        world.stage(TAG)
        await world.gate.scan()

    lines: list[str] = []
    looking = BoardSource(board, ReleaseTag.parse(TAG))
    try:
        result = await wait(
            looking,
            TAG,
            Until.READY,
            timeout=None,
            say=lines.append,
            sleep=acting(stage, lambda: world.ready_all(TAG)),
        )
    finally:
        await looking.close()

    assert looking.url == f"{board}api/releases/{TAG}"
    assert result.verdict.outcome is Outcome.REACHED, result.verdict.sentence
    assert result.release is not None and result.release["tag"] == TAG
    assert lines[0] == f"{TAG}: nothing is recorded for {TAG} yet"
    assert lines[1].startswith(f"{TAG}: not ready: "), lines


async def test_a_server_that_is_not_the_board_is_one_sentence(world: World) -> None:
    server, url = await served(world, board=False)  # the health server without its board
    looking = BoardSource(url.rstrip("/"), ReleaseTag.parse(TAG))
    try:
        with pytest.raises(LookFailed) as caught:
            await looking.look()
    finally:
        await looking.close()
        await server.stop()

    assert str(caught.value).startswith(f"{url}api/releases/{TAG} answered 404 without a release")
    assert str(caught.value).endswith("is it the bot's board ([health] server)?")


async def test_a_board_nobody_serves_is_one_sentence() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    looking = BoardSource(url, ReleaseTag.parse(TAG), timeout=5)
    try:
        with pytest.raises(LookFailed) as caught:
            await looking.look()
    finally:
        await looking.close()

    # httpx's own reason, as it gives it (a refused connection)
    assert str(caught.value) == (
        f"The board at {url}/api/releases/{TAG} cannot be reached (All connection attempts failed)."
    )


@pytest.mark.parametrize("given", ["ftp://127.0.0.1:9110", "127.0.0.1:9110", "http://"])
def test_a_board_url_that_is_no_board_s_is_refused_naming_the_option(given: str) -> None:
    with pytest.raises(RelbotError) as caught:
        BoardSource(given, ReleaseTag.parse(TAG))

    assert str(caught.value) == (
        f"--board: {given!r} is not the board's URL; give it as http://HOST:PORT (the [health] "
        "server of the bot)."
    )


async def test_the_board_is_asked_when_given_else_the_state_file(tmp_path: Path) -> None:
    world = World(tmp_path)
    tag = ReleaseTag.parse(TAG)
    on_board = source_for(world.config, tag, Until.READY, "http://127.0.0.1:9110")
    on_file = source_for(world.config, tag, Until.READY, None)
    try:
        assert isinstance(on_board, BoardSource)
        assert on_board.url == f"http://127.0.0.1:9110/api/releases/{TAG}"
        assert isinstance(on_file, StateFileSource)
    finally:
        await on_board.close()
        await on_file.close()
