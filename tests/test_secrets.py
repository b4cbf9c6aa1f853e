"""No secret the config names ever reaches the logs or the terminal, even at debug level and
even when every service fails."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.pinned import RELEASE_CYCLE_LINE
from tests.sshd import free_port
from tests.waiting import Drained, wait_until

RELBOT = Path(sys.executable).with_name("relbot")
SECRETS = {
    "T_PASS": "PASSPHRASE-MARK-5",
    "T_PYDOTORG": "rm:PYDOTORG-MARK-1",
    "T_SLACK_BOT": "xoxb-SLACK-MARK-2",
    "T_SLACK_APP": "xapp-SLACK-MARK-3",
    "T_DISCORD": "DISCORD-MARK-4",
    "T_SLACK_SIGNING": "SIGNING-MARK-6",
}


def every_secret_config(folder: Path, slack_mode: str = "socket") -> None:
    closed = free_port()  # nothing listens there: every service fails
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", SECRETS["T_PASS"], "-f", folder / "key"],
        check=True,
    )
    (folder / "known_hosts").write_text("")
    (folder / "relbot.toml").write_text(
        RELEASE_CYCLE_LINE
        + textwrap.dedent(f"""
        [storage]
        kind = "sftp"
        host = "127.0.0.1"
        port = {closed}
        user = "relbot"
        key_file = "key"
        known_hosts = "known_hosts"
        passphrase_env = "T_PASS"
        staging = "/srv/staging"
        public = "/srv/public"

        [pydotorg]
        kind = "api"
        url = "http://127.0.0.1:{closed}/api/v1/"
        auth_env = "T_PYDOTORG"

        [slack]
        mode = "{slack_mode}"
        port = {free_port()}
        bot_token_env = "T_SLACK_BOT"
        app_token_env = "T_SLACK_APP"
        signing_secret_env = "T_SLACK_SIGNING"
        channel = "C1"
        api_url = "http://127.0.0.1:{closed}/api/"

        [discord]
        token_env = "T_DISCORD"
        guild = 112233445566778899
        channel = 112233445566778890
        api_url = "http://127.0.0.1:{closed}/api/v10"

        [people.hugo]
        rm = ["3.14"]
        """)
    )


def assert_no_secret(output: str) -> None:
    for name, value in SECRETS.items():
        assert value not in output, f"{name} leaked"
        assert value.split(":")[-1] not in output, f"{name} leaked"


def test_check_names_every_failure_and_no_secret(tmp_path: Path) -> None:
    every_secret_config(tmp_path)
    result = subprocess.run(
        [str(RELBOT), "check", "--log-level", "debug"],
        cwd=tmp_path, env={**os.environ, **SECRETS}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 1
    reported = [line for line in result.stderr.splitlines() if line.startswith("relbot check:")]
    assert len(reported) == 4, result.stderr  # storage, python.org, slack, discord
    assert "DEBUG" in result.stderr
    assert_no_secret(result.stdout + result.stderr)


@pytest.mark.parametrize("slack_mode", ["socket", "http"])
def test_a_failing_run_logs_no_secret(tmp_path: Path, slack_mode: str) -> None:
    every_secret_config(tmp_path, slack_mode)
    for fmt in ("text", "json"):
        out, err = run_until_it_fails(tmp_path, fmt)
        assert "DEBUG" in err or '"debug"' in err
        assert_no_secret(out + err)


def run_until_it_fails(folder: Path, log_format: str) -> tuple[str, str]:
    """``relbot run`` at debug level until it failed to reach its services; (stdout, stderr).

    Socket mode retries Slack for ever: it is stopped once it gave up a first time (the
    tokens sent twice by then). HTTP mode fails to log in to Discord and exits by itself."""
    bot = subprocess.Popen(
        [str(RELBOT), "run", "--log-level", "debug", "--log-format", log_format],
        cwd=folder, env={**os.environ, **SECRETS}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    out, err = Drained(bot.stdout), Drained(bot.stderr)
    wait_until(
        "the bot to fail to reach its services",
        # One line per failed attempt (relbot's backoff), or the SDK's own words.
        lambda: (
            bot.poll() is not None or err.has("attempt 1 failed") or err.has("Failed to connect")
        ),
        timeout=60,
    )
    if bot.poll() is None:
        bot.send_signal(signal.SIGTERM)
    return out.text(bot), err.text(bot)


def test_the_audit_trail_keeps_no_code_nor_anything_typed_after_it() -> None:
    from bot.service.gate import _redact  # what a refused command is recorded as

    assert _redact("/publish 3.14.1 confirm K7Q2XF3M") == "/publish 3.14.1 confirm <code>"
    assert _redact("/publish 3.14.1 CONFIRM K7Q2XF3M 4/0AfJohX") == (
        "/publish 3.14.1 CONFIRM <code> <login>"  # a login code after it is a secret too
    )
    long = _redact("/publish 3.14.1 confirm " + "K7Q2XF3M" * 40)
    assert "K7Q2" not in long  # redacted, then cut


def test_log_lines_lose_every_form_a_code_travels_in() -> None:
    from bot.logs import redact_codes

    forms = [
        "To publish, type within 10 minutes: /publish 3.14.1 confirm K7Q2XF3M",
        "command=%2Fpublish&text=3.14.1+confirm+k7q2xf3m",
        '{"value": "{\\"tag\\":\\"3.14.1\\",\\"code\\":\\"K7Q2XF3M\\"}"}',
        "payload=%7B%22code%22%3A%22K7Q2XF3M%22%7D",
        "custom_id='relbot:confirm:3.14.1:K7Q2XF3M'",
        "{'name': 'confirm', 'type': 3, 'value': 'K7Q2XF3M'}",
    ]
    for form in forms:
        assert "k7q2xf3m" not in redact_codes(form).lower(), form
    assert redact_codes("confirm the plan") == "confirm the plan"
