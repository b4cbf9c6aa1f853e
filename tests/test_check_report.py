"""`relbot check` reports every problem of a config at once, each with its fix; with
`--offline` it reaches no service (systemd's ExecStartPre)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.pinned import RELEASE_CYCLE_LINE
from tests.sshd import free_port

RELBOT = Path(sys.executable).with_name("relbot")
EXAMPLE = Path(__file__).parents[1] / "deploy" / "relbot.example.toml"
ONE_PERSON = '[people.hugo]\nrm = ["3.14"]\n'  # a config that names nobody is invalid too
SECRETS = ("PYDOTORG_AUTH", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "DISCORD_TOKEN", "RELBOT_CONFIG")


def check(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in SECRETS}
    return subprocess.run(
        [str(RELBOT), "check", *args],
        cwd=cwd,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def reported(result: subprocess.CompletedProcess[str]) -> list[str]:
    prefix = "relbot check: "
    return [line[len(prefix) :] for line in result.stderr.splitlines() if line.startswith(prefix)]


def broken_example(folder: Path) -> Path:
    """The shipped example as an operator copies it, before creating keys or exporting
    tokens: no key file, no known_hosts, no secret in the environment."""
    text = EXAMPLE.read_text(encoding="utf-8")
    text = text.replace("/etc/relbot/id_ed25519", str(folder / "id_ed25519"))
    text = text.replace("/etc/relbot/known_hosts", str(folder / "known_hosts"))
    # A pinned copy of the release cycle: no test reaches the network.
    text = text.replace('release_cycle = "https://peps.python.org/api/release-cycle.json"\n', "")
    text = RELEASE_CYCLE_LINE + text
    path = folder / "relbot.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_broken_example_config_lists_every_problem_at_once(tmp_path: Path) -> None:
    broken_example(tmp_path)

    for args in ((), ("--offline",)):
        result = check(tmp_path, *args)

        assert result.returncode == 1
        problems = reported(result)
        keys = [p.split(":")[0] for p in problems]
        assert keys == [
            "storage.key_file",
            "storage.known_hosts",
            "pydotorg.auth_env",
            "slack.bot_token_env",
            "slack.app_token_env",
        ], result.stderr
        assert "ssh-keygen" in problems[0] and "authorized_keys" in problems[0]
        assert "ssh-keyscan downloads.nyc1.psf.io" in problems[1]
        assert all("is not set; export it" in p for p in problems[2:])
        assert "Traceback" not in result.stderr


def test_local_folders_that_do_not_exist_are_both_reported_and_not_created(
    tmp_path: Path,
) -> None:
    (tmp_path / "relbot.toml").write_text(
        '[storage]\nstaging = "srv/stagin"\npublic = "srv/public"\n' + ONE_PERSON,
        encoding="utf-8",
    )

    result = check(tmp_path, "--offline")

    assert result.returncode == 1
    assert [p.split(":")[0] for p in reported(result)] == ["storage.staging", "storage.public"]
    assert f"mkdir -p {tmp_path / 'srv' / 'stagin'}" in result.stderr
    assert not (tmp_path / "srv").exists()


def test_offline_passes_while_the_services_are_down_and_online_does_not(
    tmp_path: Path,
) -> None:
    closed = free_port()  # nothing listens there
    (tmp_path / "staging").mkdir()
    (tmp_path / "public").mkdir()
    (tmp_path / "relbot.toml").write_text(
        RELEASE_CYCLE_LINE + f'[storage]\nstaging = "staging"\npublic = "public"\n'
        f'[slack]\nchannel = "C1"\napi_url = "http://127.0.0.1:{closed}/api/"\n' + ONE_PERSON,
        encoding="utf-8",
    )
    tokens = {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1"}

    offline = check(tmp_path, "--offline", **tokens)
    online = check(tmp_path, **tokens)

    assert offline.returncode == 0, offline.stderr
    assert "valid (offline: services were not reached)" in offline.stdout
    assert online.returncode == 1
    assert [p.split(":")[0] for p in reported(online)] == ["slack.api_url"]


def test_relbot_config_names_the_file_checked(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    path = broken_example(tmp_path / "etc")

    result = check(tmp_path, "--offline", RELBOT_CONFIG=str(path))

    assert result.returncode == 1
    assert reported(result)[0].startswith("storage.key_file")
