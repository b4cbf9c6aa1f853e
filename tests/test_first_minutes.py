"""The first ten minutes of a new user: README's rehearsal block pasted as it is, the
console's help, and which config file is used."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

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


def test_without_the_fixed_code_the_readme_code_is_refused(tmp_path: Path) -> None:
    result = run(tmp_path, "run", stdin="\n".join(rehearsal_block()) + "\n")

    assert result.returncode == 0, result.stderr
    assert "That confirmation code is not valid for 3.14.1" in result.stdout
    assert not (tmp_path / "relbot-data" / "public" / "3.14.1").exists()


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
    folder.mkdir(exist_ok=True)
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
