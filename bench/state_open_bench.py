"""State benchmark: what checking a state file costs. Opening it (``status``, ``audit``, every
command) checks its tables and that it can be written; ``relbot check`` and the start of
``relbot run`` also read every event and fold every release once (``check_every_event``).

    .venv/bin/python bench/state_open_bench.py [--releases 50,500] [--events 40]

For each size: a state file with that many releases, each with ``--events`` events of a
realistic mix (claims with a 20-file snapshot, holds, a plan with 20 files, steps, refusals);
the median of 5 opens, of 5 full checks, and a ``release()`` read after the check (served
from the folds it made). Prints a table; not a test. Everything lives in a temporary folder.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.domain.history import EventKind
from bot.domain.tags import ReleaseTag
from bot.journal.store import StateStore


def fill(path: Path, releases: int, events: int) -> int:
    store = StateStore(path)
    files = [
        {"path": f"f{n}.tgz", "size": 1000 + n, "mtime": 1.8e9, "sha256": "a" * 64}
        for n in range(20)
    ]
    planned = [
        {"path": f"f{n}.tgz", "target": f"3.14.1/f{n}.tgz", "role": "source", "size": 1000 + n,
         "sha256": "a" * 64}
        for n in range(20)
    ]  # fmt: skip
    plan = {"digest": "d" * 64, "files": planned}
    written = 0
    store._db.execute("BEGIN")  # one transaction: filling is not what is measured
    for r in range(releases):
        tag = ReleaseTag.parse(f"3.{r // 100 + 10}.{r % 100}")
        for n in range(events):
            match n % 8:
                case 0:
                    store.append(tag, "ned", EventKind.CLAIMED, role="macos", snapshot=files)
                case 1:
                    store.append(tag, "ned", EventKind.HELD, reason="notarization")
                case 2:
                    store.append(tag, "ned", EventKind.UNHELD, holder="ned")
                case 3:
                    store.append(
                        tag, "hugo", EventKind.PLANNED, code_hash="h", expires_at=1e9, plan=plan
                    )
                case 4:
                    store.append(tag, "hugo", EventKind.PLAN_DROPPED, reason="replaced")
                case 5:
                    store.append(tag, "relbot", EventKind.STEP_STARTED, step="promote")
                case 6:
                    store.append(tag, "relbot", EventKind.STEP_DONE, step="promote", detail="")
                case _:
                    store.append(tag, "eve", EventKind.REFUSED, command="/publish", reason="no")
            written += 1
    store._db.execute("COMMIT")
    store.close()
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", default="50,500")
    parser.add_argument("--events", type=int, default=40)
    args = parser.parse_args()
    print(f"{'releases':>8} {'events':>8} {'open':>10} {'check every event':>18} {'release()':>10}")
    with tempfile.TemporaryDirectory() as temp:
        for releases in (int(n) for n in args.releases.split(",")):
            path = Path(temp) / f"state-{releases}.db"
            written = fill(path, releases, args.events)
            opens, checks = [], []
            for _ in range(5):
                start = time.perf_counter()
                store = StateStore(path)
                opens.append(time.perf_counter() - start)
                start = time.perf_counter()
                store.check_every_event()
                checks.append(time.perf_counter() - start)
                start = time.perf_counter()
                store.release(ReleaseTag.parse("3.10.0"))
                read = time.perf_counter() - start
                store.close()
            print(
                f"{releases:>8} {written:>8} {statistics.median(opens) * 1000:>7.1f} ms "
                f"{statistics.median(checks) * 1000:>15.0f} ms {read * 1e6:>7.0f} µs"
            )


if __name__ == "__main__":
    main()
