"""The first ten minutes of a new user: README's rehearsal block pasted into the bot that
`make run` starts, with the release board it serves; starting the rehearsal again; the
console's help; which config file is used, and what a config of one's own must have."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.waiting import Drained, wait_until

RELBOT = Path(sys.executable).with_name("relbot")
README = Path(__file__).parents[1] / "README.md"
MAKEFILE = Path(__file__).parents[1] / "Makefile"
SECRETS = ("PYDOTORG_AUTH", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "DISCORD_TOKEN")


def run(cwd: Path, *args: str, stdin: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in SECRETS}
    for key in ("RELBOT_CONFIG", "RELBOT_CONSOLE_FIXED_CODE"):
        base.pop(key, None)
    return subprocess.run(
        [str(RELBOT), *args],
        cwd=cwd,
        env={**base, **env},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def rehearsal_block() -> list[str]:
    """The lines README tells a new user to type: the first ``text`` block after "You speak
    as `hugo`"."""
    text = README.read_text(encoding="utf-8")
    after = text[text.index("You speak as `hugo`") :]
    block = re.search(r"```text\n(.*?)```", after, re.S)
    assert block is not None, "README lost its rehearsal block"
    return block.group(1).splitlines()


def test_the_readme_rehearsal_pastes_as_shown_and_publishes(tmp_path: Path) -> None:
    lines = rehearsal_block()
    assert all("#" not in line for line in lines), "a trailing comment becomes an argument"
    confirm = re.fullmatch(r"/publish 3\.14\.1 confirm ([A-Z0-9]+)", lines[-1])
    assert confirm is not None
    code = confirm.group(1)
    assert len(code) == 8, "README shows a code of another length than the bot prints"
    assert f"RELBOT_CONSOLE_FIXED_CODE={code} make run" in README.read_text(encoding="utf-8")

    result = run(tmp_path, "run", stdin="\n".join(lines) + "\n", RELBOT_CONSOLE_FIXED_CODE=code)

    assert result.returncode == 0, result.stderr
    assert f"To publish, type within 10 minutes: /publish 3.14.1 confirm {code}" in result.stdout
    assert "Published 3.14.1: 19 files are public." in result.stdout
    assert "Usage:" not in result.stdout and "not a command" not in result.stdout
    assert len(list((tmp_path / "relbot-data" / "public" / "3.14.1").iterdir())) == 12
    assert not (tmp_path / "relbot-data" / "staging" / "3.14.1").exists()


def test_without_the_fixed_code_the_readme_code_is_refused_pointing_at_the_plans_code(
    tmp_path: Path,
) -> None:
    result = run(tmp_path, "run", stdin="\n".join(rehearsal_block()) + "\n")

    assert result.returncode == 0, result.stderr
    assert (
        "That confirmation code is not valid for 3.14.1; use the code your plan printed "
        "(valid until " in result.stdout
    )
    assert not (tmp_path / "relbot-data" / "public" / "3.14.1").exists()


# -- make run: the bot, and the board it serves ------------------------------------------------

BOARD_LINE = re.compile(r"The release board is at (http://127\.0\.0\.1:\d+/)")


