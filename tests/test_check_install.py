"""An install that cannot trap itself: ``relbot check --offline`` writes nothing, lists every
problem in one round, and proves that every place the bot writes can be written from where it
runs (a read-only mount, as systemd's ``ProtectSystem=strict`` makes one, is named with the
unit line to add); the shipped unit covers the default work folder. Real ``relbot``
processes, real mounts (tests run as root)."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from bot.storage.primitives import default_work

RELBOT = Path(sys.executable).with_name("relbot")
DEPLOY = Path(__file__).parents[1] / "deploy"
SECRETS = ("PYDOTORG_AUTH", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "DISCORD_TOKEN")
TEAM = """
[people.hugo]
rm = ["3.14"]
roles = ["source", "docs", "windows", "macos"]
slack = "U01ABCDEF"
"""


def relbot(cwd: Path, *args: str, stdin: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    drop = {*SECRETS, "RELBOT_CONFIG", "RELBOT_CONSOLE_FIXED_CODE"}
    base = {k: v for k, v in os.environ.items() if k not in drop}
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


def tree(root: Path) -> dict[str, tuple[int, bytes]]:
    """Every path under ``root`` with its mode and, for a file, its bytes."""
    found = {}
    for folder, folders, files in os.walk(root):
        for name in folders + files:
            path = Path(folder) / name
            data = path.read_bytes() if path.is_file() else b""
            found[str(path.relative_to(root))] = (path.lstat().st_mode, data)
    return found


def local_config(folder: Path, extra: str = "", *, state: str = "data/state.db") -> None:
    (folder / "staging").mkdir(exist_ok=True)
    (folder / "public").mkdir(exist_ok=True)
    (folder / "relbot.toml").write_text(
        f'state = "{state}"\n[storage]\nkind = "local"\nstaging = "staging"\n'
        f'public = "public"\n{extra}\n{TEAM}',
        encoding="utf-8",
    )


def problems(result: subprocess.CompletedProcess[str]) -> list[str]:
    lines = result.stderr.splitlines()
    assert all(line.startswith("relbot check: ") for line in lines), result.stderr
    return [line.removeprefix("relbot check: ") for line in lines]


def test_check_offline_in_an_empty_folder_writes_nothing(tmp_path: Path) -> None:
    result = relbot(tmp_path, "check", "--offline")
    assert result.returncode == 0, result.stderr
    assert list(tmp_path.iterdir()) == []


def test_check_offline_with_the_state_inside_the_default_work_folder_makes_no_folder(
    tmp_path: Path,
) -> None:
    local_config(tmp_path, state=".relbot-public/state.db")
    before = tree(tmp_path)
    relbot(tmp_path, "check", "--offline")
    assert tree(tmp_path) == before
    assert not (tmp_path / ".relbot-public").exists()


def test_check_offline_after_a_run_leaves_every_file_as_it_was(tmp_path: Path) -> None:
    local_config(tmp_path)
    (tmp_path / "staging" / "3.14.1").mkdir()
    assert relbot(tmp_path, "run", stdin="/hold 3.14.1 not yet\n").returncode == 0
    before = tree(tmp_path)
    result = relbot(tmp_path, "check", "--offline")
    assert result.returncode == 0, result.stderr
    assert tree(tmp_path) == before  # the probes are gone, the state file untouched


def test_check_lists_the_config_errors_and_the_missing_tokens_in_one_round(
    tmp_path: Path,
) -> None:
    local_config(
        tmp_path,
        'poll_interval_typo = 3\n[slack]\nchannel = "C0123456789"\nbot_token_env = "BOT"\n'
        '[pydotorg]\nkind = "api"\nurl = "https://www.python.org/api/v1/"\n',
    )
    found = problems(relbot(tmp_path, "check", "--offline"))
    text = "\n".join(found)
    assert "slack.bot_token_env: the environment variable BOT is not set" in text
    assert "slack.app_token_env: the environment variable SLACK_APP_TOKEN is not set" in text
    assert "pydotorg.auth_env: the environment variable PYDOTORG_AUTH is not set" in text
    assert "poll_interval_typo: unknown key." in text
    assert len(found) == 4, found


@pytest.mark.parametrize(
    ("bot", "app", "said"),
    [
        ("xapp-1-A0", "xapp-1-A1", ["slack.bot_token_env: SLACK_BOT_TOKEN holds an app-level"]),
        ("xoxb-1-2", "xoxb-1-3", ["slack.app_token_env: SLACK_APP_TOKEN holds a bot token"]),
        (
            "xapp-1-A0",
            "xoxb-1-2",
            ["slack.bot_token_env: SLACK_BOT_TOKEN holds", "slack.app_token_env: SLACK_APP"],
        ),
    ],
)
def test_check_offline_refuses_slack_tokens_in_each_others_place(
    tmp_path: Path, bot: str, app: str, said: list[str]
) -> None:
    local_config(tmp_path, '[slack]\nchannel = "C0123456789"\n')
    result = relbot(tmp_path, "check", "--offline", SLACK_BOT_TOKEN=bot, SLACK_APP_TOKEN=app)
    assert result.returncode == 1
    found = problems(result)
    assert len(found) == len(said), found
    for line, start in zip(found, said, strict=True):
        assert line.startswith(start) and line.endswith(
            "are SLACK_BOT_TOKEN and SLACK_APP_TOKEN swapped?"
        )


def test_check_offline_accepts_slack_tokens_in_their_place(tmp_path: Path) -> None:
    local_config(tmp_path, '[slack]\nchannel = "C0123456789"\n')
    result = relbot(
        tmp_path, "check", "--offline", SLACK_BOT_TOKEN="xoxb-1-2", SLACK_APP_TOKEN="xapp-1-A"
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    ("work", "inside"),
    [("public/.work", "public"), ("public/ftp/.relbot", "public"), ("staging/bot", "staging")],
)
def test_check_refuses_a_work_folder_inside_public_or_staging(
    tmp_path: Path, work: str, inside: str
) -> None:
    local_config(tmp_path)
    config = tmp_path / "relbot.toml"
    config.write_text(
        config.read_text().replace('public = "public"\n', f'public = "public"\nwork = "{work}"\n')
    )
    result = relbot(tmp_path, "check", "--offline")
    assert result.returncode == 1
    [line] = [p for p in problems(result) if "storage.work: " in p]
    if inside == "public":  # the web server would serve the bot's copies
        assert f"is inside public ({tmp_path / inside})" in line
        assert "set [storage] work to a folder beside it" in line
    else:  # the config itself refuses it
        assert f"{tmp_path / work} is staging or inside it, where uploaders write" in line


@pytest.mark.parametrize(
    ("host", "said"),
    [
        ("example.com", "health.host: 'example.com' is not an address; write 127.0.0.1"),
        ("192.0.2.1", "health.host: 192.0.2.1 is not an address of this machine"),
    ],
)
def test_check_refuses_a_health_host_that_is_not_an_address_of_this_machine(
    tmp_path: Path, host: str, said: str
) -> None:
    local_config(tmp_path, f'[health]\nhost = "{host}"\nport = 9110\n')
    result = relbot(tmp_path, "check", "--offline")
    assert result.returncode == 1
    [line] = [p for p in problems(result) if p.startswith("health.")]
    assert line.startswith(said)
    # What check refuses, run refuses, before it starts.
    run = relbot(tmp_path, "run", stdin="/status\n")
    assert run.returncode == 1 and said in run.stderr


def test_check_accepts_the_addresses_of_this_machine(tmp_path: Path) -> None:
    for host in ("127.0.0.1", "localhost", "0.0.0.0"):
        local_config(tmp_path, f'[health]\nhost = "{host}"\nport = 9110\n')
        result = relbot(tmp_path, "check", "--offline")
        assert result.returncode == 0, (host, result.stderr)


def test_check_refuses_a_team_where_nobody_is_a_release_manager(tmp_path: Path) -> None:
    local_config(tmp_path)
    config = tmp_path / "relbot.toml"
    config.write_text(config.read_text().replace('rm = ["3.14"]\n', ""))
    result = relbot(tmp_path, "check", "--offline")
    assert result.returncode == 1
    assert problems(result) == [
        "people: nobody is a release manager, so no release can ever be published; give the "
        'RM of each branch rm = ["3.14"] (the branches) in their [people.NAME] table.'
    ]


def test_check_says_a_chat_service_it_cannot_reach_in_its_own_words_only(
    tmp_path: Path,
) -> None:
    """slack_sdk logs each failed request as an ERROR line: the operator sees relbot's
    sentence, not the SDK's."""
    local_config(
        tmp_path, '[slack]\nchannel = "C0123456789"\napi_url = "http://127.0.0.1:9/api/"\n'
    )
    result = relbot(tmp_path, "check", SLACK_BOT_TOKEN="xoxb-1-2", SLACK_APP_TOKEN="xapp-1-A")
    assert result.returncode == 1
    slack = [p for p in problems(result) if p.startswith("slack.")]
    assert slack and slack[0].startswith("slack.api_url: cannot reach http://127.0.0.1:9/api/")
    assert slack[0].endswith("(Connection refused)."), slack[0]  # the reason, not "URLError"
    assert "slack_sdk" not in result.stderr and "ERROR" not in result.stderr


