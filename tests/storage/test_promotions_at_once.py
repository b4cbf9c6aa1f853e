"""Releases confirmed in the same second are promoted one after the other: on a public folder
that has no ``doc/`` yet, each release's docs would become public by renaming its own ``doc/``
tree into place, and the second such rename fails ("Directory not empty"). One promotion at a
time, the second sees the first's ``doc/`` and renames only ``doc/TAG``.

Over SFTP the storage's one connection runs one operation at a time already; locally, two
threads (two publishes) reach the same folders at once."""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bot.storage.local import LocalStorage
from tests.storage.conftest import plan_for, staged_release

TAGS = ["3.14.2", "3.13.11"]
FILES = ["Python-{tag}.tgz", "docs/index.html", "docs/library/os.html"]


class MeetingAtTheRename(LocalStorage):
    """Each promotion's first public rename waits (up to 2 s) for the other's: two
    promotions running at once both rename before either finishes."""

    def __init__(self, staging: Path, public: Path) -> None:
        super().__init__(staging, public)
        self.both = threading.Barrier(2, timeout=2)

    def _rename(self, source: Path, target: Path) -> None:
        # Broken: the other promotion is not under way, it waits for this one to end.
        with contextlib.suppress(threading.BrokenBarrierError):
            self.both.wait()
        super()._rename(source, target)


def test_two_releases_promoted_at_the_same_moment_into_a_fresh_public_folder_both_publish(
    tmp_path: Path,
) -> None:
    team = staged_release(tmp_path, TAGS[0], [f.format(tag=TAGS[0]) for f in FILES])
    for path in FILES:
        team.write(TAGS[1], path.format(tag=TAGS[1]), f"content of {path} for {TAGS[1]}")
    storage = MeetingAtTheRename(team.staging, team.public)
    plans = [plan_for(team, tag, [f.format(tag=tag) for f in FILES]) for tag in TAGS]
    for plan in plans:
        assert storage.freeze(plan) == []

    with ThreadPoolExecutor(2) as pool:
        reports = list(pool.map(storage.promote, plans))

    assert [r.problems for r in reports] == [(), ()]
    assert sorted(team.public_files()) == sorted(
        f"{target}" for plan in plans for target in (f.target for f in plan.files)
    )
    assert sorted(p.name for p in (team.public / "doc").iterdir()) == sorted(TAGS)
