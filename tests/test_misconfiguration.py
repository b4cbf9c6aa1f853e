"""A careless operator's config and state file: every mistake is one sentence from every
command (exit 1, no traceback), and ``relbot check`` reports what ``relbot run`` refuses."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bot.config import load_config
from bot.demo import stage_demo
from bot.domain.profile import load_profile
from bot.domain.tags import ReleaseTag
from bot.errors import ConfigError, TagError
from bot.render import help_text
from tests.conftest import World

TIMEOUT = 60
TEAM = """
[people.hugo]
rm = ["3.14"]
roles = ["source", "docs", "windows", "macos"]
"""


@pytest.fixture(scope="module")
def relbot() -> str:
    found = shutil.which("relbot", path=str(Path(sys.executable).parent))
    assert found is not None
    return found


def run(
    relbot: str, cwd: Path, *args: str, stdin: bytes = b"", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [relbot, *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
        env={**os.environ, **(env or {})},
    )
    return subprocess.CompletedProcess(
        done.args,
        done.returncode,
        done.stdout.decode("utf-8", "backslashreplace"),
        done.stderr.decode("utf-8", "backslashreplace"),
    )


def assert_one_sentence(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


def write(folder: Path, text: str) -> Path:
    """``relbot.toml`` in ``folder``, and the default storage folders (`relbot run`, like
    `relbot check`, refuses folders that do not exist: it creates neither)."""
    path = folder / "relbot.toml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    for name in ("staging", "public"):
        (folder / "relbot-data" / name).mkdir(parents=True, exist_ok=True)
    return path


# -- staging and public must be two folders ---------------------------------------------------


@pytest.mark.parametrize(
    "public",
    ["data/staging", "data/staging/public", "data"],
    ids=["same", "public-inside-staging", "staging-inside-public"],
)
def test_overlapping_staging_and_public_are_a_config_error(tmp_path: Path, public: str) -> None:
    write(tmp_path, f'[storage]\nstaging = "data/staging"\npublic = "{public}"\n' + TEAM)

    with pytest.raises(ConfigError, match=r"storage\.staging and storage\.public overlap"):
        load_config(tmp_path / "relbot.toml")


def test_staging_and_public_that_are_one_folder_through_a_symlink_are_refused(
    tmp_path: Path,
) -> None:
    (tmp_path / "data" / "staging").mkdir(parents=True)
    (tmp_path / "data" / "public").symlink_to(tmp_path / "data" / "staging")
    write(tmp_path, '[storage]\nstaging = "data/staging"\npublic = "data/public"\n' + TEAM)

    with pytest.raises(ConfigError, match="overlap"):
        load_config(tmp_path / "relbot.toml")


def test_sftp_paths_that_overlap_as_written_are_a_config_error(tmp_path: Path) -> None:
    write(
        tmp_path,
        """
        [storage]
        kind = "sftp"
        host = "dl.example.org"
        user = "relbot"
        key_file = "id"
        known_hosts = "kh"
        staging = "/srv/www/"
        public = "/srv/www/./ftp/../ftp"
        """
        + TEAM,
    )
    with pytest.raises(ConfigError, match="overlap"):
        load_config(tmp_path / "relbot.toml")


@pytest.mark.parametrize("command", [["check"], ["run"], ["status"], ["manifest", "3.14.1"]])
def test_every_command_refuses_overlapping_folders(
    relbot: str, tmp_path: Path, command: list[str]
) -> None:
    write(tmp_path, '[storage]\nstaging = "srv"\npublic = "srv"\n' + TEAM)

    result = run(relbot, tmp_path, *command)

    assert_one_sentence(result, "storage.staging and storage.public overlap")


# -- the state file ---------------------------------------------------------------------------


@pytest.fixture
def read_only_mount(tmp_path: Path) -> Iterator[Callable[[Callable[[Path], None]], Path]]:
    """A small tmpfs, filled by the test, then remounted read-only: read-only for root too."""
    mounted: list[Path] = []

    def make(fill: Callable[[Path], None]) -> Path:
        where = tmp_path / "ro"
        where.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(where)], check=True)
        mounted.append(where)
        fill(where)
        subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True)
        return where

    yield make
    for where in mounted:
        subprocess.run(["umount", str(where)], check=True)


def broken_state(kind: str, tmp_path: Path, mount: Callable[[Callable[[Path], None]], Path]) -> str:
    """Make a state file of ``kind`` and return the config's ``state`` value."""
    if kind == "folder":
        (tmp_path / "state.db").mkdir()
        return "state.db"
    if kind == "not-sqlite":
        (tmp_path / "state.db").write_bytes(b"these are not the bytes of an SQLite file\n" * 3)
        return "state.db"
    if kind == "fifo":  # no database can be read from it: opening it would hang
        os.mkfifo(tmp_path / "state.db")
        return "state.db"
    if kind == "read-only":
        seeded = World(tmp_path / "seed").root / "data" / "state.db"
        where = mount(lambda ro: shutil.copy(seeded, ro / "state.db"))
        return str(where / "state.db")
    assert kind == "folder-not-writable"
    where = mount(lambda ro: None)
    return str(where / "state.db")


STATE_KINDS = ["folder", "not-sqlite", "fifo", "read-only", "folder-not-writable"]


