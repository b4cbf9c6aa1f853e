"""What the announcement's steps cost after registration, against the tests' doubles on
loopback:

    .venv/bin/python bench/announcing_bench.py [--runs 3] [--files 60] [--mb 1]

- downloads: every file of a ``--files``-file release of ``--mb`` MiB each fetched from a
  local HTTP server serving the public folder, hashed as it streams, with 1 and 4 at a time;
- release-page: making a release public through the API v2 double holding 600 releases
  (two full listings, one PATCH);
- discourse: looking for the topic, then posting it.

Loopback hides the network: on python.org the downloads step is bound by the link (a 1.5 GB
release at 100 MB/s takes 15 s more). Prints a table; not a test.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.domain.announcement import Announcement
from bot.domain.plan import PlanFile, PublishPlan
from bot.domain.profile import load_profile
from bot.domain.tags import ReleaseTag
from bot.pydotorg.discourse import DiscourseClient
from bot.pydotorg.downloads import DownloadsCheck
from bot.pydotorg.release_page import ReleasePageClient, v2_url
from tests.doubles.discourse import DiscourseDouble
from tests.doubles.downloads import PublicSite
from tests.doubles.pydotorg import PydotorgDouble

TAG = ReleaseTag.parse("3.14.1")


def release(public: Path, files: int, mb: int) -> PublishPlan:
    """``files`` files of ``mb`` MiB in ``public/3.14.1/``, and the plan naming them."""
    planned = []
    block = bytes(range(256)) * 4096  # 1 MiB
    for n in range(files):
        target = f"3.14.1/file-{n:02d}.bin"
        data = block * mb + n.to_bytes(4, "big")
        (public / target).parent.mkdir(parents=True, exist_ok=True)
        (public / target).write_bytes(data)
        planned.append(
            PlanFile(target, target, "source", len(data), hashlib.sha256(data).hexdigest())
        )
    return PublishPlan(TAG, tuple(planned))


def timed(
    runs: int, action: Callable[[], object], before: Callable[[], object] = lambda: None
) -> list[float]:
    times = []
    for _ in range(runs):
        before()
        start = time.perf_counter()
        action()
        times.append((time.perf_counter() - start) * 1000)
    return times


def row(name: str, times: list[float]) -> str:
    return (
        f"| {name:<48} | {statistics.median(times):9.1f} | {min(times):9.1f} | {max(times):9.1f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--files", type=int, default=60)
    parser.add_argument("--mb", type=int, default=1)
    args = parser.parse_args()
    lines = [
        "| step (median of runs, ms)                        |    median |       min |       max |",
        "|--------------------------------------------------|-----------|-----------|-----------|",
    ]
    with tempfile.TemporaryDirectory() as folder:
        public = Path(folder)
        plan = release(public, args.files, args.mb)
        with PublicSite(public) as site:
            for workers in (1, 4):
                check = DownloadsCheck(site.url, workers=workers)
                name = f"downloads: {args.files} x {args.mb} MiB, {workers} at a time"
                lines.append(row(name, timed(args.runs, lambda c=check: c.verify(plan))))
    with PydotorgDouble(tokens={"rm": ("token", True)}) as api:
        for n in range(600):
            api.add_release(f"Python 3.{n // 20}.{n % 20}", published=True, latest=n == 599)
        client = ReleasePageClient(v2_url(api.url), "token", load_profile("cpython"))
        counter = iter(range(10_000))
        tags: list[ReleaseTag] = []

        def fresh_release() -> None:
            tag = ReleaseTag.parse(f"3.99.{next(counter)}")
            api.add_release(f"Python {tag}")
            tags.append(tag)

        lines.append(
            row(
                "release-page: 600 releases, 2 listings, 1 PATCH",
                timed(args.runs, lambda: client.publish(tags[-1]), fresh_release),
            )
        )
    with DiscourseDouble(users={"hugo": "key"}) as forum:
        poster = DiscourseClient(forum.url, "key", "hugo", category=23, tags=["release"])
        numbers = iter(range(10_000))

        def post() -> None:
            text = Announcement(f"Python 3.14.{next(numbers)} is now available!", "x" * 3000)
            if poster.find_topic(text.title) is None:
                poster.post(text)

        lines.append(row("discourse: look for the topic, then post it", timed(args.runs, post)))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
