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

from bot import __version__
from bot.app import (
    build_console,
    build_gate,
    build_platform,
    build_storage,
    console_chat,
    console_codes,
    platforms_chat,
)
from bot.config import Config
from bot.demo import BUILT_IN, DEMO_TAG, demo_banner, stage_demo
from bot.errors import RelbotError
from bot.journal.store import StateStore
from bot.metrics import Metrics
from bot.ports.lease import StorageLease
from bot.pydotorg import release_cycle

if TYPE_CHECKING:
    from bot.app import Platform
    from bot.service.gate import Gate

log = logging.getLogger("relbot")


async def run_platforms(
    config: Config, names: list[str], lease: StorageLease, board: int | None = None
) -> int:
    """Serve the chat platforms on one gate until SIGTERM or SIGINT; ``board``: the port of
    the release board (see :func:`board_port`)."""
    from bot.scheduler import Poller

    platforms: list[Platform] = [build_platform(config, name) for name in names]
    if (problem := refresh_release_cycle(config)) is not None:
        print(f"relbot: {problem} Using {config.release_cycle.origin}.", file=sys.stderr)
    chat = platforms_chat(platforms)
    metrics = Metrics(channels=chat.health)  # /healthz tells when a channel refuses posts
    gate = build_gate(config, chat, lease=lease, metrics=metrics)
    _warn_about_folders(config)
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

    async with _health(config, gate, metrics, board) as url:
        if url:
            print(f"relbot: the release board is at {url}", file=sys.stderr, flush=True)
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


def board_port(config: Config, flag: int | None) -> int | None:
    """The port of the release board: ``--board PORT`` (0: a free one), else a free port for
    the built-in default (the demo shows the board), else None: ``[health]``'s port when the
    config has that table, no server when not."""
    if flag is not None:
        return flag
    if config.origin == BUILT_IN:
        return 0
    return None


@contextlib.asynccontextmanager
async def _health(
    config: Config, gate: Gate, metrics: Metrics, board: int | None
) -> AsyncIterator[str | None]:
    """Serve ``/healthz``, ``/metrics`` and the release board while the bot runs, when
    ``[health]`` or ``board`` (a port, see :func:`board_port`) asks; yields the board's URL."""
    health = config.model.health
    if health is None and board is None:
        yield None
        return
    from bot.web.board_routes import BoardRoutes
    from bot.web.health import HealthServer

    host = health.host if health is not None else "127.0.0.1"
    port = board if board is not None else health.port if health is not None else 0
    server = HealthServer(metrics, config.model.poll_interval, port, host)
    server.serve_board(BoardRoutes(gate))
    try:
        await server.start()
    except OSError as err:
        fix = (
            "choose another --board PORT"
            if board is not None
            else "change health.host or health.port"
        )
        raise RelbotError(
            f"health: cannot listen on {host}:{port} ({err.strerror}); {fix}."
        ) from err
    try:
        shown = "127.0.0.1" if host in ("0.0.0.0", "") else host  # where a browser goes
        yield f"http://{shown}:{server.port}/"
    finally:
        await server.stop()


async def run_console(
    config: Config, speaker: str | None, lease: StorageLease, board: int | None = None
) -> int:
    """Serve the console until end of input; ``board``: see :func:`board_port`."""
    from bot.scheduler import Poller

    people = list(config.people)
    speaker = speaker or people[0]
    if speaker not in people:
        raise RelbotError(f"--as: {speaker!r} is not a person of the config ({', '.join(people)}).")
    codes = console_codes()
    _first_start(config)
    chat, metrics = console_chat(sys.stdout), Metrics()
    gate = build_gate(config, chat, lease=lease, metrics=metrics, code_factory=codes)
    _warn_about_folders(config)
    poller = Poller(gate, config.model.poll_interval)
    async with _health(config, gate, metrics, board) as url:
        _banner(config, speaker, url)
        console = build_console(gate, chat, poller, people, speaker, sys.stdout)
        status = await console.run(sys.stdin)
        # End of input finishes pending work: a /ready whose files were still being hashed
        # tells its result before the bot exits.
        await gate.follow_ups.finish()
        return status


def _warn_about_folders(config: Config) -> None:
    """Say at start what keeps local folders from being published to, and how to fix it
    (a relbot.toml written beside the demo points at folders nobody created). The bot still
    starts: commands and scans work, and the folders are never created for it."""
    if config.model.storage.kind != "local":
        return  # a server's folders are checked by relbot check, which reaches the server
    for problem in build_storage(config).check():
        print(
            f"relbot: {problem} Until then nothing can be published (relbot check --offline "
            "lists every problem).",
            file=sys.stderr,
            flush=True,
        )


def _first_start(config: Config) -> None:
    """The built-in default stages a demo release the first time it runs in a folder: while
    nothing has been recorded and the demo is neither staged nor public."""
    if config.origin != BUILT_IN:
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


def _banner(config: Config, speaker: str, board: str | None) -> None:
    others = ", ".join(p for p in config.people if p != speaker)
    lines = [
        f"relbot {__version__}, console platform ({config.origin}). You are {speaker}; "
        f"'/as NAME' speaks as someone else ({others}). /help lists the commands; "
        "end of input (Ctrl-D) quits.",
    ]
    if (note := demo_banner(config)) is not None:
        lines.append(note)
    if board is not None:
        lines.append(f"The release board is at {board}")
    print("\n".join(lines), file=sys.stderr, flush=True)


def refresh_release_cycle(config: Config) -> str | None:
    """Read the release cycle afresh from its URL (the built-in demo stays offline); returns
    why the URL failed, if it did: the bot then keeps the copy it has."""
    if config.origin == BUILT_IN:
        return None
    source = config.model.release_cycle
    copy, problem = release_cycle.refresh(source, config.base, config.release_cycle_cache)
    config.use_release_cycle(copy)
    return problem
