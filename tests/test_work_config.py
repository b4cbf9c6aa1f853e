"""``[storage] work``: the bot's own folder for its copies, the aside area and the storage
lock. Where it may be (never staging, never public itself), where it is by default (beside
public), and what ``relbot check`` says to change when uploaders could reach it."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest

from bot.app import build_storage
from bot.config import load_config
from bot.errors import ConfigError
from bot.storage.local import LocalStorage
from tests.console_driver import RELBOT

TEAM = """
[people.hugo]
rm = ["3.14"]
roles = ["source", "docs"]
"""


def config_file(root: Path, storage: str) -> Path:
    (root / "staging").mkdir(exist_ok=True)
    (root / "public").mkdir(exist_ok=True)
    path = root / "relbot.toml"
    path.write_text(textwrap.dedent(storage) + TEAM)
    return path


def test_the_default_work_folder_is_beside_the_real_public_folder(tmp_path: Path) -> None:
    (tmp_path / "srv").mkdir()
    (tmp_path / "srv" / "python").mkdir()
    (tmp_path / "public").symlink_to(tmp_path / "srv" / "python")  # same filesystem there
    path = tmp_path / "relbot.toml"
    (tmp_path / "staging").mkdir()
    path.write_text('[storage]\nstaging = "staging"\npublic = "public"\n' + TEAM)
    storage = build_storage(load_config(path))
    assert isinstance(storage, LocalStorage)
    assert storage.work == tmp_path / "srv" / ".relbot-python"


def test_a_relative_work_folder_is_relative_to_the_config(tmp_path: Path) -> None:
    path = config_file(
        tmp_path, '[storage]\nstaging = "staging"\npublic = "public"\nwork = "bot-work"\n'
    )
    storage = build_storage(load_config(path))
    assert isinstance(storage, LocalStorage) and storage.work == tmp_path / "bot-work"


@pytest.mark.parametrize(
    ("work", "said"),
    [
        ("staging", "is staging or inside it, where uploaders write"),
        ("staging/bot", "is staging or inside it, where uploaders write"),
        ("public", "is public itself"),
        (".", "holds staging or public"),
    ],
)
def test_a_work_folder_uploaders_write_or_that_holds_the_others_is_refused(
    tmp_path: Path, work: str, said: str
) -> None:
    path = config_file(
        tmp_path, f'[storage]\nstaging = "staging"\npublic = "public"\nwork = "{work}"\n'
    )
    with pytest.raises(ConfigError, match=r"storage\.work: ") as refused:
        load_config(path)
    assert said in str(refused.value)


def test_over_sftp_the_work_folder_is_an_absolute_path_on_the_server(tmp_path: Path) -> None:
    path = config_file(
        tmp_path,
        """
        [storage]
        kind = "sftp"
        host = "dl.example.org"
        user = "relbot"
        key_file = "key"
        known_hosts = "known_hosts"
        staging = "/srv/staging"
        public = "/srv/ftp/python"
        work = "relbot-work"
        """,
    )
    with pytest.raises(ConfigError, match=r"storage\.work: 'relbot-work' must be an absolute"):
        load_config(path)


def run_check(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(RELBOT), "check", "--offline"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_relbot_check_says_what_to_change_when_uploaders_could_move_the_work_folder(
    tmp_path: Path,
) -> None:
    root = tmp_path / "srv"
    root.mkdir()
    config_file(root, '[storage]\nstaging = "staging"\npublic = "public"\n')
    assert run_check(root).returncode == 0
    assert not (root / ".relbot-public").exists()  # checked, never made by a check

    root.chmod(0o2775)  # the uploaders' group may write the work folder's parent
    checked = run_check(root)

    assert checked.returncode == 1
    assert f"storage.work: {root}, the parent of the bot's work folder" in checked.stderr
    assert "its mode 2775 lets others write it" in checked.stderr
    assert f"chmod go-w {root}" in checked.stderr and f"chmod +t {root}" in checked.stderr
    root.chmod(0o3777)  # sticky: others may add, never move the bot's folder
    assert run_check(root).returncode == 0
