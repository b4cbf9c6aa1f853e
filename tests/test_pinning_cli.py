"""``relbot run`` survives a publish it cannot finish: a regular file where the public folder
should be stops the publish at confirmation and on every restart, without killing the bot,
and the restarted bot finishes the publish once the file is gone."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.console_driver import publish_through_console

RELBOT = Path(sys.executable).with_name("relbot")
READY = [
    "/ready source 3.14.1",
    "/ready docs 3.14.1",
    "/as steve",
    "/ready windows 3.14.1",
    "/as ned",
    "/ready macos 3.14.1",
    "/as hugo",
    "/publish 3.14.1",
]


def run_bot(cwd: Path, text: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(RELBOT), "run"], cwd=cwd, input=text, capture_output=True, text=True, timeout=120
    )


def test_a_stuck_publish_never_kills_relbot_run_and_resumes_after_a_restart(
    tmp_path: Path,
) -> None:
    public = tmp_path / "relbot-data" / "public"

    def block() -> None:
        public.mkdir(parents=True, exist_ok=True)
        (public / "3.14.1").write_text("a file where the release folder should be")

    session = publish_through_console(tmp_path, READY, "3.14.1", at_plan=block)

    assert session.returncode == 0, session.stderr
    assert "Traceback" not in session.stderr
    assert "did not finish" in session.after_confirm
    assert "in the way" in session.after_confirm  # the channel heard why

    again = run_bot(tmp_path, "/status 3.14.1\n")  # restarted: resumes, fails again, serves
    assert again.returncode == 0, again.stderr
    assert "Traceback" not in again.stderr
    assert "3.14.1" in again.stdout
    assert (public / "3.14.1").is_file()

    (public / "3.14.1").unlink()
    last = run_bot(tmp_path, "")
    assert last.returncode == 0, last.stderr
    assert "3.14.1 is published" in last.stdout
    assert len([p for p in (public / "3.14.1").rglob("*") if p.is_file()]) == 12
