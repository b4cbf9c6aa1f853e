"""Serving the gate until a signal: the chat platforms or the console, the poller, the
``/healthz`` endpoint, the demo release staged on a first start, and the release cycle read
afresh at start. ``relbot run`` (:mod:`bot.cli`) calls these once the locks are taken."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from bot import __version__, release_cycle
from bot.app import (
    build_console,
    build_gate,
    build_platform,
    console_chat,
    console_codes,
    platforms_chat,
)
from bot.config import Config
from bot.demo import DEMO_TAG, stage_demo
from bot.errors import RelbotError
from bot.state import StateStore
from bot.storage.lock import StorageLease

if TYPE_CHECKING:
    from bot.app import Platform
    from bot.gate import Gate

log = logging.getLogger("relbot")


async def run_platforms(config: Config, names: list[str], lease: StorageLease) -> int:
    """Serve the chat platforms on one gate until SIGTERM or SIGINT."""
    from bot.scheduler import Poller

    platforms: list[Platform] = [build_platform(config, name) for name in names]
    if (problem := refresh_release_cycle(config)) is not None:
        print(f"relbot: {problem} Using {config.release_cycle.origin}.", file=sys.stderr)
    chat = platforms_chat(platforms)
    gate = build_gate(config, chat)
    gate.metrics.channels = chat.health  # /healthz tells when a channel refuses posts
    gate.lease = lease
    poller = Poller(gate, config.model.poll_interval)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    started: list[Platform] = []

    async def serve() -> None:
        for platform in platforms:
            started.append(platform)
            await platform.start(gate)
        await gate.resume()  # after the platforms: a resumed publish announces there
        poller.start()
        log.warning("relbot %s serving %s", __version__, ", ".join(names))
        await stop.wait()

    async with _health(config, gate):
        # A signal must stop the bot even while a platform is still trying to connect.
        serving, stopping = asyncio.create_task(serve()), asyncio.create_task(stop.wait())
        try:
            await asyncio.wait({serving, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
            serving.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await serving  # re-raises what made the start fail
            await poller.stop()
            for platform in reversed(started):
                await platform.stop()
    return 0


@contextlib.asynccontextmanager
async def _health(config: Config, gate: Gate) -> AsyncIterator[None]:
    """Serve ``/healthz`` and ``/metrics`` while the bot runs, when ``[health]`` asks."""
    if config.model.health is None:
        yield
        return
    from bot.board_http import BoardRoutes
    from bot.health import HealthServer

    host, port = config.model.health.host, config.model.health.port
    server = HealthServer(gate.metrics, config.model.poll_interval, port, host)
    server.serve_board(BoardRoutes(gate))
    try:
        await server.start()
    except OSError as err:
        raise RelbotError(
            f"health: cannot listen on {host}:{port} ({err.strerror}); change health.host "
            "or health.port."
        ) from err
    try:
        yield
    finally:
        await server.stop()


async def run_console(config: Config, speaker: str | None, lease: StorageLease) -> int:
    from bot.scheduler import Poller

    people = list(config.people)
    speaker = speaker or people[0]
    if speaker not in people:
        raise RelbotError(f"--as: {speaker!r} is not a person of the config ({', '.join(people)}).")
    codes = console_codes()
    _first_start(config)
    gate = build_gate(config, console_chat(sys.stdout), code_factory=codes)
    gate.lease = lease
    poller = Poller(gate, config.model.poll_interval)
    _banner(config, speaker)
    async with _health(config, gate):
        return await build_console(gate, poller, people, speaker, sys.stdout).run(sys.stdin)


def _first_start(config: Config) -> None:
    """The built-in default stages a demo release the first time it runs in a folder: while
    nothing has been recorded and the demo is neither staged nor public."""
    if config.origin != "built-in default":
        return
    staging = config.path(config.model.storage.staging)
    public = config.path(config.model.storage.public)
    if (staging / str(DEMO_TAG)).exists() or (public / DEMO_TAG.version).exists():
        return
    if config.state_path.exists():
        store = StateStore(config.state_path)
        recorded = store.tags()
        store.close()
        if recorded:
            return
    stage_demo(staging, config.profile)


def _banner(config: Config, speaker: str) -> None:
    others = ", ".join(p for p in config.people if p != speaker)
    lines = [
        f"relbot {__version__}, console platform ({config.origin}). You are {speaker}; "
        f"'/as NAME' speaks as someone else ({others}). /help lists the commands; "
        "end of input (Ctrl-D) quits.",
    ]
    staging = config.path(config.model.storage.staging)
    if config.origin == "built-in default" and (staging / str(DEMO_TAG)).is_dir():
        tag = DEMO_TAG
        lines.append(
            f"A demo release {tag} is staged in {staging / str(tag)}/. Try: /status {tag}, "
            f"/ready source {tag}, /ready docs {tag}, /as steve, /ready windows {tag}, "
            f"/as ned, /ready macos {tag}, /as hugo, /publish {tag}, then the confirm line it "
            "prints."
        )
    print("\n".join(lines), file=sys.stderr, flush=True)


def refresh_release_cycle(config: Config) -> str | None:
    """Read the release cycle afresh from its URL (the built-in demo stays offline); returns
    why the URL failed, if it did: the bot then keeps the copy it has."""
    if config.origin == "built-in default":
        return None
    source = config.model.release_cycle
    copy, problem = release_cycle.refresh(source, config.base, config.release_cycle_cache)
    config.use_release_cycle(copy)
    return problem
