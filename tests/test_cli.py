"""The `relbot` command line, run as a real subprocess of the installed console script, in a
fresh working folder (so the built-in local default applies unless a test writes a config)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.pinned import RELEASE_CYCLE_LINE

TIMEOUT = 60
ISO_TIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"


@pytest.fixture(scope="module")
def relbot() -> str:
    """The console script installed beside this interpreter (the venv's bin folder)."""
    found = shutil.which("relbot", path=str(Path(sys.executable).parent))
    assert found is not None, "relbot is not installed beside this Python; pip install -e ."
    return found


@pytest.fixture
def env() -> dict[str, str]:
    """The environment without any secret a developer may have exported."""
    secrets = ("PYDOTORG_AUTH", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "DISCORD_TOKEN")
    return {k: v for k, v in os.environ.items() if k not in secrets}


class Cli:
    def __init__(self, relbot: str, cwd: Path, env: dict[str, str]) -> None:
        self.relbot, self.cwd, self.env = relbot, cwd, env

    def __call__(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.relbot, *args],
            cwd=self.cwd,
            env=self.env,
            input=stdin if stdin is not None else "",
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )

    def start(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [self.relbot, *args],
            cwd=self.cwd,
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            text=True,
        )


@pytest.fixture
def cli(relbot: str, tmp_path: Path, env: dict[str, str]) -> Cli:
    return Cli(relbot, tmp_path, env)


def script(lines: Sequence[str]) -> str:
    return "".join(line + "\n" for line in lines)


def write_config(folder: Path, text: str) -> Path:
    """``relbot.toml`` in ``folder``, and the default storage folders (`relbot run`, like
    `relbot check`, refuses folders that do not exist: it creates neither)."""
    path = folder / "relbot.toml"
    path.write_text(RELEASE_CYCLE_LINE + text, encoding="utf-8")
    for name in ("staging", "public"):
        (folder / "relbot-data" / name).mkdir(parents=True, exist_ok=True)
    return path


TEAM = """
[people.hugo]
rm = ["3.14"]
roles = ["source", "docs"]
"""


# -- manifest ---------------------------------------------------------------------------------

WINDOWS_3_14_1 = [
    "python-3.14.1.exe",
    "python-3.14.1-amd64.exe",
    "python-3.14.1-arm64.exe",
    "python-3.14.1-embed-win32.zip",
    "python-3.14.1-embed-amd64.zip",
    "python-3.14.1-embed-arm64.zip",
    "windows-3.14.1.json",
]
DOCS_3_14_1 = [
    f"docs/python-3.14.1-docs{suffix}"
    for suffix in (
        ".epub",
        "-html.tar.bz2",
        "-html.zip",
        "-texinfo.tar.bz2",
        "-texinfo.zip",
        "-text.tar.bz2",
        "-text.zip",
    )
]


def test_manifest_prints_each_required_file_as_role_tab_path(cli: Cli) -> None:
    result = cli("manifest", "3.14.1")

    assert result.returncode == 0, result.stderr
    expected = (
        [
            "source\tPython-3.14.1.tgz",
            "source\tPython-3.14.1.tar.xz",
            "source\tpython-3.14.1-aarch64-linux-android.tar.gz",
            "source\tpython-3.14.1-x86_64-linux-android.tar.gz",
        ]
        + [f"docs\t{p}" for p in DOCS_3_14_1]
        + [f"windows\t{p}" for p in WINDOWS_3_14_1]
        + ["macos\tpython-3.14.1-macos11.pkg"]
    )
    assert sorted(result.stdout.splitlines()) == sorted(expected)
    assert result.stdout.endswith("\n")


def test_manifest_of_a_beta_has_no_docs(cli: Cli) -> None:
    result = cli("manifest", "3.14.0b1")

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 4 + 7 + 1
    assert {line.split("\t")[0] for line in lines} == {"source", "windows", "macos"}
    assert not [line for line in lines if "docs" in line]


def test_manifest_of_something_that_is_not_a_tag_exits_1_with_a_sentence(cli: Cli) -> None:
    result = cli("manifest", "3.14")

    assert result.returncode == 1
    assert result.stdout == ""
    assert "'3.14' is not a release tag" in result.stderr
    assert "Traceback" not in result.stderr


# -- status, run, audit -----------------------------------------------------------------------


def test_status_on_a_fresh_folder_answers_with_the_built_in_default(cli: Cli) -> None:
    result = cli("status")

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()
    assert "Traceback" not in result.stderr


def test_a_scripted_console_run_stages_the_demo_and_claims(cli: Cli, tmp_path: Path) -> None:
    result = cli("run", stdin=script(["/ready source 3.14.1"]))

    assert result.returncode == 0, result.stderr
    assert "source is ready for 3.14.1" in result.stdout
    assert (tmp_path / "relbot-data" / "staging" / "3.14.1" / "Python-3.14.1.tgz").is_file()

    status = cli("status", "3.14.1")
    assert status.returncode == 0, status.stderr
    assert re.search(r"source\s+ready\s+hugo", status.stdout), status.stdout


def test_audit_prints_events_oldest_first_with_time_actor_and_event(cli: Cli) -> None:
    run = cli(
        "run",
        stdin=script(
            [
                "/ready source 3.14.1",
                "/as steve",
                "/hold 3.14.1 smoke test",
                "/ready windows 3.14.1",
                "/as hugo",
                "/unready source 3.14.1",
            ]
        ),
    )
    assert run.returncode == 0, run.stderr

    result = cli("audit", "3.14.1")

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    patterns = [
        rf"{ISO_TIME}\s+hugo\s+claimed\s+source",
        rf"{ISO_TIME}\s+steve\s+held\s+smoke test",
        rf"{ISO_TIME}\s+steve\s+claimed\s+windows",
        rf"{ISO_TIME}\s+hugo\s+withdrawn\s+source",
    ]
    assert len(lines) == len(patterns), result.stdout
    for line, pattern in zip(lines, patterns, strict=True):
        assert re.match(pattern, line), line
    stamps = [line.split()[0] for line in lines]
    assert stamps == sorted(stamps)


