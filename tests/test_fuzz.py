"""Fuzzing with a fixed seed and a bounded count: random console input (undecodable bytes
under strict UTF-8 included) and mutated configs never produce a traceback. Every outcome
is an answer, a one-sentence error, or success."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from adapters.console import Console, ConsoleChat
from bot.cli import main
from bot.config import load_config
from bot.domain.tags import ReleaseTag
from bot.errors import RelbotError
from bot.scheduler import Poller
from bot.service.connections import Connections
from bot.service.gate import Gate
from bot.web.board import release_view
from bot.web.board_html import release_body
from tests.conftest import World
from tests.hostile_files import deep_tree_for
from tests.pinned import RELEASE_CYCLE

SEED = 20261202
VERBS = ["/ready", "/unready", "/status", "/hold", "/unhold", "/publish", "/respin", "/help", "/as"]
ARGS = [
    "source", "docs", "windows", "macos", "wizard", "3.14.1", "3.14.0rc1", "3.14.1rc0",
    "3.14.11", "3.13.2", "confirm", "CODE0001", "code0002", "hugo", "steve", "eve", "nobody",
    "\x1b[31mred\x1b[0m", "\x00", "é", "🚀", "\u202e", "../3.14.1", "-" * 50, "3.14",
]  # fmt: skip
ODD_BYTES = [b"\xe9", b"\xff\xfe", b"\xc3", b"\xed\xa0\x80", b"\x80abc", b"\r", b"\x00", b"\x1b["]


def random_line(rng: random.Random) -> bytes:
    """A command-ish line, sometimes with bytes that are not UTF-8, sometimes pure noise."""
    roll = rng.random()
    if roll < 0.1:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 80))).replace(b"\n", b"")
    words = [rng.choice(VERBS)] + [rng.choice(ARGS) for _ in range(rng.randrange(4))]
    line = " ".join(words).encode()
    if roll < 0.5:
        cut = rng.randrange(len(line) + 1)
        line = line[:cut] + rng.choice(ODD_BYTES) + line[cut:]
    if roll > 0.97:
        line = line * 40  # over the length limit
    return line


def strict_stdin(lines: list[bytes]) -> io.TextIOWrapper:
    """Standard input as a strict UTF-8 locale gives it."""
    return io.TextIOWrapper(io.BytesIO(b"\n".join(lines) + b"\n"), "utf-8", errors="strict")


def test_console_fuzz_under_strict_utf8_answers_every_line_and_never_raises(
    tmp_path: Path,
) -> None:
    rng = random.Random(SEED)
    lines = [random_line(rng) for _ in range(1500)]
    world = World(tmp_path)
    world.stage("3.14.1")
    out = io.StringIO()
    chat = ConsoleChat(out)
    gate = Gate(
        world.config,
        world.store,
        Connections(world.storage, chat, verifier=world.verifier),
        clock=world.clock,
        sleep=world._settle,
    )
    console = Console(gate, chat, Poller(gate, 3600), list(world.config.people), "hugo", out)
    answers: list[str] = []

    def say(text: str) -> None:
        answers.append(text)

    console._say = say  # type: ignore[method-assign]

    code = asyncio.run(asyncio.wait_for(console.run(strict_stdin(lines)), 60))

    assert code == 0
    typed = [line.decode("utf-8", "replace").rstrip("\r") for line in lines]
    assert len(answers) == sum(1 for line in typed if line.strip()) > 1000  # one answer each
    printed = "\n".join(answers) + out.getvalue()
    printed.encode("utf-8")  # a strict UTF-8 terminal can print every answer
    assert "\x1b" not in printed and "\x00" not in printed


def test_console_fuzz_through_relbot_run_with_a_strict_locale(tmp_path: Path) -> None:
    relbot = shutil.which("relbot", path=str(Path(sys.executable).parent))
    assert relbot is not None
    rng = random.Random(SEED + 1)
    lines = [random_line(rng) for _ in range(200)] + [b"/help"]

    done = subprocess.run(
        [relbot, "run"],
        cwd=tmp_path,
        input=b"\n".join(lines) + b"\n",
        capture_output=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONIOENCODING": "utf-8:strict", "LC_ALL": "C.UTF-8"},
    )

    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert b"Traceback" not in done.stderr
    assert b"relbot commands" in done.stdout  # still reading at the last line


# -- config mutations -------------------------------------------------------------------------

BASE = textwrap.dedent("""
    profile = "cpython"
    state = "data/state.db"
    poll_interval = 30
    confirm_timeout = 600

    [storage]
    kind = "local"
    staging = "data/staging"
    public = "data/public"

    [signatures]
    require = false
    trusted_root = "production"

    [pydotorg]
    kind = "none"

    [people.hugo]
    rm = ["3.14", "3.15"]
    roles = ["source", "docs"]

    [people.steve]
    roles = ["windows"]
    """)
VALUES = [
    '""', "0", "-1", "3.5", "true", "[]", '["x"]', "{}", '"sftp"', '"api"', '"none"',
    '"data/staging"', '"data"', '"/"', '"data/st\\u0000aging"', '"\\u001b[31m"', '"caf\\u00e9"',
    '"../outside"', '"3.14"', '["3.14", "9"]', '["wizard"]', "1e400", '"x" "y"',
]  # fmt: skip


def mutate(rng: random.Random, text: str) -> bytes:
    lines = text.splitlines()
    for _ in range(rng.randrange(1, 4)):
        i = rng.randrange(len(lines))
        roll = rng.random()
        if roll < 0.2:
            del lines[i]
        elif roll < 0.3:
            lines.insert(i, lines[rng.randrange(len(lines))])
        elif roll < 0.75 and "=" in lines[i]:
            key = lines[i].split("=", 1)[0]
            lines[i] = f"{key}= {rng.choice(VALUES)}"
        elif roll < 0.85:
            lines.insert(
                i, f"{rng.choice(['unknown', 'kind', 'host', 'port'])} = {rng.choice(VALUES)}"
            )
        else:
            lines.insert(i, rng.choice(["[storage]", "[slack]", "[people.x]", "[people]", "[["]))
    data = "\n".join(lines).encode()
    if rng.random() < 0.1:
        cut = rng.randrange(len(data))
        data = data[:cut] + rng.choice(ODD_BYTES) + data[cut:]
    if rng.random() < 0.05:
        data = data[: rng.randrange(len(data))]
    return data


def test_config_mutation_sweep_gives_success_or_one_sentence_per_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(SEED)
    outcomes = {"valid": 0, "refused": 0}
    for number in range(150):
        folder = tmp_path / f"c{number}"
        folder.mkdir()
        path = folder / "relbot.toml"
        path.write_bytes(mutate(rng, BASE))
        try:
            config = load_config(path)
        except RelbotError as err:
            outcomes["refused"] += 1
            for sentence in str(err).splitlines():
                assert sentence.startswith(str(path)) or sentence.startswith("profile"), sentence
                assert sentence.endswith("."), sentence
            continue
        outcomes["valid"] += 1
        if config.model.storage.kind != "local" or config.platforms():
            continue  # would reach out to a server; loading is what is swept here
        for command in (["status"], ["manifest", "3.14.1"], ["audit", "3.14.1"]):
            with contextlib.chdir(folder):
                code = main([*command, "--config", str(path)])
            assert code in (0, 1)
        captured = capsys.readouterr()
        assert "Traceback" not in captured.err
    # Both outcomes were exercised: the sweep is not all refusals or all successes.
    assert outcomes["valid"] > 10 and outcomes["refused"] > 10, outcomes


# -- every key's type and bounds --------------------------------------------------------------

# A config that sets every key the contract names to a valid value (TOML literals), with every
# optional table present. The fuzzer below changes a few keys at a time.
FULL: dict[str, dict[str, str]] = {
    "": {
        "profile": '"cpython"',
        "state": '"data/state.db"',
        "poll_interval": "30",
        "confirm_timeout": "600",
        "release_cycle": f'"{RELEASE_CYCLE}"',
    },
    "storage": {
        "kind": '"local"',
        "staging": '"data/staging"',
        "public": '"data/public"',
        "host": '"127.0.0.1"',
        "port": "22",
        "user": '"relbot"',
        "key_file": '"id"',
        "known_hosts": '"known_hosts"',
        "passphrase_env": '"FUZZ_PASSPHRASE"',
        "group": '"downloads"',
    },
    "signatures": {
        "require": "false",
        "trusted_root": '"production"',
        "identities": '{ "3.14" = ["hugo@python.org", "https://github.com/login/oauth"] }',
    },
    "pydotorg": {
        "kind": '"none"',
        "url": '"https://www.python.org/api/v1/"',
        "auth_env": '"FUZZ_PYDOTORG"',
    },
    "cdn": {"purge": '["https://www.python.org/ftp/python/{version}/"]'},
    "slack": {
        "bot_token_env": '"FUZZ_SLACK_BOT"',
        "channel": '"C0RELEASE"',
        "mode": '"http"',
        "app_token_env": '"FUZZ_SLACK_APP"',
        "signing_secret_env": '"FUZZ_SLACK_SECRET"',
        "port": "3000",
        "api_url": '"http://127.0.0.1:9/api/"',
    },
    "discord": {
        "token_env": '"FUZZ_DISCORD"',
        "guild": "112233445566778899",
        "channel": "112233445566778890",
        "api_url": '"http://127.0.0.1:9/api/v10"',
    },
    "health": {"host": '"127.0.0.1"', "port": "9110"},
    "people.hugo": {
        "rm": '["3.14", "3.15"]',
        "roles": '["source", "docs"]',
        "slack": '"U0HUGO"',
        "discord": '"112233445566778899"',
    },
    "people.steve": {"roles": '["windows"]', "slack": '"U0STEVE"'},
}
TYPED_VALUES = [
    # numbers at and past every bound, and what TOML makes of overflowing ones
    "0", "1", "-1", "9", "10", "22", "65535", "65536", "86400", "86401",
    "9223372036854775807", "-9223372036854775808", "112233445566778899", "1.5", "nan", "inf",
    "-inf", "1e400", "true", "false",
    # strings of every kind a key takes, and each one's mistakes
    '""', '" "', '"x"', '"cpython"', '"local"', '"sftp"', '"api"', '"none"', '"socket"',
    '"production"', '"0.0.0.0"', '"::"', '"0"', '"127.1"', '"localhost"', '"127.0.0.1"',
    '"https://www.python.org/api/v1/"', '"http://www.python.org/"', '"http://[::1]:9/"',
    '"file:///etc/passwd"', '"ftp://x/"', '"https://u:p@x/"', '"https://"', '"https://x:0/"',
    '"https://x:99999/"', '"U0HUGO"', '"hugo"', '"u0hugo"', '"C0RELEASE"', '"#release"',
    '"112233445566778899"', '"123"', '"data/staging"', '"data/public"', '"data"',
    '"data/public/state.db"', '"/"', '"/dev/zero"', '"fifo"', '"folder"', '"~nosuchuser/x"',
    f'"{"n" * 300}"', f'"data/{"n" * 300}/x"', '"\\u001b[31m"', '"\\u202e"', '"\\u0000"',
    '"caf\\u00e9"', '"3.14"', '"../outside"', '"relbot"', '"\\ud7ff"',
    # arrays and tables, nested too deep included
    "[]", '["x"]', '["3.14"]', '["source"]', '["wizard"]', "[1]", '[["a"]]', "[" * 600 + "]" * 600,
    "{}", '{ "3.14" = ["a", "b"] }', '{ "3.14" = ["a"] }', '{ "x" = ["a", "b"] }', "{ x = 1 }",
]  # fmt: skip
PERSON_NAMES = ['""', '" "', "relbot", '"a b"', '"\\u001b"', "hugo", "ned", "x" * 300]


def config_keys() -> list[tuple[str, str]]:
    """(table, key) of every key of the config's model, so that a key another change adds
    is fuzzed too, even before ``FULL`` names a valid value for it."""
    from pydantic import BaseModel

    from bot.config.sections import ConfigModel, PersonConfig

    found: list[tuple[str, str]] = []
    for name, field in ConfigModel.model_fields.items():
        if name == "people":  # a table of tables: one person's keys, below
            continue
        nested = next(
            (t for t in getattr(field.annotation, "__args__", (field.annotation,))
             if isinstance(t, type) and issubclass(t, BaseModel)),
            None,
        )  # fmt: skip
        if nested is not None:
            found += [(name, key) for key in nested.model_fields]
        else:
            found.append(("", name))
    return found + [("people.hugo", key) for key in PersonConfig.model_fields]


def toml_text(tables: dict[str, dict[str, str]]) -> str:
    lines = [f"{key} = {value}" for key, value in tables.get("", {}).items()]
    for table, keys in tables.items():
        if table:
            lines += [f"[{table}]", *(f"{key} = {value}" for key, value in keys.items())]
    return "\n".join(lines) + "\n"


def fuzzed_config(rng: random.Random, keys: list[tuple[str, str]]) -> str:
    tables = {table: dict(values) for table, values in FULL.items()}
    for _ in range(rng.randrange(1, 4)):
        roll = rng.random()
        table, key = rng.choice(keys)
        if roll < 0.75:
            tables.setdefault(table, {})[key] = rng.choice(TYPED_VALUES)
        elif roll < 0.85:
            tables.get(table, {}).pop(key, None)
        elif roll < 0.9:
            tables.pop(rng.choice([t for t in tables if t]), None)
        elif roll < 0.95:  # a person by another name
            tables[f"people.{rng.choice(PERSON_NAMES)}"] = tables.pop("people.steve", {})
        else:  # one platform ID for two people
            tables.setdefault("people.steve", {})["slack"] = '"U0HUGO"'
    return toml_text(tables)


class Hung(Exception):
    pass


def test_config_fuzz_over_every_keys_type_and_bounds_never_raises(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every outcome is a config or one sentence per problem, from loading, from the offline
    checks (what `relbot check --offline` and `relbot run` make) and from `relbot check
    --offline` itself; nothing hangs on a FIFO or /dev/zero."""
    from bot.preflight import offline_problems

    for name in ("PASSPHRASE", "PYDOTORG", "SLACK_BOT", "SLACK_APP", "SLACK_SECRET", "DISCORD"):
        monkeypatch.setenv(f"FUZZ_{name}", "set")  # a key naming another variable: unset
    monkeypatch.delenv("RELBOT_CONFIG", raising=False)
    rng = random.Random(SEED + 2)
    keys = config_keys()
    assert {key for _, key in keys} >= {"poll_interval", "api_url", "guild", "host", "discord"}
    outcomes = {"valid": 0, "refused": 0, "problems": 0}

    def hung(signum: int, frame: object) -> None:
        raise Hung("a config made relbot wait for ever")

    previous = signal.signal(signal.SIGALRM, hung)
    try:
        for number in range(300):
            folder = tmp_path / f"k{number}"
            (folder / "data" / "staging").mkdir(parents=True)
            (folder / "data" / "public").mkdir()
            (folder / "folder").mkdir()
            os.mkfifo(folder / "fifo")
            path = folder / "relbot.toml"
            path.write_text(fuzzed_config(rng, keys), encoding="utf-8")
            signal.alarm(30)
            try:
                config = load_config(path)
            except RelbotError as err:
                outcomes["refused"] += 1
                for sentence in str(err).splitlines():
                    assert sentence.endswith("."), sentence
                    assert sentence.startswith((str(path), "profile", "release_cycle")), sentence
                continue
            finally:
                signal.alarm(0)
            outcomes["valid"] += 1
            signal.alarm(30)
            try:
                found = offline_problems(config)
                with contextlib.chdir(folder):
                    code = main(["check", "--offline", "--config", str(path)])
            finally:
                signal.alarm(0)
            outcomes["problems"] += bool(found.problems)
            stderr = capsys.readouterr().err
            assert code == (1 if found.problems else 0), stderr
            assert "Traceback" not in stderr
            assert all(line.startswith("relbot check: ") for line in stderr.splitlines()), stderr
    finally:
        signal.signal(signal.SIGALRM, previous)
    # Every outcome was exercised: loading refused, offline checks refused, and all well.
    assert outcomes["refused"] > 50 and outcomes["problems"] >= 5, outcomes
    assert outcomes["valid"] - outcomes["problems"] > 5, outcomes


