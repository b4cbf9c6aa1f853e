"""How fast a Slack slash command is acknowledged, and how long until its answer arrives.

    .venv/bin/python bench/slack_ack_bench.py [--commands 40]

Runs the real Bolt app (HTTP mode) on 127.0.0.1 with the real gate, against the local mock of
Slack's Web API from the tests; requests are signed as Slack signs them. Slack wants the
acknowledgement within 3 s; `/ready` itself takes a second listing a second later when
staging changed, so the answer can take longer than the ack. Prints a table; not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adapters.slack.platform import SlackPlatform  # the real adapter
from tests.slack.conftest import (  # the tests' team, signing and mock Slack
    BOT_TOKEN,
    CHANNEL,
    NED,
    SIGNING_SECRET,
    SlackWorld,
    Workspace,
    release_workspace,
)


async def measure(commands: int) -> dict[str, list[float]]:
    mock = release_workspace()
    await mock.start()
    platform = SlackPlatform(
        bot_token=BOT_TOKEN, channel=CHANNEL, mode="http", signing_secret=SIGNING_SECRET,
        port=0, host="127.0.0.1", api_url=mock.api_url,
    )  # fmt: skip
    timings: dict[str, list[float]] = {"/status 3.14.1": [], "/ready macos 3.14.1": []}
    with tempfile.TemporaryDirectory() as folder:
        world = SlackWorld(Path(folder), platform.chat)
        world.storage.release.set()
        world.stage("3.14.1")
        await platform.start(world.gate)
        workspace = Workspace(mock, platform, world)
        acks: dict[str, list[float]] = {name: [] for name in timings}
        for _ in range(commands):
            for line in timings:
                command, text = line.split(" ", 1)
                started = time.perf_counter()
                sent = await workspace.command(NED, command, text)
                acks[line].append(time.perf_counter() - started)
                await workspace.answer(sent)
                timings[line].append(time.perf_counter() - started)
        await platform.stop()
        world.store.close()
    await mock.stop()
    return {
        **{f"ack {k}": v for k, v in acks.items()},
        **{f"answer {k}": v for k, v in timings.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commands", type=int, default=40)
    args = parser.parse_args()
    results = asyncio.run(measure(args.commands))
    print(f"Slack HTTP mode on loopback, {args.commands} of each command, real gate and storage")
    print(f"{'what':<34} {'median ms':>10} {'p95 ms':>10} {'max ms':>10}")
    for name, values in results.items():
        ordered = sorted(values)
        p95 = ordered[int(0.95 * (len(ordered) - 1))]
        print(
            f"{name:<34} {statistics.median(values) * 1000:>10.1f} {p95 * 1000:>10.1f}"
            f" {max(values) * 1000:>10.1f}"
        )


if __name__ == "__main__":
    main()
