"""A newcomer's first start: ``make run`` on a fresh clone, from the command to the first
answer, cold (pip's cache empty) and warm (the cache the cold run filled).

    python3 bench/first_start_bench.py [--runs 2] [--only cold|warm]

Each run clones the repository's HEAD into a new temporary folder, starts ``make run`` with
``/status 3.14.1`` on its stdin, and times each phase from the commands make echoes: the
virtualenv, the install, then the bot until its first answer. PIP_CACHE_DIR points at a folder
of the bench's own: empty for the cold runs, the one the first cold run filled for the warm
runs. The pip configuration of the machine (indexes, find-links) applies as it is: the table
says which. Prints a table; not a test.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIRST_ANSWER = "3.14.1: 0 of 4 roles ready"


@dataclass
class Phases:
    venv: float  # python3 -m venv
    install: float  # pip install -e .
    bot: float  # relbot run, up to its first answer
    total: float  # make run, up to the first answer


def first_start(clone: Path, cache: Path) -> Phases:
    """Run ``make run`` in ``clone`` with pip's cache in ``cache``; the phases, in seconds."""
    env = {**os.environ, "PIP_CACHE_DIR": str(cache)}
    env.pop("RELBOT_CONFIG", None)
    started = time.monotonic()
    make = subprocess.Popen(
        ["make", "run"],
        cwd=clone,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert make.stdin is not None and make.stdout is not None
    make.stdin.write("/status 3.14.1\n")
    make.stdin.flush()
    seen: dict[str, float] = {}
    marks = {"-m venv": "venv", "pip install": "install", "relbot run": "bot"}
    for line in make.stdout:
        for mark, phase in marks.items():
            if mark in line and phase not in seen:
                seen[phase] = time.monotonic()
        if FIRST_ANSWER in line:
            seen["answer"] = time.monotonic()
            break
    make.stdin.close()
    make.wait(timeout=120)
    if "answer" not in seen:
        raise SystemExit(f"make run in {clone} gave no answer (exit {make.returncode})")
    return Phases(
        venv=seen["install"] - seen["venv"],
        install=seen["bot"] - seen["install"],
        bot=seen["answer"] - seen["bot"],
        total=seen["answer"] - started,
    )


def fresh_clone(into: Path) -> Path:
    clone = into / "relbot"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    return clone


def pip_sources() -> str:
    """Where pip takes packages from on this machine (its configuration, as pip lists it)."""
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True
    ).stdout
    keys = ("index-url", "extra-index-url", "find-links")
    lines = [line for line in listed.splitlines() if any(k in line for k in keys)]
    return "; ".join(lines) or "PyPI only (no pip configuration)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--only", choices=["cold", "warm"])
    args = parser.parse_args()
    results: dict[str, list[Phases]] = {"cold": [], "warm": []}
    with tempfile.TemporaryDirectory(prefix="relbot-first-start-") as tmp:
        cache = Path(tmp) / "cache"
        for run in range(args.runs if args.only != "warm" else 1):
            cache = Path(tmp) / f"cache-{run}"  # empty: a cold start
            results["cold"].append(first_start(fresh_clone(Path(tmp) / f"cold-{run}"), cache))
        for run in range(args.runs if args.only != "cold" else 0):
            # the cache the last cold run filled: a warm start
            results["warm"].append(first_start(fresh_clone(Path(tmp) / f"warm-{run}"), cache))
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, {_cpu()}, Python "
        f"{platform.python_version()}, load average {os.getloadavg()[0]:.1f} at the end"
    )
    print(f"pip takes packages from: {pip_sources()}")
    print()
    print("| case | runs | venv (s) | pip install (s) | bot to first answer (s) | total (s) |")
    print("|---|---|---|---|---|---|")
    for case, runs in results.items():
        if not runs or (args.only and case != args.only):
            continue
        cells = [
            _range([getattr(r, field) for r in runs])
            for field in ("venv", "install", "bot", "total")
        ]
        print(f"| {case} | {len(runs)} | " + " | ".join(cells) + " |")


def _range(values: list[float]) -> str:
    low, high = min(values), max(values)
    median = statistics.median(values)
    return f"{median:.1f}" if len(values) == 1 else f"{median:.1f} ({low:.1f} to {high:.1f})"


def _cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


if __name__ == "__main__":
    main()
