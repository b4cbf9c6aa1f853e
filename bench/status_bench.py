"""What ``/status`` with no tag (the day at a glance) costs with many open releases, on the
real gate (SQLite file, local folders), and how long its answer is.

    .venv/bin/python bench/status_bench.py [--releases 50] [--runs 50]

Each release is staged in full (the CPython profile's files); a third have every role ready,
some are held, one has a plan shown. Measured: the answer once a scan has looked (the bot's
steady state: one listing of the staging folder, nothing hashed); the first answer of a
restarted bot that has not scanned yet (one listing per release, as a scan's); and, to
compare, ``/status TAG`` of every release in turn (what the answer without a tag used to
do, one full summary each). Prints a table; not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.refusal_bench import timed  # median and p95 of repeated calls
from bot.ports.messages import Reply
from tests.conftest import World  # the test team, reused as the bench team

DISCORD_ROOM = 1992  # adapters/discord/embeds.py REPLY_ROOM: 2,000 less the code block


def release_day(count: int) -> list[str]:
    """``count`` tags over the 3.14 and 3.15 series (the test team's RMs manage those)."""
    return [f"3.{14 + n % 2}.{n // 2 + 1}" for n in range(count)]


async def measure(releases: int, runs: int) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    with tempfile.TemporaryDirectory() as folder:
        world = World(Path(folder))
        tags = release_day(releases)
        for n, tag in enumerate(tags):
            world.stage(tag)
            if n % 3 == 0:
                await world.ready_all(tag)
            if n % 7 == 0:
                await world.say("ned", f"/hold {tag} notarization failed")
        await world.plan(tags[3])
        await world.gate.scan()

        async def glance() -> object:
            return await world.gate.handle("console", "eve", "/status", room=DISCORD_ROOM)

        async def each_in_full() -> list[Reply]:
            return [await world.say("eve", f"/status {tag}") for tag in tags]

        reply = await world.gate.handle("console", "eve", "/status", room=DISCORD_ROOM)
        console = await world.say("eve", "/status")
        full = "\n".join(r.text for r in await each_in_full())
        median, p95 = await timed(runs, glance)
        rows.append(("/status, after a scan (Discord's room)", f"{median:.0f}", f"{p95:.0f}"))
        median, p95 = await timed(runs, lambda: world.say("eve", "/status"))
        rows.append(("/status, after a scan (console: every line)", f"{median:.0f}", f"{p95:.0f}"))
        cold = []
        for _ in range(max(3, runs // 10)):
            world.start()  # a restarted bot: nothing seen yet
            started = time.perf_counter()
            await glance()
            cold.append((time.perf_counter() - started) * 1000)
        cold.sort()
        rows.append(
            ("/status, first after a restart", f"{cold[len(cold) // 2]:.0f}", f"{cold[-1]:.0f}")
        )
        median, p95 = await timed(max(3, runs // 10), each_in_full)
        rows.append(
            (f"/status TAG of each of the {releases}, in turn", f"{median:.0f}", f"{p95:.0f}")
        )
        print(
            f"{releases} open releases. Discord's answer: {len(reply.text)} characters, "
            f"{len(reply.text.splitlines())} lines; the console's: {len(console.text)} "
            f"characters, {len(console.text.splitlines())} lines; every release's summary in "
            f"full: {len(full)} characters, {len(full.splitlines())} lines."
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", type=int, default=50)
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    rows = asyncio.run(measure(args.releases, args.runs))
    print(f"{'case':<48} {'median ms':>10} {'p95 ms':>8}")
    for case, median, p95 in rows:
        print(f"{case:<48} {median:>10} {p95:>8}")


if __name__ == "__main__":
    main()
