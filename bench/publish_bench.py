"""How long a 60-file publish takes on local storage, and how long the public folder shows a
partial release, as seen by a separate observer process.

    .venv/bin/python bench/publish_bench.py [--runs 5] [--size-kb 1024]

Runs the real gate (SQLite file, local folders) in-process; prints a table. Not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.conftest import World  # the test team, reused as the bench team

FILES = 60


def observe(folders: list[str], expected: int, stop: object, out: object) -> None:
    """Walk the public folders in a tight loop; report when the first new file and the last
    one were seen (``expected`` files in all, counting files that were already public)."""
    already = sum(len(files) for folder in folders for _, _, files in os.walk(folder))
    first = last = None
    while not stop.is_set() and last is None:  # type: ignore[attr-defined]
        seen = sum(len(files) for folder in folders for _, _, files in os.walk(folder))
        now = time.perf_counter_ns()
        if seen > already and first is None:
            first = now
        if seen >= expected:
            last = now
    out.put((first, last))  # type: ignore[attr-defined]


def stage_release(world: World, tag: str, size: int) -> int:
    """Every required file plus sidecars and MSI files, up to 60 files of ``size`` bytes."""
    paths = world.stage(tag, content=os.urandom(size))
    extra = [p + ".sigstore" for p in paths if not p.startswith("docs/")]
    extra += [p + ".spdx.json" for p in paths if p.startswith("Python-")]
    msi = "amd64/" if "rc" not in tag else "amd64rc1/"
    n = 0
    while len(paths) + len(extra) < FILES:
        extra.append(f"{msi}part{n}.msi")
        n += 1
    for path in extra:
        world.write(tag, path, os.urandom(256 if not path.endswith(".msi") else size))
    return len(paths) + len(extra)


async def one_run(root: Path, tag: str, existing: bool, size: int) -> tuple[float, float, int]:
    world = World(root)
    version = tag[:6]
    if existing:
        (world.public / version).mkdir(parents=True)
        (world.public / version / "python-3.14.0b3.exe").write_bytes(b"an earlier prerelease")
    count = stage_release(world, tag, size)
    await world.ready_all(tag)
    line = await world.plan(tag)
    folders = [str(world.public / version), str(world.public / "doc" / tag)]
    expected = count + (1 if existing else 0)
    stop: object = mp.Event()
    out: mp.Queue[tuple[int | None, int | None]] = mp.Queue()
    watcher = mp.Process(target=observe, args=(folders, expected, stop, out))
    watcher.start()
    await asyncio.sleep(0.3)  # let the observer spin up
    started = time.perf_counter()
    reply = await world.say("hugo", line)
    elapsed = time.perf_counter() - started
    await asyncio.sleep(0.1)
    stop.set()  # type: ignore[attr-defined]
    first, last = out.get(timeout=10)
    watcher.join()
    assert not reply.private, reply.text
    window = (last - first) / 1e6 if first and last else float("nan")
    return elapsed * 1000, window, count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--size-kb", type=int, default=1024)
    args = parser.parse_args()
    print(f"{FILES}-file release, {args.size_kb} kB per artifact, {args.runs} runs, local storage")
    print(f"{'case':<38} {'confirm→published ms':>22} {'first→last visible ms':>22}")
    for label, tag, existing in [
        ("final into a new 3.14.1/ (rename)", "3.14.1", False),
        ("rc1 into an existing 3.14.0/ (batch)", "3.14.0rc1", True),
    ]:
        totals, windows = [], []
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory() as folder:
                total, window, count = asyncio.run(
                    one_run(Path(folder), tag, existing, args.size_kb * 1024)
                )
                assert count == FILES, count
                totals.append(total)
                windows.append(window)
        print(
            f"{label:<38} {statistics.median(totals):>14.1f} (max {max(totals):.1f})"
            f" {statistics.median(windows):>14.3f} (max {max(windows):.3f})"
        )


if __name__ == "__main__":
    main()
