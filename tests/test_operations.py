"""Running relbot as operators do: health endpoints, JSON logs, state schema upgrades."""

from __future__ import annotations

import json
import socket
import sqlite3
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from bot.domain.history import EventKind
from bot.domain.tags import ReleaseTag
from bot.errors import StorageError
from bot.journal.store import MIGRATIONS, SCHEMA_VERSION, StateStore
from tests.waiting import wait_until

RELBOT = Path(sys.executable).with_name("relbot")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def scanned(port: int) -> tuple[int, str] | None:
    """``/healthz`` once the bot has scanned at least once; None before (or not listening)."""
    try:
        status, body = get(f"http://127.0.0.1:{port}/healthz")
    except OSError:
        return None
    return (status, body) if json.loads(body)["scans"] >= 1 else None


def metrics_with(port: int, line: str) -> tuple[int, str] | None:
    status, metrics = get(f"http://127.0.0.1:{port}/metrics")
    return (status, metrics) if line in metrics.splitlines() else None


def test_running_bot_serves_healthz_and_metrics(tmp_path: Path) -> None:
    port = free_port()
    (tmp_path / "relbot.toml").write_text(
        f"poll_interval = 1\n[health]\nport = {port}\n[people.hugo]\nrm = ['3.14']\n"
    )
    (tmp_path / "relbot-data" / "staging" / "3.14.1").mkdir(parents=True)
    (tmp_path / "relbot-data" / "public").mkdir()  # `relbot run` creates neither folder
    bot = subprocess.Popen(
        [str(RELBOT), "run"], cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert bot.stdin is not None
    try:
        status, body = wait_until("a first scan", lambda: scanned(port), timeout=20)
        assert status == 200 and json.loads(body)["status"] == "ok", body
        bot.stdin.write("/status 3.14.1\n")
        bot.stdin.flush()
        answered = 'relbot_commands_total{command="status"} 1.0'
        status, metrics = wait_until(
            "the /status to be counted", lambda: metrics_with(port, answered), timeout=20
        )
        assert status == 200
        assert "# TYPE relbot_scans_total counter" in metrics
        scans = next(line for line in metrics.splitlines() if line.startswith("relbot_scans_total"))
        assert float(scans.split()[1]) >= 1
        for name in ("scan_duration_seconds_count", "last_successful_scan_timestamp_seconds",
                     "publishes_total", "scan_failures_total"):  # fmt: skip
            assert f"relbot_{name} " in metrics
    finally:
        bot.stdin.close()
        assert bot.wait(timeout=20) == 0


def test_json_logs_are_one_object_per_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [str(RELBOT), "run", "--log-format", "json", "--log-level", "debug"],
        cwd=tmp_path, input="/status\n", capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    assert records, result.stderr
    assert all({"time", "level", "logger", "message"} <= set(r) for r in records)


def make_v1_file(path: Path) -> None:
    """A state file exactly as schema 1 (the first release) left it."""
    db = sqlite3.connect(path)
    db.executescript(MIGRATIONS[0])
    db.execute(
        "INSERT INTO events (at, tag, actor, kind, data) VALUES (?, ?, ?, ?, ?)",
        (1.0, "3.14.1", "ned", "held", json.dumps({"reason": "notarization"})),
    )
    db.execute("PRAGMA user_version=1")
    db.commit()
    db.close()


def test_an_older_state_file_is_upgraded_and_keeps_its_history(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    make_v1_file(path)
    store = StateStore(path)
    assert store.schema_version == SCHEMA_VERSION > 1
    tag = ReleaseTag.parse("3.14.1")
    assert list(store.release(tag).holds) == ["ned"]
    store.set_summary_ref(tag, "C1:1700000000.1")
    store.append(tag, "hugo", EventKind.UNHELD, holder="ned")
    store.close()
    again = StateStore(path)
    assert again.summary_ref(tag) == "C1:1700000000.1"
    assert again.release(tag).holds == {}


def test_a_state_file_from_a_newer_relbot_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    StateStore(path).close()
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    db.commit()
    db.close()
    with pytest.raises(StorageError, match="newer relbot"):
        StateStore(path)


@pytest.mark.parametrize("stdin", ["", "/ready source 3.14.1\n"])
def test_end_of_input_finishes_the_scan_under_way_without_an_error(
    tmp_path: Path, stdin: str
) -> None:
    for attempt in range(4):  # the first scan races the end of input: try it several times
        folder = tmp_path / str(attempt)
        folder.mkdir()
        result = subprocess.run(
            [str(RELBOT), "run"], cwd=folder, input=stdin, capture_output=True, text=True,
            timeout=60,
        )  # fmt: skip
        assert result.returncode == 0
        assert "Traceback" not in result.stderr and "ERROR" not in result.stderr, result.stderr
