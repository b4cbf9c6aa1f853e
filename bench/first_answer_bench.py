"""How long `make run` takes on a fresh clone, to the first answer of the bot.

Clones this checkout's HEAD into a temporary folder and runs `make run` there with
`/status 3.14.1` on its standard input, timing until the answer is printed. "cold": pip's and
uv's caches point at empty folders, so every package is downloaded; "warm": a second fresh
clone with the caches the cold run filled. Prints a table; not a test.

    python bench/first_answer_bench.py [--runs 1] [--rev COMMIT]

``--rev`` measures another commit of this repository (an older Makefile, say) the same way.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ANSWER = "3.14.1: "  # the summary's headline answers /status 3.14.1


def first_answer(caches: Path, rev: str | None = None) -> tuple[float, float]:
    """(seconds to the installed relbot, seconds to the first answer) of one fresh clone."""
    with tempfile.TemporaryDirectory(prefix="relbot-clone-") as folder:
        clone = Path(folder) / "relbot"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        if rev is not None:
            subprocess.run(["git", "checkout", "--quiet", rev], cwd=clone, check=True)
        env = {
            **{k: v for k, v in os.environ.items() if k not in ("RELBOT_CONFIG", "VIRTUAL_ENV")},
            "PIP_CACHE_DIR": str(caches / "pip"),
            "UV_CACHE_DIR": str(caches / "uv"),
        }
        started = time.perf_counter()
        process = subprocess.Popen(
            ["make", "run"],
            cwd=clone,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert process.stdin is not None and process.stdout is not None
        installed = 0.0
        process.stdin.write("/status 3.14.1\n")
        process.stdin.flush()
        for line in process.stdout:
            if line.startswith(".venv/bin/relbot run") and not installed:
                installed = time.perf_counter() - started
            if line.lstrip().startswith(ANSWER):
                answered = time.perf_counter() - started
                break
        else:
            raise SystemExit(f"make run ended without answering (exit {process.wait()})")
        process.stdin.close()
        process.wait(timeout=60)
        return installed, answered


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1, help="cold and warm runs each")
    parser.add_argument("--rev", help="the commit to measure (default: HEAD)")
    args = parser.parse_args()
    rows = []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="relbot-caches-") as caches:
            rows.append(("cold", *first_answer(Path(caches), args.rev)))
            rows.append(("warm", *first_answer(Path(caches), args.rev)))
    print(
        f"{args.rev or 'HEAD'} on {platform.node()}: {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.1f} at the end"
    )
    print(f"{'case':<6} {'installed (s)':>14} {'first answer (s)':>17}")
    for case, installed, answered in rows:
        print(f"{case:<6} {installed:>14.1f} {answered:>17.1f}")


if __name__ == "__main__":
    sys.exit(main())
