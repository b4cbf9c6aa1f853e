"""The health and board port defends itself: half-open connections are cut, the connections
stay below the process's file limit with room made for new ones, failures are logged once
per kind, and /healthz answers whatever the board is put through. Real sockets on 127.0.0.1,
against the real server (and `relbot run` under `ulimit -n 1024`)."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import logging
import resource
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bot.web.board_routes import BoardRoutes
from bot.web.guard import ConnectionGuard, OncePerKind, connection_limit
from bot.web.health import HealthServer
from tests.conftest import World
from tests.sshd import free_port
from tests.waiting import Drained, wait_until

RELBOT = Path(sys.executable).with_name("relbot")
HALF_OPEN = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"  # and never the blank line


@contextlib.contextmanager
def files_allowed(count: int) -> Iterator[None]:
    """This test process may open ``count`` files (tests run as root: the hard limit too)."""
    before = resource.getrlimit(resource.RLIMIT_NOFILE)
    hard = max(before[1], count) if before[1] != resource.RLIM_INFINITY else before[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (count, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, before)


def half_open(port: int, count: int) -> list[socket.socket]:
    """``count`` connections that each send a request line and headers, never the end."""
    opened = []
    for _ in range(count):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(HALF_OPEN)
        opened.append(s)
    return opened


def closed_by_server(s: socket.socket) -> bool:
    s.setblocking(False)
    try:
        return s.recv(1 << 16) == b""
    except BlockingIOError:
        return False
    except OSError:  # reset: cut
        return True


def healthz(port: int) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/healthz")
        return conn.getresponse().status
    finally:
        conn.close()


# -- relbot run under ulimit -n 1024 ---------------------------------------------------------


def test_1100_half_open_connections_leave_healthz_and_chat_answering_and_the_log_short(
    tmp_path: Path,
) -> None:
    port = free_port()
    (tmp_path / "relbot.toml").write_text(
        textwrap.dedent(f"""
            [storage]
            staging = "data/staging"
            public = "data/public"
            [health]
            port = {port}
            [people.hugo]
            rm = ["3.14"]
            roles = ["source", "docs"]
            """),
        encoding="utf-8",
    )
    (tmp_path / "data" / "staging" / "3.14.1").mkdir(parents=True)
    (tmp_path / "data" / "staging" / "3.14.1" / "Python-3.14.1.tgz").write_bytes(b"x")
    (tmp_path / "data" / "public").mkdir()

    def ulimit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))

    bot = subprocess.Popen(
        [str(RELBOT), "run"], cwd=tmp_path, stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=ulimit,
    )  # fmt: skip
    out, err = Drained(bot.stdout), Drained(bot.stderr)
    assert bot.stdin is not None
    sockets: list[socket.socket] = []
    with files_allowed(4096):
        try:
            wait_until("the health port", lambda: _answers(port))
            sockets += half_open(port, 1100)

            assert healthz(port) == 200
            bot.stdin.write("/status 3.14.1\n")
            bot.stdin.flush()
            wait_until("the answer to /status", lambda: out.has("3.14.1: 0 of"))
            # The server cuts what never becomes a request (the limit, then the idle time).
            wait_until(
                "every half-open connection cut",
                lambda: all(closed_by_server(s) for s in sockets),
                timeout=60,
            )
            assert healthz(port) == 200
        finally:
            for s in sockets:
                s.close()
            bot.stdin.close()
            assert bot.wait(timeout=60) == 0
    log = err.text(bot)
    assert len(log.splitlines()) < 100, log[-3000:]
    assert "Too many open files" not in log and "Traceback" not in log
    assert "health server: at its limit of 256 connections" in log


def _answers(port: int) -> bool:
    try:
        return healthz(port) == 200
    except OSError:
        return False


# -- the guard, in process -------------------------------------------------------------------


@pytest.fixture
async def served(tmp_path: Path) -> tuple[World, HealthServer, int]:
    world = World(tmp_path)
    port = free_port()
    server = HealthServer(world.gate.metrics, 30, port)
    server.serve_board(BoardRoutes(world.gate))
    return world, server, port


async def test_a_connection_that_sends_no_whole_request_is_cut(
    served: tuple[World, HealthServer, int],
) -> None:
    _, server, port = served
    server.guard = ConnectionGuard(idle=0.5)
    await server.start()
    try:
        s = (await asyncio.to_thread(half_open, port, 1))[0]
        await asyncio.to_thread(wait_until, "the cut", lambda: closed_by_server(s), 10)
        assert server.guard.cuts == {"idle": 1} and server.guard.open == 0
        s.close()
    finally:
        await server.stop()


async def test_at_the_limit_a_new_connection_takes_the_place_of_the_longest_idle_one(
    served: tuple[World, HealthServer, int],
) -> None:
    _, server, port = served
    server.guard = ConnectionGuard(limit=8)
    await server.start()
    try:
        sockets = await asyncio.to_thread(half_open, port, 20)
        async with httpx.AsyncClient(timeout=10) as client:
            answer = await client.get(f"http://127.0.0.1:{port}/healthz")
        assert answer.status_code == 200
        await asyncio.to_thread(
            wait_until, "the oldest cut", lambda: all(closed_by_server(s) for s in sockets[:12])
        )
        assert server.guard.open <= 8 and server.guard.cuts["limit"] >= 13
        assert not any(closed_by_server(s) for s in sockets[-7:])  # the newest stay
        for s in sockets:
            s.close()
    finally:
        await server.stop()


async def test_healthz_answers_while_the_board_is_hammered(
    served: tuple[World, HealthServer, int],
) -> None:
    world, server, port = served
    world.stage("3.14.1")
    for n in range(3000):
        world.write("3.14.1", f"stray-{n:04d}.bin", b"x")
    await world.gate.scan()
    await server.start()
    board = server._board
    assert board is not None
    try:
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}",
            timeout=60,
            limits=httpx.Limits(max_connections=300),
        ) as client:
            pages = [client.get(p) for p in ["/", "/releases/3.14.1", "/api/releases/3.14.1"] * 60]
            hammering = asyncio.gather(*pages)
            health = await client.get("/healthz")
            answers = await hammering
        assert health.status_code == 200
        assert all(a.status_code == 200 for a in answers)
        assert board.renderings == 3  # once per page, for every request
        data = answers[2].json()
        assert len(data["files"]) == 300 and data["files_not_shown"] > 2700
    finally:
        await server.stop()


def test_a_failure_is_logged_once_per_kind_as_one_line(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("tests.noisy")
    once = OncePerKind(window=3600)
    logger.addFilter(once)
    caplog.set_level(logging.INFO, logger="tests.noisy")
    try:
        for n in range(1000):
            try:
                raise OSError(24, "Too many open files")
            except OSError:
                logger.exception("socket.accept() out of system resource\nsocket: fd=%d", n)
            logger.warning("Error handling request from %s", f"127.0.0.{n % 250}")
    finally:
        logger.removeFilter(once)
    lines = caplog.text.splitlines()
    assert len(lines) == 2, lines
    assert "socket.accept() out of system resource: OSError: [Errno 24]" in lines[0]
    assert "Traceback" not in caplog.text


def test_the_connection_limit_stays_well_below_the_file_limit() -> None:
    with files_allowed(1024):
        assert connection_limit() == 256
    with files_allowed(40):
        assert connection_limit() == 10


def test_the_unit_raises_the_file_limit() -> None:
    unit = (Path(__file__).resolve().parents[1] / "deploy" / "relbot.service").read_text()
    assert "\nLimitNOFILE=" in unit


async def test_a_slow_client_that_never_reads_its_answer_is_cut(
    served: tuple[World, HealthServer, int],
) -> None:
    world, server, port = served
    world.stage("3.14.1")
    for n in range(3000):
        world.write("3.14.1", f"stray-{n:04d}.bin", b"x")
    await world.gate.scan()
    server.guard = ConnectionGuard(idle=0.5, busy=0.5)
    await server.start()
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        for _ in range(50):  # keep-alive requests it never reads the answers of
            s.sendall(b"GET /releases/3.14.1 HTTP/1.1\r\nHost: x\r\n\r\n")
        await asyncio.to_thread(wait_until, "an answer", lambda: server.guard.open == 1, 20)
        await asyncio.to_thread(wait_until, "the cut", lambda: server.guard.open == 0, 20)
        assert server.guard.cuts.get("idle", 0) + server.guard.cuts.get("busy", 0) == 1
        s.close()
    finally:
        await server.stop()


async def test_a_request_not_answered_in_time_is_cut() -> None:
    from aiohttp import web

    from bot.web.guard import GuardedSite

    guard = ConnectionGuard(busy=0.3)
    app = web.Application(middlewares=[guard.middleware])
    never = asyncio.Event()

    async def stuck(request: web.Request) -> web.Response:
        await never.wait()
        return web.Response(text="late")

    app.router.add_get("/stuck", stuck)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    guard.start()
    await GuardedSite(runner, "127.0.0.1", port, guard).start()
    try:
        async with httpx.AsyncClient(timeout=20) as client:
            with pytest.raises(httpx.RemoteProtocolError):
                await client.get(f"http://127.0.0.1:{port}/stuck")
        assert guard.cuts == {"busy": 1}
    finally:
        never.set()
        await guard.stop()
        await runner.cleanup()
