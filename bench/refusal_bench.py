"""What refused commands cost afterwards: ``/status`` and the board's index after 5,000
refusals (strangers and team members both) against after none, on the real gate (SQLite
file, local folders) behind the real health server.

    .venv/bin/python bench/refusal_bench.py [--refusals 5000] [--runs 200]

Half the refusals come from strangers, each naming another release; the other half from team
members, on the release and on other releases, each on a tag of its own. None is stored (each
is one log line), so nothing grows. ``GET /`` is asked on a fresh connection with the
board's cached page dropped each time, so what is measured is a rendering.
Prints a table; not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.domain.tags import ReleaseTag
from bot.journal.store import StateStore
from bot.web.board_routes import BoardRoutes
from bot.web.health import HealthServer
from tests.conftest import World  # the test team, reused as the bench team

TAG = "3.14.1"


async def timed(runs: int, action: Callable[[], Awaitable[object]]) -> tuple[float, float]:
    """Median and 95th percentile of ``runs`` calls, in milliseconds."""
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        await action()
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.95) - 1]


def cold_read(path: Path, runs: int) -> float:
    """Median ms of what ``relbot status`` does to the log: open the file, fold the release."""
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        store = StateStore(path)
        store.release(ReleaseTag.parse(TAG))
        store.close()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def elsewhere(n: int) -> str:
    """The ``n``-th of many releases nobody works on (no RM is configured for them)."""
    return f"3.{20 + n // 900}.{n % 900}"


async def refuse(world: World, count: int) -> float:
    """``count`` refused commands: half from strangers, each naming another release; a
    quarter from steve publishing the release (not an RM); a quarter from ned holding or
    readying other releases, each a tag of its own. Returns the seconds taken."""
    started = time.perf_counter()
    for n in range(count):
        if n % 2:
            reply = await world.gate.handle("slack", f"U{n:06d}", f"/ready macos {elsewhere(n)}")
        elif n % 4:
            reply = await world.say("steve", f"/publish {TAG}")
        elif n % 8:
            reply = await world.say("ned", f"/hold {elsewhere(n)} mine")
        else:
            reply = await world.say("ned", f"/ready macos {elsewhere(n)}")
        assert reply.private, reply.text
    return time.perf_counter() - started


def board_index(port: int) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", "/")
    response = conn.getresponse()
    response.read()
    conn.close()
    assert response.status == 200, response.status


def index_rendered(routes: BoardRoutes, port: int, runs: int) -> float:
    """Median ms of ``GET /``, rendered afresh each time (its cached page dropped first, as
    a new event would)."""
    samples = []
    for _ in range(runs):
        routes._pages.clear()
        started = time.perf_counter()
        board_index(port)
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


async def measure(refusals: int, runs: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        world = World(Path(folder))
        world.stage(TAG)
        await world.say("ned", f"/ready macos {TAG}")
        path = world.store.path
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        server = HealthServer(world.gate.metrics, 30, port)
        routes = BoardRoutes(world.gate)
        server.serve_board(routes)
        await server.start()

        async def status() -> object:
            return await world.say("eve", f"/status {TAG}")

        async def status_all() -> object:
            return await world.say("eve", "/status")

        rows = []
        for label, extra in (("no refusals", 0), (f"after {refusals:,} refusals", refusals)):
            spent = await refuse(world, extra) if extra else 0.0
            median, p95 = await timed(runs, status)
            median_all, _ = await timed(runs, status_all)
            index = await asyncio.to_thread(index_rendered, routes, port, min(runs, 50))
            rows.append(
                (
                    label,
                    median,
                    p95,
                    median_all,
                    index,
                    cold_read(path, min(runs, 50)),
                    len(world.store.events(ReleaseTag.parse(TAG))),
                    len(world.store.tags()),
                    len(world.gate.retained_tags()),
                    spent,
                )
            )
        await server.stop()

    print(f"/status {TAG} on local storage, {runs} runs each (ms: median, p95)\n")
    head = (
        f"{'':<24} {'/status TAG':>11} {'p95':>7} {'/status':>8} {'GET /':>7} {'cold fold':>10} "
        f"{'events':>7} {'tags':>5} {'in memory':>10} {'refusing':>9}"
    )
    print(head)
    print("-" * len(head))
    for label, median, p95, median_all, index, cold, events, tags, kept, spent in rows:
        print(
            f"{label:<24} {median:>11.2f} {p95:>7.2f} {median_all:>8.2f} {index:>7.2f} "
            f"{cold:>10.2f} {events:>7} {tags:>5} {kept:>10} {spent:>8.1f}s"
        )
    print(
        "\nGET /: the board's index rendered afresh; cold fold: open the state "
        "file and fold the release, as `relbot status` does; events: the release's log; "
        "tags: releases the log names; in memory: releases the gate keeps locks or caches for."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--refusals", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    asyncio.run(measure(args.refusals, args.runs))


if __name__ == "__main__":
    main()
