"""With the network down, `relbot run` keeps trying and says so in one line per attempt,
with the wait before the next one and the reason; never a traceback per retry."""

from __future__ import annotations

import logging
import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bot.backoff import Backoff, OneLineRetries
from tests.sshd import free_port
from tests.waiting import Drained, wait_until

RELBOT = Path(sys.executable).with_name("relbot")
TEAM = '[people.hugo]\nrm = ["3.14"]\n'


def run_until(folder: Path, pattern: str, env: dict[str, str], *, console: bool = False) -> str:
    """Run the bot at info level until its stderr has matched ``pattern`` (a machine under
    load starts it late: never a fixed time), then stop it: as systemd does, or on the
    console by ending its input. Returns its stderr."""
    bot = subprocess.Popen(
        [str(RELBOT), "run", "--log-level", "info"],
        cwd=folder,
        env={**os.environ, **env},
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    err = Drained(bot.stderr)
    try:
        wait_until(pattern, lambda: re.search(pattern, "".join(err.lines)), timeout=60)
    finally:
        if console:
            assert bot.stdin is not None
            bot.stdin.close()
        else:
            bot.send_signal(signal.SIGTERM)
    text = err.text(bot)
    assert bot.returncode == 0, text
    return text


@pytest.mark.parametrize(
    ("table", "env", "who"),
    [
        (
            '[slack]\nchannel = "C1"\napi_url = "http://127.0.0.1:{port}/api/"\n',
            {"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_APP_TOKEN": "xapp-test"},
            "slack",
        ),
        (
            '[discord]\nguild = 112233445566778899\nchannel = 112233445566778890\napi_url = "http://127.0.0.1:{port}/api/v10"\n',
            {"DISCORD_TOKEN": "test-token"},
            "discord",
        ),
    ],
)
def test_a_chat_platform_that_cannot_be_reached_is_retried_with_backoff(
    tmp_path: Path, table: str, env: dict[str, str], who: str
) -> None:
    for folder in ("staging", "public"):
        (tmp_path / folder).mkdir()
    closed = free_port()  # nothing listens there
    (tmp_path / "relbot.toml").write_text(
        '[storage]\nstaging = "staging"\npublic = "public"\n' + table.format(port=closed) + TEAM
    )

    err = run_until(tmp_path, rf"{who}: reaching \S+: attempt 3 failed", env)

    attempts = re.findall(
        rf"{who}: reaching \S+: attempt (\d+) failed \((\w+): [^\n]*\); retrying in (\d+) s", err
    )
    assert len(attempts) >= 2, err
    assert [int(n) for n, _, _ in attempts] == list(range(1, len(attempts) + 1))
    assert [int(s) for _, _, s in attempts][:3] == [1, 2, 4][: len(attempts)]
    assert "Traceback" not in err


def test_unreachable_sftp_staging_logs_one_line_per_attempt(tmp_path: Path) -> None:
    closed = free_port()
    (tmp_path / "known_hosts").write_text("")
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", tmp_path / "key"], check=True
    )
    (tmp_path / "relbot.toml").write_text(
        textwrap.dedent(f"""
        poll_interval = 1
        [storage]
        kind = "sftp"
        host = "127.0.0.1"
        port = {closed}
        user = "relbot"
        key_file = "key"
        known_hosts = "known_hosts"
        staging = "/srv/staging"
        public = "/srv/public"
        """)
        + TEAM
    )

    err = run_until(tmp_path, r"scan 2 of staging failed", {}, console=True)

    assert re.search(
        r"storage: connecting to \S+ failed \(attempt 1: Cannot reach [^\n]*\); retrying in 0\.2 s",
        err,
    ), err
    scans = re.findall(r"scan (\d+) of staging failed \([^\n]*\); next scan in (\d+) s", err)
    assert scans[:2] == [("1", "1"), ("2", "2")], err
    assert "Traceback" not in err


def test_delays_double_up_to_the_cap() -> None:
    backoff = Backoff("x", first=1, cap=8)
    logger = logging.getLogger("relbot.test")
    delays = [backoff.failed(logger, OSError("down")) for _ in range(6)]
    assert delays == [1, 2, 4, 8, 8, 8]


def test_an_sdk_retry_with_a_traceback_becomes_one_line() -> None:
    try:
        raise ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 9)")
    except OSError:
        record = logging.LogRecord(
            "slack_bolt.AsyncApp", logging.ERROR, __file__, 1,
            "Failed to connect (error: %s); Retrying...", ("refused",), sys.exc_info(),
        )  # fmt: skip
    other = logging.LogRecord("x", logging.ERROR, __file__, 1, "Another error", (), None)

    kept = OneLineRetries("Failed to connect")
    assert kept.filter(record) and kept.filter(other)

    assert record.exc_info is None and record.levelname == "WARNING"
    assert record.getMessage() == (
        "Failed to connect (error: refused); Retrying... "
        "(ConnectionRefusedError: [Errno 111] Connect call failed ('127.0.0.1', 9))"
    )
    assert other.levelno == logging.ERROR
