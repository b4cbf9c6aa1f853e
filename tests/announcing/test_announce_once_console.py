"""One announcement, whatever moment the bot dies: a real ``relbot run`` (console platform,
python.org, the forum and the public site on their doubles) killed with SIGKILL at each step
of the publish pipeline, then started again on the same state, announces the release once in
all it printed, and ends with the ``Published TAG`` line an uninterrupted confirmation ends
with."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bot.service.pipeline.steps import PIPELINE
from tests.announcing.test_announcing_console import ENV, ROLES, TAG, WORDS, Services, services
from tests.console_driver import RELBOT
from tests.waiting import Drained, wait_until

__all__ = ["services"]  # the fixture: python.org, the forum and the public site

ROOT = Path(__file__).parents[2]
ANNOUNCED = f"[#release] {TAG} is published: "
PUBLISHED = re.compile(rf"^Published {re.escape(TAG)}: \d+ files are public\.$", re.MULTILINE)
RESUMED = re.compile(rf"^\[#release\] @hugo Published {re.escape(TAG)}: \d+ files are public\.$")


def dying_bot(cwd: Path, when: str, step: str) -> str:
    """Type the team's lines and the confirmation into a ``relbot run`` that kills itself at
    ``when`` of ``step``; everything it printed before it died."""
    bot = subprocess.Popen(
        [sys.executable, "-m", "tests.announcing.dying_bot", when, step, "run"],
        cwd=cwd,
        env={**os.environ, **ENV, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert bot.stdin is not None
    out, err = Drained(bot.stdout), Drained(bot.stderr)
    lines = [f"/ready {role} {TAG}" for role in ROLES]
    bot.stdin.write("\n".join([*lines, f"/announce {TAG} {WORDS}", f"/publish {TAG}"]) + "\n")
    bot.stdin.flush()
    confirm = wait_until(
        "the plan", lambda: re.search(rf"/publish {TAG} confirm [A-Z0-9]+", "".join(out.lines))
    ).group(0)
    bot.stdin.write(confirm + "\n")
    bot.stdin.flush()
    printed = out.text(bot)
    assert bot.returncode == -signal.SIGKILL, f"it did not die: {printed}{err.text(bot)}"
    return printed


def restarted_bot(cwd: Path) -> str:
    """``relbot run`` on the same state with nothing typed: it resumes, finishes, exits."""
    again = subprocess.run(
        [str(RELBOT), "run"],
        cwd=cwd,
        env={**os.environ, **ENV},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert again.returncode == 0, again.stderr
    return again.stdout


def announcements(printed: str) -> list[str]:
    return [line for line in printed.splitlines() if line.startswith(ANNOUNCED)]


@pytest.mark.parametrize("step", [s for s in PIPELINE if s != "announce"])
@pytest.mark.parametrize("when", ["started", "done"])
def test_a_bot_killed_at_any_step_announces_once_and_ends_as_a_confirmation_does(
    tmp_path: Path, services: Services, when: str, step: str
) -> None:
    before = dying_bot(tmp_path, when, step)
    after = restarted_bot(tmp_path)

    assert len(announcements(before + after)) == 1, before + after
    (topic,) = services.forum.topics
    (announced,) = announcements(before + after)
    assert f"Discussion: {services.forum.url}t/{topic.slug}/{topic.id}" in announced
    assert not PUBLISHED.search(before)  # it died before answering the confirmation
    assert RESUMED.match(after.splitlines()[-1]), after  # the restart's last word


def test_a_bot_killed_after_announcing_has_shown_the_announcement_before_it_died(
    tmp_path: Path, services: Services
) -> None:
    """Killed while tidying (the step that may take seconds after the announcement): the
    announcement was printed, not held back for the confirmation's reply."""
    before = dying_bot(tmp_path, "started", "tidy")

    assert len(announcements(before)) == 1, before


@pytest.mark.parametrize("when", ["started", "done"])
def test_a_bot_killed_while_announcing_shows_the_announcement_once_per_run_at_most(
    tmp_path: Path, services: Services, when: str
) -> None:
    """Killed as the announcement step starts: announced once, after the restart. Killed
    between the print and the journal: the line is out before the bot dies; the console
    keeps no history to look in, so the restarted bot prints it again (once)."""
    before = dying_bot(tmp_path, when, "announce")
    after = restarted_bot(tmp_path)

    assert len(announcements(before)) == (1 if when == "done" else 0), before
    assert len(announcements(after)) == 1, after
    assert RESUMED.match(after.splitlines()[-1]), after
