"""What a crowded staging folder costs: a release with 20,000 stray files next to its own,
on the real gate (SQLite file, local folders) behind the real health server with the board.

    .venv/bin/python bench/staging_bench.py [--files 20000] [--runs 3]

For each of ``/status TAG``, ``/ready source TAG``, a scan (which posts the summary), the
board's release page, its JSON and its index (each rendered afresh: the board's cached page is
dropped first; and the page once more as served from memory): the median time and the size of
what it answers, and the slowest ``GET /healthz`` a thread saw while it ran (it asks every
20 ms on its own connection, so a blocked event loop shows there). Prints a table; not a
test.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.web.board_routes import BoardRoutes
from bot.web.health import HealthServer
from tests.conftest import World  # the test team, reused as the bench team

TAG = "3.14.1"


class HealthProbe:
    """A thread asking ``/healthz`` every 20 ms; remembers the slowest answer in a window."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.worst = 0.0
        self.failures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def window(self) -> None:
        self.worst, self.failures = 0.0, 0

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.perf_counter()
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                conn.request("GET", "/healthz")
                conn.getresponse().read()
                conn.close()
            except OSError:
                self.failures += 1
            self.worst = max(self.worst, time.perf_counter() - started)
            time.sleep(0.02)


def fetch(port: int, path: str) -> int:
    """``GET path`` on its own connection; the size of the body."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.request("GET", path)
    response = conn.getresponse()
    body = response.read()
    conn.close()
    assert response.status == 200, (path, response.status)
    return len(body)


def crowd(world: World, files: int) -> None:
    """The release's own files, then ``files`` strays: half at the top of the release's
    folder, half spread over 20 folders."""
    world.stage(TAG)
    folder = world.staging / TAG
    for n in range(files):
        if n % 2:
            target = folder / f"stray-{n:05d}.bin"
        else:
            (folder / f"junk{n % 20:02d}").mkdir(exist_ok=True)
            target = folder / f"junk{n % 20:02d}" / f"file-{n:05d}.bin"
        target.write_bytes(b"x")


async def measure(files: int, runs: int) -> list[tuple[str, float, int, float]]:
    rows = []
    with tempfile.TemporaryDirectory() as root:
        world = World(Path(root))
        crowd(world, files)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        server = HealthServer(world.gate.metrics, 30, port)
        routes = BoardRoutes(world.gate)
        server.serve_board(routes)
        await server.start()
        probe = HealthProbe(port)
        probe.start()

        async def status() -> int:
            return len((await world.say("eve", f"/status {TAG}")).text.encode())

        async def ready() -> int:
            return len((await world.say("hugo", f"/ready source {TAG}")).text.encode())

        async def scan() -> int:
            await world.gate.scan()
            posted = world.chat.posts[-1:] + [m for _, m in world.chat.updates[-1:]]
            return max((len(m.text.encode()) for m in posted), default=0)

        def page(path: str, *, cached: bool = False) -> Callable[[], Awaitable[int]]:
            def get() -> int:
                if not cached:
                    routes._pages.clear()  # rendered afresh, as after a change
                return fetch(port, path)

            return lambda: asyncio.to_thread(get)

        actions: list[tuple[str, Callable[[], Awaitable[int]]]] = [
            (f"/status {TAG}", status),
            (f"/ready source {TAG}", ready),
            ("scan (summary)", scan),
            (f"GET /releases/{TAG}", page(f"/releases/{TAG}")),
            (f"GET /api/releases/{TAG}", page(f"/api/releases/{TAG}")),
            ("GET /", page("/")),
            (f"GET /releases/{TAG} cached", page(f"/releases/{TAG}", cached=True)),
        ]
        for label, action in actions:
            samples, worst, size = [], 0.0, 0
            for _ in range(runs):
                probe.window()
                started = time.perf_counter()
                size = await action()
                samples.append(time.perf_counter() - started)
                await asyncio.sleep(0.1)  # the probe's last request ends in the window
                worst = max(worst, probe.worst)
            rows.append((label, statistics.median(samples), size, worst))
        probe.stop()
        await server.stop()
        world.store.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    rows = asyncio.run(measure(args.files, args.runs))
    print(f"{args.files:,} stray files in staging/{TAG}, median of {args.runs} runs\n")
    head = f"{'':<26} {'time':>9} {'size':>10} {'slowest /healthz':>17}"
    print(head)
    print("-" * len(head))
    for label, seconds, size, worst in rows:
        print(f"{label:<26} {seconds:>8.3f}s {size / 1000:>8.1f}kB {worst * 1000:>15.1f}ms")


if __name__ == "__main__":
    main()
