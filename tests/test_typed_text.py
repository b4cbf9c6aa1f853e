"""What people type is shown as typed, never obeyed: a reason with an ANSI escape or a
right-to-left override reaches the console, `relbot status`, `relbot audit` and the board
escaped (``\\x1b``, ``\\u202e``), whatever command carried it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from bot.demo import stage_demo
from bot.domain.commands import Hold, Waive, parse_command
from bot.domain.profile import load_profile
from bot.web.board_routes import BoardRoutes
from bot.web.health import HealthServer
from tests.conftest import World
from tests.pinned import RELEASE_CYCLE_LINE

RELBOT = Path(sys.executable).with_name("relbot")
TAG = "3.14.1"
ROLES = ("source", "docs", "windows", "macos")
# Clears the screen, then turns what follows around: "reason" would read "nosaer".
HOSTILE = "\x1b[2J\x1b[31mred\x1b[0m \u202enosaer \u2066x\u2069"
UNSAFE = ("\x1b", "\u202e", "\u2066", "\u2069")


def assert_safe(text: str) -> None:
    for char in UNSAFE:
        assert char not in text, f"{char!r} reached the output"
    assert "\\x1b[2J" in text and "\\u202e" in text  # shown, escaped


def test_every_free_text_argument_is_escaped_when_parsed() -> None:
    hold = parse_command(f"/hold {TAG} {HOSTILE}", ROLES)
    waive = parse_command(f"/waive {TAG} macos {HOSTILE}", ROLES)
    path = parse_command(f"/waive {TAG} \u202egkp.exe", ROLES)

    assert isinstance(hold, Hold) and isinstance(waive, Waive) and isinstance(path, Waive)
    shown = r"\x1b[2J\x1b[31mred\x1b[0m \u202enosaer \u2066x\u2069"
    assert hold.reason == waive.reason == shown
    assert path.target == "\\u202egkp.exe"


def relbot(folder: Path, *args: str, stdin: str = "") -> str:
    done = subprocess.run(
        [str(RELBOT), *args],
        cwd=folder,
        input=stdin.encode(),
        capture_output=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONIOENCODING": "utf-8:strict"},
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return done.stdout.decode() + done.stderr.decode()


def test_a_waiver_and_a_hold_reason_reach_console_status_and_audit_escaped(
    tmp_path: Path,
) -> None:
    (tmp_path / "relbot.toml").write_text(
        RELEASE_CYCLE_LINE + '[people.hugo]\nrm = ["3.14"]\nroles = ["source", "docs"]\n',
        encoding="utf-8",
    )
    stage_demo(tmp_path / "relbot-data" / "staging", load_profile("cpython"))
    (tmp_path / "relbot-data" / "public").mkdir()

    console = relbot(
        tmp_path,
        "run",
        stdin=f"/waive {TAG} macos {HOSTILE}\n/hold {TAG} {HOSTILE}\n/status {TAG}\n",
    )
    status = relbot(tmp_path, "status", TAG)
    audit = relbot(tmp_path, "audit", TAG)

    assert "macos is waived" in console and "on hold by hugo" in status
    for output in (console, status, audit):
        assert_safe(output)
    assert audit.count("\\u202enosaer") == 2  # the waiver and the hold


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
async def board(tmp_path: Path) -> AsyncIterator[tuple[World, httpx.AsyncClient]]:
    world = World(tmp_path)
    server = HealthServer(world.gate.metrics, 30, port := free_port())
    server.serve_board(BoardRoutes(world.gate))
    await server.start()
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            yield world, client
    finally:
        await server.stop()


async def test_a_waiver_reason_reaches_the_board_escaped(
    board: tuple[World, httpx.AsyncClient],
) -> None:
    world, client = board
    world.stage(TAG, skip=["python-3.14.1-macos11.pkg"])
    reply = await world.say("hugo", f"/waive {TAG} macos {HOSTILE}")
    assert not reply.private, reply.text
    await world.say("ned", f"/hold {TAG} {HOSTILE}")

    page = await client.get(f"/releases/{TAG}")
    api = await client.get(f"/api/releases/{TAG}")

    assert page.status_code == api.status_code == 200
    assert_safe(page.text)
    for char in UNSAFE:  # JSON may write them as \u escapes: decode first
        assert char not in str(api.json())