def make_run_command() -> list[str]:
    """The command `make run` runs once the virtualenv exists, with this test's virtualenv."""
    venv = Path(sys.executable).parent.parent
    dry = subprocess.run(
        ["make", "-n", "-s", "-f", str(MAKEFILE), "run", f"VENV={venv}"],
        cwd=MAKEFILE.parent,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    command = shlex.split(dry[-1])
    assert command == [str(venv / "bin" / "relbot"), "run"], dry
    return command


def get(url: str) -> tuple[str, bytes]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.headers.get_content_type(), response.read()


def test_make_runs_bot_serves_the_board_at_the_printed_address_during_the_readme_rehearsal(
    tmp_path: Path,
) -> None:
    lines = rehearsal_block()
    code = lines[-1].split()[-1]
    env = {k: v for k, v in os.environ.items() if k not in SECRETS and k != "RELBOT_CONFIG"}
    bot = subprocess.Popen(
        make_run_command(),
        cwd=tmp_path,
        env={**env, "RELBOT_CONSOLE_FIXED_CODE": code},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = Drained(bot.stdout), Drained(bot.stderr)
    try:
        assert bot.stdin is not None
        bot.stdin.write("\n".join(lines) + "\n")  # stdin stays open: the bot keeps serving
        bot.stdin.flush()
        address = wait_until(
            "the board's address",
            lambda: next(filter(None, map(BOARD_LINE.search, err.lines)), None),
        ).group(1)
        wait_until("the publish", lambda: out.has("Published 3.14.1: 19 files are public."))

        kind, page = get(address)
        assert kind == "text/html" and b'href="/releases/3.14.1"' in page
        data: dict[str, Any] = json.loads(get(address + "api/releases/3.14.1")[1])
        assert data["published"] is True and data["blockers"] == []
        assert data["links"]["release page"] == (
            "https://www.python.org/downloads/release/python-3141/"
        )
        assert {f["url"] for f in data["files"]} >= {
            "https://www.python.org/ftp/python/3.14.1/Python-3.14.1.tgz"
        }
        kind, page = get(address + "releases/3.14.1")
        assert b'<a href="https://www.python.org/ftp/python/3.14.1/Python-3.14.1.tgz">' in page
    finally:
        if bot.stdin is not None:
            bot.stdin.close()
    assert bot.wait(timeout=60) == 0, err.text(bot)
    assert "Usage:" not in out.text(bot)


def test_a_finished_rehearsal_says_how_to_start_again_and_demo_reset_does(
    tmp_path: Path,
) -> None:
    lines = "\n".join(rehearsal_block()) + "\n"
    first = run(tmp_path, "run", stdin=lines, RELBOT_CONSOLE_FIXED_CODE="K7Q2XF3M")
    assert "Published 3.14.1" in first.stdout, first.stderr

    again = run(tmp_path, "run", stdin="/status\n")
    assert "The demo release 3.14.1 was published by hugo at " in again.stderr
    assert "relbot demo --reset starts the rehearsal again." in again.stderr
    told = run(tmp_path, "demo")
    assert told.returncode == 0 and "relbot demo --reset deletes it" in told.stdout

    reset = run(tmp_path, "demo", "--reset")

    assert reset.returncode == 0, reset.stderr
    assert "The next relbot run (or make run) stages the demo release 3.14.1 again" in reset.stdout
    assert not (tmp_path / "relbot-data").exists()
    second = run(tmp_path, "run", stdin=lines, RELBOT_CONSOLE_FIXED_CODE="K7Q2XF3M")
    assert "Published 3.14.1: 19 files are public." in second.stdout, second.stderr


def test_demo_reset_is_refused_while_the_demo_runs(tmp_path: Path) -> None:
    bot = subprocess.Popen(
        [str(RELBOT), "run"],
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    err = Drained(bot.stderr)
    try:
        wait_until("the bot's start", lambda: err.has("The release board is at"))

        reset = run(tmp_path, "demo", "--reset")

        assert reset.returncode == 1
        assert reset.stderr.startswith("relbot: Another relbot (pid ")
        assert (tmp_path / "relbot-data" / "staging" / "3.14.1").is_dir()
    finally:
        assert bot.stdin is not None
        bot.stdin.close()
        bot.wait(timeout=60)


def test_demo_reset_leaves_a_config_files_data_alone(tmp_path: Path) -> None:
    team(tmp_path, "flag")

    reset = run(tmp_path, "demo", "--reset")

    assert reset.returncode == 1
    assert "relbot demo is about the built-in default" in reset.stderr
    assert (tmp_path / "relbot-data" / "staging").is_dir()


def test_a_config_of_ones_own_without_its_folders_is_refused_with_what_to_do(
    tmp_path: Path,
) -> None:
    # `relbot check --offline` calls a missing folder wrong, so `relbot run` refuses it too,
    # and creates nothing: a mistyped path is never turned into an empty staging folder.
    (tmp_path / "relbot.toml").write_text('[people.hugo]\nrm = ["3.14"]\n', encoding="utf-8")

    result = run(tmp_path, "run", stdin="/status\n")

    public = tmp_path / "relbot-data" / "public"
    assert result.returncode == 1, result.stderr
    assert (
        f"relbot: storage.public: {public} does not exist; create it (mkdir -p {public}) or "
        "fix the path." in result.stderr.splitlines()
    )
    assert not public.exists(), "a folder from a config file is never created for it"
    assert "Traceback" not in result.stderr


def test_a_config_of_ones_own_with_its_folders_starts_without_a_warning(tmp_path: Path) -> None:
    team(tmp_path, "hugo")

    result = run(tmp_path, "run", stdin="/status\n")

    assert result.returncode == 0 and "does not exist" not in result.stderr, result.stderr


def test_a_config_of_ones_own_serves_the_board_only_when_asked(tmp_path: Path) -> None:
    team(tmp_path, "hugo")

    quiet = run(tmp_path, "run", stdin="/status\n")
    asked = run(tmp_path, "run", "--board", "0", stdin="/status\n")

    assert quiet.returncode == 0 and "release board" not in quiet.stderr
    assert asked.returncode == 0 and BOARD_LINE.search(asked.stderr), asked.stderr


def test_run_help_says_what_runs_without_a_config(tmp_path: Path) -> None:
    result = run(tmp_path, "run", "--help")

    text = " ".join(result.stdout.split())
    assert (
        "Without --config, $RELBOT_CONFIG or ./relbot.toml, relbot runs the built-in default"
        in text
    )
    assert "the release board on 127.0.0.1" in text and "--board PORT" in text


def test_status_of_a_bad_tag_is_an_error_on_stderr_like_manifest(tmp_path: Path) -> None:
    status = run(tmp_path, "status", "3.14")
    manifest = run(tmp_path, "manifest", "3.14")

    for result in (status, manifest):
        assert result.returncode == 1
        assert result.stdout == ""
        assert result.stderr.startswith("relbot: ") and "3.14" in result.stderr


def test_the_fixed_code_is_refused_outside_the_console(tmp_path: Path) -> None:
    (tmp_path / "relbot.toml").write_text(
        '[slack]\nchannel = "C1"\n[people.hugo]\nrm = ["3.14"]\n', encoding="utf-8"
    )

    result = run(tmp_path, "run", RELBOT_CONSOLE_FIXED_CODE="K7Q2XF3M", SLACK_BOT_TOKEN="x")

    assert result.returncode == 1
    assert "RELBOT_CONSOLE_FIXED_CODE is for console rehearsals only" in result.stderr
    assert not (tmp_path / "relbot-data").exists()


def test_a_fixed_code_that_is_no_code_is_refused(tmp_path: Path) -> None:
    result = run(tmp_path, "run", RELBOT_CONSOLE_FIXED_CODE="abc")

    assert result.returncode == 1
    assert "RELBOT_CONSOLE_FIXED_CODE: a confirmation code is 6 to 12" in result.stderr


def test_console_help_lists_as_explains_one_command_and_suggests(tmp_path: Path) -> None:
    result = run(tmp_path, "run", stdin="/help\n/help ready\n/help as\n/readdy source 3.14.1\n")

    out = result.stdout.splitlines()
    assert result.returncode == 0, result.stderr
    assert any(line.strip().startswith("/as PERSON") for line in out)
    assert "/ready ROLE TAG: say your ROLE's files for TAG are staged" in result.stdout
    assert "/as PERSON: console only: speak as another person (hugo, steve, ned)" in result.stdout
    assert "'/readdy' is not a command (did you mean /ready?); type /help for the list." in out


# -- which config -----------------------------------------------------------------------------


def team(folder: Path, person: str) -> Path:
    """A config of one's own beside its folders (relbot run refuses folders that are not)."""
    for name in ("staging", "public"):
        (folder / "relbot-data" / name).mkdir(parents=True, exist_ok=True)
    path = folder / "relbot.toml"
    path.write_text(f'[people.{person}]\nrm = ["3.14"]\n', encoding="utf-8")
    for name in ("staging", "public"):  # `relbot run` creates no folder
        (folder / "relbot-data" / name).mkdir(parents=True, exist_ok=True)
    return path


@pytest.mark.parametrize(
    ("flag", "env", "local", "speaker"),
    [
        (True, True, True, "flag"),
        (False, True, True, "env"),
        (False, False, True, "local"),
        (False, False, False, "hugo"),  # the built-in default's first person
    ],
)
def test_config_precedence_flag_then_relbot_config_then_local_file_then_default(
    tmp_path: Path, flag: bool, env: bool, local: bool, speaker: str
) -> None:
    args = ["run"]
    if flag:
        args += ["--config", str(team(tmp_path / "a", "flag"))]
    environ = {"RELBOT_CONFIG": str(team(tmp_path / "b", "env"))} if env else {}
    if local:
        team(tmp_path, "local")

    result = run(tmp_path, *args, **environ)

    assert result.returncode == 0, result.stderr
    assert f"You are {speaker};" in result.stderr


def test_make_run_installs_only_what_running_needs(tmp_path: Path) -> None:
    dry = subprocess.run(
        ["make", "-n", "-f", str(MAKEFILE), "run", f"VENV={tmp_path / 'venv'}"],
        cwd=MAKEFILE.parent,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "/venv/bin/uv sync --quiet --frozen --inexact" in dry  # the lock, hashes checked
    assert "--extra test" not in dry
