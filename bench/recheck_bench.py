"""What a resumed promotion pays for hashing the bot's copies again (local and SFTP).

    .venv/bin/python bench/recheck_bench.py [--gb 1.5] [--runs 3]

A 60-file release (artifacts sharing ``--gb`` gigabytes, sidecars small) is frozen once per
run, then promoted with ``recheck`` on (as after a restart or a stop: every copy hashed again
before the first move) into one public folder and off (as right after the freeze) into
another. Prints the median of each, in milliseconds; not a test. Everything lives in a
temporary folder removed at the end.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.promotion_bench import plan_for, stage
from bot.ports import Storage
from bot.storage.local import LocalStorage
from tests.sshd import SshServer
from tests.storage.conftest import sftp_storage

TAG = "3.14.1"


def one_run(root: Path, sftp: bool, server: SshServer, gb: float) -> list[float]:
    """Promote the same frozen release with recheck and without; returns both times (ms)."""
    times = []
    for recheck in (True, False):
        run = root / f"run-{recheck}"
        staging, public = run / "staging", run / "public"
        staging.mkdir(parents=True)
        public.mkdir()
        names = stage(staging, TAG, int(gb * 1e9))
        plan = plan_for(staging, TAG, names)
        storage: Storage = (
            sftp_storage(server, staging, public) if sftp else LocalStorage(staging, public)
        )
        assert storage.freeze(plan) == []
        start = time.perf_counter()
        report = storage.promote(plan, recheck=recheck)
        times.append((time.perf_counter() - start) * 1000)
        assert not report.problems, report.problems
        shutil.rmtree(run)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gb", type=float, default=1.5)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="relbot-recheck-") as tmp:
        root = Path(tmp)
        server = SshServer.create(root / "sshd")
        server.start()
        try:
            print(f"Promotion of 60 files, {args.gb} GB, median of {args.runs} runs (ms)")
            print(f"{'backend':8} {'recheck':>10} {'no recheck':>11} {'cost':>8}")
            for name in ("local", "sftp"):
                rows = [
                    one_run(root / f"{name}-{i}", name == "sftp", server, args.gb)
                    for i in range(args.runs)
                ]
                on = statistics.median(r[0] for r in rows)
                off = statistics.median(r[1] for r in rows)
                print(f"{name:8} {on:10.0f} {off:11.0f} {on - off:8.0f}")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
