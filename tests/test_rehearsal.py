"""A whole release rehearsed through the console platform, as a release team would: the bot
runs as a subprocess on the built-in local default, and an observer watches the public folder."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

from bot.service.pipeline.steps import PIPELINE
from tests.console_driver import publish_through_console

RELBOT = Path(sys.executable).with_name("relbot")


class Observer(threading.Thread):
    """Lists the public folders in a tight loop and remembers every distinct count seen."""

    def __init__(self, *folders: Path) -> None:
        super().__init__(daemon=True)
        self.folders = folders
        self.seen: list[set[int]] = [set() for _ in folders]
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            for seen, folder in zip(self.seen, self.folders, strict=True):
                try:
                    seen.add(len(os.listdir(folder)))
                except FileNotFoundError:
                    seen.add(0)


def test_full_rehearsal_publishes_every_file_in_one_step(tmp_path: Path) -> None:
    staging = tmp_path / "relbot-data" / "staging" / "3.14.1"
    public = tmp_path / "relbot-data" / "public"
    observer = Observer(public / "3.14.1", public / "doc" / "3.14.1")
    observer.start()
    staged: list[str] = []

    def at_plan() -> None:
        staged.extend(sorted(p.name for p in staging.rglob("*") if p.is_file()))
        assert len(staged) == 19 and not (public / "3.14.1").exists()

    lines = [
        "/ready source 3.14.1",
        "/ready docs 3.14.1",
        "/as steve",
        "/ready windows 3.14.1",
        "/as ned",
        "/ready macos 3.14.1",
        "/as hugo",
        "/publish 3.14.1",
    ]
    session = publish_through_console(tmp_path, lines, "3.14.1", at_plan=at_plan)
    assert session.returncode == 0, session.stderr
    observer.stop.set()
    observer.join()
    rest = session.after_confirm

    assert "Published 3.14.1: 19 files are public." in rest
    assert observer.seen[0] == {0, 12}, "the 3.14.1/ folder was seen partially filled"
    assert observer.seen[1] == {0, 7}, "the doc/3.14.1/ folder was seen partially filled"
    public_names = sorted(p.name for p in public.rglob("*") if p.is_file())
    assert public_names == staged
    assert not staging.exists()

    audit = subprocess.run(
        [str(RELBOT), "audit", "3.14.1"], cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    who_did_what = [line.split()[1:3] for line in audit]
    assert who_did_what == [
        ["hugo", "claimed"],
        ["hugo", "claimed"],
        ["steve", "claimed"],
        ["ned", "claimed"],
        ["hugo", "planned"],
        ["hugo", "confirmed"],
        *[["relbot", "step-started"], ["relbot", "step-done"]] * len(PIPELINE),
        ["relbot", "published"],
    ]
    steps = [line.split()[3] for line in audit if line.split()[2] == "step-done"]
    assert steps == [f"{step}:" for step in PIPELINE]
    # Nothing announcing beyond the channel is configured: those steps say so and do nothing.
    assert "downloads: no public URL configured" in "\n".join(audit)
    assert "discourse: no forum configured" in "\n".join(audit)
    assert not re.search(r"confirm [A-Z0-9]{6,12}", "\n".join(audit)), "the audit shows a code"
