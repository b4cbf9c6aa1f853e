"""A careless operator's config and state file: every mistake is one sentence from every
command (exit 1, no traceback), and ``relbot check`` reports what ``relbot run`` refuses."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bot.cli import main
from bot.config import load_config
from bot.demo import stage_demo
from bot.domain.history import EventKind
from bot.domain.profile import load_profile
from bot.domain.tags import ReleaseTag
from bot.errors import ConfigError, TagError
from bot.journal.store import StateStore
from bot.service.render import audit_line, help_text
from tests.conftest import World

TIMEOUT = 60
NOBODY = 65534
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
def read_only_mount(tmp_path: Path) -> Iterator[Callable[[Callable[[Path], object]], Path]]:
    """A small tmpfs, filled by the test, then remounted read-only: read-only for root too."""
    mounted: list[Path] = []

    def make(fill: Callable[[Path], object]) -> Path:
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


def broken_state(
    kind: str, tmp_path: Path, mount: Callable[[Callable[[Path], object]], Path]
) -> str:
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
    read_only_mount: Callable[[Callable[[Path], object]], Path],
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
    read_only_mount: Callable[[Callable[[Path], object]], Path],
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


# -- every case of a config accepted by `check`, then wrong: refused by check --offline -------

CONFIG_CASES = {
    "huge-poll-interval": "poll_interval = 1000000000000000000\n",
    "huge-confirm-timeout": "confirm_timeout = 9223372036854775807\n",
    "pydotorg-over-http": '[pydotorg]\nkind = "api"\nurl = "http://www.python.org/api/v1/"\n',
    "pydotorg-file-url": '[pydotorg]\nkind = "api"\nurl = "file:///etc/passwd"\n',
    "slack-over-http": '[slack]\nchannel = "C0RELEASE"\napi_url = "http://slack.com/api/"\n',
    "health-host-empty": '[health]\nhost = ""\n',
    "state-in-public": 'state = "relbot-data/public/state.db"\n',
    "empty-person-name": '[people.""]\nroles = ["windows"]\n',
    "person-named-relbot": '[people.relbot]\nroles = ["windows"]\n',
    "duplicate-slack-ids": '[people.steve]\nslack = "U0HUGO"\n[people.ned]\nslack = "U0HUGO"\n',
    "control-in-identities": '[signatures]\nidentities = { "3.14" = ["h\\u001bo", "https://x"] }\n',
    "long-path-component": f'state = "{"s" * 300}/state.db"\n',
    "deep-toml": "x = " + "[" * 50_000 + "]" * 50_000 + "\n",
}
CONFIG_KEYS = {
    "huge-poll-interval": "poll_interval",
    "huge-confirm-timeout": "confirm_timeout",
    "pydotorg-over-http": "pydotorg.url",
    "pydotorg-file-url": "pydotorg.url",
    "slack-over-http": "slack.api_url",
    "health-host-empty": "health.host",
    "state-in-public": "state",
    "empty-person-name": "people",
    "person-named-relbot": "people",
    "duplicate-slack-ids": "people.ned.slack",
    "control-in-identities": "signatures.identities",
    "long-path-component": "state",
    "deep-toml": "nested too deeply",
}


def in_process(folder: Path, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """``relbot ARGS`` in this process (the CLI's own code, faster than a process each);
    (exit status, what it wrote on stderr)."""
    with contextlib.chdir(folder):
        code = main(list(args))
    return code, capsys.readouterr().err


def assert_one_line(code: int, err: str, *fragments: str) -> None:
    assert code == 1, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("relbot"), err
    for fragment in fragments:
        assert fragment in err, err


@pytest.mark.parametrize("case", CONFIG_CASES)
def test_each_config_case_is_one_sentence_from_check_offline_and_run_alike(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    monkeypatch.delenv("RELBOT_CONFIG", raising=False)
    write(tmp_path, CONFIG_CASES[case] + '[people.hugo]\nrm = ["3.14"]\nslack = "U0HUGO"\n')

    for command in (["check", "--offline"], ["run"], ["status"]):
        code, err = in_process(tmp_path, *command, capsys=capsys)
        if command[0] == "check":  # in the same round: the secrets the config names
            secrets = [line for line in err.splitlines() if line.endswith("--env-file).")]
            err = "\n".join(line for line in err.splitlines() if line not in secrets)
        assert_one_line(code, err, CONFIG_KEYS[case])


def test_run_creates_no_mistyped_staging_folder_and_says_what_check_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RELBOT_CONFIG", raising=False)
    write(tmp_path, '[storage]\nstaging = "relbot-data/stagign"\n' + TEAM)

    checked = in_process(tmp_path, "check", "--offline", capsys=capsys)
    ran = in_process(tmp_path, "run", capsys=capsys)

    assert_one_line(*checked, "storage.staging", "stagign does not exist")
    assert ran == (checked[0], checked[1].replace("relbot check: ", "relbot: "))
    assert not (tmp_path / "relbot-data" / "stagign").exists()


def test_a_folder_named_relbot_toml_is_refused_by_every_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RELBOT_CONFIG", raising=False)
    (tmp_path / "relbot.toml").mkdir()

    for command in (["check", "--offline"], ["run"], ["status"]):
        assert_one_line(*in_process(tmp_path, *command, capsys=capsys), "is a folder")
    assert not (tmp_path / "relbot-data").exists()  # the demo was not staged


SPECIAL_FILES: dict[str, Callable[[Path], object]] = {
    "fifo": os.mkfifo,
    "dev-zero": lambda path: path.symlink_to("/dev/zero"),
}


@pytest.mark.parametrize("special", SPECIAL_FILES)
def test_a_special_file_as_config_is_refused_without_reading_it(
    relbot: str, tmp_path: Path, special: str
) -> None:
    SPECIAL_FILES[special](tmp_path / "special.toml")

    for command in (["check", "--offline"], ["run"]):
        result = run(relbot, tmp_path, *command, "--config", "special.toml")  # would hang
        assert_one_sentence(result, "special.toml: the config is a ")
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr


@pytest.mark.parametrize("special", [*SPECIAL_FILES, "deep-json"])
def test_a_special_or_deep_release_cycle_file_is_refused_without_hanging(
    relbot: str, tmp_path: Path, special: str
) -> None:
    cycle = tmp_path / "cycle.json"
    if special == "deep-json":
        cycle.write_text("[" * 100_000 + "]" * 100_000)
    else:
        SPECIAL_FILES[special](cycle)
    write(tmp_path, 'release_cycle = "cycle.json"\n' + TEAM)

    for command in (["check", "--offline"], ["run"]):
        result = run(relbot, tmp_path, *command)
        assert_one_sentence(result, "release_cycle: ", "cycle.json")
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr


# -- every case of a state file relbot did not write: one sentence, before anything ----------


def corrupt(path: Path, *statements: str) -> None:
    """A state file with one real event, then changed behind relbot's back."""
    store = StateStore(path)
    store.append(ReleaseTag.parse("3.14.1"), "hugo", EventKind.HELD, reason="wait")
    store.close()
    with contextlib.closing(sqlite3.connect(path)) as db:
        for statement in statements:
            db.execute(statement)
        db.commit()


STATE_CASES = {
    "unknown-kind": (
        "INSERT INTO events (at, tag, actor, kind, data) "
        "VALUES (1, '3.14.1', 'hugo', 'teleported', '{}')",
        "kind 'teleported' is unknown",
    ),
    "not-json": (
        "INSERT INTO events (at, tag, actor, kind, data) "
        "VALUES (1, '3.14.1', 'hugo', 'held', '{reason: wait')",
        "not JSON",
    ),
    "deep-json": (
        "INSERT INTO events (at, tag, actor, kind, data) "
        f"VALUES (1, '3.14.1', 'hugo', 'held', '{'[' * 100_000}')",
        "not JSON",
    ),
    "claim-without-snapshot": (
        "INSERT INTO events (at, tag, actor, kind, data) "
        """VALUES (1, '3.14.1', 'ned', 'claimed', '{"role": "macos"}')""",
        "'snapshot' is missing",
    ),
    "claim-with-a-broken-file": (
        "INSERT INTO events (at, tag, actor, kind, data) VALUES (1, '3.14.1', 'ned', "
        """'claimed', '{"role": "macos", "snapshot": [{"path": "x.pkg"}]}')""",
        "claimed: a field is missing",
    ),
    "huge-time": (
        "INSERT INTO events (at, tag, actor, kind, data) "
        "VALUES (1e300, '3.14.1', 'hugo', 'held', '{}')",
        "is not a time",
    ),
    "not-a-tag": (
        "INSERT INTO events (at, tag, actor, kind, data) "
        "VALUES (1, '../etc', 'hugo', 'held', '{}')",
        "not a release tag",
    ),
    "wrong-events-schema": (
        "ALTER TABLE events RENAME COLUMN data TO payload",
        "the table events has the columns",
    ),
    "dropped-table": ("DROP TABLE summaries", "the table summaries is missing"),
}


@pytest.mark.parametrize("case", STATE_CASES)
def test_each_state_case_is_one_sentence_from_check_status_audit_and_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    monkeypatch.delenv("RELBOT_CONFIG", raising=False)
    statement, why = STATE_CASES[case]
    write(tmp_path, 'state = "data/state.db"\n' + TEAM)
    corrupt(tmp_path / "data" / "state.db", statement)

    for command in (["check", "--offline"], ["status"], ["audit", "3.14.1"], ["run"]):
        code, err = in_process(tmp_path, *command, capsys=capsys)
        if case == "not-a-tag" and command[0] == "audit":  # 3.14.1's own events are sound
            assert (code, err) == (0, "")
            continue
        assert_one_line(code, err, "state: ", "state.db", why, "restore it from a backup")


def test_an_event_stored_with_a_huge_expiry_is_read_and_audited(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What an old config's confirm_timeout = 9223372036854775807 left in the log."""
    monkeypatch.delenv("RELBOT_CONFIG", raising=False)
    write(tmp_path, 'state = "data/state.db"\n' + TEAM)
    plan = {"digest": "d" * 64, "files": []}
    data = json.dumps({"code_hash": "x", "expires_at": 9223372038654775807, "plan": plan})
    corrupt(
        tmp_path / "data" / "state.db",
        "INSERT INTO events (at, tag, actor, kind, data) "
        f"VALUES (1800000000, '3.14.1', 'hugo', 'planned', '{data}')",
    )

    for command in (["check", "--offline"], ["audit", "3.14.1"], ["status", "3.14.1"]):
        code, err = in_process(tmp_path, *command, capsys=capsys)
        assert "Traceback" not in err and "Overflow" not in err
        assert code == 0, err
    store = StateStore(tmp_path / "data" / "state.db")
    (planned,) = [e for e in store.events(ReleaseTag.parse("3.14.1")) if e.kind.value == "planned"]
    assert "code valid until 23:59:59Z" in audit_line(planned)  # for ever, as far as clocks go


@pytest.fixture
def nobody_root() -> Iterator[Path]:
    """A folder a process running as nobody can reach (pytest's tmp folders are root's)."""
    root = Path(tempfile.mkdtemp(prefix="relbot-nobody-"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def test_a_read_only_state_file_is_found_by_check_and_refused_by_run(
    relbot: str, nobody_root: Path
) -> None:
    """SQLite opens a file it may not write read-only without a word: the first /hold was a
    traceback. Run as a real non-root account (root writes a read-only file anyway)."""
    write(nobody_root, 'state = "data/state.db"\n' + TEAM)
    corrupt(nobody_root / "data" / "state.db")  # a good file
    for folder, _, files in os.walk(nobody_root):
        for name in [folder, *(os.path.join(folder, n) for n in files)]:
            os.chown(name, NOBODY, NOBODY)
    (nobody_root / "data" / "state.db").chmod(0o444)
    as_nobody = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", relbot]

    for command in (["check", "--offline"], ["status"], ["audit", "3.14.1"], ["run"]):
        result = run(as_nobody[0], nobody_root, *as_nobody[1:], *command, stdin=b"/hold 3.14.1\n")
        assert_one_sentence(result, "state: cannot use", "state.db", "it is read-only")
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