def test_audit_and_status_work_without_any_secret(cli: Cli) -> None:
    cli("run", stdin=script(["/ready source 3.14.1"]))
    write_config(cli.cwd, '[pydotorg]\nkind = "api"\n' + TEAM)

    assert cli("audit", "3.14.1").returncode == 0
    status = cli("status", "3.14.1")
    assert status.returncode == 0, status.stderr


def test_the_console_speaks_as_the_person_given_with_as(cli: Cli) -> None:
    cli("run", "--as", "ned", stdin=script(["/ready macos 3.14.1"]))

    result = cli("audit", "3.14.1")

    assert re.match(rf"{ISO_TIME}\s+ned\s+claimed\s+macos", result.stdout), result.stdout


def test_status_of_a_tag_with_nothing_staged_is_answered_and_the_bot_goes_on(
    cli: Cli, tmp_path: Path
) -> None:
    write_config(tmp_path, TEAM)

    result = cli("run", stdin=script(["/status 3.14.1", "/help"]))

    assert result.returncode == 0, result.stderr
    assert "Nothing is staged for 3.14.1" in result.stdout
    assert "relbot commands" in result.stdout


def test_the_demo_is_staged_on_the_first_run_even_after_a_status(cli: Cli) -> None:
    assert cli("status").returncode == 0

    result = cli("run", stdin=script(["/ready source 3.14.1"]))

    assert "source is ready for 3.14.1" in result.stdout


# -- check ------------------------------------------------------------------------------------


def test_check_passes_on_the_local_default_and_writes_nothing(cli: Cli, tmp_path: Path) -> None:
    result = cli("check")

    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "relbot-data").exists()  # relbot run makes the demo's folders


def test_check_fails_naming_both_folders_when_they_do_not_exist(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "blocker").write_text("a regular file, not a folder\n", encoding="utf-8")
    write_config(
        tmp_path,
        '[storage]\nkind = "local"\nstaging = "blocker/staging"\npublic = "blocker/public"\n'
        + TEAM,
    )

    result = cli("check")

    assert result.returncode == 1
    assert "storage.staging" in result.stderr
    assert "storage.public" in result.stderr
    assert "does not exist; create it (mkdir -p" in result.stderr
    assert "Traceback" not in result.stderr


# -- bad config -------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["status"], ["manifest", "3.14.1"], ["check"], ["run"]])
def test_a_bad_config_file_exits_1_naming_the_key(
    cli: Cli, tmp_path: Path, command: list[str]
) -> None:
    write_config(tmp_path, "poll_intervall = 5\n" + TEAM)

    result = cli(*command)

    assert result.returncode == 1
    assert "poll_intervall" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_config_given_with_config_is_used(cli: Cli, tmp_path: Path) -> None:
    other = tmp_path / "conf"
    other.mkdir()
    (other / "team.toml").write_text("[people.ned]\nrm = 3.14\n", encoding="utf-8")

    result = cli("status", "--config", "conf/team.toml")

    assert result.returncode == 1
    assert "people.ned.rm" in result.stderr


# -- one owner per state file -----------------------------------------------------------------


def test_a_second_run_on_the_same_state_file_is_refused_at_once(cli: Cli, tmp_path: Path) -> None:
    lock = tmp_path / "relbot-data" / "state.db.lock"
    first = cli.start("run")
    try:
        deadline = time.monotonic() + TIMEOUT
        # The owner writes its pid into the lock file once it holds the lock.
        while not (lock.exists() and lock.read_text() == str(first.pid)):
            assert first.poll() is None, "the first relbot run exited early"
            assert time.monotonic() < deadline, "the first relbot run never took the lock"
            time.sleep(0.05)

        started = time.monotonic()
        second = subprocess.run(
            [cli.relbot, "run"],
            cwd=tmp_path,
            env=cli.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )

        assert second.returncode == 1
        assert str(first.pid) in second.stderr
        assert "Another relbot" in second.stderr
        assert "Traceback" not in second.stderr
        assert time.monotonic() - started < 10
        assert first.poll() is None, "the refused run must not disturb the owner"
    finally:
        assert first.stdin is not None
        first.stdin.close()
        code = first.wait(timeout=TIMEOUT)
    assert code == 0


# -- version ----------------------------------------------------------------------------------


def test_version_prints_the_name_and_version(cli: Cli) -> None:
    result = cli("--version")

    assert result.returncode == 0
    assert re.fullmatch(r"relbot \d+\.\d+\.\d+\S*\n", result.stdout)


def test_run_on_the_console_needs_no_secret_of_a_platform_it_leaves_off(
    cli: Cli, tmp_path: Path
) -> None:
    slack = '[slack]\nchannel = "C0RELEASE"\nbot_token_env = "NOT_SET_HERE"\n'
    write_config(tmp_path, slack + TEAM)

    checked = cli("check", "--offline")
    ran = cli("run", "--platform", "console", stdin=script(["/help"]))

    assert checked.returncode == 1 and "slack.bot_token_env" in checked.stderr
    assert ran.returncode == 0, ran.stderr
    assert "relbot commands" in ran.stdout
