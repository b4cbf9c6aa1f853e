"""Release day: five releases of five branches staged over SFTP and published in one afternoon.

    .venv/bin/python bench/release_day.py [--gb 1.5] [--spread 60]

Two bugfix releases (3.15.1, 3.14.2: source, docs, Windows, macOS and Android files, with
``--gb`` gigabytes each shared by their installers and tarballs) and three security releases
(3.13.11, 3.12.13, 3.11.15: source and docs), with their real file lists from the cpython
profile, and one install index built for both bugfix releases (staged with each of them),
are staged in a folder served by a real sshd on 127.0.0.1 (the tests' server) and made ready
by their roles over Slack (the real Bolt app in HTTP mode, against the tests' mock of
Slack's API). Three release managers then click their Publish buttons within
``--spread`` seconds (0: all in the same instant). While they publish, ``/status`` and the
release board are asked again and again.

Prints, per release, the time from its click to its "Published" answer; which publish made
the shared install index live (and what the other's index step did); python.org's requests
(and 429s) and the CDN purges sent against those asked for; the whole day from
the first click to the last answer; the storage's round trips of one scan with five releases
open; and the latency of ``/status`` (no tag) and of the board's front page during the
publishes. Not a test; everything lives in a temporary folder removed at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.domain.tags import ReleaseTag
from bot.metrics import Metrics
from bot.pydotorg.cdn import CdnPurger
from bot.pydotorg.rate_limit import api_v1_budget
from bot.pydotorg.registry import PydotorgRegistry
from bot.storage.sftp import SftpStorage
from bot.web.board_routes import BoardRoutes
from bot.web.health import HealthServer
from tests.doubles.pydotorg import PydotorgDouble
from tests.release_day import BUGFIX, DAY, stage_shared_index
from tests.slack.conftest import NED, Workspace
from tests.slack.conftest import release_workspace as slack_workspace
from tests.slack.test_slack import publish_button
from tests.slack.test_slack_release_day import IDS, PABLO, THOMAS, DayWorld, day_platform
from tests.sshd import SshServer
from tests.storage.conftest import sftp_storage

BLOCK = random.Random(0).randbytes(1 << 20)  # 1 MiB of noise, written again and again


class SftpDayWorld(DayWorld):
    """The day's team, its staging and public folders served by ``server`` over SFTP."""

    server: SshServer

    def make_storage(self) -> Any:
        return sftp_storage(self.server, self.staging, self.public)


def wire_pydotorg(world: DayWorld, api: PydotorgDouble) -> None:
    """The registry (with the process's API v1 budget) and the CDN purge, against the
    python.org double, each release's Release created as its RM does in the admin."""
    for tag in DAY:
        api.add_release(f"Python {tag}")
    budget = api_v1_budget()
    world.conn.registry = PydotorgRegistry(api.url, "rm:key", world.profile, budget=budget)
    templates = [
        t.replace("https://www.python.org/", api.base_url).replace(
            "https://docs.python.org/", api.base_url + "docs/"
        )
        for t in world.profile.spec.pydotorg["purge"]
    ]
    world.conn.purger = CdnPurger(templates, files_url=api.base_url + "ftp/python/")


def make_big(world: DayWorld, tag: str, gb: float) -> int:
    """The release's installers and tarballs share ``gb`` gigabytes; returns the bytes."""
    parsed = ReleaseTag.parse(tag)
    big = [
        e.path
        for e in world.profile.expected(parsed)
        if e.path.endswith((".tgz", ".tar.xz", ".exe", ".pkg", ".tar.gz", ".zip"))
        and "/" not in e.path
    ]
    each = int(gb * (1 << 30)) // len(big)
    for path in big:
        with open(world.staging / tag / path, "wb") as f:
            left = each
            while left > 0:
                f.write(BLOCK[: min(left, len(BLOCK))])
                left -= len(BLOCK)
    return each * len(big)


async def timed_get(session: aiohttp.ClientSession, url: str) -> float:
    started = time.perf_counter()
    async with session.get(url) as response:
        await response.read()
        assert response.status == 200, response.status
    return time.perf_counter() - started


