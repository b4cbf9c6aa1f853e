"""The state file is the bot's, and stays so: deleted, replaced or swapped for a link while
the bot runs, the bot records nothing more and says so once; a start never makes a fresh file
where events were recorded (an empty or missing one), nor adopts another program's SQLite
file; a file cut short is refused with advice about the file. Real ``relbot`` processes on
real files."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bot.journal.store import StateStore
from tests.waiting import Drained, wait_until

RELBOT = Path(sys.executable).with_name("relbot")
SECRETS = ("PYDOTORG_AUTH", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "DISCORD_TOKEN")


def _env() -> dict[str, str]:
    drop = {*SECRETS, "RELBOT_CONFIG", "RELBOT_CONSOLE_FIXED_CODE"}
    return {k: v for k, v in os.environ.items() if k not in drop}


def relbot(cwd: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(RELBOT), *args],
        cwd=cwd,
        env=_env(),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


class Bot:
    """``relbot run`` on the built-in default, typed to line by line."""

    def __init__(self, cwd: Path) -> None:
        self.process = subprocess.Popen(
            [str(RELBOT), "run"],
            cwd=cwd,
            env=_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.out, self.err = Drained(self.process.stdout), Drained(self.process.stderr)

    def type(self, line: str, answer: str) -> None:
        """Type ``line`` and wait until stdout shows ``answer``."""
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        wait_until(f"{answer!r} after {line!r}", lambda: self.out.has(answer), timeout=60)

    def finish(self) -> tuple[str, str]:
        assert self.process.stdin is not None
        self.process.stdin.close()
        out, err = self.out.text(self.process), self.err.text(self.process)
        assert self.process.returncode == 0, err
        return out, err


@pytest.fixture
def bot(tmp_path: Path) -> Iterator[Bot]:
    running = Bot(tmp_path)
    yield running
    if running.process.poll() is None:
        running.process.kill()
        running.process.wait()


def _delete(state: Path) -> None:
    state.unlink()


def _replace(state: Path) -> None:
    other = state.with_name("other.db")
    other.write_bytes(state.read_bytes())
    os.replace(other, state)


def _link(state: Path) -> None:
    moved = state.with_name("moved.db")
    os.replace(state, moved)
    state.symlink_to(moved)  # the same inode behind the link: still not the bot's file


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (_delete, "was deleted"),
        (_replace, "was replaced by another file"),
        (_link, "was replaced by a link"),
    ],
)
def test_a_state_file_taken_away_while_the_bot_runs_stops_recording_and_is_said_once(
    bot: Bot, tmp_path: Path, change: Callable[[Path], None], said: str
) -> None:
    state = tmp_path / "relbot-data" / "state.db"
    bot.type("/hold 3.14.1 before", "3.14.1 is on hold")
    change(state)
    bot.type("/hold 3.14.1 after", "Nothing was changed")
    bot.type("/unhold 3.14.1", "Nothing was changed")
    bot.type("/status 3.14.1", "Try /status again")
    out, err = bot.finish()
    sentence = f"The state file {state} {said} while relbot ran"
    assert sentence in out  # every command answers it
    logged = [line for line in err.splitlines() if sentence in line and " ERROR " in line]
    assert len(logged) == 1, err  # the log says it once
    assert "on hold: after" not in out
    if change is not _delete:  # the file at the path was never written by the bot
        held = sqlite3.connect(state).execute("SELECT COUNT(*) FROM events").fetchone()[0]
        assert held == 1


def test_a_restart_after_the_state_file_was_deleted_is_refused_and_creates_nothing(
    bot: Bot, tmp_path: Path
) -> None:
    state = tmp_path / "relbot-data" / "state.db"
    bot.type("/hold 3.14.1 wait for the docs", "3.14.1 is on hold")
    # A second bot is refused (the lock) without first making a fresh, empty state file.
    state.unlink()
    second = relbot(tmp_path, "run", stdin="/status\n")
    assert second.returncode == 1
    assert not state.exists()
    bot.finish()
    for args in (["run"], ["check", "--offline"], ["check"], ["audit", "3.14.1"]):
        again = relbot(tmp_path, *args, stdin="/status\n")
        assert again.returncode == 1, again
        assert f"state: {state} is missing, but relbot recorded events in it" in again.stderr
        assert f"delete {state}.recorded" in again.stderr  # starting afresh on purpose
        assert not state.exists()


def test_an_empty_state_file_after_events_were_recorded_is_refused_not_a_fresh_start(
    tmp_path: Path,
) -> None:
    state = tmp_path / "relbot-data" / "state.db"
    assert relbot(tmp_path, "run", stdin="/hold 3.14.1 not yet\n").returncode == 0
    for leftover in (state, state.with_name("state.db-wal"), state.with_name("state.db-shm")):
        if leftover.exists():
            leftover.write_bytes(b"")  # a botched restore, `> state.db`
    for args in (["run"], ["check", "--offline"], ["status", "3.14.1"]):
        refused = relbot(tmp_path, *args, stdin="/publish 3.14.1\n")
        assert refused.returncode == 1, refused
        assert f"state: {state} is empty (0 bytes), but relbot recorded" in refused.stderr
        assert state.stat().st_size == 0
    # Starting afresh on purpose, as the sentence says: the demo starts again.
    state.unlink()
    state.with_name("state.db.recorded").unlink()
    assert relbot(tmp_path, "check", "--offline").returncode == 0


def test_a_fresh_relbot_file_without_events_where_events_were_recorded_is_refused(
    tmp_path: Path,
) -> None:
    state = tmp_path / "relbot-data" / "state.db"
    assert relbot(tmp_path, "run", stdin="/hold 3.14.1 not yet\n").returncode == 0
    state.unlink()
    marker = state.with_name("state.db.recorded")
    os.replace(marker, tmp_path / "aside")
    StateStore(state).close()  # a fresh file, as an older relbot's refused second run made
    os.replace(tmp_path / "aside", marker)
    for args in (["run"], ["check", "--offline"]):
        refused = relbot(tmp_path, *args)
        assert refused.returncode == 1
        assert f"state: {state} has no events, but relbot recorded events in it" in (refused.stderr)


def test_another_programs_sqlite_file_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    state = tmp_path / "relbot-data" / "state.db"
    state.parent.mkdir()
    with sqlite3.connect(state) as db:
        db.execute("CREATE TABLE moz_places (id INTEGER PRIMARY KEY, url TEXT)")
        db.execute("INSERT INTO moz_places (url) VALUES ('https://www.python.org/')")
    db.close()
    before = state.read_bytes()
    for args in (["run"], ["check", "--offline"]):
        refused = relbot(tmp_path, *args, stdin="/hold 3.14.1 x\n")
        assert refused.returncode == 1, refused
        assert f"state: {state} is another program's SQLite file (its tables: moz_places)" in (
            refused.stderr
        )
        assert state.read_bytes() == before
        assert not state.with_name("state.db.recorded").exists()


@pytest.mark.parametrize("keep", [10, 0.5])
def test_a_state_file_cut_short_is_refused_with_advice_about_the_file(
    tmp_path: Path, keep: float
) -> None:
    state = tmp_path / "relbot-data" / "state.db"
    lines = "".join(f"/hold 3.14.1 reason {n} {'x' * 2000}\n" for n in range(40))
    assert relbot(tmp_path, "run", stdin=lines).returncode == 0
    size = state.stat().st_size
    assert size > 8192
    os.truncate(state, int(keep if keep >= 1 else size * keep))
    for args in (["run"], ["check", "--offline"], ["audit", "3.14.1"]):
        refused = relbot(tmp_path, *args)
        assert refused.returncode == 1, refused
        assert f"state: cannot use {state} as the state file: it is damaged (cut short or " in (
            refused.stderr
        ), refused.stderr
        advice = refused.stderr.split("damaged")[1].split("\n")[0]
        assert "restore this file from a backup" in advice
        assert "folder" not in advice


def test_check_offline_on_a_sound_state_file_writes_nothing_beside_it(tmp_path: Path) -> None:
    """The state file is read (SQLite's read-only mode, ``immutable`` when no bot is on it):
    no file beside it is made or touched. (Folders are probed: their times move.)"""
    assert relbot(tmp_path, "run", stdin="/hold 3.14.1 not yet\n").returncode == 0
    data = tmp_path / "relbot-data"

    def files() -> dict[str, tuple[int, bytes]]:
        return {
            p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in data.iterdir() if p.is_file()
        }

    before = files()
    assert "state.db" in before and "state.db-wal" not in before
    checked = relbot(tmp_path, "check", "--offline")
    assert checked.returncode == 0, checked.stderr
    assert files() == before
