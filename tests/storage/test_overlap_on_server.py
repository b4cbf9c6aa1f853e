"""Over SFTP, staging and public that are one folder are refused: as written by
`relbot check --offline` (``//srv/x`` is ``/srv/x``), and where the server resolves them (a
symbolic link there) by `relbot check` and by `relbot run` before it takes any lock."""

from __future__ import annotations

import getpass
import subprocess
import textwrap
from pathlib import Path, PurePosixPath

import pytest

from bot.config import load_config
from bot.domain.folders import folders_overlap, server_path
from bot.errors import ConfigError, StorageLocked
from bot.ports.lease import Holder
from bot.storage.overlap import lock_unless_overlapping
from tests.console_driver import RELBOT
from tests.sshd import SshServer
from tests.storage.conftest import sftp_storage


def sftp_config(folder: Path, server: SshServer | None, staging: str, public: str) -> Path:
    port = server.port if server else 22
    key = server.client_key if server else folder / "id"
    known = server.known_hosts if server else folder / "known_hosts"
    path = folder / "relbot.toml"
    path.write_text(
        textwrap.dedent(f"""
            [storage]
            kind = "sftp"
            host = "127.0.0.1"
            port = {port}
            user = "{server.user if server else getpass.getuser()}"
            key_file = "{key}"
            known_hosts = "{known}"
            staging = "{staging}"
            public = "{public}"

            [people.hugo]
            rm = ["3.14"]
            roles = ["source", "docs", "windows", "macos"]
            """),
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize(
    ("staging", "public"),
    [("//srv/x", "/srv/x"), ("/srv/x", "//srv/x/"), ("///srv//x", "/srv/x/ftp")],
)
def test_check_offline_refuses_server_paths_that_are_one_folder_as_written(
    tmp_path: Path, staging: str, public: str
) -> None:
    config = sftp_config(tmp_path, None, staging, public)

    with pytest.raises(ConfigError, match=r"storage\.staging and storage\.public overlap"):
        load_config(config)
    offline = subprocess.run(
        [str(RELBOT), "check", "--offline", "--config", str(config)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert offline.returncode == 1 and "overlap" in offline.stderr
    assert "Traceback" not in offline.stderr


def test_server_paths_are_read_as_a_posix_server_reads_them() -> None:
    assert server_path("//srv/x/") == "/srv/x"
    assert server_path("/srv/./x/../y") == "/srv/y"
    assert folders_overlap(PurePosixPath("//srv/x"), PurePosixPath("/srv/x/ftp"))
    assert not folders_overlap(PurePosixPath("//srv/x"), PurePosixPath("/srv/xy"))


def linked_public(tmp_path: Path) -> tuple[Path, Path]:
    """Staging, and a public folder that is a link to it on the server (loopback: here)."""
    staging = tmp_path / "srv" / "files"
    staging.mkdir(parents=True)
    (tmp_path / "srv" / "public").symlink_to(staging)
    return staging, tmp_path / "srv" / "public"


def test_relbot_run_refuses_to_start_when_the_server_resolves_both_to_one_folder(
    tmp_path: Path, sshd: SshServer
) -> None:
    staging, public = linked_public(tmp_path)
    config = sftp_config(tmp_path, sshd, str(staging), str(public))
    load_config(config)  # as written they differ: only the server can tell

    run = subprocess.run(
        [str(RELBOT), "run", "--config", str(config)], input="/status\n",
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    check = subprocess.run(
        [str(RELBOT), "check", "--config", str(config)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip

    assert run.returncode == 1, run.stderr
    assert "storage.staging and storage.public overlap" in run.stderr
    assert "Traceback" not in run.stderr and run.stdout == ""
    assert not (staging / ".relbot-lock").exists() and list(staging.iterdir()) == []
    assert check.returncode == 1 and "overlap" in check.stderr


def test_a_lock_taken_late_is_refused_while_both_are_one_folder(
    tmp_path: Path, sshd: SshServer
) -> None:
    staging, public = linked_public(tmp_path)
    storage = sftp_storage(sshd, staging, public)
    try:
        with pytest.raises(StorageLocked, match="overlap"):
            lock_unless_overlapping(storage, Holder.this_process(tmp_path / "state.db", 30))
    finally:
        storage.close()
    assert list(staging.iterdir()) == []