# -- staging mutations ------------------------------------------------------------------------

STAGING_SEED = 20261203
ODD_NAMES = [
    os.fsdecode(b"bad\xffname.exe"), "two\nlines.tgz", "esc\x1b[2Kape.zip", "\u202etxt.exe",
    "x" * 255, ".hidden.part", "trailing space ", "caf\u00e9.pkg", "[#release] 3.14.1.tgz",
    "-rf", "*", "index-windows.json",
]  # fmt: skip
SPECIALS = ["fifo", "dev-zero", "passwd", "dangling", "folder-link", "socket", "folder-for-file"]


def mutate_staging(rng: random.Random, release: Path, request: pytest.FixtureRequest) -> list[str]:
    """A few hostile changes to a staged release: special files where files are expected
    (bundles included), deep and wide trees, odd names, empty files and folders."""
    done = []
    files = sorted(p for p in release.rglob("*") if p.is_file() and not p.is_symlink())
    for _ in range(rng.randrange(1, 6)):
        roll = rng.random()
        if roll < 0.4 and files:
            target = rng.choice(files)
            if rng.random() < 0.3:  # its signature bundle instead
                target = target.with_name(target.name + ".sigstore")
            kind = rng.choice(SPECIALS)
            special(target, kind)
            done.append(f"{kind} {target.name}")
        elif roll < 0.5:
            depth = rng.choice([33, 40, 1100])
            top = release / rng.choice(["docs", "amd64", "deep"]) / f"d{len(done)}"
            deep_tree_for(request, top, depth)
            done.append(f"deep {depth}")
        elif roll < 0.6:
            wide = release / rng.choice(["amd64", "junk", "docs/more"])
            wide.mkdir(parents=True, exist_ok=True)
            for n in range(rng.randrange(100, 600)):
                (wide / f"f{n:04d}.bin").write_bytes(b"x")
            done.append(f"wide {wide.name}")
        elif roll < 0.85:
            name = rng.choice(ODD_NAMES)
            folder = release / rng.choice(["", "docs", "amd64"])
            folder.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(b"odd" * rng.randrange(2))
            done.append(f"odd {name!r}")
        else:
            (release / "empty" / "deeper").mkdir(parents=True, exist_ok=True)
            done.append("empty folders")
    return done