async def day(gb: float, spread: float) -> None:
    server = SshServer.create(Path(tempfile.mkdtemp(prefix="relbot-day-sshd-")))
    server.start()
    mock = slack_workspace()
    mock.add_users(THOMAS, PABLO)
    await mock.start()
    platform = day_platform(mock.api_url)
    SftpDayWorld.server = server
    api = PydotorgDouble(users={"rm": ("key", True)})
    api.__enter__()
    with tempfile.TemporaryDirectory(prefix="relbot-day-") as folder:
        world = SftpDayWorld(Path(folder), platform.chat)
        wire_pydotorg(world, api)
        storage = world.storage
        assert isinstance(storage, SftpStorage)
        await platform.start(world.gate)
        ws = Workspace(mock, platform, world)
        board = HealthServer(Metrics(), world.config.model.poll_interval, 0)
        board.serve_board(BoardRoutes(world.gate))
        await board.start()
        try:
            staged = 0
            for tag in DAY:
                world.stage(tag)
                if tag in BUGFIX:
                    staged += make_big(world, tag, gb)
            shared = stage_shared_index(world.staging, world.public)
            print(f"staged 5 releases, {staged / (1 << 30):.1f} GiB over SFTP")
            for tag in DAY:
                await ws.ready_all(tag)
            trips = []
            for _ in range(2):  # the first judges the shared index with its sibling listed
                before = Counter(storage.requests)
                await world.gate.scan()
                trips.append(Counter(storage.requests) - before)
            buttons = {}
            for tag, rm in DAY.items():
                plan = await ws.answer(await ws.command(IDS[rm], "/publish", tag))
                buttons[tag] = publish_button(plan)["value"]

            status_times: list[float] = []
            board_times: list[float] = []
            done = asyncio.Event()

            async def look() -> None:
                url = f"http://127.0.0.1:{board.port}/"
                async with aiohttp.ClientSession() as session:
                    while not done.is_set():
                        started = time.perf_counter()
                        sent = await ws.command(NED, "/status")
                        while not mock.responses(sent.name):  # not ws.answer: it drains all
                            await asyncio.sleep(0.005)
                        status_times.append(time.perf_counter() - started)
                        board_times.append(await timed_get(session, url))
                        await asyncio.sleep(0.2)

            async def confirm(tag: str, delay: float) -> tuple[float, float]:
                await asyncio.sleep(delay)
                started = time.perf_counter()
                click = await ws.click(IDS[DAY[tag]], buttons[tag])
                while not any(
                    r["text"].startswith(f"Published {tag}") for r in mock.responses(click.name)
                ):
                    await asyncio.sleep(0.05)
                return started, time.perf_counter()

            delays = {tag: spread * i / (len(DAY) - 1) for i, tag in enumerate(DAY)}
            looking = asyncio.create_task(look())
            first = time.perf_counter()
            spans = await asyncio.gather(*(confirm(tag, delays[tag]) for tag in DAY))
            done.set()
            await looking
            last = max(end for _, end in spans)
            steps = {
                t: world.store.release(ReleaseTag.parse(t)).steps_done["index"] for t in BUGFIX
            }
            live = (world.public / "index-windows.json").read_bytes() == shared
            done_steps = {t: world.store.release(ReleaseTag.parse(t)).steps_done for t in DAY}
            skipped = sum(
                int(m.group(1))
                for done in done_steps.values()
                if (m := re.search(r"(\d+) already purged", done["purge"]))
            )
        finally:
            await board.stop()
            await platform.stop()
            world.store.close()
            storage.close()
            await mock.stop()
            server.stop()
            api.__exit__(None, None, None)
    for name, counted in zip(("first scan", "next scan"), trips, strict=True):
        print(f"{name}, five releases open: {sum(counted.values())} round trips {dict(counted)}")
    print(f"confirmations over {spread:g} s by three RMs (thomas, hugo, pablo):")
    for tag, (start, end) in zip(DAY, spans, strict=True):
        print(f"  {tag:8} clicked at +{start - first:5.1f} s, public {end - start:6.2f} s later")
    print(f"the whole day, first click to last answer: {last - first:.1f} s")
    print(f"the shared install index is live: {live}; index steps: {steps}")
    throttled = sum(1 for r in api.requests if r.status == 429)
    print(f"python.org: {len(api.requests)} requests, {throttled} answered 429")
    print(f"CDN: {len(api.purges)} purges sent, {skipped} not sent again (another publish's)")
    for tag, done in done_steps.items():
        print(f"  {tag:8} register: {done['register']}; purge: {done['purge']}")
    for name, times in (("/status (no tag)", status_times), ("board /", board_times)):
        ms = sorted(t * 1000 for t in times)
        print(
            f"{name} during the publishes: {len(ms)} asked, median {statistics.median(ms):.0f} ms,"
            f" max {ms[-1]:.0f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gb", type=float, default=1.5, help="gigabytes per bugfix release")
    parser.add_argument("--spread", type=float, default=60, help="seconds the clicks span")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("release_day.py starts the tests' sshd, which needs root (as the tests do).")
    asyncio.run(day(args.gb, args.spread))


if __name__ == "__main__":
    main()