@pytest.mark.parametrize("kind", STATE_KINDS)
def test_a_bad_state_file_is_one_sentence_from_run_status_and_audit(
    relbot: str,
    tmp_path: Path,
    read_only_mount: Callable[[Callable[[Path], None]], Path],
    kind: str,
) -> None:
    (tmp_path / "seed").mkdir()
    state = broken_state(kind, tmp_path, read_only_mount)
    write(tmp_path, f'state = "{state}"\n' + TEAM)

    for command in (["run"], ["status"], ["audit", "3.14.1"]):
        result = run(relbot, tmp_path, *command)
        missing = kind == "folder-not-writable" and command[0] == "audit"  # nothing to read
        assert_one_sentence(result, "no state file" if missing else "state: cannot", "state.db")
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr


@pytest.mark.parametrize("kind", STATE_KINDS)
def test_check_reports_a_bad_state_file(
    relbot: str,
    tmp_path: Path,
    read_only_mount: Callable[[Callable[[Path], None]], Path],
    kind: str,
) -> None:
    (tmp_path / "seed").mkdir()
    state = broken_state(kind, tmp_path, read_only_mount)
    write(tmp_path, f'state = "{state}"\n' + TEAM)

    result = run(relbot, tmp_path, "check")

    assert_one_sentence(result, "relbot check: state: cannot ")


# -- encodings --------------------------------------------------------------------------------


def test_a_config_with_a_latin1_byte_is_one_sentence(relbot: str, tmp_path: Path) -> None:
    (tmp_path / "relbot.toml").write_bytes(b"# caf\xe9\n" + TEAM.encode())

    for command in (["check"], ["run"], ["status"]):
        assert_one_sentence(run(relbot, tmp_path, *command), "not UTF-8 (byte 0xe9")


def test_a_profile_with_a_latin1_byte_is_one_sentence(tmp_path: Path) -> None:
    (tmp_path / "mine.toml").write_bytes(b'name = "caf\xe9"\n')
    write(tmp_path, 'profile = "mine.toml"\n' + TEAM)

    with pytest.raises(ConfigError, match=r"profile .*mine\.toml: not UTF-8"):
        load_config(tmp_path / "relbot.toml")


STRICT = {"PYTHONIOENCODING": "utf-8:strict", "LC_ALL": "C.UTF-8"}


def test_the_console_answers_undecodable_input_under_strict_utf8(
    relbot: str, tmp_path: Path
) -> None:
    write(tmp_path, TEAM)

    result = run(
        relbot,
        tmp_path,
        "run",
        stdin=b"/status caf\xe9\n/hold 3.14.1 \xff\xfe\n/help\n",
        env=STRICT,
    )

    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert "is not a release tag" in result.stdout  # the undecodable line was answered
    assert "relbot commands" in result.stdout  # and the reader went on


def test_a_staged_name_that_is_not_utf8_is_shown_escaped_by_run(
    relbot: str, tmp_path: Path
) -> None:
    write(tmp_path, TEAM)
    staging = tmp_path / "relbot-data" / "staging"
    stage_demo(staging, load_profile("cpython"))
    (staging / "3.14.1" / os.fsdecode(b"bad\xffname.txt")).write_bytes(b"x")

    result = run(relbot, tmp_path, "run", stdin=b"/status 3.14.1\n/publish 3.14.1\n", env=STRICT)

    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert "bad\\xffname.txt" in result.stdout


# -- smaller ones -----------------------------------------------------------------------------


def test_a_nul_in_a_path_is_a_config_error_and_run_exits_non_zero(
    relbot: str, tmp_path: Path
) -> None:
    write(tmp_path, '[storage]\nstaging = "data/st\\u0000aging"\n' + TEAM)

    for command in (["run"], ["check"], ["status"]):
        assert_one_sentence(run(relbot, tmp_path, *command), "storage.staging", "control character")


def test_an_empty_config_is_refused_by_check_as_by_run(relbot: str, tmp_path: Path) -> None:
    (tmp_path / "empty.toml").write_text("")

    checked = run(relbot, tmp_path, "check", "--config", "empty.toml")
    ran = run(relbot, tmp_path, "run", "--config", "empty.toml")

    for result in (checked, ran):
        assert_one_sentence(result, "people: the config names nobody")


def test_a_prerelease_serial_of_zero_is_not_a_tag() -> None:
    for text in ("3.14.1rc0", "3.14.0a0", "3.14.0b0", "3.14.0rc00"):
        with pytest.raises(TagError):
            ReleaseTag.parse(text)
    assert str(ReleaseTag.parse("3.14.0rc1")) == "3.14.0rc1"


async def test_rc0_is_refused_by_every_command(world: World) -> None:
    reply = await world.say("hugo", "/hold 3.14.1rc0 wait")
    assert reply.private and "is not a release tag" in reply.text


def test_help_says_confirmation_codes_may_be_typed_in_either_case() -> None:
    assert "upper or lower case" in help_text(("source",))


async def test_a_confirmation_code_typed_in_lower_case_publishes(world: World) -> None:
    world.stage("3.14.1")
    await world.ready_all("3.14.1")
    line = await world.plan("3.14.1")

    reply = await world.say("hugo", line.lower())

    assert not reply.private, reply.text
    assert "Published 3.14.1" in reply.text


def test_a_person_name_with_a_control_character_is_a_config_error(tmp_path: Path) -> None:
    write(tmp_path, '[people."hugo\\nrelbot"]\nrm = ["3.14"]\n')

    with pytest.raises(ConfigError, match=r"people: .*control character"):
        load_config(tmp_path / "relbot.toml")