# -- the systemd trap: ProtectSystem=strict with the work folder left read-only ---------------


@contextmanager
def read_only_but(root: Path, writable: Sequence[Path]) -> Iterator[None]:
    """``root`` read-only but for ``writable``: what systemd's ProtectSystem=strict with
    ReadWritePaths= makes (bind mounts, for real)."""
    mounted = []
    try:
        for where in [root, *writable]:
            subprocess.run(["mount", "--bind", str(where), str(where)], check=True)
            mounted.append(where)
            flags = "remount,bind,ro" if where == root else "remount,bind,rw"
            subprocess.run(["mount", "-o", flags, str(where)], check=True)
        yield
    finally:
        for where in reversed(mounted):
            subprocess.run(["umount", str(where)], check=True)


def test_a_read_only_work_folder_is_named_by_check_with_the_unit_line_and_run_refuses(
    tmp_path: Path,
) -> None:
    """The shipped layout: public is /srv/…/ftp/python, the default work folder is
    /srv/…/ftp/.relbot-python, and ReadWritePaths= lists only staging and public."""
    root = tmp_path / "srv"
    staging, public = root / "staging", root / "ftp" / "python"
    staging.mkdir(parents=True)
    public.mkdir(parents=True)
    (tmp_path / "relbot.toml").write_text(
        f'state = "state/state.db"\n[storage]\nkind = "local"\nstaging = "{staging}"\n'
        f'public = "{public}"\n{TEAM}',
        encoding="utf-8",
    )
    work = root / "ftp" / ".relbot-python"
    with read_only_but(root, [staging, public]):
        for args in (["check", "--offline"], ["check"], ["run"]):
            result = relbot(tmp_path, *args, stdin="/status\n")
            assert result.returncode == 1, result
            assert (
                f"storage.work: cannot write in {root / 'ftp'} (to make {work}): it is read-only "
                f"here; create it (install -d -m 0700 -o root {work}) and, under systemd, add it "
                f"to the unit's ReadWritePaths= line (ReadWritePaths=-{work})"
            ) in result.stderr, result.stderr
            assert "Traceback" not in result.stderr
    work.mkdir(mode=0o700)  # as the sentence says
    with read_only_but(root, [staging, public, work]):
        result = relbot(tmp_path, "check", "--offline")
        assert result.returncode == 0, result.stderr
        started = relbot(tmp_path, "run", stdin="/status\n")
        assert started.returncode == 0, started.stderr
    with read_only_but(root, [staging, work]):
        result = relbot(tmp_path, "check", "--offline")
        assert result.returncode == 1
        assert (
            f"storage.public: cannot write in {public}: it is read-only here; under systemd, "
            f"add it to the unit's ReadWritePaths= line (ReadWritePaths=-{public}), then "
            "systemctl daemon-reload."
        ) in problems(result)


def test_the_shipped_unit_lets_the_bot_write_the_default_work_folder_of_the_example() -> None:
    example = tomllib.loads((DEPLOY / "relbot.example.toml").read_text(encoding="utf-8"))
    storage = example["storage"]
    unit = (DEPLOY / "relbot.service").read_text(encoding="utf-8")
    [line] = [line for line in unit.splitlines() if line.startswith("ReadWritePaths=")]
    paths = {p.removeprefix("-") for p in line.removeprefix("ReadWritePaths=").split()}
    work = storage.get("work") or default_work(storage["public"])
    assert {work, storage["public"]} <= paths
    assert any(storage["staging"].startswith(p + "/") or storage["staging"] == p for p in paths)
    deploy_md = (DEPLOY.parent / "docs" / "deploy.md").read_text(encoding="utf-8")
    assert work in deploy_md and f"install -d -m 0700 -o relbot -g relbot {work}" in deploy_md
