"""What ``relbot wait`` costs per look, and per call of the command, on the real gate (SQLite
file, local folders) and its board served on loopback.

    .venv/bin/python bench/wait_bench.py [--runs 200] [--events 2000] [--calls 5]

A look on the state file: with the log unchanged; after one new event; the first look of a new
process on a log of ``--events`` events; and a look that lists staging (every role ready, for
``publishable``). A look on the board: one GET of ``/api/releases/TAG``. Then the whole command,
``relbot wait TAG --until published --timeout 0``, on each. Prints a table; not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

from bench.refusal_bench import timed  # median and p95 of repeated calls
from bot.domain.tags import ReleaseTag
from bot.wait.judge import Until
from bot.wait.sources import BoardSource, StateFileSource
from bot.web.board_routes import BoardRoutes
from bot.web.health import HealthServer
from tests.conftest import World  # the test team, reused as the bench team
from tests.sshd import free_port

TAG = "3.14.1"
RELBOT = Path(sys.executable).with_name("relbot")


def command(root: Path, *args: str, calls: int) -> float:
    """Median wall ms of ``relbot wait TAG --until published --timeout 0 ARGS``."""
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        subprocess.run(
            [str(RELBOT), "wait", TAG, "--until", "published", "--timeout", "0", *args],
            cwd=root,
            capture_output=True,
            check=False,
        )
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


async def measure(runs: int, events: int, calls: int) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        world = World(root)
        world.stage(TAG)
        tag = ReleaseTag.parse(TAG)
        # A long history: holds set and lifted, as a busy release gathers.
        for n in range(events // 2):
            await world.say("ned", f"/hold {TAG} check {n}")
            await world.say("ned", f"/unhold {TAG}")
        await world.ready_all(TAG)
        files = len(world.staged_files(TAG))

        published = StateFileSource(world.config, tag, Until.PUBLISHED)
        await published.look()
        rows.append(("state file, log unchanged", *map(_ms, await timed(runs, published.look))))

        async def one_more_event() -> None:
            await world.say("ned", f"/hold {TAG} again")
            await world.say("ned", f"/unhold {TAG}")
            await published.look()

        changed = await timed(runs // 4, one_more_event)
        rows.append(("state file, 2 new events (+ 2 commands)", *map(_ms, changed)))

        async def first_look() -> None:
            fresh = StateFileSource(world.config, tag, Until.PUBLISHED)
            await fresh.look()
            await fresh.close()

        label = f"state file, first look ({len(world.store.events(tag))} events)"
        rows.append((label, *map(_ms, await timed(max(5, runs // 20), first_look))))

        publishable = StateFileSource(world.config, tag, Until.PUBLISHABLE, clock=world.clock)

        async def listing_look() -> None:
            world.clock.advance(world.config.model.poll_interval)  # the listing is due again
            await publishable.look()

        await listing_look()  # the first one hashes nothing either: no file moved
        listed = await timed(runs, listing_look)
        rows.append((f"state file, listing staging ({files} files)", *map(_ms, listed)))

        port = free_port()
        server = HealthServer(world.gate.metrics, 30, port)
        server.serve_board(BoardRoutes(world.gate))
        await server.start()
        try:
            await world.gate.scan()
            board = BoardSource(f"http://127.0.0.1:{port}", tag)
            rows.append(("board, one GET", *map(_ms, await timed(runs, board.look))))
            await board.close()
            async with httpx.AsyncClient() as client:
                size = len((await client.get(board.url)).content)
            rows.append((f"  (the JSON is {size} bytes)", "", ""))
            state_ms = await asyncio.to_thread(command, root, calls=calls)
            board_ms = await asyncio.to_thread(
                command, root, "--board", f"http://127.0.0.1:{port}", calls=calls
            )
        finally:
            await server.stop()
        rows.append(("command, --timeout 0, state file", _ms(state_ms), ""))
        rows.append(("command, --timeout 0, --board", _ms(board_ms), ""))
        version = subprocess.run([str(RELBOT), "--version"], capture_output=True, check=False)
        started = time.perf_counter()
        for _ in range(calls):
            subprocess.run([str(RELBOT), "--version"], capture_output=True, check=False)
        alone = (time.perf_counter() - started) * 1000 / calls
        rows.append(("  (relbot --version alone)", _ms(alone), ""))
        assert version.returncode == 0
    return rows


def _ms(value: float) -> str:
    return f"{value:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--calls", type=int, default=5)
    args = parser.parse_args()
    rows = asyncio.run(measure(args.runs, args.events, args.calls))
    print(f"{'look':<45} {'median ms':>10} {'p95 ms':>8}")
    for name, median, p95 in rows:
        print(f"{name:<45} {median:>10} {p95:>8}")


if __name__ == "__main__":
    main()