def special(path: Path, kind: str) -> None:
    """Put a special file of ``kind`` at ``path`` (replacing what is there)."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        return
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "passwd":
        path.symlink_to("/etc/passwd")
    elif kind == "dangling":
        path.symlink_to(path.parent / "nowhere")
    elif kind == "folder-link":
        path.symlink_to("/etc", target_is_directory=True)
    elif kind == "socket":
        os.mknod(path, 0o600 | stat.S_IFSOCK)
    else:
        path.mkdir()


async def one_staging_trial(
    tmp_path: Path, rng: random.Random, request: pytest.FixtureRequest
) -> tuple[list[str], list[str]]:
    """Stage a release, mutate it, then scan, ask, claim, publish and look at the board;
    returns (what was done, every answer)."""
    world = World(tmp_path)
    world.stage("3.14.1")
    done = mutate_staging(rng, world.staging / "3.14.1", request)
    tag = ReleaseTag.parse("3.14.1")
    answers = []
    await world.gate.scan()
    answers.append((await world.say("eve", "/status 3.14.1")).text)
    for person, role in (
        ("hugo", "source"),
        ("hugo", "docs"),
        ("steve", "windows"),
        ("ned", "macos"),
    ):
        answers.append((await world.say(person, f"/ready {role} 3.14.1")).text)
    await world.gate.scan()
    plan = await world.say("hugo", "/publish 3.14.1")
    answers.append(plan.text)
    if plan.confirm is not None:
        answers.append((await world.say("hugo", plan.confirm.line)).text)
        for path in world.public.rglob("*"):
            assert path.is_dir() or (path.is_file() and not path.is_symlink()), path
    view = release_view(
        world.profile,
        tag,
        await world.gate.observed(tag),
        world.store.events(tag),
        now=world.clock(),
    )
    answers.append(release_body(view))
    answers.append(json.dumps(view.to_json()))
    answers += [m.text for m in world.chat.posts]
    world.store.close()
    return done, answers


def test_staging_fuzz_never_raises_never_hangs_and_never_publishes_what_is_not_a_file(
    tmp_path: Path, request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture
) -> None:
    rng = random.Random(STAGING_SEED)
    passwd = hashlib.sha256(Path("/etc/passwd").read_bytes()).hexdigest()
    for trial in range(30):
        folder = tmp_path / f"t{trial}"
        folder.mkdir()
        done, answers = asyncio.run(asyncio.wait_for(one_staging_trial(folder, rng, request), 120))
        for text in answers:
            text.encode("utf-8")  # printable by a strict UTF-8 console
            assert "\x1b" not in text and passwd not in text, (done, text[:300])
            assert len(text.encode()) < 200_000, (done, len(text))
    assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records]
